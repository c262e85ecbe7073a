"""Typed thread nodes (StartNode, StepNode) and the context built from a chain."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable


@dataclass(frozen=True)
class StartNode:
    workflow: str
    prompt: str
    workspace: str | None = None
    resumes: str | None = None
    agents: dict[str, str] | None = None

    def to_payload(self) -> dict:
        return {
            "workflow": self.workflow,
            "prompt": self.prompt,
            "workspace": self.workspace,
            "resumes": self.resumes,
            "agents": dict(self.agents) if self.agents else None,
        }

    @classmethod
    def from_payload(cls, payload: dict) -> StartNode:
        return cls(
            workflow=payload["workflow"],
            prompt=payload["prompt"],
            workspace=payload.get("workspace"),
            resumes=payload.get("resumes"),
            agents=payload.get("agents") or None,
        )


@dataclass(frozen=True)
class StepNode:
    start: str
    prev: str | None
    role: str
    output: str
    detail: str
    agent: str
    instruction: str | None = None
    started_at: int | None = None
    completed_at: int | None = None

    def to_payload(self) -> dict:
        data = {
            "start": self.start,
            "prev": self.prev,
            "role": self.role,
            "output": self.output,
            "detail": self.detail,
            "agent": self.agent,
            "instruction": self.instruction,
        }
        if self.started_at is not None:
            data["startedAt"] = self.started_at
        if self.completed_at is not None:
            data["completedAt"] = self.completed_at
        return data

    @classmethod
    def from_payload(cls, payload: dict) -> StepNode:
        return cls(
            start=payload["start"],
            prev=payload.get("prev"),
            role=payload["role"],
            output=payload["output"],
            detail=payload["detail"],
            agent=payload["agent"],
            instruction=payload.get("instruction"),
            started_at=payload.get("startedAt"),
            completed_at=payload.get("completedAt"),
        )


@dataclass(frozen=True)
class StepContext:
    """One completed step as the moderator and agents see it.

    `output` is the expanded payload, read on first use: routing by status or
    by a null condition needs only the last one, so a long chain is walked
    without reading every output.
    """

    hash: str
    role: str
    output_hash: str
    detail: str
    agent: str
    start: str
    instruction: str | None = None
    started_at: int | None = None
    completed_at: int | None = None
    load_output: Callable[[str], object] | None = field(default=None, compare=False, repr=False)

    @cached_property
    def output(self) -> object:
        if self.load_output is None:
            raise ValueError(f"step {self.hash}: no loader for output {self.output_hash}")
        return self.load_output(self.output_hash)

    def to_json(self) -> dict:
        return {"role": self.role, "output": self.output, "detail": self.detail, "agent": self.agent}


@dataclass(frozen=True)
class ThreadContext:
    """What the chain from a head says: the current StartNode, and every step oldest first.

    `steps` includes steps of resumed runs; `since_start` counts only those
    taken after the current StartNode (the moderator routes from $START
    when it is zero).
    """

    head: str
    start_hash: str
    start: StartNode
    steps: list[StepContext] = field(default_factory=list)
    since_start: int = 0

    @property
    def last_step(self) -> StepContext | None:
        return self.steps[-1] if self.since_start else None

    @property
    def head_is_start(self) -> bool:
        return self.head == self.start_hash

    def to_json(self) -> dict:
        """The JSONata input: {start, steps} as design.md section 7 describes."""
        return {"start": self.start.to_payload(), "steps": [step.to_json() for step in self.steps]}
