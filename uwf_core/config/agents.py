"""The agents a user manages (`uwf agent list | add | remove`): config.yaml's entries, the
commands uwf ships, and the presets for known CLIs. Pure functions over a Config; the
caller saves the result."""

from __future__ import annotations

import os

from ..encoding.records import record, replace
from ..errors import UsageError, UwfError
from .env import is_key_name
from .model import GIT_MODES, PROTOCOLS, AgentConfig, Config
from .values import is_env_name
from .presets import PRESETS

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any

# Step-protocol commands installed with uwf (and the `human` pseudo-agent): usable by name
# in --agent, defaultAgent and agentOverrides without a config entry.
BUILT_IN = {
    "uwf-builtin": "the built-in tool-calling LLM loop (defaultModel; tools confined to the workspace)",
    "uwf-script": "answers from a YAML script of canned outputs (UWF_SCRIPT or --script)",
    "uwf-subflow": "runs a whole sub-workflow as one step",
    "human": "a person answers: the TUI's form, or $EDITOR from `uwf thread step`",
}


@record(frozen=True)
class AgentEntry:
    """One agent as `uwf agent list` shows it."""

    name: str
    command: str
    args: tuple[str, ...]
    protocol: str
    timeout: float | None
    secrets: tuple[str, ...]
    source: str  # "config.yaml", "config.yaml (preset claude)" or "built-in"
    description: str = ""
    sandbox: bool = True  # `sandbox: false`: no sandbox for this agent, a process group only
    network: bool = True
    writable: tuple[str, ...] = ()  # what it may write besides the workspace (its CLI's state)
    readable: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()  # workspace files it is shown empty
    state: tuple[str, ...] = ()  # its CLI's state directories: a private copy each run
    git: str = "read"  # what it may do to the workspace's .git
    env: tuple[tuple[str, str], ...] = ()  # its fixed variables (never a key: `agent add` refuses one)
    isolate: bool = False  # a python agent called in a child process of its own

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "command": self.command,
            "args": list(self.args),
            "protocol": self.protocol,
            "timeout": self.timeout,
            "secrets": list(self.secrets),
            "source": self.source,
        }
        if self.protocol == "python":
            data["python"] = self.args[0] if self.args else None
            data["isolate"] = "process" if self.isolate else "none"
        if self.protocol != "human":  # a person runs no process
            data.update(sandbox=self.sandbox, network=self.network, git=self.git)
        for key in ("writable", "readable", "hide", "state"):
            if getattr(self, key):
                data[key] = list(getattr(self, key))
        if self.env:
            data["env"] = dict(self.env)
        if self.description:
            data["description"] = self.description
        return data


def agent_entries(config: Config) -> list[AgentEntry]:
    """config.yaml's agents first (in file order), then the built-in commands."""
    entries = []
    for agent in config.agents.values():
        preset = next((name for name, known in PRESETS.items() if known == replace(agent, name=name)), None)
        source = f"config.yaml (preset {preset})" if preset else "config.yaml"
        entries.append(_entry(agent, source))
    for name, description in BUILT_IN.items():
        if name not in config.agents:
            protocol = "human" if name == "human" else "step"
            entries.append(AgentEntry(name, name, (), protocol, None, (), "built-in", description))
    return entries


def preset_entries() -> list[AgentEntry]:
    return [_entry(agent, "preset") for agent in PRESETS.values()]


def _entry(agent: AgentConfig, source: str) -> AgentEntry:
    command, args = ("python", (agent.python,)) if agent.python else (agent.command, agent.args)
    return AgentEntry(
        agent.name, command, args, agent.protocol, agent.timeout, agent.secrets, source,
        sandbox=agent.sandbox, network=agent.network, writable=agent.writable, readable=agent.readable, hide=agent.hide,
        state=agent.state, git=agent.git, env=tuple(agent.env.items()), isolate=agent.isolate,
    )


