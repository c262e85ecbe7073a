"""The CAS store (design §5): put/get/resolve, validation, refs/walk, the type index, verification."""

from __future__ import annotations

import os
from collections import Counter

import pytest
from conftest import snapshot_tree
from node_file import node_bytes, set_node_bytes, set_touched, touched, unpack

from uwf_core.encoding.cbor import decode_envelope, encode
from uwf_core.encoding.ids import is_hash
from uwf_core.errors import AmbiguousError, CorruptError, NotFoundError, UwfError, ValidationError
from uwf_core.store.builtin_schemas import BUILTIN, BUILTIN_HASHES, META_HASH, schema_hash
from uwf_core.store.cas import CasStore, node_hash
from uwf_core.repo import Repo
from uwf_core.store.schemas import ALLOWED_KEYWORDS, META_SCHEMA, check_schema

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "number"}},
    "required": ["name"],
    "additionalProperties": False,
}

REF = {"type": "string", "format": "cas_ref"}

# A schema that reaches references through every route refs() must follow.
LINKS = {
    "title": "links",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "one": REF,
        "many": {"type": "array", "items": REF},
        "byName": {"type": "object", "additionalProperties": REF},
        "maybe": {"anyOf": [{"type": "null"}, REF]},
        "either": {"oneOf": [{"type": "integer"}, REF]},
        "nested": {"type": "object", "properties": {"deep": {"type": "array", "items": {"type": "object", "properties": {"ref": REF}}}}},
        "label": {"type": "string"},
        "optional": {"type": ["string", "null"], "format": "cas_ref"},
    },
}


def _content(store: CasStore, text: str) -> str:
    store.ensure_builtins()
    return store.put(BUILTIN_HASHES["content"], text)


def _cas_dir(root_dir):
    return root_dir / "cas"


# -- put / get / has ------------------------------------------------------------------


def test_put_returns_the_node_hash_and_get_returns_the_node(store):
    schema = store.put_schema(PERSON)
    assert schema == "7XX5H51CVD9H0"
    hash_ = store.put(schema, {"name": "Bob", "age": 41.5})
    assert hash_ == node_hash(schema, {"name": "Bob", "age": 41.5})
    node = store.get(hash_)
    assert node.hash == hash_
    assert node.type == schema
    assert node.payload == {"name": "Bob", "age": 41.5}
    assert isinstance(node.timestamp, int) and node.timestamp > 1_600_000_000_000
    assert node.envelope() == {"type": schema, "payload": node.payload, "timestamp": node.timestamp}
    assert store.payload(hash_) == {"name": "Bob", "age": 41.5}


def test_node_file_layout(store, root_dir):
    hash_ = _content(store, "hello")
    assert (_cas_dir(root_dir) / "nodes.sqlite").is_file()
    assert not list(_cas_dir(root_dir).glob("*.bin"))  # no loose node files any more
    data = node_bytes(root_dir, hash_)
    envelope, payload_bytes = decode_envelope(data)
    assert set(envelope) == {"type", "payload", "timestamp"}
    assert envelope["type"] == BUILTIN_HASHES["content"]
    assert envelope["payload"] == "hello"
    assert payload_bytes == encode("hello")
    # what is stored is the deterministic CBOR of the envelope
    assert data == encode(envelope)


def test_has(store):
    hash_ = _content(store, "present")
    assert store.has(hash_)
    assert not store.has("0000000000000")
    assert not store.has(hash_.lower())  # has() takes canonical hashes; resolve() is for typed text
    assert not store.has(hash_[:5])
    assert not store.has("not a hash")


def test_resolve_full_hash_and_prefix_case_insensitively(store):
    hash_ = _content(store, "resolve me")
    assert store.resolve(hash_) == hash_
    assert store.resolve(hash_.lower()) == hash_
    # the shortest unique prefix, in both cases
    all_hashes = store.all_hashes()
    for length in range(1, 14):
        prefix = hash_[:length]
        if sum(h.startswith(prefix) for h in all_hashes) == 1:
            break
    assert store.resolve(prefix) == hash_
    assert store.resolve(prefix.lower()) == hash_
    assert store.get(prefix.lower()).hash == hash_
    assert store.resolve(f"  {hash_[:12].lower()} ") == hash_


