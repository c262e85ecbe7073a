"""Workflow registration and lookup: YAML → lint → CAS → registry.

The public functions here are what `uwf workflow ...` and the TUI call.
"""

from __future__ import annotations

from ..encoding.records import record, replace

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..encoding.ids import is_cas_ref
from ..errors import NotFoundError, UwfError
from ..store.builtin_schemas import (
    BUILTIN_HASHES,
    WORKFLOW_TYPES,
    WORKFLOW_WITH_BUDGET,
    WORKFLOW_WITH_LOCATIONS,
    WORKFLOW_WITH_MAPS,
    WORKFLOW_WITH_SUPERVISOR,
    WORKFLOW_WITH_WORKSPACE,
)
from ..store.cas import CasStore
from .model import Workflow

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping

    from ..repo import Repo
    from .builder import WorkflowSpec
    from ..store.registry_model import RegistryEntry
    from .draft import Draft


@record(frozen=True)
class PutResult:
    """A workflow stored: its name and hash, whether the name moved to it, and the lint's warnings."""

    name: str
    hash: str
    changed: bool  # False when the name already pointed at this hash
    warnings: list[str]


def lint_file(path: str) -> Draft:
    """Parse and lint a workflow file without storing anything (a workflow_lint.Draft)."""
    from .lint import build_draft
    from .yaml_doc import read_yaml_document

    return build_draft(read_yaml_document(path))


def lint_text(text: str, source: str = "<workflow>") -> Draft:
    """As lint_file, for YAML text (a workflow built in code, or sent by an MCP client);
    `source` names it in messages."""
    from .lint import build_draft
    from .yaml_doc import parse_yaml_document

    return build_draft(parse_yaml_document(text, source))


def put_workflow(repo: Repo, workflow: str | os.PathLike[str] | Mapping[str, object] | WorkflowSpec) -> PutResult:
    """Register a workflow: a file's path, YAML text (a string with a line break), a mapping as
    the YAML would load, or a `WorkflowSpec` built in code. Every check runs before the first
    write — the same as `uwf workflow put`'s, each problem with its field — so a refused
    workflow leaves the store exactly as it was."""
    return put_draft(repo, lint_workflow(workflow))


def lint_workflow(workflow: str | os.PathLike[str] | Mapping[str, object] | WorkflowSpec) -> Draft:
    """Every problem and warning of a workflow in any form `put_workflow` takes; nothing stored."""
    import os

    if isinstance(workflow, str) and "\n" in workflow:
        return lint_text(workflow)
    if isinstance(workflow, (str, os.PathLike)):
        return lint_file(os.fspath(workflow))
    if isinstance(workflow, dict):
        return lint_text(_yaml_of(workflow), f"<workflow {workflow.get('name', 'mapping')}>")
    from .builder import WorkflowSpec, in_spec_words  # only a program that built one pays for the import

    if isinstance(workflow, WorkflowSpec):
        return in_spec_words(lint_text(_yaml_of(workflow.to_dict()), f"<workflow {workflow.name}>"), workflow.name)
    raise UwfError(f"a workflow is a file's path, YAML text, a mapping or a WorkflowSpec, not a {type(workflow).__name__}")


def _yaml_of(data: Mapping[str, object]) -> str:
    """A mapping as YAML the lint reads back (and shows lines of): what a file would say."""
    import yaml

    try:
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
    except yaml.YAMLError as exc:
        raise UwfError(f"the workflow holds a value YAML cannot write: {exc}") from None


def put_workflow_text(repo: Repo, text: str, source: str = "<workflow>") -> PutResult:
    """Register a workflow from YAML text, as put_workflow does a file."""
    return put_draft(repo, lint_text(text, source))


def put_draft(repo: Repo, draft: Draft) -> PutResult:
    draft.raise_first_error()
    repo.registry.entries()  # a damaged registry is refused before anything is written
    _check_map_workflows(repo, draft)
    with repo.backend.publishing():  # gc sweeps nothing of it before the name holds it
        store = repo.nodes
        store.ensure_builtins()
        metas = {role: store.put_schema(schema, where=f"roles.{role}.meta") for role, schema in draft.schemas.items()}
        workflow = draft.workflow
        assert workflow is not None  # a draft with no errors has one
        roles = {name: replace(role, meta=metas[name]) for name, role in workflow.roles.items()}
        stored = replace(workflow, roles=roles)
        type_hash = BUILTIN_HASHES["workflow"]
        if stored.maps:
            type_hash = store.put_schema(WORKFLOW_WITH_MAPS)
        elif stored.supervisor_interval is not None:
            type_hash = store.put_schema(WORKFLOW_WITH_SUPERVISOR)
        elif not stored.snapshot:
            type_hash = store.put_schema(WORKFLOW_WITH_WORKSPACE)
        elif stored.has_budget:
            type_hash = store.put_schema(WORKFLOW_WITH_BUDGET)
        elif stored.names_locations:
            type_hash = store.put_schema(WORKFLOW_WITH_LOCATIONS)
        hash_ = store.put(type_hash, stored.to_payload(), what="workflow")
        source = store.put(BUILTIN_HASHES["content"], draft.document.text, what="workflow source")
        changed = repo.registry.register(workflow.name, hash_, source)
    return PutResult(workflow.name, hash_, changed, [p.format(draft.document) for p in draft.warnings])


