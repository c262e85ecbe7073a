"""config.yaml as typed values: providers, models, agents, overrides; never secrets (those are in .env)."""

from __future__ import annotations

from ..encoding.records import field, record, replace
from ..encoding.simple_yaml import YamlSyntaxError, dumps, loads
from .values import ConfigError, flag, interval, is_env_name, mapping, none, paths, size, text

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any

PROTOCOLS = ("step", "text")
# What an agent may do to the git repository of its workspace (engine/contain/git/private.py): `read`
# (the default) works on a private copy of .git that is thrown away; `commit` keeps the objects,
# branches and index of its own commits; `write` writes the real .git as it is (an agent you trust).
GIT_MODES = ("read", "commit", "write")
HEADER = "uwf configuration: providers, models, agents and overrides. API keys live in .env, never here."


@record(frozen=True)
class ProviderConfig:
    name: str
    base_url: str
    api_key_env: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {"baseUrl": self.base_url}
        if self.api_key_env:
            data["apiKeyEnv"] = self.api_key_env
        return data


@record(frozen=True)
class ModelConfig:
    alias: str
    provider: str
    name: str

    def to_dict(self) -> dict[str, Any]:
        return {"provider": self.provider, "name": self.name}


@record(frozen=True)
class AgentConfig:
    name: str
    command: str
    args: tuple[str, ...] = ()
    protocol: str = "step"
    timeout: float | None = None
    env: dict[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()  # the .env keys this agent receives; none unless named
    reuse: bool = False  # memoized replay: a step with the same inputs as an earlier one reuses its output
    sandbox: bool = True  # run contained (engine/contain/sandbox.py); false: a process group only
    network: bool = True  # false: the sandbox has no network but loopback
    writable: tuple[str, ...] = ()  # paths besides the workspace the agent may write (~ and $VARS expanded)
    readable: tuple[str, ...] = ()  # paths the sandbox would hide (under /tmp) that the agent may read
    hide: tuple[str, ...] = ()  # workspace files the agent must not read as config (shown empty in the sandbox)
    state: tuple[str, ...] = ()  # its CLI's state directories: a private copy for each run (engine/contain/state_dirs.py)
    git: str = "read"  # what it may do to the workspace's .git: one of GIT_MODES
    python: str | None = None  # protocol python: the function, "package.module:function" or "/path/file.py:function"
    isolate: bool = False  # python: call it in a child process of its own (killable, contained), not in uwf's

    def to_dict(self) -> dict[str, Any]:
        if self.python is not None:
            data: dict[str, Any] = {"python": self.python}
            if self.isolate:
                data["isolate"] = "process"
        else:
            data = {"command": self.command, "args": list(self.args), "protocol": self.protocol}
        if self.timeout is not None:
            data["timeout"] = int(self.timeout) if float(self.timeout).is_integer() else str(self.timeout)
        if self.env:
            data["env"] = dict(self.env)
        if self.secrets:
            data["secrets"] = list(self.secrets)
        if self.reuse:
            data["reuse"] = "true"
        if not self.sandbox:
            data["sandbox"] = "false"
        if not self.network:
            data["network"] = "false"
        for key in ("writable", "readable", "hide", "state"):
            if getattr(self, key):
                data[key] = list(getattr(self, key))
        if self.git != "read":
            data["git"] = self.git
        return data


@record(frozen=True)
class Price:
    """What a model costs, per million tokens: `input` for prompt tokens, `output` for completion
    tokens. The unit is whatever currency the user writes prices in (uwf shows a plain number)."""

    model: str  # a model alias of config.yaml, or a model name as an agent records it
    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000

    def to_dict(self) -> dict[str, Any]:
        return {"input": _number_text(self.input), "output": _number_text(self.output)}


def _number_text(value: float) -> int | str:
    return int(value) if float(value).is_integer() else repr(float(value))


@record(frozen=True)
class WorkspaceConfig:
    """`workspace:` in config.yaml: snapshots of threads' files (workspace/), and where forks go."""

    snapshot: bool = True
    max_file_bytes: int = 50 << 20
    max_snapshot_bytes: int = 1 << 30
    dir: str | None = None  # forks' workspaces; default: <root>/workspaces for a directory root

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if not self.snapshot:
            data["snapshot"] = "false"
        if self.max_file_bytes != WorkspaceConfig.max_file_bytes:
            data["maxFileBytes"] = self.max_file_bytes
        if self.max_snapshot_bytes != WorkspaceConfig.max_snapshot_bytes:
            data["maxSnapshotBytes"] = self.max_snapshot_bytes
        if self.dir:
            data["dir"] = self.dir
        return data


@record(frozen=True)
class OtelConfig:
    """`otel:` in config.yaml: where this root's traces go (telemetry/), and whether prompts and
    answers go with them. The standard OTEL_* variables win over it. A section that cannot be
    read turns traces off with a warning (`problem`), never a step: it is kept as written."""

    endpoint: str | None = None  # an OTLP/HTTP base URL, as OTEL_EXPORTER_OTLP_ENDPOINT
    content: bool = False
    problem: str | None = None  # why the section as written cannot be used
    written: object = None  # the section as written, when it has a problem (rewritten as it was)

    def to_dict(self) -> object:
        if self.problem is not None:
            return self.written
        data: dict[str, Any] = {}
        if self.endpoint:
            data["endpoint"] = self.endpoint
        if self.content:
            data["content"] = "true"
        return data


@record(frozen=True)
class Config:
    """config.yaml: providers, models, agents, who runs which role, prices, checks; never a key."""

    providers: dict[str, ProviderConfig] = field(default_factory=dict)
    models: dict[str, ModelConfig] = field(default_factory=dict)
    agents: dict[str, AgentConfig] = field(default_factory=dict)
    default_agent: str | None = None
    agent_overrides: dict[str, dict[str, str]] = field(default_factory=dict)
    default_model: str | None = None
    model_overrides: dict[str, str] = field(default_factory=dict)
    prices: dict[str, Price] = field(default_factory=dict)  # model alias or name -> its price; unknown: tokens only
    workspace: WorkspaceConfig = field(default_factory=WorkspaceConfig)
    # Every N steps a supervisor model judges whether a thread should go on (the seeds' name); a
    # workflow's own supervisorInterval wins. 0: no supervisor.
    supervisor_interval: int = 0
    # A thread that finishes gets an LLM summary of its run (the seeds' summarizer: on unless
    # `summarizer: false`), else it keeps its raw summary (its last output's).
    summarizer: bool = True
    otel: OtelConfig = field(default_factory=OtelConfig)
    settings: dict[str, str] = field(default_factory=dict)  # other top-level scalars, kept as written

    def price_of(self, *models: str | None) -> Price | None:
        """The price of the first of `models` (an alias, then the provider's model name) that has one."""
        for model in models:
            if model and model in self.prices:
                return self.prices[model]
        for model in models:  # a model alias whose price is written under its provider's name
            known = self.models.get(model) if model else None
            if known is not None and known.name in self.prices:
                return self.prices[known.name]
        return None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.providers:
            data["providers"] = {name: p.to_dict() for name, p in self.providers.items()}
        if self.models:
            data["models"] = {alias: m.to_dict() for alias, m in self.models.items()}
        if self.agents:
            data["agents"] = {name: a.to_dict() for name, a in self.agents.items()}
        if self.default_agent:
            data["defaultAgent"] = self.default_agent
        if self.agent_overrides:
            data["agentOverrides"] = {wf: dict(roles) for wf, roles in self.agent_overrides.items()}
        if self.default_model:
            data["defaultModel"] = self.default_model
        if self.model_overrides:
            data["modelOverrides"] = dict(self.model_overrides)
        if self.prices:
            data["prices"] = {model: price.to_dict() for model, price in self.prices.items()}
        if self.workspace.to_dict():
            data["workspace"] = self.workspace.to_dict()
        if self.supervisor_interval:
            data["supervisorInterval"] = self.supervisor_interval
        if not self.summarizer:
            data["summarizer"] = False
        if self.otel.to_dict() not in (None, {}):
            data["otel"] = self.otel.to_dict()
        data.update(self.settings)
        return data


def parse_config(text: str | None, where: str) -> Config:
    """config.yaml's text as a Config (empty when there is none); `where` names it in errors."""
    if text is None:
        return Config()
    try:
        raw = loads(text)
    except YamlSyntaxError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if raw is None or raw == "":
        return Config()
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping at the top level")
    return _parse(raw, where)


def _parse(raw: dict[str, Any], file: str) -> Config:
    known = {"providers", "models", "agents", "defaultAgent", "agentOverrides", "defaultModel", "modelOverrides", "prices", "workspace", "supervisorInterval", "summarizer", "otel"}
    providers = {}
    for name, spec in mapping(raw, "providers", file).items():
        where = f"{file}: providers.{name}"
        if not isinstance(spec, dict):
            raise ConfigError(f"{where} must be a mapping with baseUrl")
        key_env = spec.get("apiKeyEnv")
        providers[name] = ProviderConfig(name, text(spec.get("baseUrl"), f"{where}.baseUrl"), None if none(key_env) else key_env)
    models = {}
    for alias, spec in mapping(raw, "models", file).items():
        where = f"{file}: models.{alias}"
        if not isinstance(spec, dict):
            raise ConfigError(f"{where} must be a mapping with provider and name")
        models[alias] = ModelConfig(alias, text(spec.get("provider"), f"{where}.provider"), text(spec.get("name"), f"{where}.name"))
    agents = {name: _agent(name, spec, f"{file}: agents.{name}") for name, spec in mapping(raw, "agents", file).items()}
    overrides = {}
    for workflow, roles in mapping(raw, "agentOverrides", file).items():
        if not isinstance(roles, dict):
            raise ConfigError(f"{file}: agentOverrides.{workflow} must map role names to agents")
        overrides[workflow] = {role: text(agent, f"{file}: agentOverrides.{workflow}.{role}") for role, agent in roles.items()}
    model_overrides = {
        scenario: text(alias, f"{file}: modelOverrides.{scenario}") for scenario, alias in mapping(raw, "modelOverrides", file).items()
    }
    prices = {str(model): _price(str(model), spec, f"{file}: prices.{model}") for model, spec in mapping(raw, "prices", file).items()}
    settings = {key: value for key, value in raw.items() if key not in known}
    return Config(
        providers=providers,
        models=models,
        agents=agents,
        default_agent=None if none(raw.get("defaultAgent")) else text(raw.get("defaultAgent"), f"{file}: defaultAgent"),
        agent_overrides=overrides,
        default_model=None if none(raw.get("defaultModel")) else text(raw.get("defaultModel"), f"{file}: defaultModel"),
        model_overrides=model_overrides,
        prices=prices,
        workspace=_workspace(mapping(raw, "workspace", file), f"{file}: workspace"),
        supervisor_interval=interval(raw.get("supervisorInterval"), f"{file}: supervisorInterval"),
        summarizer=flag(raw.get("summarizer"), f"{file}: summarizer", default=True),
        otel=_otel(raw.get("otel"), f"{file}: otel"),
        settings=settings,
    )


def _otel(raw: object, where: str) -> OtelConfig:
    try:
        return _otel_section(raw, where)
    except ConfigError as exc:
        return OtelConfig(problem=exc.message, written=raw)


def _otel_section(raw: object, where: str) -> OtelConfig:
    if none(raw) or raw == {}:
        return OtelConfig()
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a mapping (endpoint, content)")
    unknown = set(raw) - {"endpoint", "content"}
    if unknown:
        raise ConfigError(f"{where}: unknown key '{sorted(unknown)[0]}' (endpoint, content)")
    endpoint = raw.get("endpoint")
    if not none(endpoint):
        endpoint = text(endpoint, f"{where}.endpoint").strip()
        if not endpoint.startswith(("http://", "https://")):
            raise ConfigError(f"{where}.endpoint must be an http:// or https:// URL (OTLP over HTTP), not {endpoint!r}")
    return OtelConfig(None if none(endpoint) else endpoint, flag(raw.get("content"), f"{where}.content"))


def _workspace(raw: dict[str, Any], where: str) -> WorkspaceConfig:
    unknown = set(raw) - {"snapshot", "maxFileBytes", "maxSnapshotBytes", "dir"}
    if unknown:
        raise ConfigError(f"{where}: unknown key '{sorted(unknown)[0]}' (snapshot, maxFileBytes, maxSnapshotBytes, dir)")
    default = WorkspaceConfig()
    return WorkspaceConfig(
        snapshot=flag(raw.get("snapshot"), f"{where}.snapshot", True),
        max_file_bytes=size(raw.get("maxFileBytes"), f"{where}.maxFileBytes", default.max_file_bytes),
        max_snapshot_bytes=size(raw.get("maxSnapshotBytes"), f"{where}.maxSnapshotBytes", default.max_snapshot_bytes),
        dir=None if none(raw.get("dir")) else text(raw.get("dir"), f"{where}.dir"),
    )


def _price(model: str, spec: object, where: str) -> Price:
    if not isinstance(spec, dict) or set(spec) - {"input", "output"} or not {"input", "output"} <= set(spec):
        raise ConfigError(f"{where} must be a mapping {{input: N, output: N}} (per million prompt and completion tokens)")
    values = []
    for key in ("input", "output"):
        try:
            value = float(spec[key])
        except (TypeError, ValueError):
            raise ConfigError(f"{where}.{key} must be a number (per million tokens), not {spec[key]!r}") from None
        if not value >= 0 or value == float("inf"):
            raise ConfigError(f"{where}.{key} must be zero or more, not {spec[key]!r}")
        values.append(value)
    return Price(model, values[0], values[1])


def _agent(name: str, spec: object, where: str) -> AgentConfig:
    if isinstance(spec, str):
        spec = {"command": spec}
    if not isinstance(spec, dict):
        raise ConfigError(f"{where} must be a mapping with command (and args, protocol, timeout, env, secrets, reuse, sandbox, ...)")
    unknown = sorted(set(spec) - AGENT_KEYS)
    if unknown:
        raise ConfigError(f"{where} has no setting {unknown[0]!r} (known: {', '.join(sorted(AGENT_KEYS))})")
    if not none(spec.get("python")):
        return _python_agent(name, spec, where)
    if not none(spec.get("isolate")):
        raise ConfigError(f"{where}.isolate is for python agents (python: module:function)")
    args = spec.get("args")
    if none(args) or args == []:
        args = []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where}.args must be a list of strings")
    protocol = spec.get("protocol")
    protocol = "step" if none(protocol) else protocol
    if protocol not in PROTOCOLS:
        raise ConfigError(f"{where}.protocol must be 'step' or 'text', not {protocol!r}")
    timeout: Any = spec.get("timeout")  # as written, until checked
    if none(timeout):
        timeout = None
    else:
        try:
            timeout = float(timeout)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}.timeout must be a number of seconds, not {timeout!r}") from None
        if timeout <= 0:
            raise ConfigError(f"{where}.timeout must be positive")
    env = spec.get("env")
    env = {} if none(env) else env
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ConfigError(f"{where}.env must map variable names to strings")
    secrets = spec.get("secrets")
    secrets = [] if none(secrets) or secrets == [] else secrets
    if not isinstance(secrets, list) or not all(isinstance(s, str) and is_env_name(s) for s in secrets):
        raise ConfigError(f"{where}.secrets must be a list of .env key names")
    return AgentConfig(
        name, text(spec.get("command"), f"{where}.command"), tuple(args), protocol, timeout, dict(env), tuple(secrets),
        flag(spec.get("reuse"), f"{where}.reuse"),
        sandbox=flag(spec.get("sandbox"), f"{where}.sandbox", default=True),
        network=flag(spec.get("network"), f"{where}.network", default=True),
        writable=paths(spec.get("writable"), f"{where}.writable"),
        readable=paths(spec.get("readable"), f"{where}.readable"),
        hide=paths(spec.get("hide"), f"{where}.hide", relative=True),
        state=paths(spec.get("state"), f"{where}.state"),
        git=_git_mode(spec.get("git"), f"{where}.git"),
    )


