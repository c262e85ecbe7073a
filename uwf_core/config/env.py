""".env: API keys (mode 0600, on the host, never in shared storage), and keeping them out of records."""

from __future__ import annotations

import os

from ..store.files import atomic_write, read_text
from .model import Config, ConfigError, is_env_name


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
    """Set keys in .env, keeping other lines; the file is always mode 0600."""
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


def env_with_secrets(env_values: dict[str, str], base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment uwf's own LLM calls resolve keys in (extract, uwf-builtin): .env fills in what
    is unset. Agents that uwf spawns get only the keys they name (engine.call.agent_env)."""
    env = dict(os.environ if base is None else base)
    for key, value in env_values.items():
        env.setdefault(key, value)
    return env


MIN_SECRET_LENGTH = 6  # shorter values ("1", "true") are settings, and hiding them would garble ordinary text


class Secrets:
    """Every value that must never be stored or shown, by name: each .env value and each provider's
    key found in the environment. One redaction for every path that stores or prints agent text."""

    __slots__ = ("by_name", "_ordered")

    def __init__(self, by_name: dict[str, str]) -> None:
        self.by_name = {name: value for name, value in by_name.items() if len(value) >= MIN_SECRET_LENGTH}
        # Longest first, so a secret that contains another is replaced whole.
        self._ordered = sorted(((value, name) for name, value in self.by_name.items()), key=lambda item: -len(item[0]))

    @classmethod
    def of(cls, config: Config, env_values: dict[str, str], environ: dict[str, str] | None = None) -> Secrets:
        environ = os.environ if environ is None else environ
        by_name = {}
        for provider in config.providers.values():
            name = provider.api_key_env
            if name and environ.get(name):
                by_name[name] = environ[name]
        by_name.update(env_values)
        return cls(by_name)

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

    def text(self, value: str) -> str:
        """`redact` for a string, typed as one."""
        return self.redact(value)  # type: ignore[return-value]


NO_SECRETS = Secrets({})
