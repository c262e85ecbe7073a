"""What an agent function is, for type checkers: it takes a `PythonContext` and returns (or, async,
awaits) the role's output as a mapping, an answer text, a `PythonAnswer` or a `WrittenStep`.
Imported only by a program that names these types (typing is not on uwf's start-up path)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Union

from .context import PythonAnswer, PythonContext, WrittenStep

AgentOutput = Union[Mapping[str, object], str, PythonAnswer, WrittenStep]
AgentFunction = Callable[[PythonContext], Union[AgentOutput, Awaitable[AgentOutput]]]