def test_ambiguous_prefix(store):
    store.ensure_builtins()
    for index in range(40):
        _content(store, f"node {index}")
    counts = Counter(h[0] for h in store.all_hashes())
    char, count = counts.most_common(1)[0]
    assert count >= 2
    with pytest.raises(AmbiguousError) as info:
        store.resolve(char.lower())
    message = str(info.value)
    assert "ambiguous" in message
    assert f"{count} nodes match" in message
    with pytest.raises(AmbiguousError):
        store.get(char)


def test_unknown_hash_and_prefix(store):
    _content(store, "x")
    with pytest.raises(NotFoundError):
        store.resolve("0000000000000")
    with pytest.raises(NotFoundError):
        store.get("0000000000000")
    taken = {h[:2] for h in store.all_hashes()}
    unused = next(a + b for a in "0123456789ABCDEF" for b in "0123456789ABCDEFGHJKMNPQRSTVWXYZ" if a + b not in taken)
    with pytest.raises(NotFoundError, match="no node matches"):
        store.resolve(unused)


@pytest.mark.parametrize("text", ["I0", "hello!", "0" * 14, ""])
def test_resolve_refuses_text_that_is_not_a_hash(store, text):
    with pytest.raises(UwfError):
        store.resolve(text)


def test_resolve_on_an_empty_store(store):
    with pytest.raises(NotFoundError):
        store.resolve("7XX")


# -- validation -------------------------------------------------------------------------


def test_put_refuses_an_invalid_payload_and_writes_nothing(store, root_dir):
    schema = store.put_schema(PERSON)
    before = snapshot_tree(root_dir)
    for payload in ({"age": 3}, {"name": 5}, {"name": "x", "extra": 1}, "just a string", None):
        with pytest.raises(ValidationError) as info:
            store.put(schema, payload)
        assert "does not match its schema" in str(info.value)
    assert snapshot_tree(root_dir) == before


def test_validation_message_names_the_path(store):
    schema = store.put_schema(PERSON)
    with pytest.raises(ValidationError, match=r"at \$\.name: 5 is not of type 'string'"):
        store.put(schema, {"name": 5})
    with pytest.raises(ValidationError, match=r"'name' is a required property"):
        store.put(schema, {"age": 1})


def test_validation_counts_further_problems(store):
    schema = store.put_schema({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}})
    with pytest.raises(ValidationError, match=r"\(and 1 more\)"):
        store.put(schema, {"a": 1, "b": 2})


def test_cas_ref_format_is_enforced(store, root_dir):
    schema = store.put_schema({"type": "object", "properties": {"ref": REF}})
    before = snapshot_tree(root_dir)
    for bad in ("too-short", "56GP9CC0KVQFU", "56gp9cc0kvqf8", "56GP9CC0KVQF88"):
        with pytest.raises(ValidationError):
            store.put(schema, {"ref": bad})
    assert snapshot_tree(root_dir) == before
    assert is_hash(store.put(schema, {"ref": "ZZZZZZZZZZZZZ"}))  # format only; need not exist


def test_put_with_an_unknown_type(store):
    store.ensure_builtins()
    with pytest.raises(NotFoundError):
        store.put("0000000000000", "x")


def test_put_with_a_type_that_is_not_a_schema(store):
    hash_ = _content(store, "not a schema")
    with pytest.raises(UwfError, match="is not a schema"):
        store.put(hash_, "x")


