"""A one-role workflow that loops until its agent says `done`: the shape every long-run test and
benchmark steps (a no-op agent answers `{"$status": "again", "n": ...}`)."""


def loop_workflow(max_steps: int) -> str:
    return f"""
name: loop
maxSteps: {max_steps}
roles:
  worker:
    description: does nothing
    goal: nothing
    procedure: nothing
    output: nothing
    meta:
      type: object
      properties: {{$status: {{enum: [again, done]}}, n: {{type: integer}}}}
      required: [$status, n]
graph:
  $START: [{{role: worker, condition: null}}]
  worker: {{again: worker, done: $END}}
"""
