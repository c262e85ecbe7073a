"""The files `uwf init` writes, per template: a workflow, its canned answers for `uwf-script` (the
offline agent), python agents where the template has them, a README and a test."""

REVIEW_LOOP = """\
name: review-loop
description: a writer and a reviewer until the reviewer approves
maxSteps: 12
roles:
  writer:
    description: writes or revises the text
    goal: a careful technical writer
    procedure: write the text the prompt asks for; on a second round, address the review
    output: the text, under the frontmatter
    meta:
      type: object
      properties: {summary: {type: string}}
      required: [summary]
  reviewer:
    description: reviews the text
    goal: a demanding editor
    procedure: read the last text and decide
    output: the review
    meta:
      type: object
      properties: {$status: {enum: [approved, changes]}, comments: {type: string}}
      required: [$status]
graph:
  $START: [{role: writer, condition: null}]
  writer: [{role: reviewer, condition: null}]
  reviewer: {approved: $END, changes: writer}
"""

REVIEW_LOOP_SCRIPT = """\
# Canned answers for `uwf-script`: the n-th run of a role gets its n-th answer.
writer:
  - output: {summary: A first draft.}
    body: The first draft of the text.
  - output: {summary: "The draft, revised as the review asked."}
    body: The text, shorter and clearer.
reviewer:
  - output: {$status: changes, comments: Make it shorter.}
    body: Too long.
  - output: {$status: approved, comments: Good.}
    body: Approved.
"""

SOLVE_ISSUE = """\
name: solve-issue
description: plan, implement and review a change; the reviewer can send it back
maxSteps: 30
roles:
  planner:
    description: plans the change
    goal: a planning agent that turns an issue into concrete steps
    procedure: analyze the issue and write an actionable plan
    output: the plan and its steps
    meta:
      type: object
      properties: {plan: {type: string}, steps: {type: array, items: {type: string}}}
      required: [plan, steps]
  developer:
    description: implements the plan
    goal: a developer who changes the code as planned, tests included
    procedure: implement the plan; on a second round, address the review
    output: the files changed and a summary
    meta:
      type: object
      properties: {filesChanged: {type: array, items: {type: string}}, summary: {type: string}}
      required: [filesChanged, summary]
  reviewer:
    description: reviews the change
    goal: a code reviewer
    procedure: review the change against the plan
    output: approve or not, with comments
    meta:
      type: object
      properties: {approved: {type: boolean}, comments: {type: string}}
      required: [approved, comments]
conditions:
  notApproved:
    description: the reviewer rejected the change
    expression: "steps[-1].output.approved = false"
graph:
  $START: [{role: planner, condition: null}]
  planner: [{role: developer, condition: null}]
  developer: [{role: reviewer, condition: null}]
  reviewer:
    - {role: developer, condition: notApproved, prompt: "The reviewer rejected your change: {{comments}}"}
    - {role: $END, condition: null}
"""

SOLVE_ISSUE_SCRIPT = """\
# Canned answers for `uwf-script`: the n-th run of a role gets its n-th answer.
planner:
  - output: {plan: Validate the input before it reaches the API., steps: [Add a validator, Call it, Test it]}
    body: The plan.
developer:
  - output: {filesChanged: [src/validate.py], summary: Added the validator.}
    body: First round.
  - output: {filesChanged: [src/validate.py, tests/test_validate.py], summary: Added the tests the review asked for.}
    body: Second round.
reviewer:
  - output: {approved: false, comments: Tests are missing.}
    body: Not yet.
  - output: {approved: true, comments: Good.}
    body: Approved.
"""

AGENTS_PY = '''\
"""Python agents for review-loop.yaml: each function answers its role with a dict matching the
role's `meta` schema. Swap the bodies for calls to the model SDK you use."""

from uwf_core.api import PythonContext


def write(ctx: PythonContext) -> dict[str, object]:
    review = ctx.output_of("reviewer")
    if review is None:
        return {"summary": f"A first draft of: {ctx.task}"}
    return {"summary": f"Revised as asked: {review.get('comments', '')}"}


def review(ctx: PythonContext) -> dict[str, object]:
    rounds = sum(1 for step in ctx.steps if step.role == "reviewer")
    if rounds == 0:
        return {"$status": "changes", "comments": "Make it shorter."}
    return {"$status": "approved", "comments": "Good."}
'''

README = """\
# {name}

A uwf workflow project (`uwf init --template {template}`). Run it offline first, then with a
real agent.

```sh
uwf workflow lint {name}.yaml
uwf workflow put {name}.yaml
{setup}
uwf thread start {name} -p "{prompt}"{bindings}   # -> {{"thread": "01...", ...}}
uwf thread run THREAD                              # to the end; then: uwf thread read THREAD
```

With a real agent CLI instead: `uwf setup --agent-preset claude --default-agent claude` (or
`codex`), then start a thread as above. The test runs the workflow offline in a throwaway root
(with pytest, which uwf itself does not install: `pip install pytest`):

```sh
python -m pytest test_{slug}.py
```
"""

SCRIPT_SETUP = 'uwf setup --agent "script=uwf-script --script $PWD/{name}.script.yaml" --default-agent script'
PYTHON_SETUP = 'uwf agent add write --python "$PWD/agents.py:write"\nuwf agent add review --python "$PWD/agents.py:review"'

TEST_SCRIPT = '''\
"""{name} runs to its end offline, with the canned answers of {name}.script.yaml."""

from pathlib import Path

from uwf_core.api import Repo, SetupRequest, apply_setup, put_workflow, run_thread, start_thread, thread_steps

HERE = Path(__file__).resolve().parent


def test_the_workflow_runs_to_its_end(tmp_path):
    repo = Repo.open(str(tmp_path / "root"))
    put_workflow(repo, str(HERE / "{name}.yaml"))
    apply_setup(repo, SetupRequest(agents={{"script": f"uwf-script --script {{HERE / '{name}.script.yaml'}}"}}, default_agent="script"))
    (tmp_path / "work").mkdir()
    thread = start_thread(repo, "{name}", "{prompt}", workspace=str(tmp_path / "work")).thread
    result = run_thread(repo, thread)
    assert result.done and result.reason == "done"
    assert [step.role for step in thread_steps(repo, thread)] == {roles}
'''

TEST_PYTHON = '''\
"""review-loop runs to its end with the python agents of agents.py."""

from pathlib import Path

from uwf_core.api import Config, Repo, put_workflow, run_thread, start_thread, thread_steps
from uwf_core.config.model import AgentConfig

HERE = Path(__file__).resolve().parent


def test_the_workflow_runs_to_its_end(tmp_path):
    repo = Repo.open(str(tmp_path / "root"))
    put_workflow(repo, str(HERE / "review-loop.yaml"))
    agents = {{name: AgentConfig(name, "", (), "python", python=f"{{HERE / 'agents.py'}}:{{name}}") for name in ("write", "review")}}
    repo.save_config(Config(agents=agents))
    (tmp_path / "work").mkdir()
    thread = start_thread(repo, "review-loop", "{prompt}", workspace=str(tmp_path / "work"),
                          agents={{"writer": "write", "reviewer": "review"}}).thread
    result = run_thread(repo, thread)
    assert result.done and result.reason == "done"
    assert [step.role for step in thread_steps(repo, thread)] == {roles}
'''
