"""Prove that what the docs show runs: find the fenced blocks of a Markdown page, run its shell
sessions in one bash process and compare their output with the page's, lint its workflows and
run its Python.

The conventions a page follows (the docs' authors read them here):

- A ```console, ```sh or ```bash block whose nearest non-blank line above is `<!-- test: run -->`
  runs. In a console block `$ ` starts a command and the lines up to the next `$ ` are its
  expected output (stdout and stderr merged); in sh/bash every line that is not blank or a comment
  is a command, its output unchecked. A line ending in `\\` continues on the next; a heredoc
  (`<<EOF`, `<<'EOF'`, `<<-EOF`) takes the lines up to its delimiter. All runnable blocks of a
  page run in order in one bash, so `cd` and `export` carry over. `<!-- test: run postgres -->`
  runs the block (and so its page) with a PostgreSQL server of its own that libpq's defaults
  find (PGHOST, PGPORT, PGUSER), or skips the page where PostgreSQL is not installed.
- Expected output is a shape: trailing whitespace and trailing blank lines are ignored; a line
  that is only `...` matches any number of lines; `...` in a line matches any text; a number with
  a decimal point (`0.12`, `41.2s`) matches any number; an ISO-8601 date or time matches any;
  a node hash (13 Crockford base32 characters) or a thread id (a ULID, 26) matches any of its
  kind and binds to it: the page's token must then stand for the same actual one everywhere after,
  and later commands have it (or any prefix of 6 characters or more of it) replaced by the actual
  one. `"01M88B1AGC..."` (quoted, or holding a digit) binds an abbreviated id the same way. A last
  line `(exit N)` expects exit status N; otherwise a command must exit 0.
- Every ```yaml block must parse; one with `roles` and `graph` must pass `uwf workflow lint`.
  Every ```python block runs, the page's blocks as one script. `<!-- test: skip -->` above a yaml
  or python block exempts it.
"""

from __future__ import annotations

import os
import queue
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

RUN_MARKER = "<!-- test: run -->"
SKIP_MARKER = "<!-- test: skip -->"
NEEDS = ("postgres",)  # what `<!-- test: run postgres -->` may ask for besides the sandbox
SHELL_LANGS = ("console", "sh", "bash")
PAGE_TIMEOUT = 300.0  # seconds for all of one page's commands (or its Python script)
COMMAND_TIMEOUT = 120.0  # seconds for one command


class DocFailure(AssertionError):
    """What a page shows does not hold; the message alone tells its author what to fix."""


# -- parsing ---------------------------------------------------------------------------------------