@pytest.mark.parametrize(
    "schema, keyword, where",
    [
        ({"type": "string", "minLength": 1}, "minLength", "schema"),
        ({"type": "object", "properties": {"name": {"type": "string", "pattern": "^a"}}}, "pattern", "schema.properties.name"),
        ({"type": "array", "items": {"type": "integer", "minimum": 0}}, "minimum", "schema.items"),
        ({"anyOf": [{"type": "null"}, {"type": "string", "maxLength": 3}]}, "maxLength", "schema.anyOf[1]"),
        ({"type": "object", "additionalProperties": {"$ref": "#"}}, "$ref", "schema.additionalProperties"),
        ({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"default": 1}}}}}, "default", "schema.properties.a.properties.b"),
        ({"$schema": "https://json-schema.org/draft/2020-12/schema"}, "$schema", "schema"),
    ],
)
def test_schema_keyword_check_names_keyword_and_where(store, root_dir, schema, keyword, where):
    with pytest.raises(ValidationError) as info:
        store.put_schema(schema)
    message = str(info.value)
    assert message.startswith(f"Invalid schema: {where}: keyword '{keyword}' is not allowed")  # the reference's words first
    assert not (root_dir / "cas").exists()  # nothing written, not even the meta-schema


@pytest.mark.parametrize(
    "schema, fragment",
    [
        ({"type": "strng"}, "schema.type: must be one of"),
        ({"type": []}, "schema.type: must be one of"),
        ({"properties": []}, "schema.properties: must be an object of schemas"),
        ({"properties": {"a": "string"}}, "schema.properties.a: a schema must be an object"),
        ({"required": "name"}, "schema.required: must be a list of property names"),
        ({"anyOf": []}, "schema.anyOf: must be a non-empty list of schemas"),
        ({"items": [{"type": "string"}]}, "schema.items: a schema must be an object"),
        ({"enum": []}, "schema.enum: must be a non-empty list"),
        ({"title": 5}, "schema.title: must be a string"),
        ("string", "schema: a schema must be an object"),
    ],
)
def test_schema_check_refuses_malformed_keywords(schema, fragment):
    with pytest.raises(ValidationError) as info:
        check_schema(schema)
    assert fragment in str(info.value)


def test_schema_keyword_subset_is_the_meta_schema():
    assert ALLOWED_KEYWORDS == {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "anyOf",
        "oneOf",
        "items",
        "format",
        "title",
        "enum",
        "const",
        "description",
    }
    check_schema(META_SCHEMA)
    for schema in BUILTIN.values():
        check_schema(schema)


def test_put_via_the_meta_type_is_put_schema(store):
    store.ensure_builtins()
    assert store.put(META_HASH, PERSON) == "7XX5H51CVD9H0"
    with pytest.raises(ValidationError, match="minLength"):
        store.put(META_HASH, {"type": "string", "minLength": 1})


# -- the same payload twice -------------------------------------------------------------


def test_same_payload_twice_gives_the_same_hash_and_keeps_the_first_write(store, root_dir):
    schema = store.put_schema(PERSON)
    first = store.put(schema, {"name": "Alice", "age": 30})
    data = node_bytes(root_dir, first)
    timestamp = store.get(first).timestamp
    members = store.of_type(schema)
    second = store.put(schema, {"age": 30.0, "name": "Alice"})  # same payload, other key order, integral float
    assert second == first == "ERARPP19YJT05"
    assert node_bytes(root_dir, first) == data
    assert CasStore(store.nodes).get(first).timestamp == timestamp
    assert store.of_type(schema) == members == [first]  # indexed once


def test_re_put_renews_the_age_for_gc(store, root_dir):
    hash_ = _content(store, "old")
    set_touched(root_dir, hash_, 1_000_000)
    timestamp = store.get(hash_).timestamp
    assert _content(store, "old") == hash_
    assert touched(root_dir, hash_) > 1_000_000
    assert store.get(hash_).timestamp == timestamp


def test_a_fresh_store_object_sees_the_same_nodes(root):
    first = CasStore(root.backend.nodes)
    hash_ = _content(first, "shared")
    second = CasStore(root.backend.nodes)
    assert second.get(hash_).payload == "shared"


# -- corruption --------------------------------------------------------------------------


def test_flipped_payload_byte_is_corrupt(root, root_dir):
    hash_ = _content(root.nodes, "The quick brown fox")
    data = node_bytes(root_dir, hash_)
    _, payload_bytes = decode_envelope(data)
    position = data.index(b"quick", data.index(payload_bytes))
    corrupted = bytearray(data)
    corrupted[position] ^= 0x01  # 'q' -> 'p': still valid CBOR and UTF-8
    set_node_bytes(root_dir, hash_, bytes(corrupted))
    store = CasStore(root.backend.nodes)  # nothing cached: reads what is stored now
    with pytest.raises(CorruptError) as info:
        store.get(hash_)
    assert hash_ in str(info.value)
    assert "corrupt" in str(info.value)
    with pytest.raises(CorruptError):
        store.refs(hash_)


