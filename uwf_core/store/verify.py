"""Nodes from outside the store — a bundle, a step agent's staging file — checked whole before
any is taken in: each one's bytes against its name, its payload against its schema (allowed
schemas only), its references to nodes among them or already stored."""

from __future__ import annotations

from ..errors import CorruptError, UwfError
from .cas import CasStore, Node, _collect_refs, _verified_node


class NodesRefused(UwfError):
    """One node of the set is not what it claims (its message names the node)."""


def verify_nodes(store: CasStore, nodes: dict[str, bytes], among: str = "among them") -> dict[str, Node]:
    """The decoded nodes (hash -> Node), in the order given; NodesRefused naming the first problem
    (`among` says where the others came from: "in the bundle")."""
    from .builtin_schemas import META_HASH
    from .schemas import check_schema, validation_errors

    decoded = {}
    for hash_, data in nodes.items():
        try:
            decoded[hash_] = _verified_node(hash_, data)
        except CorruptError as exc:
            raise NodesRefused(exc.message) from None

    def schema_of(type_hash: str) -> object:
        if type_hash in decoded:
            return decoded[type_hash].payload
        try:
            return store.schema(type_hash)
        except UwfError:
            return None

    for hash_, node in decoded.items():
        if node.type == META_HASH:
            try:
                check_schema(node.payload, f"schema {hash_}")
            except UwfError as exc:
                raise NodesRefused(f"node {hash_} is not an allowed schema: {exc.message}") from None
            continue
        if node.type == hash_:
            continue  # the meta-schema itself (verified by its hash)
        schema = schema_of(node.type)
        if not isinstance(schema, (dict, bool)):
            raise NodesRefused(f"node {hash_} has type {node.type}, which is neither {among} nor in this root")
        errors = validation_errors(schema, node.payload, cache_key=node.type)
        if errors:
            raise NodesRefused(f"Validation failed for schema {node.type}: node {hash_} does not match its schema: {errors[0]}")
        refs: list[str] = []
        _collect_refs(schema, node.payload, refs)
        for ref in refs:
            if ref not in decoded and not store.has(ref):
                raise NodesRefused(f"node {hash_} refers to {ref}, which is neither {among} nor in this root")
    return decoded
