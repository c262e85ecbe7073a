"""The step protocol: `<command> [args] <thread> <role>`; the agent writes output, detail and
StepNode itself and prints the StepNode's hash last. uwf verifies it, and that no node it wrote
holds a key: its sandbox hides .env, so its kit cannot redact a key it came across another way."""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ...encoding.ids import is_cas_ref
from ...thread.write import check_step_node
from ..attempt import StepError

if TYPE_CHECKING:
    from ..call import AgentCall


def run(call: AgentCall) -> str:
    from ..contain.watchdog import WATCHDOG

    stage = call.open_stage()
    broker = None
    if stage:
        WATCHDOG.guard_file(stage)  # uwf SIGKILLed: nothing staged is left behind
        broker = call.repo.backend.serve_nodes(stage)  # its reads: the node file itself it never sees
    try:
        return _run(call, stage)
    finally:
        if broker is not None:
            broker.close()
        if stage:
            call.repo.backend.drop_stage(stage)
            WATCHDOG.release_file(stage)


def _run(call: AgentCall, stage: str | None) -> str:
    outcome = call.spawn([*call.resolved.argv, call.info.thread, call.role.name], None)
    lines = [line.strip() for line in outcome.stdout.splitlines() if line.strip()]
    if not lines:
        raise StepError(
            f"agent '{call.resolved.label}' printed nothing; the step protocol expects the new StepNode's hash as the last line of stdout"
        )
    answer = lines[-1]
    hash_ = answer.upper() if is_cas_ref(answer.upper()) else answer
    if stage:
        _take_in(call, stage)
    check_step_node(call.repo.nodes, hash_, call.context, call.role.name, call.role.meta, call.resolved.label)
    if stage:
        _take_in_reuse_entry(call, stage, hash_)
    if not stage:
        refuse_keys(call, hash_)
    return hash_


def _take_in(call: AgentCall, stage: str) -> None:
    """Every node the agent staged, checked whole — its hash, its schema, its references, no key in
    it — then written to the store in one transaction; or none, and the step fails. What else it
    staged (derived data) is uwf's to compute, and is left behind."""
    import json

    from ...store.verify import NodesRefused, verify_nodes

    from ...errors import UwfError

    label = call.resolved.label
    try:
        staged = call.repo.backend.staged(stage)
    except UwfError as exc:
        raise StepError(f"agent '{label}' wrote nodes uwf refuses: {exc.message}; nothing it wrote was kept") from None
    try:
        decoded = verify_nodes(call.repo.nodes, staged, "among the nodes it wrote")
    except NodesRefused as exc:
        raise StepError(f"agent '{label}' wrote a node uwf refuses: {exc.message}; nothing it wrote was kept") from None
    for hash_, node in decoded.items():
        names = call.secrets.found(json.dumps(node.payload, ensure_ascii=False))
        if names:
            raise StepError(
                f"agent '{label}' wrote the value of {', '.join(names)} into node {hash_}: no stored node may hold a key; "
                f"the step is refused and nothing it wrote was kept"
            )
    nodes = call.repo.backend.nodes
    with nodes.batch():
        for hash_, node in decoded.items():
            if not nodes.freshen(hash_):
                nodes.write(hash_, node.type, staged[hash_])


def _take_in_reuse_entry(call: AgentCall, stage: str, step: str) -> None:
    """The kit indexes its answer for memoized replay; uwf keeps that entry only for this step,
    under the key of this call's role and agent entry and the prompt the step's detail names (an
    agent may index nothing else)."""
    from ..reuse.replay import taken_key
    from ..reuse.index import KEY, remember

    staged = call.repo.backend.staged_derived(stage)
    if not any(key.startswith(KEY) and value == step.encode("ascii") for key, value in staged.items()):
        return
    expected = taken_key(call, step)
    if expected is not None and staged.get(KEY + expected) == step.encode("ascii"):
        remember(call.repo.nodes, expected, step)


def refuse_keys(call: AgentCall, step: str) -> None:
    """Refuse the step if a node it brings in holds a key uwf knows (its .env, keys named like
    keys), and remove those nodes and the ones of the step that name them: a key must never stay
    in the store. The walk stops at what the thread held before (its head, that head's history
    entry, its StartNode): those were checked when they came in."""
    import json

    if call.secrets.empty:
        return
    from ...thread.history import KEY as ENTRY_KEY

    store, nodes = call.repo.nodes, call.repo.backend.nodes

    def entry_of(hash_: str) -> list[str]:
        raw = nodes.derived(ENTRY_KEY + hash_)  # the step as later prompts show it: kept beside it
        return [raw.decode("ascii", "replace")] if raw else []

    known = {call.info.head, call.context.start_hash, *entry_of(call.info.head)}
    fresh: dict[str, list[str]] = {}  # a node of the step -> the nodes it names
    queue = [step, *entry_of(step)]
    while queue:
        hash_ = queue.pop()
        if hash_ in fresh or hash_ in known or not store.has(hash_):
            continue
        fresh[hash_] = store.refs(hash_)
        queue.extend(fresh[hash_])
    leaking = {}
    for hash_ in fresh:
        names = call.secrets.found(json.dumps(store.get(hash_).payload, ensure_ascii=False))
        if names:
            leaking[hash_] = names
    if not leaking:
        return
    doomed = set(leaking)
    while True:  # the new nodes that name a doomed one would name a node that is gone
        more = {hash_ for hash_, refs in fresh.items() if hash_ not in doomed and doomed & set(refs)}
        if not more:
            break
        doomed |= more
    nodes.purge(sorted(doomed))
    for hash_ in doomed:
        store.forget(hash_)
    first, names = next(iter(leaking.items()))
    raise StepError(
        f"agent '{call.resolved.label}' wrote the value of {', '.join(names)} into node {first}: no stored node may hold "
        f"a key; the step is refused and the {len(doomed)} node{'s' if len(doomed) != 1 else ''} it wrote with it removed"
    )