def new_agent(
    name: str,
    argv: list[str],
    *,
    protocol: str | None = None,
    timeout: float | None = None,
    secrets: list[str] | None = None,
    env: dict[str, str] | None = None,
    sandbox: bool = True,
    network: bool = True,
    writable: list[str] | None = None,
    readable: list[str] | None = None,
    hide: list[str] | None = None,
    state: list[str] | None = None,
    git: str = "read",
    python: str | None = None,
    isolate: bool = False,
) -> AgentConfig:
    """A checked entry: every value a user can get wrong is refused here, in one line. Without a
    protocol, uwf's own agents (uwf-script, uwf-builtin, uwf-subflow) speak step, any other CLI text."""
    if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise UsageError(f"agent name {name!r} must be letters, digits, '-', '_' or '.'")
    if name in BUILT_IN:
        raise UsageError(f"'{name}' is a built-in agent; choose another name")
    if python is not None:
        if protocol not in (None, "python"):
            raise UsageError(f"a --python agent speaks the python protocol, not {protocol}")
        argv, protocol = ["python"], "text"  # checked below as any entry; made a python entry at the end
    if not argv or not argv[0].strip():
        raise UsageError("the agent needs a command: uwf agent add NAME [options] -- COMMAND [ARG...]")
    if protocol is None:
        protocol = "step" if os.path.basename(argv[0]) in BUILT_IN else "text"
    if protocol not in PROTOCOLS:
        raise UsageError(f"--protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
    if timeout is not None and not timeout > 0:  # also refuses NaN
        raise UsageError(f"--timeout must be a positive number of seconds, not {timeout:g}")
    for secret in secrets or []:
        if not is_env_name(secret):
            raise UsageError(f"--secret {secret!r} is not a .env key name (letters, digits and '_')")
    for variable in env or {}:
        if is_key_name(variable):
            raise UsageError(
                f"--env {variable}=... looks like a key: put it in .env and pass --secret {variable} (config.yaml holds no secrets)"
            )
    for path in [*(writable or []), *(readable or []), *(state or [])]:
        if not path.startswith(("/", "~", "$")):
            raise UsageError(f"--writable, --readable and --state take absolute paths (or ~/..., $VAR/...), not {path!r}")
    if git not in GIT_MODES:
        raise UsageError(f"--git must be one of {', '.join(GIT_MODES)}, not {git!r}")
    for path in hide or []:
        if path.startswith(("/", "~", "$")) or ".." in path.split("/"):
            raise UsageError(f"--hide takes a path inside the workspace (relative, no '..'), not {path!r}")
    entry = AgentConfig(
        name, argv[0], tuple(argv[1:]), protocol, timeout, dict(env or {}), tuple(dict.fromkeys(secrets or [])),
        sandbox=sandbox, network=network, writable=tuple(writable or ()), readable=tuple(readable or ()), hide=tuple(hide or ()),
        state=tuple(state or ()), git=git,
    )
    if python is None:
        return entry
    from .model import python_target
    from .values import ConfigError

    try:
        target = python_target(python, "--python")
    except ConfigError as exc:
        raise UsageError(exc.message) from None
    return replace(entry, command="", args=(), protocol="python", python=target, isolate=isolate)


def add_agent(config: Config, agent: AgentConfig, *, replace_existing: bool = False) -> Config:
    if agent.name in config.agents and not replace_existing:
        raise UwfError(f"agent '{agent.name}' already exists (remove it first, or pass --replace)")
    return replace(config, agents={**config.agents, agent.name: agent})


def remove_agent(config: Config, name: str) -> Config:
    """Refused while something still names the agent: a step would then fail far from here."""
    if name not in config.agents:
        known = ", ".join(config.agents) or "none"
        raise UwfError(f"no agent '{name}' in config.yaml (configured: {known})")
    users = []
    if config.default_agent == name:
        users.append("defaultAgent")
    for workflow, roles in config.agent_overrides.items():
        users.extend(f"agentOverrides.{workflow}.{role}" for role, agent in roles.items() if agent == name)
    if users:
        raise UwfError(f"agent '{name}' is still used by {', '.join(users)} in config.yaml; change that first")
    return replace(config, agents={key: value for key, value in config.agents.items() if key != name})
