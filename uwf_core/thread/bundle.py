"""Bundles: threads and every node they reach, in one file, to share a run in a bug report,
archive it, or move it to another root (any backend) with every hash kept.

The file is a tar archive compressed with gzip, with a fixed layout:

    uwf-bundle/manifest.json         what the bundle holds (below), JSON, keys sorted
    uwf-bundle/nodes/<HASH>          one per node: its stored bytes, the CBOR envelope
                                     {type, payload, timestamp} its hash was computed over

The manifest: `{"format": "uwf-bundle", "version": 1, "createdBy": "uwf X.Y.Z", "threads":
[{thread, head, workflow, workflowName, state: active|archived, reason, summary?}], "workflows": [{name,
hash, source}], "nodes": [every node's hash, sorted]}`. The nodes are everything reachable from
the threads' heads (each chain back to its StartNode, the StartNodes it resumes, so a fork's
shared history with it; outputs, details, prompts, answers, sub-workflow children), the
workflows with their sources, and the schema of every node, down to the meta-schema.

Export is deterministic: entries sorted, every tar header fixed (mtime 0, uid/gid 0, mode 0644),
gzip without a name or time; the same threads of the same root give the same bytes.

Import checks everything before it writes anything: the layout, the manifest, every node's
bytes against its name (a tampered node is refused, named), every payload against its schema,
every reference. The file is read as a stream under limits of size, count, expansion,
nesting and items per node, its nodes held in a temporary file in the root's scratch space
rather than in memory (bundle_read.py). Then the
new nodes are written in one batch, unknown workflow names are registered, and each thread is
registered as the manifest says (active, or archived with its reason). A thread id the root already has is never changed: with the same head it is already
there (importing twice changes nothing); with another head it is reported as a conflict and
its bundled head stays in the root as nodes, for `uwf thread fork HEAD`.
"""

from __future__ import annotations

import io
import json
import os

from ..encoding.ids import is_cas_ref
from ..encoding.records import field, record
from ..errors import NotFoundError, UwfError
from .bundle_format import FORMAT, MANIFEST, NODES, VERSION, BundleError
from .bundle_read import SpilledNodes, read_bundle

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any

    from ..repo import Repo
    from ..store.base import NodeStore
    from ..store.cas import CasStore
    from ..store.records import ArchivedThread

ACTIVE = "active"
ARCHIVED = "archived"


@record(frozen=True)
class BundledThread:
    thread: str
    head: str
    workflow: str
    workflow_name: str
    state: str  # ACTIVE or ARCHIVED
    reason: str | None = None  # why it was archived
    summary: str | None = None  # its archive record's summary (the summarizer's, or the supervisor's kill)

    def to_json(self) -> dict[str, Any]:
        data = {
            "thread": self.thread,
            "head": self.head,
            "workflow": self.workflow,
            "workflowName": self.workflow_name,
            "state": self.state,
            "reason": self.reason,
        }
        if self.summary is not None:
            data["summary"] = self.summary
        return data


@record(frozen=True)
class ExportReport:
    """What `export_bundle` wrote: the CLI's summary and its --json."""

    path: str
    threads: tuple[BundledThread, ...]
    nodes: int
    bytes: int

    def to_json(self) -> dict[str, Any]:
        return {"file": self.path, "threads": [item.to_json() for item in self.threads], "nodes": self.nodes, "bytes": self.bytes}


@record(frozen=True)
class ImportedThread:
    thread: str
    head: str
    state: str  # as the manifest says
    status: str  # "added", "present" (already there with this head) or "conflict" (there with another head: kept)
    existing_head: str | None = None  # the root's head for a conflict

    def to_json(self) -> dict[str, Any]:
        data = {"thread": self.thread, "head": self.head, "state": self.state, "status": self.status}
        if self.existing_head:
            data["existingHead"] = self.existing_head
        return data


@record(frozen=True)
class ImportReport:
    """What `import_bundle` wrote and what this root held already (`workflows` says which names it kept)."""

    path: str
    nodes: int  # in the bundle
    written: int  # new to this root
    threads: tuple[ImportedThread, ...]
    workflows: dict[str, str] = field(default_factory=dict)  # name -> "registered", "present" or "kept" (the root's name points elsewhere)
    created_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.path,
            "createdBy": self.created_by,
            "nodes": self.nodes,
            "written": self.written,
            "threads": [item.to_json() for item in self.threads],
            "workflows": self.workflows,
        }


# -- export ----------------------------------------------------------------------------------------