FENCE_OPEN = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
MARKER = re.compile(r"<!-- test: (?P<kind>run|skip)(?P<needs>(?: [a-z]+)*) -->")
ANY_MARKER = re.compile(r"<!--\s*test\b", re.IGNORECASE)  # at a line's start: prose may quote a marker in `code`
HEREDOC = re.compile(r"(?<!<)<<(?!<)-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
EXIT_LINE = re.compile(r"^\(exit (\d+)\)$")


@dataclass(frozen=True)
class Fence:
    lang: str  # the info string's first word, lower case ("" for none)
    line: int  # the page line of the opening fence (1-based); content starts on the next
    lines: tuple[str, ...]  # the content, dedented by the fence's own indent
    marker: str | None  # "run", "skip" or None: the nearest non-blank line above
    needs: tuple[str, ...] = ()  # what a run marker asks for (NEEDS)

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n" if self.lines else ""


@dataclass
class Command:
    text: str  # as the page writes it (continuations and heredocs included)
    line: int  # the page line it starts on
    block_line: int  # the page line of its block's opening fence
    lang: str
    expected: list[tuple[int, str]] = field(default_factory=list)  # (page line, text) of its output
    exit: int = 0


@dataclass
class Page:
    path: Path
    name: str  # what tests and messages call it: the path relative to docs/
    fences: list[Fence]
    commands: list[Command]
    problems: list[str]  # markers that lead nowhere, blocks that cannot be split into commands

    def blocks(self, *langs: str) -> list[Fence]:
        return [fence for fence in self.fences if fence.lang in langs]

    @property
    def needs(self) -> set[str]:
        """What its runnable blocks ask for: the whole page runs with it."""
        return {need for fence in self.fences if fence.marker == "run" for need in fence.needs}


def parse_fences(text: str) -> tuple[list[Fence], list[str]]:
    """The fenced blocks of a Markdown text with their markers, and the problems with markers
    (unknown, or not followed by a block it can apply to) and fences (never closed)."""
    lines = text.splitlines()
    fences: list[Fence] = []
    problems: list[str] = []
    pending: tuple[int, str, tuple[str, ...]] | None = None  # a marker waiting for its block: (line, kind, needs)
    index = 0
    while index < len(lines):
        line = lines[index]
        number = index + 1
        opening = FENCE_OPEN.match(line)
        if opening:
            indent, fence = len(opening["indent"]), opening["fence"]
            lang = (opening["info"].split() or [""])[0].lower().lstrip(".{")
            marker, needs = (pending[1], pending[2]) if pending else (None, ())
            if marker == "run" and lang not in SHELL_LANGS:
                problems.append(f"line {pending[0]}: {RUN_MARKER} is above a ```{lang} block; only console, sh and bash blocks run")
            pending = None
            content: list[str] = []
            index += 1
            while index < len(lines) and not _closes(lines[index], fence):
                content.append(_dedent(lines[index], indent))
                index += 1
            if index == len(lines):
                problems.append(f"line {number}: the ```{lang} block opened here is never closed")
            fences.append(Fence(lang, number, tuple(content), marker, needs))
        elif line.strip():
            if pending:
                problems.append(f"line {pending[0]}: {lines[pending[0] - 1].strip()} is not followed by a fenced block (line {number} is not one)")
                pending = None
            marker = MARKER.fullmatch(line.strip())
            if marker and (marker["kind"] == "run" or not marker["needs"]) and set(marker["needs"].split()) <= set(NEEDS):
                pending = (number, marker["kind"], tuple(marker["needs"].split()))
            elif ANY_MARKER.match(line.strip()):
                problems.append(
                    f"line {number}: unknown test marker {line.strip()!r}: write {RUN_MARKER} (or <!-- test: run NEED -->, "
                    f"NEED one of {', '.join(NEEDS)}) or {SKIP_MARKER}, alone on its line"
                )
        index += 1
    if pending:
        problems.append(f"line {pending[0]}: {lines[pending[0] - 1].strip()} is not followed by a fenced block (the page ends)")
    return fences, problems


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]}


def _dedent(line: str, indent: int) -> str:
    """A block inside a list item is indented like the item; its content is not."""
    spaces = len(line) - len(line.lstrip(" "))
    return line[min(spaces, indent):]


def shell_commands(fence: Fence) -> tuple[list[Command], list[str]]:
    """The commands of a runnable block, each with the output a console block expects of it."""
    commands: list[Command] = []
    problems: list[str] = []
    lines = fence.lines
    index = 0
    while index < len(lines):
        line = lines[index]
        number = fence.line + 1 + index
        if fence.lang == "console":
            starts = line.startswith("$ ") or line.rstrip() == "$"
            text = line[2:] if starts else ""
        else:
            starts = bool(line.strip()) and not line.lstrip().startswith("#")
            text = line
        if starts:
            text, index, problem = _whole_command(text, lines, index)
            if problem:
                problems.append(f"line {number}: {problem}")
            if text.strip():
                commands.append(Command(text, number, fence.line, fence.lang))
        elif fence.lang == "console":
            if commands:
                commands[-1].expected.append((number, line))
            elif line.strip():
                problems.append(f"line {number}: output before the block's first `$ ` command: {line!r}")
        index += 1
    for command in commands:
        _take_exit_line(command)
    return commands, problems