def test_structurally_broken_node_is_corrupt(root, root_dir):
    hash_ = _content(root.nodes, "soon truncated")
    set_node_bytes(root_dir, hash_, node_bytes(root_dir, hash_)[:-3])
    with pytest.raises(CorruptError, match=hash_):
        CasStore(root.backend.nodes).get(hash_)


@pytest.mark.parametrize(
    "envelope",
    [
        {"type": "F1T74N293WADE", "payload": "x"},  # no timestamp
        {"type": "F1T74N293WADE", "payload": "x", "timestamp": "now"},
        {"type": "not a hash", "payload": "x", "timestamp": 1},
        {"type": "F1T74N293WADE", "payload": "x", "timestamp": 1, "extra": 1},
    ],
)
def test_envelope_of_the_wrong_shape_is_corrupt(root, root_dir, envelope):
    hash_ = _content(root.nodes, "x")
    set_node_bytes(root_dir, hash_, encode(envelope))
    with pytest.raises(CorruptError, match="envelope"):
        CasStore(root.backend.nodes).get(hash_)


def test_node_stored_under_another_hash_is_corrupt(root, root_dir):
    a = _content(root.nodes, "a")
    b = _content(root.nodes, "b")
    set_node_bytes(root_dir, b, node_bytes(root_dir, a))
    with pytest.raises(CorruptError, match=f"hashes to {a}"):
        CasStore(root.backend.nodes).get(b)


def test_timestamp_is_not_hashed(root, root_dir):
    hash_ = _content(root.nodes, "stamp")
    envelope, _ = decode_envelope(node_bytes(root_dir, hash_))
    envelope["timestamp"] = 42
    set_node_bytes(root_dir, hash_, encode(envelope))
    assert CasStore(root.backend.nodes).get(hash_).timestamp == 42


# -- refs and walk ------------------------------------------------------------------------


@pytest.fixture
def linked(store):
    """A small graph: top -> {a, b, c, d, e, f, g}; a -> b (already seen); leaf nodes are content."""
    store.ensure_builtins()
    links = store.put_schema(LINKS)
    leaves = {name: _content(store, f"leaf {name}") for name in "bcdefg"}
    a = store.put(links, {"one": leaves["b"], "label": "not a ref"})
    top = store.put(
        links,
        {
            "one": a,
            "many": [leaves["b"], leaves["c"], leaves["b"]],
            "byName": {"x": leaves["d"]},
            "maybe": None,
            "either": leaves["e"],
            "nested": {"deep": [{"ref": leaves["f"]}, {}]},
            "label": leaves["g"],  # a hash-looking string without format cas_ref is not a reference
            "optional": None,
        },
    )
    return {"links": links, "top": top, "a": a, **leaves}


def test_refs_through_properties_items_additional_properties_anyof_oneof(store, linked):
    refs = store.refs(linked["top"])
    assert refs == [linked["a"], linked["b"], linked["c"], linked["d"], linked["e"], linked["f"]]
    assert linked["g"] not in refs


def test_refs_follow_anyof_when_not_null(store, linked):
    node = store.put(linked["links"], {"maybe": linked["c"], "optional": linked["d"]})
    assert sorted(store.refs(node)) == sorted([linked["c"], linked["d"]])


def test_refs_of_leaves_and_schemas(store, linked):
    assert store.refs(linked["b"]) == []
    assert store.refs(linked["links"]) == []
    assert store.refs(META_HASH) == []


def test_refs_of_an_unknown_node(store, linked):
    with pytest.raises(NotFoundError):
        store.refs("0000000000000")


