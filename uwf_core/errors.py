"""Errors a user can cause.

Each carries one clear line; the CLI prints it as `uwf: error: ...` and exits
1. Anything else that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    import re


_VOICE = {"cli": False}


def speak_cli() -> None:
    """Messages name commands and flags (`uwf thread fork`, --root): what `uwf` and uwf-tui's
    users read. Without it — a Python program — they name the API's functions and arguments."""
    _VOICE["cli"] = True


class UwfError(Exception):
    """Base class: a user-facing failure with a one-line message, in its reader's words."""

    def __init__(self, message: str) -> None:
        if not _VOICE["cli"] and ("`uwf " in message or "--" in message):
            message = in_api_words(message)
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class StepError(UwfError):
    """A step attempt that failed; `status` is how runs.jsonl records it. `cause`: the exception a
    Python agent function raised in this process (also the error's `__cause__`), so a caller can
    tell a KeyError from a timeout; None for every other failure and for an isolated function,
    whose exception stayed in its own process (its traceback is `stderr`)."""

    def __init__(self, message: str, status: str = "failed", stderr: str | None = None, head: str | None = None,
                 cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.stderr = stderr
        self.head = head  # the head the attempt started from, where the caller needs it (asking)
        self.cause = cause


class NotFoundError(UwfError):
    """A hash, prefix, workflow name, thread or file that does not exist."""


class AmbiguousError(UwfError):
    """A hash prefix that matches more than one node."""


class CorruptError(UwfError):
    """Stored bytes that no longer match their name or their format."""


class ValidationError(UwfError):
    """A payload that does not match its schema, or a schema that is not allowed."""


class WorkflowError(UwfError):
    """A workflow definition refused at put time (YAML, structure or lint)."""


class StateFileError(UwfError):
    """A mutable state file (registry.yaml, threads.yaml, ...) that cannot be read."""


class LockedError(UwfError):
    """A lock held by another process (e.g. a second step of the same thread)."""


class ConflictError(StateFileError):
    """The head moved (or the thread was archived) while a step was running."""


class UsageError(UwfError):
    """A value a command line cannot take (the CLI exits 2, as for argparse's own refusals)."""


class StoreUnavailableError(UwfError):
    """The root cannot be reached right now (a database restarting, a network gone): trying again
    later may work, so a worker waits instead of giving the thread up."""


class PausedError(UwfError):
    """A step asked of a paused thread: none starts until `uwf thread unpause`."""


_API_WORDS: list[tuple[re.Pattern[str], str]] | None = None
_API_WORDS_TABLE = (  # a CLI hint, and what a Python program does instead (uwf_core.api's names)
    (r"`uwf thread fork`", "`fork_thread()`"),
    (r"`uwf thread resume`", "`resume_thread()`"),
    (r"`uwf thread steps(?: [A-Z0-9]+)?`", "`thread_steps()`"),
    (r"`uwf thread unpause ([A-Za-z0-9]+)`", r'`unpause_thread(repo, "\1")`'),
    (r"`uwf thread answer ([A-Za-z0-9]+)`", r'`answer_thread(repo, "\1", ...)`'),
    (r"`uwf thread dry-run ([A-Za-z0-9]+)`", r'`dry_run(repo, "\1")`'),
    (r"`uwf thread start -w DIR`", "`start_thread(..., workspace=DIR)`"),
    (r"`uwf thread start`", "`start_thread()`"),
    (r"`uwf thread read`", "`read_thread()`"),
    (r"`uwf thread files[^`]*`", "`step_changes()`"),
    (r"`uwf cas fsck --repair`", "`uwf cas fsck --repair` (the command line: a repair wants nothing else at work on the root)"),
    (r"`uwf cas fsck`", "`fsck(repo)`"),
    (r"`uwf workflow lint`", "`lint_workflow()`"),
    (r"--root or UWF_STORAGE_ROOT", "Repo.open(DIR) or UWF_STORAGE_ROOT"),
    (r"^--agent ([^\s=]+)=\.\.\.: ", r'agents={"\1": ...}: '),
    (r"pass --agent CMD", "pass StepOptions(agent=...)"),
    (r"the thread's --agent ([^\s=]+)=\.\.\. binding", r"start_thread's agents={'\1': ...}"),
    (r"the thread's --agent binding", "the thread's agents= binding (start_thread)"),
    (r"\(from --agent\)", "(from StepOptions(agent=...))"),
    (r"^--max-tokens must", "max_tokens must"),
    (r"^--max-cost must", "max_cost must"),
    (r"with --force \(they go on\)", "with force=True (they go on)"),
    (r"\(give --force to replace", "(give force=True to replace"),
    (r"\(e\.g\. --agents claude,codex\)", '(e.g. ["claude", "codex"])'),
    (r"without --agents", "with perform_step()"),
)


def in_api_words(message: str) -> str:
    """A message written for the command line, as a Python program's reader needs it: each
    command or flag it names replaced by the API call that does the same."""
    global _API_WORDS
    if _API_WORDS is None:
        import re

        _API_WORDS = [(re.compile(pattern), replacement) for pattern, replacement in _API_WORDS_TABLE]
    for pattern, replacement in _API_WORDS:
        message = pattern.sub(replacement, message)
    return message
