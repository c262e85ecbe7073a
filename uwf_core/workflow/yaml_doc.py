"""Read a workflow YAML file into a draft: values plus the line of every path.

Line numbers make put-time errors point at the file (`solve.yaml:14: ...`).
"""

from __future__ import annotations

import os

from ..encoding.records import record
from ..errors import WorkflowError

Path = tuple  # keys and list indices from the document root


@record(frozen=True)
class YamlDocument:
    file: str
    text: str
    data: object
    lines: dict[Path, int]

    def line_of(self, path: Path) -> int | None:
        """The line of `path`, or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get(())


MAX_WORKFLOW_CHARS = 1_000_000  # the largest example is 4 KB


def read_yaml_document(file: str) -> YamlDocument:
    try:
        with open(file, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise WorkflowError(f"{file}: no such file") from None
    except IsADirectoryError:
        raise WorkflowError(f"{file}: is a directory, not a workflow YAML file") from None
    except UnicodeDecodeError:
        raise WorkflowError(f"{file}: not UTF-8 text") from None
    except OSError as exc:
        raise WorkflowError(f"{file}: {exc.strerror}") from None
    return parse_yaml_document(text, file)


def parse_yaml_document(text: str, file: str = "<string>") -> YamlDocument:
    import yaml

    from ..encoding.limits import StructureError, check_yaml_text

    if len(text) > MAX_WORKFLOW_CHARS:  # before the parser: a workflow this size is a mistake or an attack
        raise WorkflowError(f"{file}: {len(text):,} characters, more than a workflow may have ({MAX_WORKFLOW_CHARS:,})")
    try:
        check_yaml_text(text, file)
    except StructureError as exc:
        raise WorkflowError(exc.message) from None

    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise WorkflowError(f"{file}: the file is empty")
        lines: dict[Path, int] = {}
        _record_lines(node, (), lines, file)
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise WorkflowError(f"{file}{line}: YAML syntax error: {problem}") from None
    finally:
        loader.dispose()
    return YamlDocument(os.path.relpath(file) if os.path.isabs(file) else file, text, data, lines)


def _record_lines(node, path: Path, lines: dict[Path, int], file: str) -> None:
    import yaml

    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise WorkflowError(f"{file}:{key_node.start_mark.line + 1}: a mapping key must be a plain name, not a list or mapping")
            key = key_node.value
            if key in seen:
                raise WorkflowError(
                    f"{file}:{key_node.start_mark.line + 1}: duplicate key '{key}' (first on line {seen[key]})"
                )
            seen[key] = key_node.start_mark.line + 1
            lines[path + (key,)] = key_node.start_mark.line + 1
            _record_lines(value_node, path + (key,), lines, file)
            lines[path + (key,)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _record_lines(item, path + (index,), lines, file)
