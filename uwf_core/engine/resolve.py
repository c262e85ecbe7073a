"""Which agent runs a role, and how: `--agent` > the thread's own bindings >
`agentOverrides` > `defaultAgent`. Each names a config alias or is a
command line (step protocol)."""

from __future__ import annotations

import shlex

from ..config.model import AgentConfig, Config
from ..encoding.records import field, record
from ..errors import UwfError

HUMAN = "human"

# Which rule chose an agent, in precedence order (`uwf thread dry-run` shows it).
ORIGIN_OPTION = "--agent"
ORIGIN_THREAD = "thread"
ORIGIN_OVERRIDE = "agentOverrides"
ORIGIN_DEFAULT = "defaultAgent"
ORIGINS = (ORIGIN_OPTION, ORIGIN_THREAD, ORIGIN_OVERRIDE, ORIGIN_DEFAULT)

NO_AGENT_HELP = (
    "no agent is configured for role '{role}' of '{workflow}': run `uwf setup` (e.g. `uwf setup --agent-preset claude "
    "--default-agent claude`), set defaultAgent in {config}, or pass --agent CMD"
)


@record(frozen=True)
class ResolvedAgent:
    label: str  # what the StepNode records as `agent`
    argv: tuple[str, ...]  # command and fixed args (the step protocol appends thread and role)
    protocol: str = "step"
    timeout: float | None = None
    env: dict[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()  # .env keys the agent's entry names
    source: str = "--agent"  # where the choice came from, for error messages
    alias: bool = False  # named in config.yaml: the name every record of the step uses
    origin: str = ORIGIN_OPTION  # which rule chose it: one of ORIGINS
    spec: str = ""  # what that rule named (an alias or a command line)
    reuse: bool = False  # the entry opts in to memoized replay (`reuse: true`)
    sandbox: bool = True  # contained (engine/contain/sandbox.py) unless the entry says `sandbox: false`
    network: bool = True
    writable: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()
    state: tuple[str, ...] = ()  # its CLI's state directories, a private copy each run
    git: str = "read"  # what it may do to the workspace's .git (config/model.GIT_MODES)
    python: str | None = None  # protocol python: the function's entry point (module:function)
    isolate: bool = False  # python: called in a child process of its own


def parse_assignments(items: list[str], what: str = "ROLE=AGENT") -> dict[str, str]:
    """`--agent ROLE=AGENT` (or `ALIAS=COMMAND`) options as a mapping; a malformed one is refused."""
    result = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise UwfError(f"--agent expects {what}, got {item!r}")
        result[name.strip()] = value.strip()
    return result


def choose_agent_spec(
    config: Config, workflow_name: str, role: str, bindings: dict[str, str] | None, override: str | None
) -> tuple[str, str] | None:
    """(spec, source) by precedence, or None when nothing names an agent."""
    chosen = _choose(config, workflow_name, role, bindings, override)
    return chosen[:2] if chosen is not None else None


def _choose(
    config: Config, workflow_name: str, role: str, bindings: dict[str, str] | None, override: str | None
) -> tuple[str, str, str] | None:
    """(spec, source, origin) by precedence, or None when nothing names an agent."""
    if override:
        return override, "--agent", ORIGIN_OPTION
    if bindings and bindings.get(role):
        return bindings[role], "the thread's --agent binding", ORIGIN_THREAD
    role_overrides = config.agent_overrides.get(workflow_name) or {}
    if role_overrides.get(role):
        return role_overrides[role], f"agentOverrides.{workflow_name}.{role} in config.yaml", ORIGIN_OVERRIDE
    if config.default_agent:
        return config.default_agent, "defaultAgent in config.yaml", ORIGIN_DEFAULT
    return None


def resolve_agent(
    config: Config,
    workflow_name: str,
    role: str,
    bindings: dict[str, str] | None = None,
    override: str | None = None,
    *,
    config_file: str = "config.yaml",
    functions: dict[str, AgentConfig] | None = None,
) -> ResolvedAgent:
    """`functions`: the Python functions registered for this session (`repo.agents`), which a
    name means before config.yaml's entries do."""
    chosen = _choose(config, workflow_name, role, bindings, override)
    if chosen is None:
        raise UwfError(NO_AGENT_HELP.format(role=role, workflow=workflow_name, config=config_file))
    spec, source, origin = chosen
    alias = (functions or {}).get(spec) or config.agents.get(spec)
    if alias is not None:
        return _from_alias(alias, source, origin, spec)
    if spec.strip() == HUMAN:
        return ResolvedAgent(label=HUMAN, argv=(HUMAN,), protocol="human", source=source, origin=origin, spec=spec)
    try:
        argv = tuple(shlex.split(spec))
    except ValueError as exc:
        raise UwfError(f"agent '{spec}' (from {source}) is not a valid command line: {exc}") from None
    if not argv:
        raise UwfError(f"agent from {source} is empty")
    if functions and len(argv) == 1:
        from ..agent_functions import refuse_unknown_agent

        refuse_unknown_agent(spec, source, functions, config.agents)
    return ResolvedAgent(label=spec, argv=argv, protocol="step", source=source, origin=origin, spec=spec)


def _from_alias(agent: AgentConfig, source: str, origin: str, spec: str) -> ResolvedAgent:
    return ResolvedAgent(
        label=agent.name,
        argv=("python", agent.python) if agent.python else (agent.command, *agent.args),  # a function: what the views show
        protocol=agent.protocol,
        timeout=agent.timeout,
        env=dict(agent.env),
        secrets=agent.secrets,
        source=f"agent '{agent.name}' ({source})",
        alias=True,
        origin=origin,
        spec=spec,
        reuse=agent.reuse,
        sandbox=agent.sandbox,
        network=agent.network,
        writable=agent.writable,
        readable=agent.readable,
        hide=agent.hide,
        state=agent.state,
        git=agent.git,
        python=agent.python,
        isolate=agent.isolate,
    )