def _whole_command(text: str, lines: tuple[str, ...], index: int) -> tuple[str, int, str | None]:
    """A command with its continuation lines and heredoc bodies; the index of its last line."""
    parts = [text]
    while parts[-1].endswith("\\") and index + 1 < len(lines):
        index += 1
        parts.append(lines[index])
    for match in HEREDOC.finditer("\n".join(parts)):
        delimiter = match.group(2)
        while True:
            index += 1
            if index >= len(lines):
                return "\n".join(parts), index - 1, f"the heredoc's end `{delimiter}` is missing"
            parts.append(lines[index])
            if lines[index].strip() == delimiter:
                break
    return "\n".join(parts), index, None


def _take_exit_line(command: Command) -> None:
    """`(exit N)` as the last expected line is the exit status, not output."""
    while command.expected and not command.expected[-1][1].strip():
        command.expected.pop()
    if command.expected:
        found = EXIT_LINE.match(command.expected[-1][1].strip())
        if found:
            command.exit = int(found.group(1))
            command.expected.pop()


def load_page(path: Path, docs: Path) -> Page:
    """A page parsed: its fences, its runnable commands in order, and its problems."""
    fences, problems = parse_fences(path.read_text(encoding="utf-8"))
    commands: list[Command] = []
    for fence in fences:
        if fence.marker == "run" and fence.lang in SHELL_LANGS:
            found, trouble = shell_commands(fence)
            commands.extend(found)
            problems.extend(trouble)
    name = os.path.relpath(path, docs)
    return Page(path, name, fences, commands, [f"{name}: {problem}" for problem in problems])


def doc_pages(docs: Path) -> list[Path]:
    """Every Markdown page under docs/, never through a symbolic link (docs/screenshots is one)."""
    pages = []
    for directory, subdirectories, files in os.walk(docs):
        subdirectories[:] = sorted(name for name in subdirectories if name != "screenshots" and not os.path.islink(os.path.join(directory, name)))
        for name in sorted(files):
            path = Path(directory) / name
            if name.endswith(".md") and not path.is_symlink():
                pages.append(path)
    return pages


# -- matching output -------------------------------------------------------------------------------

CROCKFORD = "[0-9A-HJKMNP-TV-Z]"
EDGE_BEFORE = r"(?<![0-9A-Za-z])"
EDGE_AFTER = r"(?![0-9A-Za-z])"
ULID = f"{EDGE_BEFORE}[0-7]{CROCKFORD}{{25}}{EDGE_AFTER}"
HASH = f"{EDGE_BEFORE}{CROCKFORD}{{13}}{EDGE_AFTER}"
ISO_TIME = (
    r"(?<![\d:.])(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{8}T\d{6}Z?|\d{2}:\d{2}:\d{2}(?:\.\d+)?)(?![\d:])"
)
ANY_NUMBER = r"\d[\d,]*(?:\.\d+)?"
# What an expected line may hold besides literal text; the first alternative that matches wins.
EXPECTED_TOKEN = re.compile(
    f"(?P<iso>{ISO_TIME})"
    f"|(?P<ulid>{ULID})"
    f"|(?P<hash>{HASH})"
    f"|(?P<abbrev>(?<=\"){CROCKFORD}{{6,}}|{EDGE_BEFORE}(?={CROCKFORD}*\\d){CROCKFORD}{{6,}})\\.\\.\\."
    r"|(?P<dots>\.\.\.)"
    r"|(?P<number>(?<![\w.])\d+\.\d+(?!\.\d))"
)
COMMAND_WORD = re.compile(f"{EDGE_BEFORE}{CROCKFORD}{{6,}}{EDGE_AFTER}")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def resolve(word: str, bindings: dict[str, str]) -> str | None:
    """The actual id a page's id (or a prefix of one, 6 characters or more) stands for, if bound."""
    found = {actual for shown, actual in bindings.items() if len(word) >= 6 and (shown.startswith(word) or word.startswith(shown))}
    if len(found) > 1:
        raise DocFailure(f"`{word}` is a prefix of several ids the page has shown ({', '.join(sorted(found))}): write more of it")
    return found.pop() if found else None


