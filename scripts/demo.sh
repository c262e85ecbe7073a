#!/usr/bin/env bash
# The main job: set up a virtualenv, install uwf, and open the workbench on a
# demo root (./.uwf-demo) with the examples registered and the scripted agent
# configured, so every thread steps offline by keypress (s step, r run, ? help).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/uwf-tui ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e .
  .venv/bin/python -m compileall -q uwf_core uwf_tui >/dev/null  # editable installs are not byte-compiled
fi
command -v bwrap >/dev/null 2>&1 || echo "note: bubblewrap is not installed, so agents run without a sandbox (apt-get install bubblewrap)" >&2
exec .venv/bin/uwf-tui --demo "$@"