def _git_mode(value: object, where: str) -> str:
    if none(value):
        return "read"
    if value not in GIT_MODES:
        raise ConfigError(f"{where} must be one of {', '.join(GIT_MODES)}, not {value!r}")
    return str(value)


AGENT_KEYS = {
    "command", "args", "protocol", "timeout", "env", "secrets", "reuse", "sandbox", "network", "writable", "readable", "hide",
    "state", "git", "python", "isolate",
}
PYTHON_KEYS = {
    "python", "isolate", "protocol", "timeout", "env", "secrets", "reuse", "sandbox", "network", "writable", "readable", "hide", "state",
    "git",
}


def _python_agent(name: str, spec: dict[str, Any], where: str) -> AgentConfig:
    """`python: module:function`: a function uwf calls (engine/protocols/python.py), in its own
    process when `isolate: process`; the sandbox settings apply to that process."""
    stray = sorted(set(spec) - PYTHON_KEYS)
    if stray:
        raise ConfigError(f"{where}.{stray[0]} does not apply to a python agent (it runs a function, not a command)")
    target = python_target(text(spec.get("python"), f"{where}.python"), f"{where}.python")
    protocol = spec.get("protocol")
    if not none(protocol) and protocol != "python":
        raise ConfigError(f"{where}.protocol must be python (or left out) for a python agent, not {protocol!r}")
    isolate = spec.get("isolate")
    if not (none(isolate) or isolate in ("process", "none", False)):
        raise ConfigError(f"{where}.isolate must be process (or none), not {isolate!r}")
    base = _agent(name, {key: value for key, value in spec.items() if key not in ("python", "isolate", "protocol")} | {"command": "python"}, where)
    return replace(base, command="", protocol="python", python=target, isolate=isolate == "process")


def python_target(text: str, where: str) -> str:
    """A function's entry point: `package.module:function` (a dotted name after the colon for a
    method of a class), or an absolute (or ~/) path to a .py file, `:function`."""
    place, sep, name = text.strip().rpartition(":")
    if not sep or not place or not all(part.isidentifier() for part in name.split(".")):
        raise ConfigError(f"{where} must be module:function (e.g. mypackage.agents:review), not {text!r}")
    if place.endswith(".py") or "/" in place:
        if not place.startswith(("/", "~")):
            raise ConfigError(f"{where}: the file {place!r} must be an absolute path (or ~/...), or name a module instead")
    elif not all(part.isidentifier() for part in place.split(".")):
        raise ConfigError(f"{where}: {place!r} is not a module name")
    return f"{place}:{name}"


def dump_config(config: Config) -> str:
    return dumps(config.to_dict(), HEADER)


def with_agent(config: Config, agent: AgentConfig) -> Config:
    return replace(config, agents={**config.agents, agent.name: agent})