def export_bundle(repo: Repo, threads: list[str], path: str) -> ExportReport:
    """Write the threads and every node they reach to `path` (replaced atomically)."""
    from ..store.files import atomic_write
    from ..store.gc import mark
    from ..version import __version__
    from ..workflow.ops import workflow_of
    from .ops import thread_info

    if not threads:
        raise UwfError("name at least one thread to export")
    store = repo.nodes
    bundled: dict[str, BundledThread] = {}
    for text in threads:
        info = thread_info(repo, text)
        if info.problem:
            raise UwfError(f"thread {info.thread} cannot be exported: {info.problem}")
        workflow = workflow_of(repo, info.workflow)
        state = ACTIVE if info.active else ARCHIVED
        bundled[info.thread] = BundledThread(info.thread, info.head, info.workflow, workflow.name, state, info.reason, info.summary)
    workflows = _workflows(repo, {item.workflow: item.workflow_name for item in bundled.values()})
    roots = [item.head for item in bundled.values()] + [entry["hash"] for entry in workflows]
    roots += [entry["source"] for entry in workflows if entry.get("source")]
    marked, missing = mark(store, roots)
    if missing:
        raise UwfError(f"cannot export: node {missing[0]}, which the threads need, is not in {store.nodes.location} (`uwf cas fsck` names what is damaged)")
    hashes = sorted(marked)
    entries = []
    for hash_ in hashes:
        store.get(hash_)  # verified: a corrupt node is refused, never bundled
        data = store.nodes.read(hash_)
        if data is None:
            raise NotFoundError(f"cannot export: node {hash_} disappeared while the bundle was written")
        entries.append((NODES + hash_, data))
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "createdBy": f"uwf {__version__}",
        "threads": [item.to_json() for item in sorted(bundled.values(), key=lambda item: item.thread)],
        "workflows": workflows,
        "nodes": hashes,
    }
    text = json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    archive = _tar_gz([(MANIFEST, text.encode("utf-8")), *entries])
    target = os.path.abspath(path)
    if os.path.isdir(target):
        raise UwfError(f"{path} is a directory: give the bundle's file name (-o FILE)")
    try:
        atomic_write(target, archive, mode=0o644)
    except OSError as exc:
        raise UwfError(f"cannot write {path}: {exc.strerror}") from None
    return ExportReport(target, tuple(sorted(bundled.values(), key=lambda item: item.thread)), len(hashes), len(archive))


def _workflows(repo: Repo, names: dict[str, str]) -> list[dict[str, Any]]:
    """Each workflow the threads run, with its name and the source it was registered from (if kept)."""
    sources: dict[str, str] = {}
    for entry in repo.registry.entries().values():
        for version in entry.versions():
            if version.hash in names and version.source and is_cas_ref(version.source) and repo.nodes.has(version.source):
                sources.setdefault(version.hash, version.source)
    result = []
    for hash_, name in sorted(names.items(), key=lambda item: (item[1], item[0])):
        item = {"name": name, "hash": hash_}
        if hash_ in sources:
            item["source"] = sources[hash_]
        result.append(item)
    return result


