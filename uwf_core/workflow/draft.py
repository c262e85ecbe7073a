"""A workflow as lint sees it: the draft a YAML document parses into, and its problems, each
with its YAML path so that a message names the file, line and field."""

from __future__ import annotations

import difflib

from ..encoding.records import field, record
from ..errors import WorkflowError
from .model import Workflow
from .yaml_doc import YamlDocument


@record(frozen=True)
class Problem:
    path: tuple
    message: str
    severity: str = "error"  # or "warning"

    def format(self, document: YamlDocument) -> str:
        line = document.line_of(self.path)
        where = f"{document.file}:{line}" if line else document.file
        place = dotted(self.path)
        return f"{where}: {place + ': ' if place else ''}{self.message}"


@record
class Draft:
    """A parsed workflow before storage: role metas are raw schemas, not yet hashes."""

    document: YamlDocument
    workflow: Workflow | None = None
    schemas: dict[str, dict] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def raise_first_error(self) -> None:
        errors = self.errors
        if errors:
            more = f" ({len(errors) - 1} more problem{'s' if len(errors) > 2 else ''}; see `uwf workflow lint`)" if len(errors) > 1 else ""
            raise WorkflowError(errors[0].format(self.document) + more)


def dotted(path: tuple) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def suggest(name: str, known) -> str:
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
