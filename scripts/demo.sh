#!/usr/bin/env bash
# The main job: set up a virtualenv, install uwf, and open the workbench on a
# demo root (./.uwf-demo) with the examples registered and the scripted agent
# configured, so every thread steps offline by keypress (s step, r run, ? help).
# The first run says what it is doing while it installs (about a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'uwf demo: %s\n' "$*" >&2; }
if [ ! -x .venv/bin/uwf-tui ]; then
  started=$SECONDS
  say "1/3 creating a virtualenv in .venv (the first run only)"
  python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  log=.venv/install.log
  say "2/3 installing uwf and its dependencies into .venv (about a minute; the full log is $log)"
  set +o pipefail
  .venv/bin/python -m pip install -e . 2>&1 | tee "$log" \
    | grep --line-buffered -E '^(Collecting|Successfully installed)' | sed -u 's/^Successfully installed .*/  installed./; s/^Collecting \([^ ]*\).*/  fetching \1/' >&2
  status=${PIPESTATUS[0]}
  set -o pipefail
  if [ "$status" -ne 0 ]; then
    say "the install failed (pip exited $status); the end of $log:"
    tail -n 20 "$log" >&2
    exit "$status"
  fi
  .venv/bin/python -m compileall -q uwf_core uwf_tui >/dev/null  # editable installs are not byte-compiled
  say "3/3 installed in $((SECONDS - started)) s; opening the workbench on ./.uwf-demo"
fi
command -v bwrap >/dev/null 2>&1 || say "note: bubblewrap is not installed, so agents run without a sandbox (apt-get install bubblewrap)"
exec .venv/bin/uwf-tui --demo "$@"
