"""The reference CAS library's own test vectors: our hashes must match its hashes."""

from uwf_core.encoding.cbor import encode
from uwf_core.encoding.ids import xxh64_hash
from uwf_core.store.builtin_schemas import META_HASH, schema_hash
from uwf_core.store.cas import node_hash
from uwf_core.store.schemas import META_SCHEMA

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "number"}},
    "required": ["name"],
    "additionalProperties": False,
}


def test_meta_schema_hash():
    assert xxh64_hash(encode(META_SCHEMA)) == "56GP9CC0KVQF8"
    assert META_HASH == "56GP9CC0KVQF8"


def test_schema_node_hash():
    assert schema_hash(PERSON) == "7XX5H51CVD9H0"
    assert node_hash(META_HASH, PERSON) == "7XX5H51CVD9H0"


def test_data_node_hash_with_integral_float():
    assert node_hash("7XX5H51CVD9H0", {"name": "Alice", "age": 30}) == "ERARPP19YJT05"
    assert node_hash("7XX5H51CVD9H0", {"age": 30.0, "name": "Alice"}) == "ERARPP19YJT05"


def test_store_produces_the_vectors(store):
    schema = store.put_schema(PERSON)
    assert schema == "7XX5H51CVD9H0"
    assert store.put(schema, {"name": "Alice", "age": 30}) == "ERARPP19YJT05"
    assert store.get(META_HASH).type == META_HASH


def test_every_known_schema_hash_is_its_schemas_hash():
    """builtin_schemas writes its schemas' hashes out (computing them cost every `uwf` start
    ~4 ms); each is the hash of its schema, and every hash it uses is one of them."""
    from uwf_core.encoding.cbor import encode
    from uwf_core.encoding.ids import xxh64_hash
    from uwf_core.store import builtin_schemas as schemas
    from uwf_core.store.schemas import META_SCHEMA
    from uwf_core.thread.history import HISTORY_ENTRY, HISTORY_ENTRY_HASH

    known = {
        **schemas.BUILTIN,
        "workflow-with-locations": schemas.WORKFLOW_WITH_LOCATIONS,
        "workflow-with-budget": schemas.WORKFLOW_WITH_BUDGET,
        "workflow-with-workspace": schemas.WORKFLOW_WITH_WORKSPACE,
        "workflow-with-supervisor": schemas.WORKFLOW_WITH_SUPERVISOR,
        "workflow-with-maps": schemas.WORKFLOW_WITH_MAPS,
        "start-node-with-budget": schemas.START_NODE_WITH_BUDGET,
        "tree": schemas.TREE,
        "bytes": schemas.BYTES,
        "start-node-with-files": schemas.START_NODE_WITH_FILES,
        "step-node-with-files": schemas.STEP_NODE_WITH_FILES,
        "prompt": schemas.PROMPT,
        "history-entry": HISTORY_ENTRY,
    }
    assert schemas.KNOWN_HASHES["meta"] == xxh64_hash(encode(META_SCHEMA))
    assert set(known) == set(schemas.KNOWN_HASHES) - {"meta"}
    assert {name: schema_hash(schema) for name, schema in known.items()} == {name: schemas.KNOWN_HASHES[name] for name in known}
    named = [schemas.TREE_HASH, schemas.BYTES_HASH, schemas.PROMPT_HASH, schemas.START_WITH_BUDGET_HASH,
             schemas.START_WITH_FILES_HASH, schemas.STEP_WITH_FILES_HASH, HISTORY_ENTRY_HASH, *schemas.WORKFLOW_TYPES]
    assert set(named) <= set(schemas.KNOWN_HASHES.values())