def _tar_gz(entries: list[tuple[str, bytes]]) -> bytes:
    """A gzip-compressed tar of `entries`, byte for byte the same for the same entries."""
    import gzip
    import tarfile

    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as compressed:
        with tarfile.open(fileobj=compressed, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for name, data in entries:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                info.mtime = 0
                info.mode = 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


# -- import ----------------------------------------------------------------------------------------


def verify_bundle(repo: Repo, path: str, manifest: dict[str, Any], nodes: SpilledNodes) -> CasStore:
    """Every node's payload against its schema, its references, and the threads' heads (the
    bytes were checked against their names as they were read): the root's CasStore with the
    bundle's nodes laid over it, or a BundleError naming what is wrong."""
    from ..store.cas import CasStore
    from ..store.verify import NodesRefused, verify_nodes
    from .nodes import START_TYPES, STEP_TYPES

    where = f"bundle {path}"
    overlay = CasStore(_Overlay(nodes, repo.nodes.nodes))  # type: ignore[arg-type]  # read-only: reads and checks need read and exists alone
    try:
        for hash_ in nodes:  # one at a time, read back from the temporary file: memory holds one node and the schemas
            # Decoded without a budget, but these bytes passed MAX_NODE_ITEMS as they were read.
            data = nodes.read(hash_)
            assert data is not None  # one of its own
            verify_nodes(overlay, {hash_: data}, "in the bundle")
    except NodesRefused as exc:
        raise BundleError(f"{where} was refused, nothing was imported: {exc.message}") from None
    for item in manifest["threads"]:
        head = item["head"]
        if not overlay.has(head):
            raise BundleError(f"{where} was refused, nothing was imported: thread {item['thread']}'s head {head} is not in the bundle")
        if overlay.get(head).type not in STEP_TYPES | START_TYPES:
            raise BundleError(f"{where} was refused, nothing was imported: thread {item['thread']}'s head {head} is not a StartNode or StepNode")
    from ..store.builtin_schemas import WORKFLOW_TYPES

    for item in manifest.get("workflows") or []:
        if not overlay.has(item["hash"]) or overlay.get(item["hash"]).type not in WORKFLOW_TYPES:
            raise BundleError(f"{where} was refused, nothing was imported: workflow {item['name']!r} is {item['hash']}, not a workflow node of the bundle")
    return overlay


class _Overlay:
    """The bundle's nodes over the root's, read-only: what a node refers to, or the schema it
    names, may be in either."""

    def __init__(self, bundled: SpilledNodes, below: NodeStore) -> None:
        self.bundled = bundled
        self.below = below
        self.location = below.location

    def read(self, hash_: str) -> bytes | None:
        data = self.bundled.read(hash_)
        return data if data is not None else self.below.read(hash_)

    def exists(self, hash_: str) -> bool:
        return hash_ in self.bundled or self.below.exists(hash_)


def import_bundle(repo: Repo, path: str) -> ImportReport:
    """Verify the bundle whole, then add its nodes, workflow names and threads to the root."""
    manifest, nodes = read_bundle(path, repo.backend.scratch_dir)
    with repo.backend.publishing():  # gc sweeps none of its nodes before its threads and names hold them
        with nodes:
            overlay = verify_bundle(repo, path, manifest, nodes)
            heads = repo.threads.heads()  # a damaged threads.yaml, history or registry is refused before any write
            archived = {record.thread: record for record in repo.threads.history()}
            registry = repo.registry.entries()
            own_dirs = _own_directories(repo, manifest, nodes, overlay)  # refused before any write when there is nowhere to put them
            backend_nodes = repo.nodes.nodes
            new = [hash_ for hash_ in sorted(nodes) if not backend_nodes.exists(hash_)]
            if new:
                with backend_nodes.batch():
                    for hash_ in new:
                        data = nodes.read(hash_)
                        assert data is not None  # one of its own
                        backend_nodes.write(hash_, nodes.type_of(hash_), data)
        workflows = {}
        for item in manifest.get("workflows") or []:
            name, hash_ = item["name"], item["hash"]
            known = registry.get(name)
            if known is None:
                source = item.get("source") if is_cas_ref(str(item.get("source"))) and repo.nodes.has(str(item.get("source"))) else None
                repo.registry.register(name, hash_, source)
                workflows[name] = "registered"
            else:
                workflows[name] = "present" if known.hash == hash_ else "kept"
        threads = []
        for item in manifest["threads"]:
            if item["thread"] in own_dirs and item["thread"] not in heads and item["thread"] not in archived:
                repo.threads.set_workspace(item["thread"], own_dirs[item["thread"]])
            threads.append(_register(repo, item, heads, archived))
    return ImportReport(os.path.abspath(path), len(nodes), len(new), tuple(threads), workflows, manifest.get("createdBy"))


def _own_directories(repo: Repo, manifest: dict[str, Any], nodes: SpilledNodes, overlay: CasStore) -> dict[str, str]:
    """A directory of its own for each imported thread with files: the StartNode's workspace is
    another host's (or another thread's) directory. Its files are restored there when it first
    steps or resumes (thread/files.py)."""
    from .files import workspaces_dir

    heads = [(item["thread"], overlay.get(item["head"]).payload) for item in manifest["threads"] if item["head"] in nodes]
    with_files = [thread for thread, payload in heads if isinstance(payload, dict) and payload.get("files")]
    if not with_files:
        return {}
    place = workspaces_dir(repo)
    return {thread: os.path.join(place, thread) for thread in with_files}


def _register(repo: Repo, item: dict[str, Any], heads: dict[str, str], archived: dict[str, ArchivedThread]) -> ImportedThread:
    thread, head, state = item["thread"], item["head"], item["state"]
    existing = heads.get(thread)
    if existing is None and thread in archived:
        existing = archived[thread].head
    if existing is not None:
        status = "present" if existing == head else "conflict"
        return ImportedThread(thread, head, state, status, None if status == "present" else existing)
    if state == ACTIVE:
        repo.threads.add(thread, head)
    else:
        with repo.locks.acquire(thread):  # no step can take the thread between its adding and its archiving
            repo.threads.add(thread, head)
            workflow = item.get("workflow") if is_cas_ref(str(item.get("workflow"))) else None
            summary = item.get("summary") if isinstance(item.get("summary"), str) else None
            repo.threads.archive(thread, workflow, item.get("reason") or "done", expected=head, summary=summary)
    return ImportedThread(thread, head, state, "added")
