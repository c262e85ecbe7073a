#!/usr/bin/env bash
# Set up a virtualenv, install uwf, and launch the main job on a demo root.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/uwf ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e .
fi
export UWF_STORAGE_ROOT="${UWF_STORAGE_ROOT:-$PWD/.demo-root}"
for example in examples/*.yaml; do
  case "$example" in *.script.yaml) continue ;; esac
  .venv/bin/uwf workflow put "$example" >/dev/null
done
echo "demo root: $UWF_STORAGE_ROOT"
.venv/bin/uwf workflow list
.venv/bin/uwf workflow graph solve-issue