def _check_map_workflows(repo: Repo, draft: Draft) -> None:
    """A map's children run a registered workflow, and no chain of maps leads back to the one
    being put (names are resolved when a map runs, so a cycle is refused here, where it forms)."""
    from .draft import Problem

    workflow = draft.workflow
    assert workflow is not None  # put_draft raised every error first
    for role in workflow.roles.values():
        if role.map is None:
            continue
        where = ("roles", role.name, "map", "workflow")
        try:
            path = _maps_back_to(repo, workflow.name, role.map.workflow, [workflow.name])
        except NotFoundError as exc:
            draft.problems.append(Problem(where, f"{exc.message} (put it first)"))
            continue
        if path:
            draft.problems.append(Problem(where, f"maps would never end: {' → '.join(path)}"))
    draft.raise_first_error()


def _maps_back_to(repo: Repo, name: str, child: str, path: list[str]) -> list[str] | None:
    """The chain of map workflows from `child` back to `name`, if there is one."""
    if child == name:
        return [*path, child]
    definition = load_workflow(repo, child)
    for role in definition.roles.values():
        if role.map is not None and role.map.workflow not in path[1:] + [child]:
            found = _maps_back_to(repo, name, role.map.workflow, [*path, child])
            if found:
                return found
    return None


def list_workflows(repo: Repo) -> list[RegistryEntry]:
    """The registered workflows, sorted by name so a listing reads the same on every backend."""
    return sorted(repo.registry.entries().values(), key=lambda entry: entry.name)


def resolve_workflow_hash(repo: Repo, name_or_hash: str) -> str:
    """A registry name, else a workflow node's hash or unambiguous prefix."""
    entry = repo.registry.entries().get(name_or_hash)
    if entry is not None:
        return entry.hash
    store = repo.nodes
    try:
        hash_ = store.resolve(name_or_hash)
    except UwfError:
        raise NotFoundError(f"no workflow named '{name_or_hash}' (and no workflow node with that hash)") from None
    node = store.get(hash_)
    if node.type not in WORKFLOW_TYPES:
        raise NotFoundError(f"{hash_} is not a workflow node")
    return hash_


def load_workflow(repo: Repo, name_or_hash: str) -> Workflow:
    """A workflow by registered name or by hash (an unambiguous prefix will do): a thread pins a
    hash, so an old version stays loadable after its name moves on."""
    return workflow_of(repo, resolve_workflow_hash(repo, name_or_hash))


def workflow_of(repo: Repo, hash_: str) -> Workflow:
    """The workflow stored at `hash_`, decoded once per Repo."""
    workflow = repo.workflows.get(hash_)
    if workflow is None:
        workflow = repo.workflows[hash_] = workflow_from_node(repo.nodes, hash_)
    return workflow


def workflow_from_node(store: CasStore, hash_: str) -> Workflow:
    """The workflow at `hash_`, with what its conditions read in the old way of $first / $last
    found once, not at every step it routes."""
    from .old_reads import stored_old_reads

    node = store.get(hash_)
    if node.type not in WORKFLOW_TYPES:
        raise NotFoundError(f"{hash_} is not a workflow node")
    workflow = Workflow.from_payload(node.payload, hash_)
    old = stored_old_reads(workflow, lambda role: store.schema(workflow.roles[role].meta))
    return replace(workflow, old_reads=tuple(old)) if old else workflow


def workflow_history(repo: Repo, name: str) -> RegistryEntry:
    """A name's current version and its earlier ones: what `rollback_workflow` can go back to."""
    entry = repo.registry.entries().get(name)
    if entry is None:
        raise NotFoundError(f"no workflow named '{name}'")
    return entry


def rollback_workflow(repo: Repo, name: str, hash_prefix: str | None = None) -> RegistryEntry:
    """Make an earlier version current again (the newest without `hash_prefix`); the current one
    goes to the history, so a rollback can itself be rolled back."""
    return repo.registry.rollback(name, hash_prefix)


def workflow_source(repo: Repo, name_or_hash: str) -> str:
    """The YAML the workflow was registered from; regenerated from the node if none was kept."""
    store = repo.nodes
    hash_ = resolve_workflow_hash(repo, name_or_hash)
    for entry in repo.registry.entries().values():
        for version in entry.versions():
            if version.hash == hash_ and version.source and is_cas_ref(version.source) and store.has(version.source):
                text = store.payload(version.source)
                if isinstance(text, str):
                    return text
    return _regenerated_yaml(store, workflow_of(repo, hash_))


def _regenerated_yaml(store: CasStore, workflow: Workflow) -> str:
    import yaml

    payload = workflow.to_payload()
    for name, role in payload["roles"].items():
        schema = dict(store.schema(role["meta"]))
        role["meta"] = schema
    return "# regenerated from the stored workflow node (the original file was not kept)\n" + yaml.safe_dump(
        payload, sort_keys=False, allow_unicode=True
    )
