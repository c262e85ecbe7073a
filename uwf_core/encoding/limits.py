"""Limits on untrusted structure (agent answers, workflow files, payloads given on the command
line), checked before parsing and without recursion: nothing nests deeper than the CAS can
store, nothing is bigger than a sane answer, and YAML may not use anchors or aliases (an
alias bomb expands to billions of nodes; LibYAML overflows the C stack on deep nesting)."""

from __future__ import annotations

import re

from ..errors import UwfError
from .cbor import MAX_DEPTH

MAX_TEXT_CHARS = 8_000_000

_JSON_STRING = re.compile(r'"(?:\\.|[^"\\])*"', re.S)
_BRACKETS = re.compile(r"[\[\]{}\n]")


class StructureError(UwfError):
    """Input too deep, too large, or using YAML aliases."""


def check_size(text: str, what: str, max_chars: int = MAX_TEXT_CHARS) -> None:
    if len(text) > max_chars:
        raise StructureError(f"{what}: {len(text):,} characters, more than the {max_chars:,} uwf reads")


def check_json_text(text: str, what: str, max_chars: int = MAX_TEXT_CHARS) -> None:
    """Refuse JSON text nested deeper than the CAS stores, before json.loads recurses into it
    (`max_chars`: for a file bigger than any answer, a bundle's manifest)."""
    check_size(text, what, max_chars)
    depth = 0
    line = 1
    for match in _BRACKETS.finditer(_JSON_STRING.sub(lambda m: "\n" * m[0].count("\n"), text)):
        char = match[0]
        if char == "\n":
            line += 1
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise StructureError(f"{what}: nesting deeper than {MAX_DEPTH} levels at line {line}")
        else:
            depth -= 1


def check_yaml_text(text: str, what: str) -> None:
    """Refuse YAML with anchors or aliases, or nested deeper than the CAS stores, using the
    pure-Python scanner (iterative: no C stack to overflow). Syntax errors are left to the
    parser, which reports them with their line."""
    import yaml

    check_size(text, what)
    opening = (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken, yaml.FlowMappingStartToken, yaml.FlowSequenceStartToken)
    closing = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
    depth = 0
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if isinstance(token, (yaml.AnchorToken, yaml.AliasToken)):
                raise StructureError(
                    f"{what}: YAML anchors and aliases are not accepted (line {token.start_mark.line + 1}); write the value out"
                )
            if isinstance(token, opening):
                depth += 1
                if depth > MAX_DEPTH:
                    raise StructureError(f"{what}: nesting deeper than {MAX_DEPTH} levels at line {token.start_mark.line + 1}")
            elif isinstance(token, closing):
                depth -= 1
    except yaml.YAMLError:
        return
