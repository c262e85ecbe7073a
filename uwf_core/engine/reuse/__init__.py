"""Memoized replay: a call's inputs key and the reused StepNode (`replay.py`), the keys and
their index in derived data (`index.py`).

May import: record.py, the step's terms and the rooms a step is built on (contain/, extraction/,
python/)."""
