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
