"""Whether a root's steps export traces, and where: the standard OTEL_* variables, else `otel:`.

Read at every step from what is already in memory (the environment, config.yaml, .env); with
nothing configured it is a handful of dict lookups and nothing is imported.
"""

from __future__ import annotations

from ..config.env import OTLP_HEADER_VARIABLES
from ..encoding.records import record

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from ..config.model import Config

TRACES_PATH = "/v1/traces"
# Every OTEL_* variable is read here, from the environment and .env both (the SDK alone would read
# only the environment), and handed to the SDK explicitly (telemetry/sdk.py).
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
HEADER_VARIABLES = OTLP_HEADER_VARIABLES
PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")


_HAND_OFF = [False]


def hand_off_at_exit() -> None:
    """This process steps once and ends (`uwf thread step`): its spans go to a shipper process at
    exit instead of through an SDK imported here (telemetry/export.py)."""
    _HAND_OFF[0] = True


def hands_off() -> bool:
    return _HAND_OFF[0]


@record(frozen=True)
class TraceSettings:
    """Where spans go, and every OTEL_* variable that says how. The headers may hold a collector's
    key: it is sent, never shown or stored. `off` says why traces asked for are not sent (warned
    once; the steps go on)."""

    url: str  # the OTLP/HTTP traces URL
    source: str  # what set it, for messages: a variable's name or "config.yaml otel.endpoint"
    content: bool = False  # prompts and answers attached (redacted)
    variables: tuple[tuple[str, str], ...] = ()  # every OTEL_* variable, from .env and the environment
    off: str | None = None

    def variable(self, *names: str) -> str | None:
        """The first of `names` that is set (the traces-only variable before the general one)."""
        found = dict(self.variables)
        return next((found[name] for name in names if found.get(name, "").strip()), None)

    @property
    def headers(self) -> tuple[tuple[str, str], ...]:
        return tuple((key.lower(), value) for key, value in pairs(self.variable(*HEADER_VARIABLES) or ""))

    @property
    def protocol(self) -> str | None:
        """A protocol asked for other than http/protobuf (warned about, not used)."""
        protocol = (self.variable(*PROTOCOL_VARIABLES) or "").strip()
        return None if protocol in ("", "http/protobuf") else protocol


def trace_settings(config: Config, environ, env_values: dict[str, str] | None = None) -> TraceSettings | None:
    """None when nothing asks for traces (or OTEL_SDK_DISABLED / OTEL_TRACES_EXPORTER=none say
    no). A variable may be in the environment or in the root's .env (a collector's key belongs
    there); the environment wins, then .env, then config.yaml."""
    values = environ if not env_values else {**env_values, **environ}
    if values.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporter = values.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return None
    url, source = _url(values, config)
    if url is None:
        if config.otel.problem is None:
            return None
        return TraceSettings(url="", source="config.yaml otel", off=f"{config.otel.problem}; traces are off")
    variables = tuple(sorted((name, value) for name, value in values.items() if name.startswith("OTEL_")))
    off = None
    if exporter not in ("", "otlp"):
        off = f"OTEL_TRACES_EXPORTER={exporter}: uwf exports traces over OTLP only (otlp, or none); traces are off"
    return TraceSettings(
        url=url,
        source=source,
        content=config.otel.content,
        variables=variables,
        off=off,
    )


def _url(values, config: Config) -> tuple[str | None, str]:
    signal = values.get(ENDPOINT_VARIABLES[0], "").strip()
    if signal:
        return signal, ENDPOINT_VARIABLES[0]  # the traces URL itself, as the specification says
    base = values.get(ENDPOINT_VARIABLES[1], "").strip()
    if base:
        return _traces_url(base), ENDPOINT_VARIABLES[1]
    if config.otel.endpoint:
        return _traces_url(config.otel.endpoint), "config.yaml otel.endpoint"
    return None, ""


def _traces_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


def pairs(text: str) -> list[tuple[str, str]]:
    """`key=value,key2=value2`, values percent-decoded (the format of the OTLP headers and of
    OTEL_RESOURCE_ATTRIBUTES)."""
    from urllib.parse import unquote

    found = []
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            found.append((key.strip(), unquote(value.strip())))
    return found
