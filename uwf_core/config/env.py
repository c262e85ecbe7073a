""".env: API keys (mode 0600, on the host, never in shared storage), and keeping them out of records."""

from __future__ import annotations

import os

from ..store.files import atomic_write, read_text
from .model import Config, ConfigError


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
        if not sep or not key.replace("_", "").isalnum():
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
    """The environment agents and extract run with: .env values fill in what is unset."""
    env = dict(os.environ if base is None else base)
    for key, value in env_values.items():
        env.setdefault(key, value)
    return env


def secret_values(config: Config, env: dict[str, str] | None = None) -> list[str]:
    """The API keys in use (values of every provider's apiKeyEnv), to keep them out of records."""
    env = os.environ if env is None else env
    names = {p.api_key_env for p in config.providers.values() if p.api_key_env}
    return sorted({env[name] for name in names if len(env.get(name, "")) >= 6}, key=len, reverse=True)


def redact(value: object, secrets: list[str]) -> object:
    """`value` with every secret replaced by [redacted], through dicts and lists."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, "[redacted]")
        return value
    if isinstance(value, dict):
        return {key: redact(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item, secrets) for item in value]
    return value
