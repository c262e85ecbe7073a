"""Two runs side by side: their common ancestor in the fork tree, then the steps where they differ.

`diff_threads(repo, a, b)` takes threads or nodes (a step, or a StartNode). Chains are immutable
and a fork shares its parent's nodes, so the common ancestor is the newest node both chains
hold; everything before it is the same on both sides. The steps after it are paired by
position (the n-th step of each side after the ancestor), each with its role, agent, output (a
structural diff, key by key), body (a text diff), the routing decision taken after it (and
why), tokens, cost and time. Pure reading: nothing is written.
"""

from __future__ import annotations

from ..encoding.records import record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..encoding.ids import is_ulid
from ..errors import NotFoundError, UwfError
from .context import context_of
from .details import ordered_output, role_schema
from .lineage import chain_nodes
from .model import StepContext, ThreadContext
from .nodes import read_step

if TYPE_CHECKING:
    from typing import Any

    from ..workspace.changes import Change as FileChange

    from ..repo import Repo
    from ..store.records import RunRecord
    from ..workflow.model import Workflow

ADDED = "added"
REMOVED = "removed"
CHANGED = "changed"


@record(frozen=True)
class Change:
    """One difference between two JSON values, at a path like `plan`, `steps[2]` or `a["b c"]`."""

    path: str  # "" for the values themselves
    kind: str  # ADDED (only in b), REMOVED (only in a) or CHANGED
    a: object = None
    b: object = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "kind": self.kind}
        if self.kind != ADDED:
            data["a"] = self.a
        if self.kind != REMOVED:
            data["b"] = self.b
        return data


def structural_diff(a: object, b: object, path: str = "") -> list[Change]:
    """Key-by-key differences from `a` to `b`: mappings by key (a's order, then b's new keys),
    lists by index, anything else by value (true is not 1; 1 is 1.0)."""
    if isinstance(a, dict) and isinstance(b, dict):
        changes: list[Change] = []
        for key in list(a) + [key for key in b if key not in a]:
            where = _join(path, key)
            if key not in b:
                changes.append(Change(where, REMOVED, a[key], None))
            elif key not in a:
                changes.append(Change(where, ADDED, None, b[key]))
            else:
                changes.extend(structural_diff(a[key], b[key], where))
        return changes
    if isinstance(a, list) and isinstance(b, list):
        changes = []
        for index in range(max(len(a), len(b))):
            where = f"{path}[{index}]"
            if index >= len(b):
                changes.append(Change(where, REMOVED, a[index], None))
            elif index >= len(a):
                changes.append(Change(where, ADDED, None, b[index]))
            else:
                changes.extend(structural_diff(a[index], b[index], where))
        return changes
    return [] if _same(a, b) else [Change(path, CHANGED, a, b)]


def _same(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _join(path: str, key: object) -> str:
    text = str(key)
    if text.isidentifier() or (text.startswith("$") and text[1:].isidentifier()):
        return f"{path}.{text}" if path else text
    import json

    return f"{path}[{json.dumps(text, ensure_ascii=False)}]"


def text_diff(a: str, b: str, label_a: str = "a", label_b: str = "b") -> tuple[str, ...]:
    """A unified diff of two texts, line by line (empty when they are equal)."""
    if a == b:
        return ()
    import difflib

    return tuple(line.rstrip("\n") for line in difflib.unified_diff(a.splitlines(), b.splitlines(), label_a, label_b, lineterm=""))


@record(frozen=True)
class Routing:
    """What the moderator decided after a step: the next role (or $END) and why."""

    to: str | None  # a role, "$END", or None when routing failed
    reason: str | None
    end_reason: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"to": self.to, "reason": self.reason, "endReason": self.end_reason, "error": self.error}


