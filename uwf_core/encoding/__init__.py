"""Pure codecs with no I/O: deterministic CBOR, hashes and ids, the state-file YAML subset,
and answer frontmatter. Everything above builds on these bytes.
"""
