"""A deterministic demo root for TUI snapshots and the screenshots in the docs.

Everything is written in-process with a frozen clock and counted thread ids,
so every hash, id and time is the same on every run: the examples
registered, solve-issue run to done with the scripted answers (recording
tokens under a priced model, as uwf-builtin does, within a budget), a fork of
it whose reviewer was overruled by a human, triage-bug two steps in (its
agent records no tokens, as uwf-script), a failed attempt on record, and a
fresh analyze-topic thread.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import time
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
FROZEN_MS = 1_790_000_000_000  # 2026-09-21 14:13:20 UTC


class FrozenClock:
    """time.time stands still until the builder moves it on."""

    def __init__(self, start_ms: int) -> None:
        self.now = start_ms / 1000

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


CLOCK = FrozenClock(FROZEN_MS)


@contextlib.contextmanager
def frozen_clock(start_ms: int = FROZEN_MS):
    """A fixed clock (moved on explicitly) and counted thread ids."""
    CLOCK.now = start_ms / 1000
    ids = itertools.count(1)
    fake_time = CLOCK

    def fake_ulid() -> str:
        n = next(ids)
        return f"01K5N{n:05d}" + "ABCDEFGHJKMNPQRS"[n:] + "0123456789ABCDEF"[:n]

    with mock.patch("time.time", fake_time), mock.patch("uwf_core.encoding.ids.new_ulid", fake_ulid), mock.patch(
        "uwf_core.thread.ops.new_ulid", fake_ulid
    ):
        yield


# What the solve-issue steps record, in order: (prompt, completion) tokens of model "sonnet".
SOLVE_USAGE = [(1420, 380), (2310, 1150), (2960, 240), (3880, 1020), (4510, 210)]
PRICES = "prices:\n  sonnet: {input: 3, output: 15}\n"


def _scripted_step(root, thread: str, answers: dict, index: dict, usage: tuple[int, int] | None = None) -> str:
    """One step done in-process the way uwf-script does it, then the head moved. With `usage`, the
    step records those tokens under model "sonnet" and is labelled as uwf-builtin's would be."""
    from uwf_core.agents.kit import AgentAnswer, complete_step, load_agent_context
    from uwf_core.agents.script import answer_text
    from uwf_core.engine.step import _next_is_end
    from uwf_core.thread.moderator import evaluate
    from uwf_core.thread.ops import thread_info

    info = thread_info(root, thread)
    os.environ.pop("UWF_HEAD", None)
    os.environ.pop("UWF_ROLE", None)
    probe = load_agent_context(root, thread, next(iter(answers)))
    decision = evaluate(probe.workflow, probe.context)
    ctx = load_agent_context(root, thread, decision.role)
    ctx.instruction = decision.instruction
    position = index.get(decision.role, 0)
    index[decision.role] = position + 1
    text = answer_text(answers[decision.role][position], decision.role)
    started = int(time.time() * 1000)
    CLOCK.advance(4.2 + 1.3 * len(index))
    detail: dict = {"script": "examples"}
    label = "uwf-script"
    if usage is not None:
        prompt_tokens, completion_tokens = usage
        detail.update(model="sonnet", usage={"promptTokens": prompt_tokens, "completionTokens": completion_tokens,
                                             "totalTokens": prompt_tokens + completion_tokens, "requests": 1})
        label = "builtin"
    step = complete_step(ctx, AgentAnswer(text, detail), agent_label=label, started_ms=started)
    CLOCK.advance(2.0)
    done, _, _ = _next_is_end(root, ctx.workflow, ctx.context, step)
    root.threads.compare_and_set(thread, info.head, step, archive_reason="done" if done else None, workflow=info.workflow)
    return step


def build_fixed_root(path: str) -> dict:
    """Build the root at `path` (which must be empty); returns the ids the tests refer to."""
    import yaml

    from uwf_core.config.setup import SetupRequest, apply_setup
    from uwf_core.repo import Repo
    from uwf_core.store.records import RunRecord
    from uwf_core.thread.ops import fork_with_output, start_thread
    from uwf_core.workflow.ops import put_workflow

    root = Repo.open(path)
    ids: dict = {}
    with frozen_clock():
        for name in ("solve-issue", "triage-bug", "analyze-topic", "develop"):
            put_workflow(root, str(EXAMPLES / f"{name}.yaml"))
        # The scripts' directory comes from the environment, so the root's config (which the
        # snapshots show) names no path of the machine the tests run on.
        os.environ["UWF_SCRIPT_DIR"] = str(EXAMPLES)
        apply_setup(root, SetupRequest(agents={"script": "uwf-script"}, default_agent="script"))
        config = Path(path) / "config.yaml"
        config.write_text(config.read_text() + PRICES)
        scripts = {name: yaml.safe_load((EXAMPLES / f"{name}.script.yaml").read_text()) for name in ("solve-issue", "triage-bug")}

        solve = start_thread(root, "solve-issue", "Users can log in with an empty password; the API answers 500.", max_tokens=40_000)
        index: dict = {}
        ids["solve_steps"] = [_scripted_step(root, solve.thread, scripts["solve-issue"], index, usage) for usage in SOLVE_USAGE]
        ids["solve"] = solve.thread

        CLOCK.advance(600)
        fork = fork_with_output(root, ids["solve_steps"][2], {"approved": True, "comments": "Good enough for a first release; tests can follow."})
        ids["fork"] = fork.thread

        CLOCK.advance(300)
        triage = start_thread(root, "triage-bug", "Bug report: the app crashes when I press Enter on the login page.")
        index = {}
        ids["triage_steps"] = [_scripted_step(root, triage.thread, scripts["triage-bug"], index) for _ in range(2)]
        ids["triage"] = triage.thread
        now = int(time.time() * 1000)
        root.runs.append(
            RunRecord(
                thread=triage.thread, workflow=triage.workflow, role="triager", agent="claude", status="timeout",
                head=ids["triage_steps"][-1], step=None, startedAt=now - 900_000, completedAt=now, durationMs=900_000,
                error="agent 'claude' timed out after 900s; its process group was killed",
            ),
        )
        CLOCK.advance(120)
        analyze = start_thread(root, "analyze-topic", "Why content-addressed storage suits agent workflows.")
        ids["analyze"] = analyze.thread
    (Path(path) / "fixture.json").write_text(json.dumps(ids, indent=2))
    return ids