def substitute(command: str, bindings: dict[str, str]) -> str:
    """The command with every id the page showed earlier replaced by the one this run printed."""
    return COMMAND_WORD.sub(lambda word: resolve(word.group(0), bindings) or word.group(0), command)


def line_pattern(expected: str, bindings: dict[str, str]) -> tuple[re.Pattern, dict[str, str]]:
    """A regex for one expected line, and which of its groups bind which of the page's ids."""
    parts: list[str] = []
    groups: dict[str, str] = {}  # group name -> the page's id it binds
    named: dict[str, str] = {}  # the page's id -> its group, for a second use in the same line
    position = 0
    for token in EXPECTED_TOKEN.finditer(expected):
        parts.append(re.escape(expected[position:token.start()]))
        position = token.end()
        kind = token.lastgroup
        shown = token.group(kind)
        if kind == "dots":
            parts.append(".*?")
        elif kind == "number":
            parts.append(ANY_NUMBER)
        elif kind == "iso":
            parts.append(ISO_TIME)
        else:
            bound = resolve(shown, bindings)
            if bound is not None:
                parts.append(re.escape(bound[:len(shown)]) + f"{CROCKFORD}*.*?" if kind == "abbrev" else re.escape(bound))
            elif shown in named:
                parts.append(f"(?P={named[shown]})" + (".*?" if kind == "abbrev" else ""))
            else:
                group = f"g{len(groups)}"
                groups[group], named[shown] = shown, group
                body = {"ulid": ULID, "hash": HASH, "abbrev": f"{EDGE_BEFORE}{CROCKFORD}{{{len(shown)},}}"}[kind]
                parts.append(f"(?P<{group}>{body})" + (".*?" if kind == "abbrev" else ""))
    parts.append(re.escape(expected[position:]))
    return re.compile("".join(parts)), groups


def match_line(expected: str, actual: str, bindings: dict[str, str]) -> dict[str, str] | None:
    """The bindings after `actual` matched `expected` (new ids bound), or None."""
    pattern, groups = line_pattern(expected.rstrip(), bindings)
    found = pattern.fullmatch(actual.rstrip())
    if not found:
        return None
    return {**bindings, **{shown: found.group(group) for group, shown in groups.items()}}


