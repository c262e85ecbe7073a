"""`uwf cas ...` black-box, through the real CLI in a subprocess (design §5, §12)."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter

import pytest
from node_file import delete_node, node_bytes, set_node_bytes, set_touched, unpack
from node_file import hashes as stored_hashes
from conftest import EXAMPLES, snapshot_tree

from uwf_core.encoding.cbor import decode_envelope
from uwf_core.encoding.ids import is_hash
from uwf_core.store.builtin_schemas import BUILTIN_HASHES, META_HASH

BUILTIN_TITLES = ("workflow", "start-node", "step-node", "content", "detail")
EXAMPLE_FILES = [str(EXAMPLES / name) for name in ("solve-issue.yaml", "analyze-topic.yaml", "triage-bug.yaml")]

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "number"}},
    "required": ["name"],
    "additionalProperties": False,
}
LINK = {"type": "object", "properties": {"to": {"type": "array", "items": {"type": "string", "format": "cas_ref"}}}}


def assert_one_line_error(result, code: int = 1) -> str:
    assert result.code == code, result
    assert "Traceback" not in result.err, result.err
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("uwf: error: "), result.err
    return lines[0][len("uwf: error: ") :]


def _hash_line(result) -> str:
    assert result.code == 0, result
    assert result.out.endswith("\n") and result.out.count("\n") == 1, result.out
    value = result.out.strip()
    assert is_hash(value), value
    return value


def _put(uwf, type_: str, payload) -> str:
    return _hash_line(uwf("cas", "put", type_, json.dumps(payload)))


def _put_in_process(root_dir, path: str) -> str:
    from uwf_core.repo import Repo
    from uwf_core.workflow.ops import put_workflow

    return put_workflow(Repo.open(str(root_dir)), path).hash


def _store(root_dir):
    from uwf_core.repo import Repo

    return Repo.open(str(root_dir)).nodes


def _put_lib(root_dir, type_: str, payload) -> str:
    """Set-up only: store a node through the library (aliases as the CLI knows them)."""
    store = _store(root_dir)
    store.ensure_builtins()
    type_hash = {"meta": META_HASH, **BUILTIN_HASHES}.get(type_, type_)
    return store.put(type_hash, payload)


# -- put ------------------------------------------------------------------------------------------


def test_put_with_a_schema_hash(uwf, root_dir):
    schema = _put(uwf, "meta", PERSON)
    assert schema == "7XX5H51CVD9H0"
    node = _hash_line(uwf("cas", "put", schema, '{"name": "Alice", "age": 30}'))
    assert node == "ERARPP19YJT05"
    assert node_bytes(root_dir, node) is not None
    # a prefix of the schema hash, in lower case, works too
    assert _hash_line(uwf("cas", "put", schema[:6].lower(), '{"age": 30.0, "name": "Alice"}')) == node


def test_put_reads_stdin(uwf):
    first = _hash_line(uwf("cas", "put", "content", "-", input='"from stdin"'))
    assert uwf("cas", "get", first, "--payload").json() == "from stdin"
    # same payload given inline: same node
    assert _put(uwf, "content", "from stdin") == first


def test_put_large_payload_from_stdin(uwf):
    text = "line\n" * 20000
    node = _hash_line(uwf("cas", "put", "content", "-", input=json.dumps(text)))
    assert uwf("cas", "get", node, "--payload").json() == text


@pytest.mark.parametrize(
    "alias, payload",
    [
        ("content", "some agent text"),
        ("detail", {"agent": "script", "turns": [], "usage": {"tokens": 5}, "extra": "allowed"}),
        ("meta", {"type": "string", "title": "a title"}),
    ],
)
def test_builtin_aliases_work_on_a_fresh_root(uwf, root_dir, alias, payload):
    assert snapshot_tree(root_dir) == {}
    node = _put(uwf, alias, payload)
    envelope = uwf("cas", "get", node).json()
    assert envelope["type"] == (META_HASH if alias == "meta" else BUILTIN_HASHES[alias])
    assert envelope["payload"] == payload


def test_step_and_start_node_aliases(uwf, root_dir):
    workflow = _put_lib(root_dir, "content", "stands in for a workflow")
    start = _put(uwf, "start-node", {"workflow": workflow, "prompt": "do it"})
    output = _put_lib(root_dir, "content", "output")
    detail = _put_lib(root_dir, "detail", {"agent": "script"})
    step = _put(uwf, "step-node", {"start": start, "prev": None, "role": "r", "output": output, "detail": detail, "agent": "script"})
    assert uwf("cas", "get", step).json()["type"] == BUILTIN_HASHES["step-node"]
    assert set(uwf("cas", "refs", step).json()) == {start, output, detail}
    assert uwf("cas", "refs", start).json() == [workflow]


def test_workflow_alias_validates_against_the_workflow_schema(uwf, root_dir):
    _store(root_dir).ensure_builtins()
    before = snapshot_tree(root_dir)
    message = assert_one_line_error(uwf("cas", "put", "workflow", '{"name": "x"}'))
    assert "does not match its schema" in message
    assert snapshot_tree(root_dir) == before


# -- get / has ---------------------------------------------------------------------------------------


def test_get_envelope_and_payload(uwf):
    node = _put(uwf, "detail", {"agent": "a", "turns": [{"n": 1}], "startedAt": 5})
    result = uwf("cas", "get", node)
    assert result.code == 0, result
    envelope = result.json()
    assert set(envelope) == {"type", "payload", "timestamp"}
    assert envelope["type"] == BUILTIN_HASHES["detail"]
    assert envelope["payload"] == {"agent": "a", "turns": [{"n": 1}], "startedAt": 5}
    now = int(time.time() * 1000)
    assert now - 120_000 < envelope["timestamp"] <= now + 1000
    payload = uwf("cas", "get", node, "--payload")
    assert payload.code == 0
    assert payload.json() == envelope["payload"]
    assert uwf("cas", "get", node.lower()).json() == envelope
    assert uwf("cas", "get", node[:8]).json() == envelope


def test_get_of_the_meta_schema(uwf):
    uwf("cas", "schema", "list")
    envelope = uwf("cas", "get", META_HASH).json()
    assert envelope["type"] == META_HASH == "56GP9CC0KVQF8"
    assert envelope["payload"]["description"] == "json-cas JSON Schema meta-schema"


def test_has(uwf):
    node = _put(uwf, "content", "present")
    result = uwf("cas", "has", node)
    assert (result.code, result.out, result.err) == (0, "", "")
    assert uwf("cas", "has", node.lower()).code == 0
    absent = uwf("cas", "has", "0000000000000")
    assert (absent.code, absent.out, absent.err) == (1, "", "")


def test_has_with_text_that_is_not_a_hash(uwf):
    message = assert_one_line_error(uwf("cas", "has", "not-a-hash!"))
    assert "is not a hash" in message


# -- refs / walk -----------------------------------------------------------------------------------


def test_refs_and_walk(uwf, root_dir):
    link = _put_lib(root_dir, "meta", LINK)
    a = _put_lib(root_dir, "content", "a")
    b = _put_lib(root_dir, "content", "b")
    middle = _put_lib(root_dir, link, {"to": [a, b]})
    top = _put(uwf, link, {"to": [middle, a]})
    assert uwf("cas", "refs", top).json() == [middle, a]
    assert uwf("cas", "refs", a).json() == []
    walked = uwf("cas", "walk", top).json()
    assert walked == [top, middle, a, b]
    assert uwf("cas", "walk", a).json() == [a]
    assert uwf("cas", "walk", top[:7].lower()).json() == walked


def test_walk_of_a_dangling_reference(uwf, root_dir):
    link = _put_lib(root_dir, "meta", LINK)
    node = _put_lib(root_dir, link, {"to": ["0000000000000"]})
    assert uwf("cas", "refs", node).json() == ["0000000000000"]
    assert "0000000000000" in assert_one_line_error(uwf("cas", "walk", node))


# -- schemas --------------------------------------------------------------------------------------


def test_schema_list_on_a_fresh_root(uwf):
    result = uwf("cas", "schema", "list")
    assert result.code == 0, result
    listed = result.json()
    assert all(set(item) == {"hash", "title"} for item in listed)
    titles = {item["title"]: item["hash"] for item in listed}
    for title in BUILTIN_TITLES:
        assert titles[title] == BUILTIN_HASHES[title]
    assert listed[0] == {"hash": META_HASH, "title": "meta-schema"}


def test_schema_list_includes_role_schemas(uwf, root_dir):
    _put_in_process(root_dir, EXAMPLE_FILES[0])
    titles = {item["title"] for item in uwf("cas", "schema", "list").json()}
    assert {"solve-issue.planner", "solve-issue.developer", "solve-issue.reviewer"} <= titles
    assert set(BUILTIN_TITLES) <= titles


def test_schema_get(uwf):
    schema = _put(uwf, "meta", PERSON)
    result = uwf("cas", "schema", "get", schema)
    assert result.code == 0, result
    assert result.json() == PERSON
    content = uwf("cas", "schema", "get", BUILTIN_HASHES["content"][:6]).json()
    assert content["title"] == "content"
    assert content["type"] == "string"


def test_schema_get_of_a_data_node(uwf):
    node = _put(uwf, "content", "not a schema")
    assert "is not a schema" in assert_one_line_error(uwf("cas", "schema", "get", node))


# -- refused puts: one line, exit 1, nothing written ------------------------------------------------


@pytest.fixture
def initialized(root_dir):
    """A root whose built-ins and a test schema exist, so a refused put has nothing legitimate to add."""
    return _put_lib(root_dir, "meta", PERSON)


@pytest.mark.parametrize(
    "type_, text, fragment",
    [
        ("content", "{bad json", "the payload is not valid JSON"),
        ("content", "", "the payload is not valid JSON"),
        ("content", "'single'", "the payload is not valid JSON"),
        ("content", "5", "does not match its schema: at $: 5 is not of type 'string'"),
        ("content", '{"a": 1}', "does not match its schema"),
        ("PERSON", '{"age": 3}', "'name' is a required property"),
        ("PERSON", '{"name": "x", "extra": true}', "does not match its schema"),
        ("meta", '{"type": "string", "minLength": 1}', "keyword 'minLength' is not allowed"),
        ("meta", '{"type": "strng"}', "schema.type: must be one of"),
        ("start-node", '{"workflow": "lowercase-ref", "prompt": "p"}', "does not match its schema"),
        ("0000000000000", '"x"', "no node 0000000000000"),
        ("ZZZ", '"x"', "no node matches 'ZZZ'"),
        ("not-a-type!", '"x"', "is not a hash"),
    ],
)
def test_refused_put(uwf, root_dir, initialized, type_, text, fragment):
    if type_ == "PERSON":
        type_ = initialized
    before = snapshot_tree(root_dir)
    result = uwf("cas", "put", type_, text)
    message = assert_one_line_error(result)
    assert fragment in message, message
    assert result.out == ""
    assert snapshot_tree(root_dir) == before


def test_refused_put_from_stdin(uwf, root_dir, initialized):
    before = snapshot_tree(root_dir)
    assert "not valid JSON" in assert_one_line_error(uwf("cas", "put", "content", "-", input="not json"))
    assert snapshot_tree(root_dir) == before


def test_invalid_json_on_a_fresh_root_writes_nothing(uwf, root_dir):
    assert "not valid JSON" in assert_one_line_error(uwf("cas", "put", "content", "{"))
    assert snapshot_tree(root_dir) == {}


def test_put_with_a_data_node_as_type(uwf, root_dir):
    node = _put(uwf, "content", "not a schema")
    before = snapshot_tree(root_dir)
    assert "is not a schema" in assert_one_line_error(uwf("cas", "put", node, '"x"'))
    assert snapshot_tree(root_dir) == before


# -- unknown and ambiguous hashes ------------------------------------------------------------------


@pytest.fixture
def crowded(root_dir):
    """Enough nodes that some first character is shared by several of them."""
    store = _store(root_dir)
    store.ensure_builtins()
    for index in range(30):
        store.put(BUILTIN_HASHES["content"], f"node {index}")
    counts = Counter(hash_[0] for hash_ in stored_hashes(root_dir))
    char, count = counts.most_common(1)[0]
    assert count >= 2
    return char, count


@pytest.mark.parametrize("command", [("get",), ("refs",), ("walk",), ("schema", "get")])
def test_ambiguous_prefix(uwf, root_dir, crowded, command):
    char, count = crowded
    before = snapshot_tree(root_dir)
    message = assert_one_line_error(uwf("cas", *command, char.lower()))
    assert "ambiguous" in message
    assert f"{count} nodes match" in message
    assert snapshot_tree(root_dir) == before


def test_unknown_hash(uwf, root_dir, crowded):
    before = snapshot_tree(root_dir)
    for command in (("get",), ("refs",), ("walk",), ("schema", "get")):
        message = assert_one_line_error(uwf("cas", *command, "0000000000000"))
        assert "no node 0000000000000" in message
    assert snapshot_tree(root_dir) == before


def test_text_that_cannot_be_a_hash(uwf, root_dir):
    for text in ("ILOU", "0123456789ABCDEF", "héllo"):
        assert "is not a hash" in assert_one_line_error(uwf("cas", "get", text))


def test_unknown_hash_on_a_fresh_root(uwf, root_dir):
    assert "no node" in assert_one_line_error(uwf("cas", "get", "7XX"))
    assert snapshot_tree(root_dir) == {}


def test_usage_errors_exit_2(uwf, root_dir):
    for args in (("cas", "put", "content"), ("cas", "get"), ("cas", "gc", "--grace", "soon"), ("cas", "bogus")):
        result = uwf(*args)
        assert result.code == 2, result
        assert "Traceback" not in result.err
    assert snapshot_tree(root_dir) == {}


# -- fsck -------------------------------------------------------------------------------------------


@pytest.fixture
def examples_root(root_dir):
    hashes = [_put_in_process(root_dir, path) for path in EXAMPLE_FILES]
    return hashes


def test_fsck_clean(uwf, root_dir, examples_root):
    result = uwf("cas", "fsck")
    assert result.code == 0, result
    report = result.json()
    assert report["ok"] is True
    assert report["problems"] == []
    assert report["checked"] == len(stored_hashes(root_dir))
    assert result.err == ""


def test_fsck_of_an_empty_root(uwf):
    result = uwf("cas", "fsck")
    assert result.code == 0, result
    assert result.json() == {"checked": 0, "ok": True, "problems": []}


def _flip_payload_byte(root_dir, hash_):
    data = node_bytes(root_dir, hash_)
    _, payload = decode_envelope(data)
    start = data.index(payload)
    # flip the low bit of a letter inside the payload: still CBOR, still UTF-8, wrong hash
    position = next(i for i in range(start + len(payload) - 1, start, -1) if chr(data[i]).isalpha() and chr(data[i] ^ 1).isalpha())
    corrupted = bytearray(data)
    corrupted[position] ^= 0x01
    set_node_bytes(root_dir, hash_, bytes(corrupted))


def test_fsck_finds_a_flipped_byte(uwf, root_dir, examples_root):
    victim = examples_root[0]
    _flip_payload_byte(root_dir, victim)
    result = uwf("cas", "fsck")
    assert result.code == 1
    report = result.json()
    assert report["ok"] is False
    errors = [p for p in report["problems"] if p["severity"] == "error"]
    # The node, and what needs it (it is a registered workflow version).
    assert [p["target"] for p in errors] == [victim, f"workflow 'solve-issue' version {victim}"]
    assert "corrupt" in errors[0]["message"] and "corrupt" in errors[1]["message"]
    message = assert_one_line_error(result)
    assert victim in message
    assert "fsck found 2 problem" in message


def test_get_of_a_corrupt_node(uwf, root_dir, examples_root):
    victim = examples_root[1]
    _flip_payload_byte(root_dir, victim)
    message = assert_one_line_error(uwf("cas", "get", victim))
    assert f"node {victim} is corrupt" in message
    assert "is corrupt" in assert_one_line_error(uwf("workflow", "show", "analyze-topic"))


def test_fsck_finds_a_missing_reference(uwf, root_dir, examples_root):
    meta = uwf("workflow", "show", "solve-issue").json()["roles"]["planner"]["meta"]
    delete_node(root_dir, meta)
    result = uwf("cas", "fsck")
    assert result.code == 1
    targets = {p["target"]: p["message"] for p in result.json()["problems"] if p["severity"] == "error"}
    assert examples_root[0] in targets
    assert meta in targets[examples_root[0]]
    assert_one_line_error(result)


def test_fsck_names_a_thread_whose_head_or_chain_lost_a_node(uwf, root_dir):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    agent = f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"
    first = uwf("thread", "start", "solve-issue", "-p", "one").json()["thread"]
    second = uwf("thread", "start", "solve-issue", "-p", "two").json()["thread"]
    for thread in (first, second):
        assert uwf("thread", "run", thread, "--agent", agent, "--max", "2").code == 0
    assert uwf("thread", "kill", second).code == 0  # archived heads are checked too
    head = uwf("thread", "show", first).json()["head"]
    delete_node(root_dir, head)
    output = uwf("cas", "get", uwf("thread", "show", second).json()["head"], "--payload").json()["output"]
    delete_node(root_dir, output)
    result = uwf("cas", "fsck")
    assert result.code == 1
    problems = {p["target"]: p["message"] for p in result.json()["problems"] if p["severity"] == "error"}
    assert problems[f"thread {first}"] == f"its head {head} is not in the store"
    assert problems[f"archived thread {second} (killed)"].startswith(f"node {output}, reachable from ")


def test_gc_deletes_nothing_while_a_head_is_missing(uwf, root_dir):
    """The chain behind a lost head is what a repair needs: gc refuses rather than sweep it."""
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    agent = f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"
    thread = uwf("thread", "start", "solve-issue", "-p", "one").json()["thread"]
    assert uwf("thread", "run", thread, "--agent", agent, "--max", "3").code == 0
    head = uwf("thread", "show", thread).json()["head"]
    before = uwf("cas", "walk", head).json()
    delete_node(root_dir, head)
    refused = uwf("cas", "gc", "--grace", "0")
    assert refused.code == 1 and head in assert_one_line_error(refused) and "fsck" in refused.err
    dry = uwf("cas", "gc", "--grace", "0", "--dry-run")
    assert dry.code == 0 and dry.json()["missing"] == [head]
    assert all(uwf("cas", "has", hash_).code == 0 for hash_ in before[1:])  # the rest of the chain is all there


def test_fsck_warns_about_an_unindexed_node_of_an_older_root(uwf, root_dir, examples_root):
    unpack(root_dir)  # loose node files, as an older uwf wrote them
    shutil.rmtree(root_dir / "cas" / "_index")
    result = uwf("cas", "fsck")
    assert result.code == 0, result
    report = result.json()
    assert report["ok"] is True
    assert report["problems"] and all(p["severity"] == "warning" for p in report["problems"])
    assert any("reindex" in p["message"] for p in report["problems"])


def test_fsck_of_a_node_with_garbage_bytes(uwf, root_dir, examples_root):
    victim = examples_root[2]
    set_node_bytes(root_dir, victim, b"\xa1\x80\x00")  # {[]: 0}
    result = uwf("cas", "fsck")
    assert result.code == 1
    assert victim in assert_one_line_error(result)


# -- reindex ---------------------------------------------------------------------------------------


def test_reindex_restores_schema_list_of_an_older_root(uwf, root_dir, examples_root):
    listed = uwf("cas", "schema", "list").json()
    moved = unpack(root_dir)
    shutil.rmtree(root_dir / "cas" / "_index")
    result = uwf("cas", "reindex")
    assert result.code == 0, result
    assert result.json() == {"indexed": len(moved)}
    after = uwf("cas", "schema", "list").json()
    assert sorted(after, key=lambda item: item["hash"]) == sorted(listed, key=lambda item: item["hash"])
    assert uwf("cas", "fsck").json()["problems"] == []


# -- gc -----------------------------------------------------------------------------------------------


def _all_nodes(root_dir) -> set[str]:
    return set(stored_hashes(root_dir))


def _kept_by_registry(root_dir) -> set[str]:
    """Every registered version, its source and everything it references (computed in-process)."""
    from uwf_core.repo import Repo

    store = _store(root_dir)
    kept = set()
    for entry in Repo.open(str(root_dir)).registry.entries().values():
        for version in (entry.current, *entry.history):
            kept.update(store.walk(version.hash))
            kept.add(version.source)
    return kept


def test_gc_dry_run_deletes_nothing(uwf, root_dir, examples_root):
    garbage = _put(uwf, "content", "unreferenced")
    for hash_ in stored_hashes(root_dir):
        set_touched(root_dir, hash_, 1_000_000)
    before = snapshot_tree(root_dir)
    result = uwf("cas", "gc", "--dry-run", "--grace", "0")
    assert result.code == 0, result
    report = result.json()
    assert report["dryRun"] is True
    assert report["wouldDelete"] == [garbage]
    assert "deleted" not in report
    assert snapshot_tree(root_dir) == before


def test_gc_deletes_unreferenced_and_keeps_the_rest(uwf, root_dir, examples_root):
    garbage = _put(uwf, "content", "unreferenced")
    garbage_detail = _put_lib(root_dir, "detail", {"agent": "nobody"})
    expected_kept = _kept_by_registry(root_dir) | {META_HASH, *BUILTIN_HASHES.values()}
    assert set(examples_root) <= expected_kept
    result = uwf("cas", "gc", "--grace", "0")
    assert result.code == 0, result
    report = result.json()
    assert report["dryRun"] is False
    assert sorted(report["deleted"]) == sorted([garbage, garbage_detail])
    for node in (garbage, garbage_detail):
        assert uwf("cas", "has", node).code == 1
    solve = uwf("workflow", "history", "solve-issue").json()["current"]
    metas = [role["meta"] for role in uwf("workflow", "show", "solve-issue").json()["roles"].values()]
    for node in (*examples_root, solve["source"], *metas, META_HASH, *BUILTIN_HASHES.values()):
        assert uwf("cas", "has", node).code == 0, node
    assert _all_nodes(root_dir) == expected_kept
    assert uwf("workflow", "show", "solve-issue", "--source").out == (EXAMPLES / "solve-issue.yaml").read_text()
    assert uwf("cas", "fsck").json()["ok"] is True


def test_gc_keeps_workflow_history(uwf, root_dir, tmp_path):
    old = _put_in_process(root_dir, EXAMPLE_FILES[0])
    modified = tmp_path / "modified.yaml"
    modified.write_text((EXAMPLES / "solve-issue.yaml").read_text().replace("End-to-end issue resolution", "Changed"))
    new = _put_in_process(root_dir, str(modified))
    assert old != new
    result = uwf("cas", "gc", "--grace", "0")
    assert result.code == 0, result
    assert result.json()["deleted"] == []
    assert uwf("cas", "has", old).code == 0
    assert uwf("workflow", "rollback", "solve-issue").json()["hash"] == old
    assert uwf("workflow", "show", "solve-issue", "--source").out == (EXAMPLES / "solve-issue.yaml").read_text()


def test_gc_keeps_young_nodes_by_default(uwf, root_dir, examples_root):
    young = _put(uwf, "content", "written a moment ago")
    result = uwf("cas", "gc")
    assert result.code == 0, result
    report = result.json()
    assert report["deleted"] == []
    assert young in report["keptYoung"]
    assert uwf("cas", "has", young).code == 0


def test_gc_grace_period_boundary(uwf, root_dir, examples_root):
    old = _put(uwf, "content", "two hours old")
    young = _put(uwf, "content", "ten minutes old")
    now = time.time()
    set_touched(root_dir, old, now - 7200)
    set_touched(root_dir, young, now - 600)
    report = uwf("cas", "gc").json()
    assert report["deleted"] == [old]
    assert report["keptYoung"] == [young]
    assert uwf("cas", "has", old).code == 1
    assert uwf("cas", "has", young).code == 0


def test_gc_re_put_renews_a_node(uwf, root_dir, examples_root):
    node = _put(uwf, "content", "renewed")
    set_touched(root_dir, node, 1_000_000)
    assert _put(uwf, "content", "renewed") == node
    report = uwf("cas", "gc").json()
    assert node in report["keptYoung"]
    assert uwf("cas", "has", node).code == 0


def test_gc_keeps_builtins_on_a_root_without_workflows(uwf, root_dir):
    garbage = _put(uwf, "content", "alone")
    result = uwf("cas", "gc", "--grace", "0")
    assert result.json()["deleted"] == [garbage]
    assert _all_nodes(root_dir) == {META_HASH, *BUILTIN_HASHES.values()}
    listed = {item["title"] for item in uwf("cas", "schema", "list").json()}
    assert set(BUILTIN_TITLES) <= listed


def test_gc_negative_grace(uwf, root_dir):
    assert "--grace" in assert_one_line_error(uwf("cas", "gc", "--grace", "-1"))
    assert snapshot_tree(root_dir) == {}


def test_gc_with_a_damaged_registry_deletes_nothing(uwf, root_dir, examples_root):
    _put(uwf, "content", "unreferenced")
    registry = root_dir / "registry.yaml"
    text = registry.read_text()
    registry.write_text(text[: text.rindex('hash: "') + len('hash: "') + 5])  # an unterminated quoted hash
    before = snapshot_tree(root_dir)
    result = uwf("cas", "gc", "--grace", "0")
    assert "registry.yaml cannot be read" in assert_one_line_error(result)
    assert snapshot_tree(root_dir) == before


def test_gc_keeps_what_young_nodes_reference(uwf, root_dir):
    old = _put_lib(root_dir, "content", "written long ago, referenced by a fresh node")
    set_touched(root_dir, old, 1_000_000)
    link = _put_lib(root_dir, "meta", {"type": "object", "properties": {"to": {"type": "string", "format": "cas_ref"}}})
    young = _put(uwf, link, {"to": old})
    report = uwf("cas", "gc").json()
    assert young in report["keptYoung"]
    assert old not in report["deleted"]
    assert uwf("cas", "walk", young).json() == [young, old]
    assert uwf("cas", "fsck").code == 0


def test_put_with_a_lone_surrogate_is_refused_cleanly(uwf, root_dir):
    uwf("cas", "schema", "list")
    before = snapshot_tree(root_dir)
    assert_one_line_error(uwf("cas", "put", "content", '"\\ud800"'))
    assert snapshot_tree(root_dir) == before


@pytest.mark.parametrize("text", ['{"x": NaN}', '{"x": Infinity}', '{"x": -Infinity}'])
def test_put_refuses_non_json_numbers(uwf, root_dir, text):
    uwf("cas", "schema", "list")
    before = snapshot_tree(root_dir)
    assert "not valid JSON" in assert_one_line_error(uwf("cas", "put", "detail", text))
    assert snapshot_tree(root_dir) == before


def test_a_leftover_state_file_temp_is_reported_by_fsck_and_removed_by_gc(uwf, root_dir):
    assert uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).code == 0
    stale = root_dir / ".threads.yaml.4242.deadbeef.tmp"  # what a SIGKILL mid-rewrite leaves
    stale.write_text("half")
    os.utime(stale, (time.time() - 120, time.time() - 120))
    fresh = root_dir / ".registry.yaml.4243.cafebabe.tmp"  # a rewrite happening right now
    fresh.write_text("x")
    fsck = uwf("cas", "fsck")
    assert fsck.code == 0
    warned = {p["target"] for p in fsck.json()["problems"] if p["severity"] == "warning"}
    assert stale.name in warned
    gc = uwf("cas", "gc", "--grace", "0")
    assert gc.code == 0 and stale.name in gc.json()["tempFiles"]
    assert not stale.exists() and fresh.exists()
