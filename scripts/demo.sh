#!/usr/bin/env bash
# Set up a virtualenv, install uwf, and run the main job on a demo root:
# the examples registered, the scripted agent configured, one thread run offline.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/uwf ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e .
fi
export UWF_STORAGE_ROOT="${UWF_STORAGE_ROOT:-$PWD/.demo-root}"
uwf=.venv/bin/uwf
for example in examples/*.yaml; do
  case "$example" in *.script.yaml) continue ;; esac
  "$uwf" workflow put "$example" >/dev/null
done
"$uwf" setup --agent script="uwf-script --script-dir $PWD/examples" --default-agent script >/dev/null
echo "demo root: $UWF_STORAGE_ROOT"
"$uwf" workflow graph solve-issue
thread=$("$uwf" thread start solve-issue -p "Users can log in with an empty password" | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["thread"])')
"$uwf" thread run "$thread" >/dev/null
"$uwf" thread read "$thread"
