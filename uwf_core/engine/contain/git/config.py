"""git's config files read as git reads them, far enough to know what they name — without running
git, whose process would cost every step in a repository ~10 ms.

Sections and subsections (`[filter "lfs"]`, the old `[branch.main]`, lower-cased), keys with or without a
value, quoted values with git's escapes, comments, continuation lines, and the files the config
includes (`include.path`, every `includeIf.*.path`: a conditional include is taken as if its
condition held, since a file it might include is one to protect). Keys come back as git lists
them: section and name lower-case, a subsection as written.
"""

from __future__ import annotations

import os
import re

MAX_INCLUDE_DEPTH = 10  # git's own limit
ESCAPES = {"n": "\n", "t": "\t", "b": "\b", '"': '"', "\\": "\\"}


def config_entries(gitdir: str, env: dict[str, str]) -> list[tuple[str, str, str]]:
    """(file, key, value) of every setting git reads for the repository at `gitdir`: the system's,
    yours, the repository's (its common directory's, for a linked worktree), its worktree's, and
    what each includes."""
    home = env.get("HOME") or os.path.expanduser("~")
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = [] if env.get("GIT_CONFIG_NOSYSTEM") else ["/etc/gitconfig"]
    files += [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
    files += [os.path.join(common_dir(gitdir), "config"), os.path.join(gitdir, "config.worktree")]
    entries: list[tuple[str, str, str]] = []
    for path in files:
        _read(path, home, entries, 0)
    return entries


# Config keys whose value git runs or reads as a file (the last part of the key): a path in the
# value is a file git will run or read.
RUNS = frozenset({
    "fsmonitor", "sshcommand", "pager", "editor", "askpass", "attributesfile", "excludesfile", "path", "helper", "program",
    "clean", "smudge", "process", "textconv", "command", "cmd", "driver", "difffilter", "browser", "hook",
})
WORD = re.compile(r"\A[\w.~@+-]+\Z")


def named_paths(gitdir: str, worktree: str, env: dict[str, str]) -> list[str]:
    """What a repository's config names that git runs or reads, as paths: the files it includes,
    its hooks directory (with husky's `.husky` around its `.husky/_`), and the scripts its values
    run — a path anywhere in a value, or a plain name after a value's first word (`sh clean.sh`)
    that is a file of the worktree. Relative paths are the worktree's, as git runs them there."""
    found: list[str] = []
    hooks_dirs = [os.path.join(common_dir(gitdir), "hooks")]
    for origin, key, value in config_entries(gitdir, env):
        found.append(origin)
        if key == "core.hookspath":
            hooks = os.path.join(worktree, os.path.expanduser(value))
            found.append(hooks)
            hooks_dirs.append(hooks)
            if os.path.basename(os.path.normpath(hooks)) == "_":  # husky 9: its stubs run the hooks beside them
                found.append(os.path.dirname(os.path.normpath(hooks)))
        elif key.startswith("alias.") or key.rsplit(".", 1)[-1] in RUNS:
            for index, token in enumerate(_unquoted(token) for token in value.split()):
                path = os.path.join(worktree, os.path.expanduser(token))
                if "/" in token and WORD.match(token.replace("/", "")) or index > 0 and WORD.match(token) and os.path.isfile(path):
                    found.append(path)
    found += _hook_targets(hooks_dirs)
    return [os.path.normpath(path) for path in dict.fromkeys(found)]


def _hook_targets(directories: list[str]) -> list[str]:
    """Where the hooks that are links lead (`ln -s ../../scripts/pre-commit .git/hooks/`): git runs
    the file, wherever it is."""
    targets = []
    for directory in directories:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                targets.append(os.path.realpath(entry.path))
    return targets


def common_dir(gitdir: str) -> str:
    """The repository's common directory: a linked worktree's `commondir`, else itself."""
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8", errors="replace") as handle:
            named = handle.read(4096).strip()
    except OSError:
        return gitdir
    return os.path.normpath(os.path.join(gitdir, named)) if named else gitdir


def _unquoted(token: str) -> str:
    """A word of a command as a path: its quotes, a leading `!` (an alias's shell) and the shell's
    punctuation around it (`./lint.sh;`, `(cd x`) left out."""
    return token.strip("'\"").removeprefix("!").strip(";&|()<>'\"`")


def _read(path: str, home: str, entries: list, depth: int) -> None:
    try:
        with open(path, "rb") as handle:
            text = handle.read(1 << 20).decode("utf-8", "surrogateescape")
    except OSError:
        return
    for key, value in parse(text):
        entries.append((path, key, value))
        if depth < MAX_INCLUDE_DEPTH and key.endswith(".path") and (key == "include.path" or key.startswith("includeif.")):
            included = os.path.expanduser(value) if not value.startswith("~/") else os.path.join(home, value[2:])
            _read(os.path.join(os.path.dirname(path), included), home, entries, depth + 1)


def parse(text: str) -> list[tuple[str, str]]:
    """(key, value) pairs of one config file's text; a key without `=` is "true"."""
    found: list[tuple[str, str]] = []
    section = ""
    position, size = 0, len(text)
    while position < size:
        char = text[position]
        if char in " \t\r\n":
            position += 1
        elif char in "#;":
            position = _line_end(text, position)
        elif char == "[":
            section, position = _header(text, position)
        elif char.isalpha():
            start = position
            while position < size and (text[position].isalnum() or text[position] == "-"):
                position += 1
            name = text[start:position].lower()
            while position < size and text[position] in " \t":
                position += 1
            value = "true"
            if position < size and text[position] == "=":
                value, position = _value(text, position + 1)
            else:
                position = _line_end(text, position)
            if section:
                found.append((f"{section}.{name}", value))
        else:
            position = _line_end(text, position)  # not git's syntax: git would refuse the file; skip the line
    return found


def _line_end(text: str, position: int) -> int:
    end = text.find("\n", position)
    return len(text) if end < 0 else end + 1


def _header(text: str, position: int) -> tuple[str, int]:
    """`[section]`, `[section "subsection"]` or the old `[section.subsection]`."""
    end = text.find("]", position)
    quote = text.find('"', position)
    if 0 <= quote < end:  # a quoted subsection may hold "]" (escaped or not)
        name = text[position + 1 : quote].strip().lower()
        sub, index = [], quote + 1
        while index < len(text) and text[index] != '"':
            if text[index] == "\\" and index + 1 < len(text):
                index += 1
            sub.append(text[index])
            index += 1
        end = text.find("]", index)
        section = f"{name}.{''.join(sub)}"
    else:
        section = text[position + 1 : end if end >= 0 else len(text)].strip().lower()  # the old [section.sub]: all lower-case
    return section, (len(text) if end < 0 else end + 1)


def _value(text: str, position: int) -> tuple[str, int]:
    """A value from after `=` to its line's end: quotes, escapes, comments, continuations."""
    out: list[str] = []
    quoted = False
    pending = ""  # white space kept only if more of the value follows
    size = len(text)
    while position < size:
        char = text[position]
        if char == "\n":
            position += 1
            break
        if char == "\\" and position + 1 < size:
            following = text[position + 1]
            if following == "\n":
                position += 2
                continue
            out.append(pending + ESCAPES.get(following, following))
            pending = ""
            position += 2
            continue
        if char == '"':
            quoted = not quoted
        elif not quoted and char in "#;":
            position = _line_end(text, position)
            break
        elif not quoted and char in " \t\r":
            if out:
                pending += char
        else:
            out.append(pending + char)
            pending = ""
        position += 1
    return "".join(out), position
