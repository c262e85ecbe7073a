""".env: API keys (mode 0600, on the host, never in shared storage), and keeping them out of records."""

from __future__ import annotations

import os

from ..store.files import atomic_write, read_text
from .model import Config
from .values import ConfigError, is_env_name


def load_env_file(path: str) -> dict[str, str]:
    """KEY=VALUE lines of a .env file (comments, blank lines and `export ` allowed)."""
    text = read_text(path)
    values: dict[str, str] = {}
    if not text:
        return values
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].strip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not is_env_name(key):
            raise ConfigError(f"{path}:{number}: expected KEY=VALUE")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key] = value
    return values


def update_env_file(path: str, updates: dict[str, str]) -> None:
    """Set keys in .env, keeping other lines; the file is always mode 0600. Read and written under
    `.env.lock` beside it: parallel `setup --api-key` runs each keep their key."""
    from ..store.files import FileLock

    with FileLock(os.path.join(os.path.dirname(os.path.abspath(path)), ".env.lock")):
        _update(path, updates)


def _update(path: str, updates: dict[str, str]) -> None:
    text = read_text(path) or ""
    lines = text.splitlines()
    remaining = dict(updates)
    for index, line in enumerate(lines):
        key = line.strip().removeprefix("export ").partition("=")[0].strip()
        if key in remaining:
            lines[index] = f"{key}={_quote(remaining.pop(key))}"
    lines.extend(f"{key}={_quote(value)}" for key, value in remaining.items())
    atomic_write(path, ("\n".join(lines) + "\n").encode("utf-8"), mode=0o600)
    os.chmod(path, 0o600)


def _quote(value: str) -> str:
    return f'"{value}"' if any(c.isspace() or c in "#'\"" for c in value) else value


SECRETS_FD_ENV = "UWF_SECRETS_FD"  # a step agent's keys: an open file (JSON) uwf hands it, never its environment
_INHERITED: list[dict[str, str] | None] = []


def inherited_secrets() -> dict[str, str] | None:
    """The keys uwf handed this process (a step agent, whose sandbox hides .env), read once; None
    when uwf handed none (the caller reads .env itself)."""
    if not _INHERITED:
        values = None
        fd = os.environ.get(SECRETS_FD_ENV)
        if fd and fd.isdigit():
            import json

            try:
                data = os.pread(int(fd), 1 << 20, 0)
                parsed = json.loads(data.decode("utf-8")) if data else {}
                if isinstance(parsed, dict):
                    values = {str(k): str(v) for k, v in parsed.items()}
            except (OSError, ValueError):
                values = None
        _INHERITED.append(values)
    return _INHERITED[0]


def secrets_file(values: dict[str, str]) -> int:
    """An unnamed file holding `values` (JSON), to hand to a step agent as SECRETS_FD_ENV: it and
    the uwf commands it runs read it at offset 0; nothing is left on disk."""
    import json
    import tempfile

    data = json.dumps(values).encode("utf-8")
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("uwf-secrets")
    else:
        handle = tempfile.TemporaryFile()  # unlinked at once on POSIX
        fd = os.dup(handle.fileno())
        handle.close()
    os.write(fd, data)
    return fd