@record(frozen=True)
class DiffStep:
    """One side of a pair: a step as the diff shows it."""

    hash: str
    number: int  # its position in its thread, from 1
    role: str
    agent: str
    output: object
    body: str
    instruction: str | None
    routing: Routing
    tokens: int | None  # None: the agent recorded no usage
    cost: float | None  # None: unpriced or unrecorded tokens (see thread/ledger.py)
    duration_ms: int | None
    reused_from: str | None = None
    files: str | None = None  # the tree of the files it left, when its thread keeps snapshots

    def to_json(self) -> dict[str, Any]:
        return {
            "hash": self.hash,
            "number": self.number,
            "role": self.role,
            "agent": self.agent,
            "output": self.output,
            "body": self.body,
            "instruction": self.instruction,
            "routing": self.routing.to_json(),
            "tokens": self.tokens,
            "cost": self.cost,
            "durationMs": self.duration_ms,
            "reusedFrom": self.reused_from,
            **({"files": self.files} if self.files else {}),
        }


@record(frozen=True)
class StepPair:
    """The n-th step after the common ancestor on each side (None where a side has no such step)."""

    number: int  # the steps' position in their threads, from 1
    a: DiffStep | None
    b: DiffStep | None
    output: tuple[Change, ...]  # from a's output to b's (empty when equal or a side is missing)
    body: tuple[str, ...]  # a unified diff of the bodies

    @property
    def same_role(self) -> bool:
        return self.a is not None and self.b is not None and self.a.role == self.b.role

    @property
    def identical(self) -> bool:
        """Both sides are the same step, or steps that say the same (the same output and body) and
        left the same files."""
        return (
            self.a is not None and self.b is not None and not self.output and not self.body and self.same_role
            and self.a.files == self.b.files
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "a": self.a.to_json() if self.a is not None else None,
            "b": self.b.to_json() if self.b is not None else None,
            "sameRole": self.same_role,
            "sameAgent": self.a is not None and self.b is not None and self.a.agent == self.b.agent,
            "output": [change.to_json() for change in self.output],
            "body": list(self.body),
            "routingChanged": self.a is None or self.b is None or self.a.routing.to != self.b.routing.to,
        }


@record(frozen=True)
class DiffSide:
    """What one argument of the diff named: a thread (at its head) or a node."""

    given: str
    thread: str | None
    head: str
    steps: int
    workflow: str
    workflow_name: str
    prompt: str

    def to_json(self) -> dict[str, Any]:
        return {
            "given": self.given,
            "thread": self.thread,
            "head": self.head,
            "steps": self.steps,
            "workflow": self.workflow,
            "name": self.workflow_name,
        }


@record(frozen=True)
class ThreadDiff:
    """Two runs compared: their common ancestor and the steps after it, pair by pair."""

    a: DiffSide
    b: DiffSide
    ancestor: str | None  # the newest node both chains hold (a step or a StartNode); None: unrelated
    ancestor_role: str | None  # its role when it is a step
    shared: int  # steps both have (those up to the ancestor)
    pairs: tuple[StepPair, ...]
    prompt: tuple[str, ...] = ()  # a text diff of the task prompts, when the StartNodes differ
    files: tuple[FileChange, ...] | None = None  # workspace/changes.Change from a's files to b's; None: neither has snapshots
    files_text: tuple[str, ...] = ()  # those changes as unified diffs (sizes for binary files)

    def to_json(self) -> dict[str, Any]:
        return {
            "files": None if self.files is None else [change.to_json() for change in self.files],
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "ancestor": None if self.ancestor is None else {"hash": self.ancestor, "role": self.ancestor_role, "step": self.shared},
            "sharedSteps": self.shared,
            "prompt": list(self.prompt),
            "pairs": [pair.to_json() for pair in self.pairs],
        }


def diff_threads(repo: Repo, a: str, b: str) -> ThreadDiff:
    """Compare two threads (or steps): find their common ancestor, pair the steps after it, and
    their files (the snapshots their heads name)."""
    from ..workspace.changes import unified
    from .timeline import runs_by_step

    side_a, context_a = _side(repo, a)
    side_b, context_b = _side(repo, b)
    steps_a = list(context_a.steps)
    steps_b = list(context_b.steps)
    ours = {node: index for index, node in enumerate(chain_nodes(context_a, steps=steps_a))}
    ancestor = None
    for node in reversed(chain_nodes(context_b, steps=steps_b)):
        if node in ours:
            ancestor = node
            break
    shared = _shared_steps(steps_b, ancestor)
    ancestor_role = next((step.role for step in steps_b if step.hash == ancestor), None)
    pairs = []
    runs = runs_by_step(repo.runs.read())
    for offset in range(max(len(steps_a), len(steps_b)) - shared):
        number = shared + offset + 1
        left = _diff_step(repo, steps_a, number, runs) if number <= len(steps_a) else None
        right = _diff_step(repo, steps_b, number, runs) if number <= len(steps_b) else None
        output = tuple(structural_diff(left.output, right.output)) if left and right else ()
        body = text_diff(left.body, right.body, f"a/{left.hash}", f"b/{right.hash}") if left and right else ()
        pairs.append(StepPair(number, left, right, output, body))
    prompt = () if context_a.start.prompt == context_b.start.prompt else text_diff(context_a.start.prompt, context_b.start.prompt, "a/prompt", "b/prompt")
    files = _file_changes(repo, context_a, context_b)
    files_text = tuple(line for change in files or () for line in unified(repo.nodes, change))
    return ThreadDiff(side_a, side_b, ancestor, ancestor_role, shared, tuple(pairs), prompt, files, files_text)


