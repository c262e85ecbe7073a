"""Steps taken for a shared root: `uwf worker` (queued threads claimed and stepped on any host,
`worker.py`) and the people's side, the threads waiting for a person and their answers
(`inbox.py`).

May import: anything in the engine: it is its top."""
