"""Bundles: threads and every node they reach, in one file, to share a run in a bug report,
archive it, or move it to another root (any backend) with every hash kept.

The file is a tar archive compressed with gzip, with a fixed layout:

    uwf-bundle/manifest.json         what the bundle holds (below), JSON, keys sorted
    uwf-bundle/nodes/<HASH>          one per node: its stored bytes, the CBOR envelope
                                     {type, payload, timestamp} its hash was computed over

The manifest: `{"format": "uwf-bundle", "version": 1, "createdBy": "uwf X.Y.Z", "threads":
[{thread, head, workflow, workflowName, state: active|archived, reason}], "workflows": [{name,
hash, source}], "nodes": [every node's hash, sorted]}`. The nodes are everything reachable from
the threads' heads (each chain back to its StartNode, the StartNodes it resumes, so a fork's
shared history with it; outputs, details, prompts, answers, sub-workflow children), the
workflows with their sources, and the schema of every node, down to the meta-schema.

Export is deterministic: entries sorted, every tar header fixed (mtime 0, uid/gid 0, mode 0644),
gzip without a name or time; the same threads of the same root give the same bytes.

Import checks everything before it writes anything: the layout, the manifest, every node's
bytes against its name (a tampered node is refused, named), every payload against its schema,
every reference. Then the new nodes are written in one batch, unknown workflow names are
registered, and each thread is registered as the manifest says (active, or archived with its
reason). A thread id the root already has is never changed: with the same head it is already
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

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from ..repo import Repo

FORMAT = "uwf-bundle"
VERSION = 1
PREFIX = "uwf-bundle/"
MANIFEST = PREFIX + "manifest.json"
NODES = PREFIX + "nodes/"
MAX_MEMBER_BYTES = 256 * 1024 * 1024  # far above any node uwf writes (an answer is at most 8,000,000 characters)
MAX_MEMBERS = 5_000_000

ACTIVE = "active"
ARCHIVED = "archived"


class BundleError(UwfError):
    """A bundle that cannot be read or must be refused; nothing was imported."""


@record(frozen=True)
class BundledThread:
    thread: str
    head: str
    workflow: str
    workflow_name: str
    state: str  # ACTIVE or ARCHIVED
    reason: str | None = None  # why it was archived

    def to_json(self) -> dict:
        return {
            "thread": self.thread,
            "head": self.head,
            "workflow": self.workflow,
            "workflowName": self.workflow_name,
            "state": self.state,
            "reason": self.reason,
        }


@record(frozen=True)
class ExportReport:
    path: str
    threads: tuple[BundledThread, ...]
    nodes: int
    bytes: int

    def to_json(self) -> dict:
        return {"file": self.path, "threads": [item.to_json() for item in self.threads], "nodes": self.nodes, "bytes": self.bytes}


@record(frozen=True)
class ImportedThread:
    thread: str
    head: str
    state: str  # as the manifest says
    status: str  # "added", "present" (already there with this head) or "conflict" (there with another head: kept)
    existing_head: str | None = None  # the root's head for a conflict

    def to_json(self) -> dict:
        data = {"thread": self.thread, "head": self.head, "state": self.state, "status": self.status}
        if self.existing_head:
            data["existingHead"] = self.existing_head
        return data


@record(frozen=True)
class ImportReport:
    path: str
    nodes: int  # in the bundle
    written: int  # new to this root
    threads: tuple[ImportedThread, ...]
    workflows: dict[str, str] = field(default_factory=dict)  # name -> "registered", "present" or "kept" (the root's name points elsewhere)
    created_by: str | None = None

    def to_json(self) -> dict:
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
        bundled[info.thread] = BundledThread(info.thread, info.head, info.workflow, workflow.name, state, info.reason)
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


def _workflows(repo: Repo, names: dict[str, str]) -> list[dict]:
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


def read_bundle(path: str) -> tuple[dict, dict[str, bytes]]:
    """(manifest, node bytes by hash) of a bundle file, its layout checked; nothing verified yet."""
    import tarfile

    where = f"bundle {path}"
    try:
        tar = tarfile.open(path, mode="r:*")
    except FileNotFoundError:
        raise NotFoundError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise BundleError(f"{where} is a directory") from None
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BundleError(f"{where} is not a uwf bundle (a tar.gz file): {exc}") from None
    manifest_bytes = None
    nodes: dict[str, bytes] = {}
    try:
        with tar:
            for count, member in enumerate(tar):
                if count >= MAX_MEMBERS:
                    raise BundleError(f"{where} holds more than {MAX_MEMBERS:,} entries")
                name = member.name
                if not member.isfile():
                    raise BundleError(f"{where}: unexpected entry {name!r} (a bundle holds only files: {MANIFEST}, {NODES}<HASH>)")
                if member.size > MAX_MEMBER_BYTES:
                    raise BundleError(f"{where}: entry {name!r} is larger than {MAX_MEMBER_BYTES // (1024 * 1024)} MiB")
                if name == MANIFEST:
                    if manifest_bytes is not None:
                        raise BundleError(f"{where} holds two manifests")
                    manifest_bytes = _read_member(tar, member, where)
                elif name.startswith(NODES) and is_cas_ref(name[len(NODES):]):
                    hash_ = name[len(NODES):]
                    if hash_ in nodes:
                        raise BundleError(f"{where} holds node {hash_} twice")
                    nodes[hash_] = _read_member(tar, member, where)
                else:
                    raise BundleError(f"{where}: unexpected entry {name!r} (a bundle holds only {MANIFEST} and {NODES}<HASH>)")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BundleError(f"{where} is damaged: {exc}") from None
    if manifest_bytes is None:
        raise BundleError(f"{where} has no {MANIFEST}: not a uwf bundle")
    try:
        manifest = json.loads(manifest_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BundleError(f"{where}: {MANIFEST} is not JSON ({exc})") from None
    return _check_manifest(manifest, nodes, where), nodes


def _read_member(tar, member, where: str) -> bytes:
    handle = tar.extractfile(member)
    if handle is None:
        raise BundleError(f"{where}: entry {member.name!r} cannot be read")
    data = handle.read()
    if len(data) != member.size:
        raise BundleError(f"{where}: entry {member.name!r} is truncated")
    return data


def _check_manifest(manifest: object, nodes: dict[str, bytes], where: str) -> dict:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(f"{where}: the manifest is not a uwf bundle's (format {FORMAT!r})")
    if manifest.get("version") != VERSION:
        raise BundleError(f"{where} is bundle version {manifest.get('version')!r}; this uwf reads version {VERSION}")
    listed = manifest.get("nodes")
    if not isinstance(listed, list) or not all(isinstance(hash_, str) for hash_ in listed):
        raise BundleError(f"{where}: the manifest's nodes must be a list of hashes")
    missing = sorted(set(listed) - set(nodes))
    if missing:
        raise BundleError(f"{where}: node {missing[0]} is listed in the manifest but not in the bundle")
    extra = sorted(set(nodes) - set(listed))
    if extra:
        raise BundleError(f"{where}: node {extra[0]} is in the bundle but not listed in the manifest")
    threads = manifest.get("threads")
    if not isinstance(threads, list) or not threads:
        raise BundleError(f"{where}: the manifest names no threads")
    from ..encoding.ids import is_ulid

    for item in threads:
        if not isinstance(item, dict) or not is_ulid(str(item.get("thread"))) or not is_cas_ref(str(item.get("head"))):
            raise BundleError(f"{where}: a manifest thread must have a thread id and a head hash, got {str(item)[:120]}")
        if item.get("state") not in (ACTIVE, ARCHIVED):
            raise BundleError(f"{where}: thread {item['thread']} has state {item.get('state')!r}, not 'active' or 'archived'")
    workflows = manifest.get("workflows") or []
    if not isinstance(workflows, list) or not all(isinstance(item, dict) and isinstance(item.get("name"), str) and is_cas_ref(str(item.get("hash"))) for item in workflows):
        raise BundleError(f"{where}: the manifest's workflows must be a list of {{name, hash}}")
    return manifest


def verify_bundle(repo: Repo, path: str, manifest: dict, nodes: dict[str, bytes]) -> dict[str, object]:
    """Every node's bytes against its name, its payload against its schema, its references and
    the threads' heads: the decoded nodes (hash -> Node), or a BundleError naming what is wrong."""
    from ..store.verify import NodesRefused, verify_nodes
    from .nodes import START_TYPES, STEP_TYPES

    where = f"bundle {path}"
    store = repo.nodes
    try:
        decoded = verify_nodes(store, {hash_: nodes[hash_] for hash_ in sorted(nodes)}, "in the bundle")
    except NodesRefused as exc:
        raise BundleError(f"{where} was refused, nothing was imported: {exc.message}") from None
    for item in manifest["threads"]:
        head = item["head"]
        node = decoded.get(head)
        if node is None and store.has(head):
            node = store.get(head)
        if node is None:
            raise BundleError(f"{where} was refused, nothing was imported: thread {item['thread']}'s head {head} is not in the bundle")
        if node.type not in STEP_TYPES and node.type not in START_TYPES:
            raise BundleError(f"{where} was refused, nothing was imported: thread {item['thread']}'s head {head} is not a StartNode or StepNode")
    return decoded


