"""config.yaml's values read as typed values: each scalar, list and mapping checked, a wrong one a
ConfigError naming where it is (the file, and the field's dotted path)."""

from __future__ import annotations

from ..errors import UwfError

UNITS = {"": 1, "b": 1, "kb": 1 << 10, "k": 1 << 10, "mb": 1 << 20, "m": 1 << 20, "gb": 1 << 30, "g": 1 << 30}


class ConfigError(UwfError):
    """config.yaml or .env is malformed."""


def none(value: object) -> bool:
    return value is None or value in ("", "null", "~")


def mapping(raw: dict, key: str, where: str) -> dict:
    value = raw.get(key)
    if none(value) or value == {}:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: '{key}' must be a mapping")
    return value


def text(value: object, where: str) -> str:
    if not isinstance(value, str) or none(value):
        raise ConfigError(f"{where} must be a non-empty string")
    return value


def flag(value: object, where: str, default: bool = False) -> bool:
    if none(value):
        return default
    if value is False or str(value).lower() in ("false", "no", "off"):
        return False
    if value is True or str(value).lower() in ("true", "yes", "on"):
        return True
    raise ConfigError(f"{where} must be true or false, not {value!r}")


def interval(value: object, where: str) -> int:
    """config.yaml's scalars are read as text: a whole number of steps, 0 for none."""
    if none(value):
        return 0
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit():
        raise ConfigError(f"{where} must be a whole number of steps (0: no supervisor), got {value!r}")
    return int(text)


def size(value: object, where: str, default: int) -> int:
    """A size in bytes: a number, or one with KB, MB or GB (powers of 1024)."""
    if none(value):
        return default
    text = str(value).strip().lower().replace(" ", "")
    number = text.rstrip("kmgb")
    unit = text[len(number) :]
    try:
        size = int(float(number) * UNITS[unit])
    except (ValueError, KeyError):
        raise ConfigError(f"{where} must be a size such as 50MB, not {value!r}") from None
    if size <= 0:
        raise ConfigError(f"{where} must be more than zero, not {value!r}")
    return size


def paths(value: object, where: str, *, relative: bool = False) -> tuple[str, ...]:
    """A list of paths: absolute (or ~ / $VAR) for writable, readable and state, inside the workspace for hide."""
    if none(value) or value == []:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise ConfigError(f"{where} must be a list of paths")
    for item in value:
        if relative and (item.startswith(("/", "~", "$")) or ".." in item.split("/")):
            raise ConfigError(f"{where}: {item!r} must be a path inside the workspace (relative, no '..')")
        if not relative and not item.startswith(("/", "~", "$")):
            raise ConfigError(f"{where}: {item!r} must be absolute (or start with ~ or $VAR)")
    return tuple(value)


def is_env_name(name: str) -> bool:
    """A name a .env line or an environment variable can have."""
    return bool(name) and not name[0].isdigit() and name.replace("_", "").isalnum() and name.isascii()
