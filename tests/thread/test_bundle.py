"""thread/bundle.py below the CLI: the fixed layout, everything import refuses before writing, and
the limits that keep its memory bounded whatever the file holds."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest
from conftest import EXAMPLES

from uwf_core.encoding.cbor import encode
from uwf_core.encoding.ids import xxh64_hash
from uwf_core.store.builtin_schemas import BUILTIN_HASHES
from uwf_core.store.cas import node_hash
from uwf_core.thread import bundle_read
from uwf_core.thread.bundle import MANIFEST, NODES, BundleError, _tar_gz, import_bundle, read_bundle
from uwf_core.thread.bundle_read import MAX_MANIFEST_BYTES, MAX_NODE_BYTES, MAX_NODE_ITEMS

THREAD = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


def envelope(type_hash: str, payload: object) -> tuple[str, bytes]:
    return node_hash(type_hash, payload), encode({"type": type_hash, "payload": payload, "timestamp": 0}, envelope=True)


def manifest(nodes: list[str], head: str) -> bytes:
    data = {
        "format": "uwf-bundle", "version": 1, "createdBy": "test",
        "threads": [{"thread": THREAD, "head": head, "workflow": None, "workflowName": "x", "state": "active", "reason": None}],
        "workflows": [], "nodes": sorted(nodes),
    }
    return json.dumps(data).encode()


def write(tmp_path, entries) -> str:
    path = tmp_path / "b.tar.gz"
    path.write_bytes(_tar_gz(entries))
    return str(path)


def test_the_archive_is_the_same_bytes_for_the_same_entries():
    entries = [(MANIFEST, b"{}"), (NODES + "0" * 13, b"x")]
    assert _tar_gz(entries) == _tar_gz(list(entries))
    with tarfile.open(fileobj=io.BytesIO(_tar_gz(entries))) as tar:
        assert [(m.name, m.mtime, m.uid, m.mode) for m in tar] == [(MANIFEST, 0, 0, 0o644), (NODES + "0" * 13, 0, 0, 0o644)]


@pytest.mark.parametrize(
    "entries, message",
    [
        ([(NODES + "0" * 13, b"x")], "has no uwf-bundle/manifest.json"),
        ([(MANIFEST, b"{}"), ("uwf-bundle/notes.txt", b"hi")], "unexpected entry 'uwf-bundle/notes.txt'"),
        ([(MANIFEST, b"not json")], "manifest.json is not JSON"),
        ([(MANIFEST, b'{"format": "zip"}')], "not a uwf bundle's"),
        ([(MANIFEST, manifest(["0" * 13], "0" * 13))], "node 0000000000000 is listed in the manifest but not in the bundle"),
        ([(MANIFEST, manifest([], "0" * 13)), (NODES + "0" * 13, b"x")], "is in the bundle but not listed"),
    ],
)
def test_layout_and_manifest_are_checked(tmp_path, entries, message):
    with pytest.raises(BundleError, match=message):
        read_bundle(write(tmp_path, entries))


def test_a_directory_entry_is_refused(tmp_path):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        info = tarfile.TarInfo("uwf-bundle/nodes")
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    path = tmp_path / "dir.tar.gz"
    path.write_bytes(out.getvalue())
    with pytest.raises(BundleError, match="a bundle holds only files"):
        read_bundle(str(path))


def test_a_well_hashed_node_that_breaks_its_schema_is_refused_and_nothing_written(root, tmp_path):
    store = root.nodes
    types = store.ensure_builtins()
    before = set(store.all_hashes())
    step_type = BUILTIN_HASHES["step-node"]
    forged, data = envelope(step_type, {"role": "x"})  # a StepNode with none of its links
    path = write(tmp_path, [(MANIFEST, manifest([forged], forged)), (NODES + forged, data)])
    with pytest.raises(BundleError, match=f"node {forged} does not match its schema"):
        import_bundle(root, path)
    assert set(store.all_hashes()) == before and root.threads.heads() == {}
    assert types  # the root had its built-in schemas, and nothing more came


def test_a_node_naming_one_that_is_nowhere_is_refused(root, tmp_path):
    root.nodes.ensure_builtins()
    start_type = BUILTIN_HASHES["start-node"]
    start, data = envelope(start_type, {"workflow": "7" * 13, "prompt": "p"})
    path = write(tmp_path, [(MANIFEST, manifest([start], start)), (NODES + start, data)])
    with pytest.raises(BundleError, match=f"node {start} refers to 7777777777777, which is neither in the bundle nor in this root"):
        import_bundle(root, path)


def test_a_head_that_is_no_thread_node_is_refused(root, tmp_path):
    types = root.nodes.ensure_builtins()
    content, data = envelope(types["content"], "just text")
    path = write(tmp_path, [(MANIFEST, manifest([content], content)), (NODES + content, data)])
    with pytest.raises(BundleError, match="is not a StartNode or StepNode"):
        import_bundle(root, path)


# -- limits: a bundle is read as a stream, each entry checked as it comes -------------------------


def header(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type, info.mode = size, kind, 0o644
    return info.tobuf(format=tarfile.GNU_FORMAT if size >= 1 << 33 else tarfile.USTAR_FORMAT)  # GNU: base-256 sizes


def member(name: str, data: bytes) -> bytes:
    return header(name, len(data)) + data + bytes(-len(data) % 512)


def write_raw(tmp_path, *parts: bytes, name: str = "raw.tar.gz") -> str:
    path = tmp_path / name
    path.write_bytes(gzip.compress(b"".join(parts) + bytes(1024), mtime=0))
    return str(path)


def content_node(text: str) -> tuple[str, bytes]:
    from uwf_core.store.builtin_schemas import BUILTIN_HASHES

    return envelope(BUILTIN_HASHES["content"], text)


@pytest.mark.parametrize(
    "parts, message",
    [
        ([member(MANIFEST, manifest(["0" * 13], "0" * 13)), header(NODES + "0" * 13, MAX_NODE_BYTES + 1)],
         "node 0000000000000 is 268,435,457 bytes, more than the 256 MiB a node may have"),
        ([member(MANIFEST, manifest(["0" * 13], "0" * 13)), header(NODES + "0" * 13, 1 << 40)], "node 0000000000000 is 1,099,511,627,776 bytes"),
        ([header(MANIFEST, MAX_MANIFEST_BYTES + 1)], "manifest.json is 67,108,865 bytes, more than the 64 MiB a manifest may have"),
        ([member(NODES + "0" * 13, b"x"), member(MANIFEST, b"{}")], "has no uwf-bundle/manifest.json as its first entry"),
        ([member(MANIFEST, manifest(["0" * 13], "0" * 13)), member(MANIFEST, b"{}")], "holds two manifests"),
        ([member(MANIFEST, b"{}"), header("uwf-bundle/nodes/x", 0, tarfile.SYMTYPE)], "unexpected entry 'uwf-bundle/nodes/x' \\(a bundle holds only files"),
        ([member(MANIFEST, b"{}"), header("././@PaxHeader", 1 << 40, tarfile.XHDTYPE)], "pax or GNU extended header .* is not accepted"),
        ([member(MANIFEST, b"{}"), member("uwf-bundle/nodes/../../etc/passwd", b"x")], "unexpected entry 'uwf-bundle/nodes/../../etc/passwd'"),
        ([member(MANIFEST, b"[" * 100_000 + b"]" * 100_000)], "manifest.json: nesting deeper than 200 levels at line 1"),
    ],
    ids=["node-size", "base-256-size", "manifest-size", "manifest-not-first", "two-manifests", "symlink", "pax-header", "outside-layout", "nesting"],
)
def test_each_entry_is_refused_on_what_it_declares_before_it_is_read(tmp_path, parts, message):
    with pytest.raises(BundleError, match=message):
        read_bundle(write_raw(tmp_path, *parts))


def test_a_node_is_checked_against_its_name_and_the_manifest_as_it_is_read(tmp_path):
    node, data = content_node("text")
    listed = member(MANIFEST, manifest([node], node))
    with pytest.raises(BundleError, match=f"holds node {node} twice"):
        read_bundle(write_raw(tmp_path, listed, member(NODES + node, data), member(NODES + node, data)))
    nested = b"\xa3dtype" + b"\x81" * 100_000 + b"\x00"  # a map whose `type` is nested 100,000 arrays deep
    with pytest.raises(BundleError, match=f"node {node} is corrupt: invalid CBOR at byte \\d+: nested deeper than 200 levels"):
        read_bundle(write_raw(tmp_path, listed, member(NODES + node, nested)))
    with pytest.raises(BundleError, match=f"node {node} is corrupt: not a CBOR map \\(its first 4,096 bytes are zeros\\)"):
        read_bundle(write_raw(tmp_path, listed, member(NODES + node, bytes(4096))))


def test_the_total_and_the_count_have_limits(tmp_path, monkeypatch):
    nodes = [content_node(f"text {index}") for index in range(3)]
    parts = [member(MANIFEST, manifest([hash_ for hash_, _ in nodes], nodes[0][0]))] + [member(NODES + hash_, data) for hash_, data in nodes]
    path = write_raw(tmp_path, *parts)
    manifest_read, spilled = read_bundle(path)
    with spilled:
        assert sorted(spilled) == sorted(hash_ for hash_, _ in nodes) and spilled.read(nodes[1][0]) == nodes[1][1]
    monkeypatch.setattr(bundle_read, "MAX_NODES", 2)
    with pytest.raises(BundleError, match="lists 3 nodes, more than the 2 a bundle may hold"):
        read_bundle(path)
    monkeypatch.setattr(bundle_read, "MAX_NODES", 3)
    monkeypatch.setattr(bundle_read, "MAX_TOTAL_BYTES", 2048)
    with pytest.raises(BundleError, match="expands to more than 2,048 bytes, the limit for a bundle"):
        read_bundle(path)


def test_import_holds_the_nodes_in_the_roots_scratch_space_not_in_tmpdir(root, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-tmpdir"))  # often a tmpfs: memory again
    types = root.nodes.ensure_builtins()
    content, data = envelope(types["content"], "just text")
    path = write(tmp_path, [(MANIFEST, manifest([content], content)), (NODES + content, data)])
    with pytest.raises(BundleError, match="is not a StartNode or StepNode"):  # refused after every node was read and held
        import_bundle(root, path)
    scratch = Path(root.backend.scratch_dir)
    assert not scratch.exists() or list(scratch.iterdir()) == []  # nothing left; a directory made for it is gone


def test_a_node_is_decoded_under_an_item_budget(tmp_path, monkeypatch):
    """Its hash proves nothing (XXH64 is no MAC: a hostile node is hashed right): the number of
    items, each a Python object when decoded, is what is limited."""
    monkeypatch.setattr(bundle_read, "MAX_NODE_ITEMS", 17)  # the envelope's 7 items and 10 elements
    for count, refused in ((10, False), (11, True)):
        node, data = envelope(BUILTIN_HASHES["content"], [None] * count)
        path = write_raw(tmp_path, member(MANIFEST, manifest([node], node)), member(NODES + node, data))
        if refused:
            with pytest.raises(BundleError, match=f"node {node} holds more than 17 items \\(values, keys and elements\\), the limit for a node$"):
                read_bundle(path)
        else:
            read_bundle(path)[1].close()


def test_nodes_wait_in_the_scratch_space_given_unnamed(tmp_path, monkeypatch):
    node, data = content_node("text")
    path = write_raw(tmp_path, member(MANIFEST, manifest([node], node)), member(NODES + node, data))
    scratch = tmp_path / "scratch"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-tmpdir"))  # TMPDIR is never used when a place is given
    manifest_read, spilled = read_bundle(path, str(scratch))
    with spilled:
        assert spilled.read(node) == data and spilled.directory == str(scratch)
        assert os.fstat(spilled.file.fileno()).st_dev == scratch.stat().st_dev and list(scratch.iterdir()) == []
        assert oct(scratch.stat().st_mode & 0o777) == "0o700"


@pytest.mark.parametrize("compress", [lambda data: data, bz2.compress, lzma.compress], ids=["tar", "bz2", "xz"])
def test_a_bundle_compressed_otherwise_is_still_read(tmp_path, compress):
    node, data = content_node("text")
    path = tmp_path / "other.tar"
    path.write_bytes(compress(member(MANIFEST, manifest([node], node)) + member(NODES + node, data) + bytes(1024)))
    manifest_read, spilled = read_bundle(str(path))
    with spilled:
        assert list(spilled) == [node] and manifest_read["nodes"] == [node]


# A child that runs `uwf bundle import` and reports the grandchild's peak memory: RUSAGE_CHILDREN
# of this test process would count every earlier test's children too.
PEAK = """
import json, resource, subprocess, sys, time
start = time.monotonic()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
seconds = time.monotonic() - start
print(json.dumps({"code": done.returncode, "out": done.stdout, "err": done.stderr, "seconds": seconds,
                  "peak": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""
BOUND = 200 * 1024 * 1024


def import_measured(root_dir, path) -> dict:
    command = [sys.executable, "-m", "uwf_core.cli.main", "--root", str(root_dir), "bundle", "import", str(path)]
    done = subprocess.run([sys.executable, "-c", PEAK, *command], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def files_of(directory) -> dict:
    return {str(path): path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file()}


def one_line(result: dict) -> str:
    assert result["code"] == 1 and "Traceback" not in result["err"], result["err"]
    lines = result["err"].strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("uwf: error: bundle "), result["err"]
    return lines[0]


@pytest.mark.parametrize(
    "first, message",
    [(b"", "not a CBOR map \\(its first 1,048,576 bytes are zeros\\)"), (b"\xa3", "expands more than 100-fold .* refused as a compression bomb")],
    ids=["node-of-zeros", "gzip-bomb"],
)
def test_a_bundle_expanding_1000_fold_is_refused_in_bounded_memory(root, root_dir, tmp_path, first, message):
    """250 MiB of tar from a quarter of a MiB: read whole, as before, it took the bound and more."""
    root.nodes.ensure_builtins()
    before = files_of(root_dir)
    node, size = "0" * 13, 250 * 1024 * 1024
    path = tmp_path / "bomb.tar.gz"
    with open(path, "wb") as out, gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as packed:
        packed.write(member(MANIFEST, manifest([node], node)) + header(NODES + node, size) + first)
        filler = (b"a" if first else b"\0") * (1 << 20)
        for _ in range(size // len(filler)):
            packed.write(filler)
        packed.write(bytes(1024))
    assert size > BOUND and size > 1000 * path.stat().st_size
    result = import_measured(root_dir, path)
    assert re.search(message, one_line(result))
    assert result["peak"] < BOUND, f"peak {result['peak'] // (1 << 20)} MiB"
    assert files_of(root_dir) == before


def test_a_manifest_nested_100000_deep_is_one_line_and_the_root_untouched(root, root_dir, tmp_path):
    root.nodes.ensure_builtins()
    before = files_of(root_dir)
    path = write_raw(tmp_path, member(MANIFEST, b"[" * 100_000 + b"]" * 100_000))
    line = one_line(import_measured(root_dir, path))
    assert "manifest.json: nesting deeper than 200 levels" in line
    assert files_of(root_dir) == before


def test_a_node_of_30_million_nulls_is_refused_at_once_in_bounded_memory(root, root_dir, tmp_path):
    """29 KB of bundle, one 30 MB node with a right hash: decoded, it took 330 MB and 17 s before
    it was refused (at 256 MiB, 2.8 GB and 82 s); its array's header now exceeds the budget."""
    root.nodes.ensure_builtins()
    before = files_of(root_dir)
    count = 30_000_000
    type_ = BUILTIN_HASHES["content"]
    payload = b"\x9a" + count.to_bytes(4, "big") + b"\xf6" * count
    node = xxh64_hash(type_.encode() + payload)
    data = b"\xa3" + encode("type") + encode(type_) + encode("payload") + payload + encode("timestamp") + encode(0)
    path = write_raw(tmp_path, member(MANIFEST, manifest([node], node)), member(NODES + node, data), name="nulls.tar.gz")
    del payload, data
    assert os.path.getsize(path) < 100_000
    result = import_measured(root_dir, path)
    assert one_line(result).endswith(f"node {node} holds more than {MAX_NODE_ITEMS:,} items (values, keys and elements), the limit for a node")
    assert result["peak"] < BOUND, f"peak {result['peak'] // (1 << 20)} MiB"
    assert result["seconds"] < 10, result  # one node read and its header decoded; not 30 million objects
    assert files_of(root_dir) == before


def test_a_large_bundle_still_imports(root, tmp_path):
    """A directory of 10,000 files (a tree node of 90,000 items) and a 30 MB text file (one 30 MB
    node), through export and import in a subprocess, in memory a few times the largest node."""
    from uwf_core.repo import Repo
    from uwf_core.thread.bundle import export_bundle
    from uwf_core.thread.ops import start_thread
    from uwf_core.workflow.ops import put_workflow

    workspace = tmp_path / "workspace"
    (workspace / "many").mkdir(parents=True)
    for index in range(10_000):
        (workspace / "many" / f"f{index:05d}.txt").write_bytes(b"")
    lines = b"".join(b"line %d of a large text file, %d\n" % (index, index * 7919 % 100_003) for index in range(800_000))
    (workspace / "large.txt").write_bytes(lines)
    assert len(lines) > 30_000_000
    put_workflow(root, str(Path(__file__).resolve().parents[2] / "examples" / "analyze-topic.yaml"))
    thread = start_thread(root, "analyze-topic", "read these", workspace=str(workspace)).thread
    path = tmp_path / "large.tar.gz"
    exported = export_bundle(root, [thread], str(path))
    other = tmp_path / "other-root"
    other.mkdir()
    result = import_measured(other, path)
    assert result["code"] == 0, result["err"]
    report = json.loads(result["out"])
    assert report["written"] == report["nodes"] == exported.nodes and report["threads"][0]["status"] == "added"
    assert result["peak"] < 8 * len(lines), f"peak {result['peak'] // (1 << 20)} MiB"
    imported = Repo.open(str(other))
    assert imported.threads.heads() == {thread: root.threads.heads()[thread]}
    assert sorted(imported.nodes.walk(root.threads.heads()[thread])) == sorted(root.nodes.walk(root.threads.heads()[thread]))


def test_a_refused_bundle_leaves_a_root_that_did_not_exist_absent(uwf, tmp_path):
    garbage = tmp_path / "garbage.bundle"
    garbage.write_bytes(b"not a bundle at all" * 100)
    root = tmp_path / "new-root"
    result = uwf("bundle", "import", str(garbage), env={"UWF_STORAGE_ROOT": str(root)})
    assert result.code == 1 and "Traceback" not in result.err
    assert not root.exists()


def _real_bundle(tmp_path, edit) -> str:
    """A bundle `export_bundle` wrote, its manifest changed by `edit`."""
    from uwf_core.api import Repo, export_bundle, put_workflow, start_thread

    source = Repo.open(str(tmp_path / "source"))
    put_workflow(source, str(EXAMPLES / "analyze-topic.yaml"))
    thread = start_thread(source, "analyze-topic", "a topic").thread
    plain = tmp_path / "plain.uwfb"
    export_bundle(source, [thread], str(plain))
    with tarfile.open(plain) as tar:
        entries = [(member.name, tar.extractfile(member).read()) for member in tar]
    data = json.loads(dict(entries)[MANIFEST])
    edit(data)
    return write(tmp_path, [(name, json.dumps(data).encode() if name == MANIFEST else body) for name, body in entries])


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda m: m["workflows"][0].update(name="../../evil\nname"), "not a valid workflow name"),
        (lambda m: m["workflows"][0].update(name="-rf"), "not a valid workflow name"),
        (lambda m: m["workflows"][0].update(hash=m["threads"][0]["head"]), "not a workflow node of the bundle"),
    ],
)
def test_a_workflow_name_is_registered_only_as_workflow_put_would(root, tmp_path, edit, message):
    """`workflow put` refuses a name that is a path or holds a line break; a bundle brought one
    into the registry as it was."""
    path = _real_bundle(tmp_path, edit)
    with pytest.raises(BundleError, match=message):
        import_bundle(root, path)
    assert root.registry.entries() == {} and root.threads.heads() == {}