def import_bundle(repo: Repo, path: str) -> ImportReport:
    """Verify the bundle whole, then add its nodes, workflow names and threads to the root."""
    manifest, nodes = read_bundle(path)
    decoded = verify_bundle(repo, path, manifest, nodes)
    heads = repo.threads.heads()  # a damaged threads.yaml, history or registry is refused before any write
    archived = {record.thread: record for record in repo.threads.history()}
    registry = repo.registry.entries()
    own_dirs = _own_directories(repo, manifest, decoded)  # refused before any write when there is nowhere to put them
    backend_nodes = repo.nodes.nodes
    new = [hash_ for hash_ in sorted(nodes) if not backend_nodes.exists(hash_)]
    if new:
        with backend_nodes.batch():
            for hash_ in new:
                backend_nodes.write(hash_, decoded[hash_].type, nodes[hash_])
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


def _own_directories(repo: Repo, manifest: dict, decoded: dict) -> dict[str, str]:
    """A directory of its own for each imported thread with files: the StartNode's workspace is
    another host's (or another thread's) directory. Its files are restored there when it first
    steps or resumes (thread/files.py)."""
    from .files import workspaces_dir

    with_files = [item["thread"] for item in manifest["threads"] if isinstance(getattr(decoded.get(item["head"]), "payload", None), dict)
                  and decoded[item["head"]].payload.get("files")]
    if not with_files:
        return {}
    place = workspaces_dir(repo)
    return {thread: os.path.join(place, thread) for thread in with_files}


def _register(repo: Repo, item: dict, heads: dict[str, str], archived: dict) -> ImportedThread:
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
            repo.threads.archive(thread, item.get("workflow") if is_cas_ref(str(item.get("workflow"))) else None, item.get("reason") or "done", expected=head)
    return ImportedThread(thread, head, state, "added")
