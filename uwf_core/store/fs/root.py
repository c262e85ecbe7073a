"""Paths inside a root that is a directory, and the reader of its YAML state files."""

from __future__ import annotations

import os

from ...errors import StateFileError
from ..files import FileLock, read_lines, read_text
from ..records import DamagedEntry

PUBLISH_LOCK = "publish"  # locks/publish.lock: shared by commands writing nodes, exclusive for gc's sweep and a repair


class Root:
    """Paths inside one storage root. Creating it touches nothing on disk."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(os.path.expanduser(path))

    def join(self, *parts: str) -> str:
        return os.path.join(self.path, *parts)

    @property
    def cas_dir(self) -> str:
        return self.join("cas")

    @property
    def index_dir(self) -> str:
        return self.join("cas", "_index")

    @property
    def locks_dir(self) -> str:
        return self.join("locks")

    @property
    def registry_file(self) -> str:
        return self.join("registry.yaml")

    @property
    def threads_file(self) -> str:
        return self.join("threads.yaml")

    @property
    def history_file(self) -> str:
        return self.join("history.jsonl")

    @property
    def runs_file(self) -> str:
        return self.join("runs.jsonl")

    @property
    def config_file(self) -> str:
        return self.join("config.yaml")

    @property
    def env_file(self) -> str:
        return self.join(".env")

    def lock(self, name: str, *, wait: bool = True, purpose: str = "") -> FileLock:
        return FileLock(os.path.join(self.locks_dir, name + ".lock"), wait=wait, purpose=purpose)


def load_yaml_state(path: str) -> object:
    """A state file's YAML (threads.yaml, registry.yaml), None when it does not exist.

    A file that is not YAML is refused with one line naming it; nothing is changed.
    """
    from ...encoding.simple_yaml import YamlSyntaxError, loads

    text = read_text(path)
    if text is None:
        return None
    try:
        return loads(text)
    except YamlSyntaxError as exc:
        raise StateFileError(f"{path} cannot be read: {exc} (fix or restore it; nothing was changed)") from None


def load_flat_state(path: str, problem_of) -> tuple[dict[str, str], list[DamagedEntry]]:
    """A flat `key: value` state file (threads.yaml, queue.yaml), entry by entry: one line
    that is not YAML, or fails `problem_of(key, value)` (a message, or None when fine), is a
    DamagedEntry and hides nothing else."""
    from ...encoding.simple_yaml import YamlSyntaxError, loads

    lines = read_lines(path)
    if lines is None:
        return {}, []
    try:
        whole = loads("\n".join(lines))
    except (YamlSyntaxError, UnicodeEncodeError):  # bytes that are not UTF-8 (kept as surrogates)
        whole = None
    entries_seen = sum(1 for line in lines if line.strip() and not line.lstrip().startswith("#"))
    if not entries_seen:
        return {}, []
    # YAML lets the last of two equal keys win, silently; a line per entry is the check that none
    # is listed twice (then the first wins, as below, however the file is later rewritten).
    if isinstance(whole, dict) and len(whole) == entries_seen and not any(problem_of(key, value) for key, value in whole.items()):
        return whole, []
    entries: dict[str, str] = {}
    damaged = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            damaged.append(DamagedEntry(path, number, line, "not UTF-8 text"))
            continue
        try:
            item = loads(line)
        except YamlSyntaxError:
            item = None
        if not isinstance(item, dict) or len(item) != 1:
            damaged.append(DamagedEntry(path, number, line, "not a `key: value` line"))
            continue
        ((key, value),) = item.items()
        problem = problem_of(key, value) or (f"{key} is listed twice (the first entry is used)" if key in entries else None)
        if problem:
            damaged.append(DamagedEntry(path, number, line, problem))
        else:
            entries[key] = value
    return entries, damaged


DAMAGED_HEADER = "# lines uwf could not read, kept as they were (fix or delete them):\n"


def flat_state_bytes(text: str, damaged: list[DamagedEntry]) -> bytes:
    """A state file's new text with its damaged lines kept at the end: rewriting it loses nothing."""
    if damaged:
        text += DAMAGED_HEADER + "".join(entry.text + "\n" for entry in damaged)
    return text.encode("utf-8", "surrogateescape")


def load_jsonl(path: str, parse, wanted=None) -> tuple[list, list[DamagedEntry]]:
    """An append-only log's records, oldest first, with the lines `parse` (a JSON object ->
    record or None) cannot read. A last line without its newline is a write cut short (a crash, or
    one going on): it was never written, and the next append cuts it off.
    `wanted(line)`: a cheap test that skips a line before it is parsed (a thread's id in it)."""
    lines = read_lines(path, errors="replace")  # never rewritten: its records only need to print
    if not lines:
        return [], []
    records: list = []
    damaged: list[DamagedEntry] = []
    parse_lines(path, lines[:-1], 1, parse, records, damaged, wanted)
    if wanted is None or wanted(lines[-1]):
        records += unterminated(lines[-1], parse)
    return records, damaged


def unterminated(line: str, parse) -> list:
    """The text after a log's last newline: a record already whole but not yet ended, or nothing
    (a write cut short, or one going on)."""
    import json

    if not line.strip():
        return []
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return []
    record = parse(data) if isinstance(data, dict) else None
    return [record] if record is not None else []


def parse_lines(path: str, lines: list[str], first: int, parse, records: list, damaged: list[DamagedEntry], wanted=None) -> None:
    """Whole lines of a log (each ended by its newline), numbered from `first`: each record into
    `records`, each line that is none into `damaged`."""
    import json

    for number, line in enumerate(lines, first):
        if not line.strip() or (wanted is not None and not wanted(line)):
            continue
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):  # a line of 100,000 brackets is as damaged as any
            data = None
        record = parse(data) if isinstance(data, dict) else None
        if record is not None:
            records.append(record)
        else:
            damaged.append(DamagedEntry(path, number, line, "not a JSON record of this log"))


SET_ASIDE_SUFFIX = ".damaged-"  # `<file>.damaged-<UTC>`: lines `cas fsck --repair` took out of a state file


def set_aside(path: str, damaged: list[DamagedEntry], stamp: str) -> list[str]:
    """Append the damaged lines to `<path>.damaged-<stamp>`, each after its line number, durably
    and byte for byte, before the file loses them; one `file:line -> aside` for each."""
    aside = f"{path}{SET_ASIDE_SUFFIX}{stamp}"
    data = "".join(f"line {entry.line} ({entry.problem}): {entry.text}\n" for entry in damaged).encode("utf-8", "surrogateescape")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    return [f"{os.path.basename(path)}:{entry.line} -> {os.path.basename(aside)}" for entry in damaged]


def without_lines(path: str, damaged: list[DamagedEntry], stamp: str) -> list[str]:
    """An append-only log rewritten without its damaged lines (set aside first). Callers hold its lock."""
    from ..files import atomic_write

    if not damaged:
        return []
    done = set_aside(path, damaged, stamp)
    drop = {entry.line for entry in damaged}
    kept = [line for number, line in enumerate(read_lines(path) or [], 1) if number not in drop and line.strip()]
    atomic_write(path, "".join(line + "\n" for line in kept).encode("utf-8", "surrogateescape"))
    return done
