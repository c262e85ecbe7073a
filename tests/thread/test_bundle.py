"""thread/bundle.py below the CLI: the fixed layout, and everything import refuses before writing."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from uwf_core.encoding.cbor import encode
from uwf_core.store.builtin_schemas import BUILTIN_HASHES
from uwf_core.store.cas import node_hash
from uwf_core.thread.bundle import MANIFEST, NODES, BundleError, _tar_gz, import_bundle, read_bundle

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
