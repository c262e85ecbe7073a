"""Which paths a snapshot leaves out: `.gitignore` and `.uwfignore` files, read as git reads them.

Each file's patterns apply below its own directory; within a directory the last matching pattern
wins, a `!` pattern takes a path back in, a pattern ending in `/` matches only directories, and
one with a `/` before its end is anchored to the file's directory. An ignored directory is not
entered (git cannot take a file back from inside one either). `.git` itself is always left out,
a directory or a worktree's `.git` file, whatever its case.
"""

from __future__ import annotations

import os
import re

from ..store.files import read_regular

IGNORE_FILES = (".gitignore", ".uwfignore")
ALWAYS = (".git",)


class Rules:
    """The patterns in force in one directory: its parents' and its own, each with its base.
    `fingerprint` names them (the stat cache keeps a directory's record only under the same)."""

    __slots__ = ("patterns", "fingerprint")

    def __init__(self, patterns: tuple = (), fingerprint: str = "") -> None:
        self.patterns = patterns  # (base: bytes, regex, negated, dir_only), oldest first
        self.fingerprint = fingerprint

    def below(self, directory: str, rel: str, names) -> Rules:
        """The rules of `directory` (at `rel` in the workspace, holding `names`): these plus its
        ignore files'. Paths are str as os.fsdecode makes them (undecodable bytes as surrogates)."""
        added = []
        sources = []
        for name in IGNORE_FILES:
            if name not in names:
                continue
            data = read_regular(directory + "/" + name, 1 << 20)
            if data is None:
                continue
            sources.append(name.encode() + b"\0" + data)
            added.extend((rel, *parsed) for parsed in map(_compile, os.fsdecode(data).splitlines()) if parsed)
        if not sources:
            return self
        from ..encoding.ids import xxh64_hash

        fingerprint = xxh64_hash(b"\0".join([self.fingerprint.encode(), os.fsencode(rel), *sources]))
        return Rules(self.patterns + tuple(added), fingerprint)

    def ignored(self, rel: str, name: str, is_dir: bool) -> bool:
        """Is the entry `name` at workspace path `rel` (`rel` ends in `/` unless at the top) out?"""
        if name.lower() in ALWAYS:  # git's own: a directory, or a worktree's `.git` file
            return True
        path = rel + name
        result = False
        for base, regex, negated, dir_only in self.patterns:
            if dir_only and not is_dir:
                continue
            if regex.match(path[len(base) :]):
                result = not negated
        return result


def _compile(line: str):
    """(regex, negated, dir_only) for one ignore-file line, or None for a blank line or comment."""
    line = line.rstrip("\r")
    if not line.endswith("\\ "):
        line = line.rstrip(" ")
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    elif line.startswith(("\\!", "\\#")):  # a literal ! or # (git's escapes); any other \ escapes as in a glob
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    return re.compile(("" if anchored else "(?:.*/)?") + _translate(line) + "\\Z", re.DOTALL), negated, dir_only


def _translate(pattern: str) -> str:
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            inner = pattern[i + 1 : end].replace("\\", "\\\\")
            if inner.startswith("!"):
                inner = "^" + inner[1:]
            out.append("[" + inner + "]")
            i = end + 1
        elif char == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)
