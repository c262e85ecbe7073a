"""The text protocol: any CLI that reads a prompt and prints an answer. uwf assembles the prompt
(stdin, or `{prompt}` / `{prompt_file}` in the arguments), extracts the structured output
(frontmatter, then the LLM fallback, then re-runs with a correction) and writes the nodes."""

from __future__ import annotations

import os
import re
import time

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

from ..attempt import StepError
from ..record import write_answer

if TYPE_CHECKING:
    from ..call import AgentCall
    from ..contain.process import ProcessOutcome

PLACEHOLDER = re.compile(r"\{(prompt|prompt_file|thread|role)\}")
MAX_ARGUMENT_BYTES = 128 * 1024  # MAX_ARG_STRLEN: the kernel refuses one longer argument with E2BIG


def run(call: AgentCall) -> str:
    from ..extraction.extract import ExtractError, extract_with_corrections, lazy_fallback

    prompt = call.prompt
    secrets = call.secrets
    last = [_run_text(call, prompt)]

    def retry(message: str) -> str:
        last[0] = _run_text(call, f"{prompt}\n\n# Correction\n\n{message}\n")
        return last[0].stdout

    # The extractor has its provider's key from .env itself (the agent never had it). It is
    # sent the answer redacted; the answer is parsed as written (a redaction mark inside YAML
    # would change its structure) and write_answer redacts what is stored.
    fallback = lazy_fallback(lambda: llm_fallback(call))
    try:
        result = extract_with_corrections(last[0].stdout, call.schema, cache_key=call.role.meta, fallback=fallback, retry=retry)
    except ExtractError as exc:
        call.time_left()  # out of time: that is the failure, not the unread output
        looked = _looked_like(secrets.text(last[0].stdout))
        hint = ""
        if "no frontmatter" in exc.message and last[0].stdout.strip() and not _has_extract_model(call):
            hint = " (no extract model is configured to read an answer that does not start with its frontmatter: `uwf setup --model ...`)"
        raise StepError(
            f"could not read the output of agent '{call.resolved.label}': {exc.message}; {looked}{hint}",
            "failed",
            secrets.text(last[0].stderr_tail),
        ) from None
    call.time_left()  # extraction may have used up the step's time
    if result.extracted.method == "llm":
        _refuse_error_answer(call, last[0])
    detail = {
        "extract": result.extracted.method,
        "corrections": result.corrections,
        "exitCode": last[0].exit_code,
        "durationMs": int(time.time() * 1000) - call.started_ms,
    }
    if result.extracted.evidence is not None:
        detail["extractEvidence"] = result.extracted.evidence  # what of the answer each field rests on
    if result.usage is not None:
        from ..extraction.extract import usage_detail

        detail.update(usage_detail(call.repo.config, result.usage))
    return write_answer(
        call.repo.nodes,
        context=call.context,
        role=call.role,
        agent=call.resolved.label,
        protocol="text",
        prompt=call.prompt_parts,
        answer=result.text,
        output=result.extracted.output,
        detail=detail,
        secrets=call.secrets,
        instruction=call.decision.instruction,
        started_ms=call.started_ms,
        agent_key=call.agent_key,
    )


def _refuse_error_answer(call: AgentCall, outcome: ProcessOutcome) -> None:
    """An answer only the extract model could read, from an agent whose last words (on stdout or
    stderr) report a failed API call or a crash, is not an answer (design §16): the attempt fails."""
    from ..extraction.evidence import error_line

    for where, text in (("its answer", outcome.stdout), ("its stderr", outcome.stderr_tail)):
        failure = error_line(call.secrets.text(text), last=5)
        if failure is not None:
            raise StepError(
                f"agent '{call.resolved.label}' reported an error instead of answering ({where} ends with {failure!r}); "
                f"its output could only have come from the extract model, so it is not taken",
                "failed",
                call.secrets.text(outcome.stderr_tail),
            )


def _has_extract_model(call: AgentCall) -> bool:
    config = call.repo.config
    return bool(config.model_overrides.get("extract") or config.default_model)


def _looked_like(stdout: str) -> str:
    """What the output looked like, for the error: its size and first lines (an agent that failed
    and still exited 0 says why there: "Error: 401 Unauthorized")."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if not lines:
        return "its output was empty"
    first = " ⏎ ".join(lines[:3])
    first = first if len(first) <= 200 else first[:200] + "…"
    return f"its output ({len(stdout)} characters) began: {first!r}"


def llm_fallback(call: AgentCall):
    """The LLM extractor for this call (None when no extract model is configured)."""
    from ...config.env import env_with_secrets
    from ..extraction.llm import fallback_for

    return fallback_for(call.repo.config, env_with_secrets(call.repo.env_values), time_left=call.time_left, secrets=call.secrets)


def _run_text(call: AgentCall, prompt: str) -> ProcessOutcome:
    """In a sandbox, {prompt_file} is a file of its private /tmp that exists only in memory;
    otherwise a file in the root's scratch directory, which the watchdog removes if uwf dies."""
    from ..contain.watchdog import WATCHDOG

    wants_file = any("{prompt_file}" in arg for arg in call.resolved.argv)
    prompt_file = None
    if wants_file and call.contained:
        from ..contain.sandbox import PROMPT_PATH

        prompt_file = PROMPT_PATH
    elif wants_file:
        prompt_file = _write_prompt_file(call.repo.backend.scratch_dir, prompt)
        WATCHDOG.guard_file(prompt_file)
    try:
        argv, stdin_text = _text_argv(call, prompt, prompt_file)
        return call.spawn(argv, stdin_text, prompt.encode("utf-8") if wants_file and call.contained else None)
    finally:
        if prompt_file and not call.contained:
            os.unlink(prompt_file)
            WATCHDOG.release_file(prompt_file)


def _text_argv(call: AgentCall, prompt: str, prompt_file: str | None) -> tuple[list[str], str | None]:
    template = call.resolved.argv
    uses_prompt = any("{prompt}" in arg or "{prompt_file}" in arg for arg in template)
    values = {"prompt": prompt, "prompt_file": prompt_file or "", "thread": call.info.thread, "role": call.role.name}
    # One pass, so a placeholder inside the inserted prompt is left as the text it is.
    argv = [PLACEHOLDER.sub(lambda match: values[match[1]], arg) for arg in template]
    longest = max((len(arg.encode("utf-8")) for arg in argv), default=0)
    if longest >= MAX_ARGUMENT_BYTES:
        raise StepError(
            f"the prompt is {longest // 1024} KiB, too long for one command-line argument (Linux allows {MAX_ARGUMENT_BYTES // 1024} KiB): "
            f"give agent '{call.resolved.label}' the prompt on stdin (no {{prompt}} in its args) or as {{prompt_file}}"
        )
    return argv, None if uses_prompt else prompt


def _write_prompt_file(directory: str, prompt: str) -> str:
    from ...store.files import atomic_write, temp_path_for

    path = temp_path_for(os.path.join(directory, "prompt.md")).removesuffix(".tmp") + ".md"
    atomic_write(path, prompt.encode("utf-8"), mode=0o600, sync=False)
    return path
