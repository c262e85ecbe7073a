"""Many steps from one: a `map:` role's children (`map.py`, which a step runs, so below step.py),
and one step by several agents side by side with the pick between them (`side_by_side.py`, which
runs steps, so above it).

May import: map.py, what a step's agent may (call, record, contain/ …); side_by_side.py, the step
transaction and dry_run.py too."""
