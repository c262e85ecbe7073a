"""One step of a thread. Here, the step transaction itself and its terms: `step.py` (lock,
moderator, agent, verify, compare-and-set), `attempt.py`, `resolve.py`, `prompt.py`, `call.py`,
`record.py`, `files.py` (the snapshots around a step), `tracing.py`, and the one-step tools
beside it (`control.py` kill, `dry_run.py`, `check.py` `uwf agent test`). The rest is in rooms
named for their job; each room's `__init__` says what it may import (tests/test_layers.py
ENGINE_LAYERS holds them to it):

- `protocols/`  how uwf talks to an agent: step, text, human, python
- `python/`     the python agent's machinery: its function loaded, called, given a context
- `extraction/` an answer read from an agent's words, with the LLM fallback and its evidence
- `contain/`    what an agent run may see, touch and leave: sandbox, policy, processes, guards,
                and (`contain/git/`) the workspace's repositories
- `reuse/`      memoized replay: the inputs key of a call and its index
- `fanout/`     many steps from one: a map's children, agents side by side
- `oversight/`  uwf's own LLM checks on a thread: supervisor and summarizer
- `queue/`      steps taken for a shared root: `uwf worker`, the inbox of a person's roles
"""