def _file_changes(repo: Repo, a: ThreadContext, b: ThreadContext) -> tuple[FileChange, ...] | None:
    """The files of a's head against b's (a missing snapshot counts as no files)."""
    from ..workspace.changes import tree_changes
    from .files import files_of

    tree_a, tree_b = files_of(repo.nodes, a.head), files_of(repo.nodes, b.head)
    if tree_a is None and tree_b is None:
        return None
    return tuple(tree_changes(repo.nodes, tree_a, tree_b))


def _side(repo: Repo, text: str) -> tuple[DiffSide, ThreadContext]:
    """A thread id (or unique prefix) at its head, or a node hash (or unique prefix)."""
    from ..workflow.ops import workflow_of
    from .nodes import thread_node
    from .ops import resolve_thread_id, thread_info

    thread = None
    head = None
    wanted = text.strip()
    if is_ulid(wanted.upper()):
        thread = thread_info(repo, wanted)
    else:
        try:
            head = repo.nodes.resolve(wanted)
        except UwfError:
            try:
                thread = thread_info(repo, resolve_thread_id(repo, wanted))
            except NotFoundError:
                raise NotFoundError(f"'{text}' is neither a thread nor a node") from None
    if thread is not None:
        head = thread.head
    assert head is not None  # the thread's, or the node's named
    thread_node(repo.nodes, head)  # a step or a StartNode, else a clear error
    context = context_of(repo, head)
    workflow = workflow_of(repo, context.start.workflow)
    side = DiffSide(text, thread.thread if thread else None, head, len(context.steps), workflow.hash or "", workflow.name, context.start.prompt)
    return side, context


def _shared_steps(steps: list[StepContext], ancestor: str | None) -> int:
    """How many steps lie at or behind the ancestor (a StartNode's are those it resumes)."""
    if ancestor is None:
        return 0
    for index, step in enumerate(steps):
        if step.hash == ancestor:
            return index + 1
    for index, step in enumerate(steps):  # a StartNode: the steps before its first one
        if step.start == ancestor:
            return index
    return len(steps)  # the head's own StartNode, with no step after it


def _diff_step(repo: Repo, steps: list[StepContext], number: int, runs: dict[str, RunRecord]) -> DiffStep:
    from .spend import step_cost
    from .read import step_body

    step = steps[number - 1]
    cost = step_cost(repo, step, number, runs.get(step.hash))
    output = ordered_output(step.output, role_schema(repo, step.start, step.role))
    return DiffStep(
        step.hash, number, step.role, step.agent, output, step_body(repo.nodes, step), step.instruction,
        _routing_after(repo, step), cost.spend.tokens if cost.recorded else None, cost.spend.cost, cost.duration_ms, cost.reused_from,
        read_step(repo.nodes, step.hash).files,
    )


def _routing_after(repo: Repo, step: StepContext) -> Routing:
    """The moderator's decision with this step as the head (what came, or would come, next)."""
    from ..workflow.ops import workflow_of
    from .moderator import evaluate

    try:
        context = context_of(repo, step.hash)
        workflow: Workflow = workflow_of(repo, context.start.workflow)
        decision = evaluate(workflow, context)
    except UwfError as exc:
        return Routing(None, None, None, exc.message)
    return Routing(decision.role, decision.reason, decision.end_reason)