def output_lines(text: str) -> list[str]:
    """Lines as compared: colours and trailing whitespace gone, trailing blank lines dropped."""
    lines = [ANSI.sub("", line).rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


class Matcher:
    """Expected lines against actual ones, `...` lines matching any run of lines; remembers the
    furthest expected line it got to, to say where the output first differs."""

    def __init__(self, expected: list[str], actual: list[str]) -> None:
        self.expected = expected
        self.actual = actual
        self.failed: set = set()
        self.furthest = (-1, -1)  # (expected index, actual index) of the deepest failed comparison

    def match(self, bindings: dict[str, str]) -> dict[str, str] | None:
        return self._match(0, 0, bindings)

    def _match(self, i: int, j: int, bindings: dict[str, str]) -> dict[str, str] | None:
        key = (i, j, frozenset(bindings.items()))
        if key in self.failed:
            return None
        result = None
        if i == len(self.expected):
            result = bindings if j == len(self.actual) else None
            if result is None:
                self._note(i, j)
        elif self.expected[i].strip() == "...":
            for k in range(j, len(self.actual) + 1):
                result = self._match(i + 1, k, bindings)
                if result is not None:
                    break
        else:
            bound = match_line(self.expected[i], self.actual[j], bindings) if j < len(self.actual) else None
            if bound is None:
                self._note(i, j)
            else:
                result = self._match(i + 1, j + 1, bound)
        if result is None:
            self.failed.add(key)
        return result

    def _note(self, i: int, j: int) -> None:
        if i > self.furthest[0]:
            self.furthest = (i, j)


def match_output(expected: list[str], actual: str, bindings: dict[str, str]) -> tuple[dict[str, str] | None, str]:
    """The bindings after the actual output matched the expected lines, or None and where it
    first differs."""
    lines = output_lines(actual)
    wanted = [line.rstrip() for line in expected]
    while wanted and not wanted[-1]:
        wanted.pop()
    matcher = Matcher(wanted, lines)
    result = matcher.match(bindings)
    if result is not None:
        return result, ""
    i, j = matcher.furthest
    if i == len(wanted):
        return None, f"the output goes on after the last expected line: actual line {j + 1} is {lines[j]!r}"
    if i and wanted[i - 1].strip() == "...":
        return None, f"expected line {i + 1} {wanted[i]!r} matched no actual line after the `...` (from actual line {j + 1} on)"
    actual_line = f"actual line {j + 1} is {lines[j]!r}" if j < len(lines) else "the output ended before it"
    return None, f"expected line {i + 1} {wanted[i]!r} did not match: {actual_line}"


# -- running ---------------------------------------------------------------------------------------


def uwf_command() -> list[str]:
    """The `uwf` installed next to this Python (the venv's), as tests/conftest.py finds it."""
    script = shutil.which("uwf", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "uwf_core.cli.main"]


def sandbox(base: Path) -> tuple[Path, dict[str, str]]:
    """A fresh place for a page: `base/work` (the working directory, holding a copy of the
    examples), `base/root` (the storage root) and `base/home` (HOME, outside the working directory:
    a workspace may not hold the home), `base/tmp` (TMPDIR); the environment, nothing of the caller's
    uwf or OTEL."""
    work, root, home, tmp = base / "work", base / "root", base / "home", base / "tmp"
    work.mkdir(parents=True)
    home.mkdir()
    tmp.mkdir()
    shutil.copytree(EXAMPLES, work / "examples", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = {
        name: value for name, value in os.environ.items()
        if not name.startswith(("OTEL_", "UWF_", "XDG_")) and name not in ("TRACEPARENT", "COLUMNS", "LINES", "FORCE_COLOR", "CLICOLOR_FORCE")
    }
    env.update(
        UWF_STORAGE_ROOT=str(root),
        HOME=str(home),
        TMPDIR=str(tmp),  # a page's `mktemp -d` is the test's, gone with it
        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        COLUMNS="100",
        NO_COLOR="1",
        TZ="UTC",  # uwf prints some times in local time
        LC_ALL="C.UTF-8",
        PYTHONUNBUFFERED="1",  # stdout and stderr interleave as in a terminal, not stdout last
    )
    return work, env


class ShellSession:
    """One bash process a page's commands run in, one at a time: `cd`, variables and exports carry
    from command to command, and each command is sent only once the ids printed before it are
    known. Each command is a file sourced with stdin from /dev/null (it must not eat the commands
    that follow on bash's stdin) and its stderr merged, followed by a marker with its status."""

    def __init__(self, cwd: Path, env: dict[str, str], scratch: Path) -> None:
        self.scratch = scratch
        scratch.mkdir(parents=True, exist_ok=True)
        self.nonce = secrets.token_hex(8)
        self.count = 0
        self.stuck = False  # a command timed out: no use waiting for bash to end
        self.buffer = b""
        self.chunks: queue.Queue = queue.Queue()
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"], cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True,  # its own process group, to end all it started
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        descriptor = self.process.stdout.fileno()
        while chunk := os.read(descriptor, 65536):
            self.chunks.put(chunk)
        self.chunks.put(None)

    def run(self, text: str, timeout: float) -> tuple[str, int | None, str | None]:
        """The command's output, its exit status, and what went wrong if it has none."""
        self.count += 1
        path = self.scratch / f"command-{self.count}.sh"
        path.write_text(text + "\n", encoding="utf-8")
        marker = f"@@uwf-doc-{self.nonce}-{self.count}@@"
        line = f"{{ . {shlex.quote(str(path))}; }} </dev/null 2>&1; printf '\\n{marker} %d\\n' \"$?\"\n"
        try:
            self.process.stdin.write(line.encode())
            self.process.stdin.flush()
        except BrokenPipeError:
            return "", None, "bash had already exited"
        end = re.compile(b"\n" + re.escape(marker.encode()) + rb" (\d+)\n")
        deadline = time.monotonic() + timeout
        while not (found := end.search(self.buffer)):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.stuck = True
                return self._decode(self.buffer), None, f"timed out after {timeout:.0f} s"
            try:
                chunk = self.chunks.get(timeout=remaining)
            except queue.Empty:
                continue
            if chunk is None:
                return self._decode(self.buffer), None, "bash exited during it (an `exit`, or `set -e` and a failure?)"
            self.buffer += chunk
        output, self.buffer = self.buffer[:found.start()], self.buffer[found.end():]
        return self._decode(output), int(found.group(1)), None

    @staticmethod
    def _decode(data: bytes) -> str:
        return data.decode("utf-8", errors="replace")

    def close(self) -> None:
        """End bash and whatever it left running in its process group."""
        try:
            self.process.stdin.close()
            self.process.wait(timeout=0 if self.stuck else 5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()


@dataclass
class Ran:
    """One command as the page wrote it, as it ran, and what it did."""

    command: Command
    run_text: str
    output: str
    status: int | None


def run_shell_page(
    page: Page, base: Path, extra_env: dict[str, str] | None = None, page_timeout: float = PAGE_TIMEOUT, command_timeout: float = COMMAND_TIMEOUT,
) -> list[Ran]:
    """Run a page's runnable blocks in one bash in a fresh sandbox under `base` (its environment
    plus `extra_env`: what the page needs); raise DocFailure at the first command whose exit status
    or output is not what the page shows."""
    cwd, env = sandbox(base)
    env.update(extra_env or {})
    session = ShellSession(cwd, env, base / "commands")
    bindings: dict[str, str] = {}
    ran: list[Ran] = []
    deadline = time.monotonic() + page_timeout
    try:
        for command in page.commands:
            try:
                run_text = substitute(command.text, bindings)
            except DocFailure as error:
                raise DocFailure(_report(page, command, command.text, None, None, str(error), bindings)) from None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DocFailure(_report(page, command, run_text, None, None, f"the page's {page_timeout:.0f} s ran out before this command", bindings))
            output, status, trouble = session.run(run_text, min(command_timeout, remaining))
            ran.append(Ran(command, run_text, output, status))
            if trouble:
                raise DocFailure(_report(page, command, run_text, output, status, trouble, bindings))
            if status != command.exit:
                raise DocFailure(_report(page, command, run_text, output, status, f"exit status {status}, expected {command.exit}", bindings))
            if command.expected:
                try:
                    matched, difference = match_output([text for _, text in command.expected], output, bindings)
                except DocFailure as error:
                    matched, difference = None, str(error)
                if matched is None:
                    raise DocFailure(_report(page, command, run_text, output, status, f"output differs: {difference}", bindings))
                bindings = matched
    finally:
        session.close()
    return ran


def _report(page: Page, command: Command, run_text: str, output: str | None, status: int | None, problem: str, bindings: dict[str, str]) -> str:
    """Everything a page's author needs to fix it, without running anything."""
    lines = [
        f"{page.name}:{command.line}: {problem}",
        f"  in the ```{command.lang} block at line {command.block_line}",
        "  command as written:",
        *_indent(command.text),
        "  command as run:",
        *_indent(run_text),
        f"  exit status: {status if status is not None else 'none'} (expected {command.exit})",
    ]
    if command.expected:
        lines += ["  expected output (page lines " f"{command.expected[0][0]}-{command.expected[-1][0]}):", *_indent("\n".join(text for _, text in command.expected))]
    if output is not None:
        lines += ["  actual output:", *_indent(output)]
    if bindings:
        lines += ["  ids bound so far (as the page shows them -> as this run printed them):"]
        lines += [f"    {shown} -> {actual}" for shown, actual in bindings.items()]
    return "\n".join(lines)


def _indent(text: str) -> list[str]:
    return [f"    | {line}".rstrip() for line in text.splitlines()] or ["    (nothing)"]


def run_process(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str]:
    """Exit status (None: timed out, killed with all it started) and merged output."""
    process = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        return process.returncode, output.decode("utf-8", errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return None, output.decode("utf-8", errors="replace")


def python_blocks(page: Page) -> list[Fence]:
    return [fence for fence in page.blocks("python", "py") if fence.marker != "skip"]


def python_script(page: Page) -> str:
    """The page's Python blocks as one script whose line numbers are the page's: a traceback then
    points at the page line to fix."""
    total = max((fence.line + len(fence.lines) for fence in python_blocks(page)), default=0)
    lines = [""] * total
    for fence in python_blocks(page):
        for offset, line in enumerate(fence.lines):
            lines[fence.line + offset] = line  # content line k (0-based) is page line fence.line + 1 + k
    return "\n".join(lines) + "\n"


def run_python_page(page: Page, base: Path, timeout: float = PAGE_TIMEOUT) -> str:
    """Run a page's Python blocks in a fresh sandbox; raise DocFailure unless the script exits 0."""
    cwd, env = sandbox(base)
    script = base / (page.path.name + ".py")
    script.write_text(python_script(page), encoding="utf-8")
    status, output = run_process([sys.executable, str(script)], cwd, env, timeout)
    if status == 0:
        return output
    lines = [str(fence.line) for fence in python_blocks(page)]
    starts = ", ".join(lines) if len(lines) <= 12 else ", ".join(lines[:12]) + f", ... ({len(lines)} blocks)"
    what = f"timed out after {timeout:.0f} s" if status is None else f"exited {status}"
    tail = output.splitlines()[-40:]
    raise DocFailure("\n".join([
        f"{page.name}: its Python blocks (at lines {starts}), run as one script, {what}",
        f"  the script's line numbers are the page's ({script.name}, line N = {page.name}, line N)",
        "  output (last 40 lines):",
        *_indent("\n".join(tail)),
    ]))


def yaml_blocks(page: Page) -> list[Fence]:
    return [fence for fence in page.blocks("yaml", "yml") if fence.marker != "skip"]


def check_yaml_page(page: Page, base: Path, timeout: float = 60.0) -> int:
    """Every yaml block parses; each whole workflow (roles and graph) passes `uwf workflow lint`.
    Returns how many workflows were linted; raises DocFailure listing every block that fails."""
    import yaml

    cwd, env = sandbox(base)
    problems: list[str] = []
    linted = 0
    for fence in yaml_blocks(page):
        where = f"{page.name}:{fence.line}"
        try:
            data = yaml.safe_load(fence.text)
        except yaml.YAMLError as error:
            problems.append(f"{where}: the ```yaml block is not YAML (mark a fragment with {SKIP_MARKER}):\n{_block_offset(fence)}\n{error}")
            continue
        if isinstance(data, dict) and "roles" in data and "graph" in data:
            path = base / f"{page.path.stem}-line-{fence.line}.yaml"
            path.write_text(fence.text, encoding="utf-8")
            status, output = run_process([*uwf_command(), "workflow", "lint", str(path)], cwd, env, timeout)
            linted += 1
            if status != 0:
                problems.append(f"{where}: `uwf workflow lint` exited {status} on the workflow in the ```yaml block:\n{_block_offset(fence)}\n{output.rstrip()}")
    if problems:
        raise DocFailure("\n\n".join(problems))
    return linted


def _block_offset(fence: Fence) -> str:
    return f"  (line N of the block is page line {fence.line} + N)"
