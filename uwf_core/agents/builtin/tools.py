"""The tools of `uwf-builtin`, confined to the thread's workspace.

Every path is resolved against the workspace and refused when it is absolute,
climbs out with `..`, or resolves (through symlinks) outside it. Results are
truncated; binary files are described, not dumped. A refusal is a tool
result the model can read, never an exception that ends the loop.
"""

from __future__ import annotations

import json
import os
import re

from ...encoding.records import record

MAX_READ_CHARS = 60_000
MAX_RESULT_CHARS = 20_000
MAX_LIST_ENTRIES = 500
MAX_GREP_MATCHES = 200
GREP_TIMEOUT_SECONDS = 10.0
MAX_GREP_FILE_BYTES = 2_000_000
DEFAULT_COMMAND_TIMEOUT = 120.0
MAX_COMMAND_TIMEOUT = 900.0
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"}


class ToolError(Exception):
    """A refusal or failure the model should read and recover from."""


@record(frozen=True)
class ToolSettings:
    workspace: str
    allow_run_command: bool = False
    allow_fetch_url: bool = False
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT
    hidden_env: frozenset[str] = frozenset()  # variables (API keys) commands must not see


def truncate(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    if len(text) <= limit:
        return text
    head = text[: limit * 2 // 3]
    tail = text[-(limit // 3) :]
    return f"{head}\n… [{len(text) - len(head) - len(tail)} characters truncated] …\n{tail}"


class Workspace:
    def __init__(self, path: str) -> None:
        self.root = os.path.realpath(path)

    def resolve(self, path: object, *, must_exist: bool = False) -> str:
        if not isinstance(path, str) or not path.strip():
            raise ToolError("path must be a non-empty string relative to the workspace")
        if os.path.isabs(path) or path.startswith("~"):
            raise ToolError(f"'{path}' is absolute; paths are relative to the workspace")
        if ".." in path.replace("\\", "/").split("/"):
            raise ToolError(f"'{path}' leaves the workspace ('..' is not allowed)")
        full = os.path.join(self.root, path)
        real = os.path.realpath(full)
        if real != self.root and not real.startswith(self.root + os.sep):
            raise ToolError(f"'{path}' resolves outside the workspace (through a symlink)")
        if must_exist and not os.path.exists(real):
            raise ToolError(f"'{path}' does not exist")
        return real

    def relative(self, path: str) -> str:
        return os.path.relpath(path, self.root)


def _is_binary(data: bytes) -> bool:
    return b"\0" in data[:8192]


def read_file(ws: Workspace, settings: ToolSettings, args: dict) -> str:
    path = ws.resolve(args.get("path"), must_exist=True)
    if os.path.isdir(path):
        raise ToolError(f"'{args['path']}' is a directory; use list_dir")
    offset = max(0, int(args.get("offset") or 0))
    limit = min(MAX_READ_CHARS, int(args.get("limit") or MAX_READ_CHARS))
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        head = handle.read(8192)
        if _is_binary(head):
            return f"'{args['path']}' is a binary file ({size} bytes); not shown"
        handle.seek(0)
        data = handle.read(offset + limit + 4 * limit)
    text = data.decode("utf-8", "replace")[offset : offset + limit]
    note = ""
    if size > len(text.encode("utf-8")) + offset:
        note = f"\n… [file has {size} bytes; showing characters {offset}-{offset + len(text)}; pass offset to read on]"
    return text + note


def write_file(ws: Workspace, settings: ToolSettings, args: dict) -> str:
    path = ws.resolve(args.get("path"))
    content = args.get("content")
    if not isinstance(content, str):
        raise ToolError("content must be a string")
    if os.path.isdir(path):
        raise ToolError(f"'{args['path']}' is a directory")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(content)
    return f"wrote {len(content)} characters to {ws.relative(path)}"


def edit_file(ws: Workspace, settings: ToolSettings, args: dict) -> str:
    path = ws.resolve(args.get("path"), must_exist=True)
    search, replace = args.get("search"), args.get("replace")
    if not isinstance(search, str) or not search or not isinstance(replace, str):
        raise ToolError("edit_file needs a non-empty 'search' string and a 'replace' string")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    count = text.count(search)
    if count == 0:
        raise ToolError(f"the search text was not found in {ws.relative(path)}")
    if count > 1 and not args.get("all"):
        raise ToolError(f"the search text occurs {count} times in {ws.relative(path)}; make it unique or pass all=true")
    text = text.replace(search, replace) if args.get("all") else text.replace(search, replace, 1)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return f"replaced {count if args.get('all') else 1} occurrence(s) in {ws.relative(path)}"


def list_dir(ws: Workspace, settings: ToolSettings, args: dict) -> str:
    path = ws.resolve(args.get("path") or ".", must_exist=True)
    if not os.path.isdir(path):
        raise ToolError(f"'{args.get('path')}' is not a directory")
    entries = []
    for name in sorted(os.listdir(path))[:MAX_LIST_ENTRIES]:
        full = os.path.join(path, name)
        if os.path.islink(full):
            entries.append(f"{name} -> (symlink)")
        elif os.path.isdir(full):
            entries.append(f"{name}/")
        else:
            entries.append(f"{name} ({os.path.getsize(full)} bytes)")
    total = len(os.listdir(path))
    more = f"\n… and {total - MAX_LIST_ENTRIES} more" if total > MAX_LIST_ENTRIES else ""
    return ("\n".join(entries) or "(empty directory)") + more


def grep(ws: Workspace, settings: ToolSettings, args: dict) -> str:
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ToolError("grep needs a 'pattern' (a regular expression)")
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid regular expression: {exc}") from None
    base = ws.resolve(args.get("path") or ".", must_exist=True)
    files = [base] if os.path.isfile(base) else list(_walk_files(ws, base))
    return _with_deadline(lambda: _grep_files(ws, regex, files), GREP_TIMEOUT_SECONDS, f"grep for {pattern[:60]!r}")


def _grep_files(ws: Workspace, regex: re.Pattern, files: list[str]) -> str:
    matches = []
    for file in files:
        try:
            if os.path.getsize(file) > MAX_GREP_FILE_BYTES:
                continue
            with open(file, "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        if _is_binary(data):
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if regex.search(line):
                matches.append(f"{ws.relative(file)}:{number}: {line[:300]}")
                if len(matches) >= MAX_GREP_MATCHES:
                    return "\n".join(matches) + f"\n… (stopped at {MAX_GREP_MATCHES} matches)"
    return "\n".join(matches) or "no matches"


def _with_deadline(work, seconds: float, what: str) -> str:
    """Run `work` in a forked child and kill it after `seconds`: Python's `re` cannot be
    interrupted, and a catastrophic pattern would otherwise hang the agent for good."""
    from ...errors import UwfError
    from ...workflow.condition_box import run_boxed

    try:
        return run_boxed(work, seconds, what=what)
    except UwfError as exc:
        raise ToolError(f"{exc.message} (a pattern that backtracks badly?)") from None


def _walk_files(ws: Workspace, base: str):
    for directory, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not os.path.islink(os.path.join(directory, d)))
        for name in sorted(files):
            full = os.path.join(directory, name)
            real = os.path.realpath(full)
            if real.startswith(ws.root + os.sep):
                yield full


def run_command(ws: Workspace, settings: ToolSettings, args: dict) -> str:
    if not settings.allow_run_command:
        raise ToolError("run_command is not enabled for this agent (add --allow-run-command to its args in config.yaml)")
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolError("run_command needs a 'command' string")
    cwd = ws.resolve(args.get("cwd") or ".", must_exist=True)
    timeout = min(MAX_COMMAND_TIMEOUT, float(args.get("timeout") or settings.command_timeout))
    from ...engine.contain.process import run_process

    # The shell gets neither the API keys nor the way to the root; it runs in this agent's sandbox
    # (the workspace writable, .env hidden), where this process cannot be read (see agent.py).
    hidden = {*settings.hidden_env, "UWF_STORAGE_ROOT", "UWF_SECRETS_FD"}
    env = {key: value for key, value in os.environ.items() if key not in hidden}
    lines: list[str] = []
    outcome = run_process(["sh", "-c", command], cwd=cwd, env=env, timeout=timeout, on_output=lines.append)
    stderr = "\n".join(lines)
    status = f"timed out after {timeout:g}s (killed)" if outcome.timed_out else f"exit code {outcome.exit_code}"
    return f"{status}\n--- stdout ---\n{outcome.stdout}\n--- stderr ---\n{stderr}"  # call_tool truncates once


def fetch_url(ws: Workspace, settings: ToolSettings, args: dict) -> str:
    if not settings.allow_fetch_url:
        raise ToolError("fetch_url is not enabled for this agent (add --allow-fetch-url to its args in config.yaml)")
    url = args.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ToolError("fetch_url needs an http:// or https:// 'url'")
    import httpx

    try:
        response = httpx.get(url, timeout=30.0, follow_redirects=True)
    except httpx.HTTPError as exc:
        raise ToolError(f"cannot fetch {url}: {exc}") from None
    kind = response.headers.get("content-type", "")
    if not kind.startswith(("text/", "application/json", "application/xml")):
        return f"{response.status_code}, {kind or 'unknown type'}, {len(response.content)} bytes; not text, not shown"
    return f"{response.status_code}\n{response.text}"


def _schema(properties: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_STRING = {"type": "string"}
TOOLS = {
    "read_file": (read_file, "Read a text file of the workspace (optionally from a character offset).", _schema({"path": _STRING, "offset": {"type": "integer"}, "limit": {"type": "integer"}}, ["path"])),
    "write_file": (write_file, "Create or overwrite a file of the workspace.", _schema({"path": _STRING, "content": _STRING}, ["path", "content"])),
    "edit_file": (edit_file, "Replace an exact, unique text in a file (search/replace).", _schema({"path": _STRING, "search": _STRING, "replace": _STRING, "all": {"type": "boolean"}}, ["path", "search", "replace"])),
    "list_dir": (list_dir, "List a directory of the workspace.", _schema({"path": _STRING}, [])),
    "grep": (grep, "Search files of the workspace for a regular expression.", _schema({"pattern": _STRING, "path": _STRING}, ["pattern"])),
    "run_command": (run_command, "Run a shell command in the workspace (when enabled).", _schema({"command": _STRING, "cwd": _STRING, "timeout": {"type": "number"}}, ["command"])),
    "fetch_url": (fetch_url, "Fetch an http(s) URL as text (when enabled).", _schema({"url": _STRING}, ["url"])),
}


def tool_definitions(settings: ToolSettings) -> list[dict]:
    """The OpenAI `tools` list: only the tools this agent may use."""
    names = [n for n in TOOLS if (n != "run_command" or settings.allow_run_command) and (n != "fetch_url" or settings.allow_fetch_url)]
    return [{"type": "function", "function": {"name": n, "description": TOOLS[n][1], "parameters": TOOLS[n][2]}} for n in names]


def call_tool(settings: ToolSettings, name: str, arguments: str | dict) -> tuple[str, bool]:
    """(result text, ok). Never raises for the model's mistakes."""
    entry = TOOLS.get(name)
    if entry is None:
        return f"error: unknown tool '{name}' (tools: {', '.join(TOOLS)})", False
    if isinstance(arguments, str):
        from ...encoding.limits import StructureError, check_json_text

        try:
            check_json_text(arguments, f"the arguments of {name}")
            arguments = json.loads(arguments or "{}")
        except StructureError as exc:
            return f"error: {exc.message}", False
        except ValueError:
            return f"error: the arguments of {name} are not valid JSON", False
    if not isinstance(arguments, dict):
        return f"error: the arguments of {name} must be a JSON object", False
    try:
        return truncate(entry[0](Workspace(settings.workspace), settings, arguments)), True
    except ToolError as exc:
        return f"error: {exc}", False
    except (OSError, ValueError, UnicodeError) as exc:
        return f"error: {name} failed: {exc}", False
