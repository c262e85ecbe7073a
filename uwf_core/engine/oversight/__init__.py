"""uwf's own LLM checks on a thread: the supervisor and the summarizer (`supervisor.py`), and
where they meet a step (`step_checks.py`: when each runs, with which model, each its own commit).

May import: what a step's agent may (call, files, record, reuse/, contain/ …), never step.py,
which calls them."""