def test_walk_is_breadth_first_each_node_once(store, linked):
    order = store.walk(linked["top"])
    assert order == [linked["top"], linked["a"], linked["b"], linked["c"], linked["d"], linked["e"], linked["f"]]
    assert len(order) == len(set(order))
    assert store.walk(linked["b"]) == [linked["b"]]
    assert store.walk(linked["top"][:10].lower()) == order


def test_walk_handles_shared_references(store, linked):
    # two parents of one child: the child is listed once
    both = store.put(linked["links"], {"many": [linked["a"], linked["top"]]})
    order = store.walk(both)
    assert order[:3] == [both, linked["a"], linked["top"]]
    assert Counter(order).most_common(1)[0][1] == 1
    assert set(order) == {both, linked["a"], linked["top"], *(linked[n] for n in "bcdef")}


def test_walk_reports_a_dangling_reference(store, linked):
    dangling = store.put(linked["links"], {"one": "0000000000000"})
    assert store.refs(dangling) == ["0000000000000"]
    with pytest.raises(NotFoundError, match="0000000000000"):
        store.walk(dangling)


def test_refs_of_builtin_step_and_start_nodes(store):
    store.ensure_builtins()
    prompt = _content(store, "prompt")
    workflow_stub = _content(store, "stands in for a workflow node")
    start = store.put(BUILTIN_HASHES["start-node"], {"workflow": workflow_stub, "prompt": "p", "workspace": None, "resumes": None, "agents": None})
    assert store.refs(start) == [workflow_stub]
    detail = store.put(BUILTIN_HASHES["detail"], {"agent": "x", "prompt": prompt, "content": None, "turns": [{}]})
    output = _content(store, "output")
    step = store.put(
        BUILTIN_HASHES["step-node"],
        {"start": start, "prev": None, "role": "r", "output": output, "detail": detail, "agent": "script"},
    )
    assert sorted(store.refs(step)) == sorted([start, output, detail])
    assert store.walk(step) == [step, *store.refs(step), workflow_stub, prompt]


# -- type index ------------------------------------------------------------------------------


def test_of_type_lists_members_in_write_order(store, root_dir):
    store.ensure_builtins()
    hashes = [_content(store, f"member {i}") for i in range(5)]
    _content(store, "member 0")  # again: not listed twice
    assert store.of_type(BUILTIN_HASHES["content"]) == hashes
    assert store.of_type("0000000000000") == []


def test_of_type_skips_deleted_nodes(root, root_dir):
    from node_file import delete_node

    a, b = _content(root.nodes, "a"), _content(root.nodes, "b")
    delete_node(root_dir, a)
    assert CasStore(root.backend.nodes).of_type(BUILTIN_HASHES["content"]) == [b]


# -- an older root: loose node files ---------------------------------------------------------


def test_an_older_root_of_loose_files_reads_as_it_is_and_gc_packs_it(root, root_dir):
    from uwf_core.store.gc import gc
    from uwf_core.thread.ops import start_thread
    from uwf_core.workflow.ops import put_workflow
    from conftest import EXAMPLES

    put_workflow(root, str(EXAMPLES / "analyze-topic.yaml"))
    head = start_thread(root, "analyze-topic", "older").head
    moved = unpack(root_dir)
    assert head in moved and (_cas_dir(root_dir) / f"{head}.bin").is_file()
    root = Repo.open(str(root_dir))  # as a new process opens the older root
    older = root.nodes
    assert older.get(head).payload["prompt"] == "older"
    assert sorted(older.of_type(BUILTIN_HASHES["start-node"])) == [head]  # from the old _index files
    assert sorted(older.all_hashes()) == sorted(moved)
    new = _content(older, "written after")  # new nodes go to the node file beside the loose ones
    assert node_bytes(root_dir, new) is not None and not (_cas_dir(root_dir) / f"{new}.bin").exists()
    report = gc(older, root.backend, grace_seconds=3600)
    assert report.packed == len(moved) and not list(_cas_dir(root_dir).glob("*.bin"))
    assert not (_cas_dir(root_dir) / "_index").exists()
    assert CasStore(Repo.open(str(root_dir)).backend.nodes).get(head).payload["prompt"] == "older"


