"""Containment: what one agent run may see, touch and leave behind (design §16). The bubblewrap
sandbox (`sandbox.py`) and its policy (`policy.py`), Landlock, one agent run's processes (`process.py`:
spawn, stream, timeout, cancel), the fallback subreaper (`orphans.py`) and its watchdog, the run
guard (`run_guard.py`) with its private copies (`private_copy.py`, `state_dirs.py`) and the
workspace's repositories (`git/`).

May import: the step's terms (attempt, resolve, prompt, tracing) and nothing else of the engine: a
step is built on containment, never the reverse."""
