"""Workflow YAML texts that the lint and the CLI tests both start from."""

BASE = """\
name: demo
description: Demo workflow
roles:
  writer:
    description: Writes
    goal: Write things.
    procedure: Write.
    output: The text.
    meta:
      type: object
      properties:
        text: {type: string}
      required: [text]
  checker:
    description: Checks
    goal: Check things.
    procedure: Check.
    output: A verdict.
    meta:
      type: object
      properties:
        ok: {type: boolean}
      required: [ok]
conditions:
  rejected:
    description: Checker rejected
    expression: "steps[-1].output.ok = false"
graph:
  $START:
    - {role: writer, condition: null}
  writer:
    - {role: checker, condition: null}
  checker:
    - {role: writer, condition: rejected}
    - {role: $END, condition: null}
"""

# The same workflow routed by $status maps.
STATUS_BASE = """\
name: demo-status
description: Routed by status
roles:
  writer:
    description: Writes
    goal: Write things.
    procedure: Write.
    output: The text.
    meta:
      type: object
      properties:
        $status: {type: string, enum: [done]}
        text: {type: string}
      required: [$status, text]
  checker:
    description: Checks
    goal: Check things.
    procedure: Check.
    output: A verdict.
    meta:
      type: object
      properties:
        $status: {type: string, enum: [good, bad]}
      required: [$status]
conditions: {}
graph:
  $START:
    new: writer
  writer:
    done: checker
  checker:
    good: $END
    bad: writer
"""