def test_reindex_rebuilds_the_old_index_of_loose_files(root, root_dir):
    store = root.nodes
    store.ensure_builtins()
    hashes = sorted(_content(store, f"n{i}") for i in range(4))
    unpack(root_dir)
    import shutil

    shutil.rmtree(_cas_dir(root_dir) / "_index")
    older = Repo.open(str(root_dir)).nodes
    assert older.of_type(BUILTIN_HASHES["content"]) == []
    total = len(older.all_hashes())
    assert older.reindex() == total
    assert sorted(older.of_type(BUILTIN_HASHES["content"])) == hashes
    (_cas_dir(root_dir) / f"{hashes[0]}.bin").unlink()
    (_cas_dir(root_dir) / "_index" / "0000000000000").write_text("0000000000001\n")
    older.reindex()
    index = (_cas_dir(root_dir) / "_index" / BUILTIN_HASHES["content"]).read_text().split()
    assert hashes[1] in index and hashes[0] not in index
    assert not (_cas_dir(root_dir) / "_index" / "0000000000000").exists()


# -- built-ins ---------------------------------------------------------------------------------


def test_ensure_builtins_registers_titled_schemas(store):
    hashes = store.ensure_builtins()
    assert set(hashes) == {"workflow", "start-node", "step-node", "content", "detail"}
    for title, hash_ in hashes.items():
        assert store.has(hash_)
        assert store.get(hash_).type == META_HASH
        assert store.title_of(hash_) == title
        assert hash_ == schema_hash(BUILTIN[title])
    titles = dict((title, hash_) for hash_, title in store.schemas())
    assert titles["meta-schema"] == META_HASH
    for title in ("workflow", "start-node", "step-node", "content", "detail"):
        assert titles[title] == hashes[title]
    assert store.schemas()[0] == (META_HASH, "meta-schema")


def test_meta_schema_node_is_its_own_type(store):
    store.ensure_builtins()
    node = store.get(META_HASH)
    assert node.type == META_HASH == "56GP9CC0KVQF8"
    assert node.payload == META_SCHEMA


def test_ensure_builtins_is_idempotent(store, root_dir):
    store.ensure_builtins()
    before = snapshot_tree(root_dir)
    CasStore(store.nodes).ensure_builtins()
    assert snapshot_tree(root_dir) == before


def test_opening_a_store_touches_nothing(root, root_dir):
    store = CasStore(root.backend.nodes)
    assert not store.has(META_HASH)
    assert store.all_hashes() == []
    assert list(root_dir.iterdir()) == []


def test_content_schema_takes_strings_only(store):
    store.ensure_builtins()
    with pytest.raises(ValidationError):
        store.put(BUILTIN_HASHES["content"], {"text": "x"})


def test_a_node_file_with_the_older_column_order_takes_large_nodes_too(tmp_path):
    """A node file made before issue 41 keeps `data` before `touched`: every statement names its
    columns, so it reads and writes as a new one does (a large node costs more memory there)."""
    import os
    import sqlite3

    from uwf_core.store.fs import node_db
    from uwf_core.store.fs.node_db import NodeDb

    older = node_db.SCHEMA.replace("    touched real not null,\n    data blob not null\n", "    data blob not null,\n    touched real not null\n")
    assert older != node_db.SCHEMA
    path = tmp_path / "cas"
    path.mkdir()
    with sqlite3.connect(path / node_db.DB_NAME) as conn:
        conn.execute("pragma journal_mode=WAL")
        conn.executescript(older)
        conn.execute("insert into meta (key, value) values ('version', ?)", (str(node_db.SCHEMA_VERSION),))
    db = NodeDb(str(path))
    noise = [os.urandom(300_000) for _ in range(4)]
    db.write_pieces("0000000000001", "0000000000003", lambda: iter(noise))
    db.write("0000000000002", "0000000000003", b"small")
    assert db.read("0000000000001") == b"".join(noise) and db.read("0000000000002") == b"small"
    columns = [row[1] for row in sqlite3.connect(path / node_db.DB_NAME).execute("pragma table_info(nodes)")]
    assert columns == ["seq", "hash", "type", "data", "touched"]