def env_with_secrets(env_values: dict[str, str], base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment uwf's own LLM calls resolve keys in (extract, uwf-builtin): .env fills in what
    is unset. Agents that uwf spawns get only the keys they name (engine.call.agent_env)."""
    env = dict(os.environ if base is None else base)
    for key, value in env_values.items():
        env.setdefault(key, value)
    return env


MIN_SECRET_LENGTH = 6  # shorter values ("1", "true") are settings, and hiding them would garble ordinary text

# The key variables agent CLIs read (the presets rely on them), and the name shapes keys take:
# whatever holds a key an agent can see is redacted, whether it came from .env or the caller.
WELL_KNOWN_KEYS = frozenset({
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY",
    "GOOGLE_API_KEY", "CODEX_API_KEY", "CURSOR_API_KEY", "AZURE_OPENAI_API_KEY", "MISTRAL_API_KEY", "GROQ_API_KEY",
    "DEEPSEEK_API_KEY", "XAI_API_KEY", "TOGETHER_API_KEY", "NOUS_API_KEY", "HF_TOKEN", "GITHUB_TOKEN", "GH_TOKEN",
    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
})
KEY_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_SECRET_KEY", "_ACCESS_KEY", "_PASSWORD")
# A trace collector's headers (its key among them): telemetry/settings.py sends them; no agent sees them.
OTLP_HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
TRACE_EXPORT_PREFIX = "OTEL_EXPORTER_OTLP_"  # where uwf's traces go, with the collector's key: never in an agent's environment


def is_key_name(name: str) -> bool:
    """A variable that holds a key by its name: a well-known one, or one ending like a key."""
    return name in WELL_KNOWN_KEYS or name.upper().endswith(KEY_SUFFIXES)


def _header_values(text: str) -> list[str]:
    """What an OTLP headers variable (`key=value,...`) holds that may be a key: each value as
    written and percent-decoded, and a scheme's token (`Bearer <token>`)."""
    found = []
    for item in text.split(","):
        value = item.partition("=")[2].strip()
        decoded = _unquote(value) if "%" in value else value
        found += [value, decoded, *decoded.split(","), *(part.split()[-1] for part in decoded.split(",") if part.split())]
    return [value.strip() for value in found if value.strip()]


def _unquote(value: str) -> str:
    from urllib.parse import unquote  # ~4 ms: imported only for a value that has a percent escape

    return unquote(value)


class Secrets:
    """Every value that must never be stored or shown, by name: each .env value; and from the
    environment, each provider's key, each key an agent entry names, and every variable named
    like a key. One redaction for every path that stores or prints agent text."""

    __slots__ = ("by_name", "_ordered")

    def __init__(self, by_name: dict[str, str], more: list[tuple[str, str]] = ()) -> None:
        """`more`: (name, value) pairs beside `by_name`, for a name with a second value (the
        environment's key and .env's differ): both are redacted."""
        self.by_name = {name: value for name, value in by_name.items() if len(value) >= MIN_SECRET_LENGTH}
        pairs = {(value, name) for name, value in [*self.by_name.items(), *more] if len(value) >= MIN_SECRET_LENGTH}
        # Longest first, so a secret that contains another is replaced whole.
        self._ordered = sorted(pairs, key=lambda item: (-len(item[0]), item[1]))

    @classmethod
    def of(cls, config: Config, env_values: dict[str, str], environ: dict[str, str] | None = None) -> Secrets:
        environ = os.environ if environ is None else environ
        named = {provider.api_key_env for provider in config.providers.values() if provider.api_key_env}
        for agent in config.agents.values():
            named.update(agent.secrets)
        from_environ = {name: value for name, value in environ.items() if value and (name in named or is_key_name(name))}
        more = [(name, value) for name, value in from_environ.items() if name in env_values and env_values[name] != value]
        for agent in config.agents.values():  # a key put in an entry's env (it belongs in .env) is still a key
            more += [(name, value) for name, value in agent.env.items() if value and (name in named or is_key_name(name))]
        for source in (environ, env_values, *(agent.env for agent in config.agents.values())):
            more += [(name, value) for name in OTLP_HEADER_VARIABLES for value in _header_values(source.get(name) or "")]
        return cls({**from_environ, **env_values}, more)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.by_name)

    def redact(self, value: object) -> object:
        """`value` with each secret replaced by [redacted:NAME], through dicts (keys too) and lists."""
        if not self._ordered:
            return value
        if isinstance(value, str):
            for secret, name in self._ordered:
                if secret in value:
                    value = value.replace(secret, f"[redacted:{name}]")
            return value
        if isinstance(value, dict):
            return {self.redact(key): self.redact(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.redact(item) for item in value]
        return value

    @property
    def empty(self) -> bool:
        return not self._ordered

    def byte_replacements(self) -> tuple[tuple[bytes, bytes], ...]:
        """(secret, [redacted:NAME]) as UTF-8 bytes, longest first: `redact` for file contents."""
        return tuple((secret.encode(), f"[redacted:{name}]".encode()) for secret, name in self._ordered)

    def found(self, text: str) -> list[str]:
        """The names of the secrets `text` holds."""
        return list(dict.fromkeys(name for secret, name in self._ordered if secret in text))

    def text(self, value: str) -> str:
        """`redact` for a string, typed as one."""
        return self.redact(value)  # type: ignore[return-value]

    def window(self, value: str) -> str:
        """`text` for the end of a longer stream (a failing agent's stderr, kept as it comes): a
        secret the window's start cut through is dropped with what the cut left of it, as is a
        window that lies wholly inside one."""
        value = self.text(value)
        start = value.lstrip("\ufffd")  # a character the cut split: no secret's end begins with it
        for secret, _ in self._ordered:
            for size in range(min(len(secret), len(start)), 0, -1):
                if start.startswith(secret[-size:]):
                    start = start[size:]
                    break
        return start


NO_SECRETS = Secrets({})
