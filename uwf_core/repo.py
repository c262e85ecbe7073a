"""One opened root, created once per command, TUI session, worker or agent process and passed down.

It resolves the location once, holds the backend and the CAS over it, and
caches what a command would otherwise read again: config.yaml and .env
(read once per Repo; `reload_config` after they change), and everything
immutable — nodes (in the CAS), workflows by hash, thread contexts by head.
It sits just above store/ and config/ and imports nothing higher: the layers
above fill its caches.
Mutable state (heads, archive, runs, registry) is never cached here: it is
read through the backend whenever it matters.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Callable, TypeVar, overload

    from .config.env import Secrets
    from .config.model import AgentConfig, Config
    from .store.base import Backend, Registry, RunLog, StepLocks, ThreadIndex
    from .store.cas import CasStore
    from .thread.model import ThreadContext
    from .workflow.model import Workflow

    from .engine.python.agent_types import AgentFunction

    F = TypeVar("F", bound=AgentFunction)

class Repo:
    """One opened root: its backend, and the caches of what cannot change (module docstring)."""

    __slots__ = ("backend", "_nodes", "_config", "_env_values", "_secrets", "workflows", "contexts", "agents")

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._nodes: CasStore | None = None
        self._config: Config | None = None
        self._env_values: dict[str, str] | None = None
        self._secrets: Secrets | None = None
        self.workflows: dict[str, Workflow] = {}
        self.contexts: dict[str, ThreadContext] = {}  # by head: thread/context.py keeps it
        self.agents = AgentFunctions()  # Python functions registered as agents for this session

    @classmethod
    def open(cls, location: str | None = None) -> Repo:
        """`location` > UWF_STORAGE_ROOT > ~/.uwf. Opening reads nothing."""
        from .store.open import open_backend

        return cls(open_backend(location))

    # -- the backend's parts ------------------------------------------------------------

    @property
    def location(self) -> str:
        """What an agent gets as UWF_STORAGE_ROOT to open this root again."""
        return self.backend.location

    @property
    def nodes(self) -> CasStore:
        if self._nodes is None:
            from .store.cas import CasStore

            self._nodes = CasStore(self.backend.nodes)
        return self._nodes

    @property
    def threads(self) -> ThreadIndex:
        return self.backend.threads

    @property
    def registry(self) -> Registry:
        return self.backend.registry

    @property
    def runs(self) -> RunLog:
        return self.backend.runs

    @property
    def locks(self) -> StepLocks:
        return self.backend.locks

    @property
    def env_path(self) -> str:
        return self.backend.env_path

    # -- config and secrets, read once ---------------------------------------------------

    @property
    def config(self) -> Config:
        if self._config is None:
            from .config.model import parse_config
            from .config.presets import upgrade_presets  # a preset's entry an earlier uwf wrote is today's preset

            self._config = upgrade_presets(parse_config(self.backend.config.read(), self.backend.config.location))
        return self._config

    def edit_config(self, change: Callable[[Config], Config]) -> Config:
        """config.yaml read afresh, changed and written back under its lock: another process's
        edit meanwhile is kept, not overwritten with what this one read earlier."""
        with self.backend.config_lock():
            self._config = None
            config = change(self.config)
            self.save_config(config)
            return config

    def save_config(self, config: Config) -> None:
        from .config.model import dump_config

        self.backend.config.write(dump_config(config))
        self._config = config
        self._secrets = None

    @property
    def env_values(self) -> dict[str, str]:
        """This host's .env for this root (secrets: never stored in the backend); in a step agent,
        the keys uwf handed it instead (its sandbox hides .env)."""
        if self._env_values is None:
            from .config.env import inherited_secrets, load_env_file

            inherited = inherited_secrets()
            self._env_values = dict(inherited) if inherited is not None else load_env_file(self.backend.env_path)
        return self._env_values

    @property
    def secrets(self) -> Secrets:
        """What is redacted from everything an agent leaves: every .env value and provider key."""
        if self._secrets is None:
            from .config.env import Secrets

            self._secrets = Secrets.of(self.config, self.env_values)
        return self._secrets

    def update_env(self, updates: dict[str, str]) -> None:
        from .config.env import update_env_file

        update_env_file(self.backend.env_path, updates)
        self._env_values = None
        self._secrets = None

    def reload_config(self) -> None:
        """Forget config.yaml and .env (a long-lived Repo after another process changed them)."""
        self._config = None
        self._env_values = None
        self._secrets = None



class AgentFunctions:
    """The Python functions a program registers as agents on its Repo (`repo.agents.register`).
    A registered name is an agent for every step taken through this Repo — `perform_step`,
    `run_thread`, a `Worker` — and means the function before any config.yaml entry of that name.
    They live as long as the Repo: a `uwf` command, which opens its own, knows only config.yaml's
    `python:` entries."""

    __slots__ = ("entries", "functions")

    def __init__(self) -> None:
        self.entries: dict[str, AgentConfig] = {}  # name -> its entry (protocol python)
        self.functions: dict[str, Callable[..., object]] = {}  # name -> the callable

    if TYPE_CHECKING:  # a function, or (without one) a decorator that gives the function back

        @overload
        def register(self, name: str, func: F, *, isolate: bool = False, timeout: float | None = None,
                     secrets: tuple[str, ...] | list[str] = (), reuse: bool = False, replace: bool = False) -> F: ...

        @overload
        def register(self, name: str, func: None = None, *, isolate: bool = False, timeout: float | None = None,
                     secrets: tuple[str, ...] | list[str] = (), reuse: bool = False, replace: bool = False) -> Callable[[F], F]: ...

    def register(self, name: str, func: Callable[..., object] | None = None, *, isolate: bool = False, timeout: float | None = None,
                 secrets: tuple[str, ...] | list[str] = (), reuse: bool = False, replace: bool = False) -> Callable[..., object]:
        """Register `func` under `name`; without `func`, a decorator. It must take one argument,
        the PythonContext, and return the role's output (checked now, as far as its signature
        tells). `isolate=True` calls it in a child process of its own (contained, killed at the
        step's timeout). `secrets`: the .env keys it is handed in `ctx.secrets`. A name already
        registered to another function is refused unless `replace=True`."""
        if func is None:
            return lambda function: self.register(name, function, isolate=isolate, timeout=timeout, secrets=secrets,
                                                  reuse=reuse, replace=replace)
        from .agent_functions import check_signature, entry_point
        from .errors import UwfError

        if not isinstance(name, str) or not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise UwfError(f"agent name {name!r} must be letters, digits, '-', '_' or '.'")
        known = self.functions.get(name)
        if known is not None and known is not func and not replace:
            raise UwfError(f"agent '{name}' is already registered, to {entry_point(known)}: register it with replace=True "
                           f"to replace it, or choose another name")
        check_signature(name, func)
        return self._add(name, func, isolate=isolate, timeout=timeout, secrets=secrets, reuse=reuse)

    def _add(self, name: str, func: Callable[..., object], *, isolate: bool = False, timeout: float | None = None,
             secrets: tuple[str, ...] | list[str] = (), reuse: bool = False) -> Callable[..., object]:
        from .agent_functions import entry_point, isolated_target
        from .config.model import AgentConfig
        from .config.values import is_env_name
        from .errors import UwfError

        if not callable(func):
            raise UwfError(f"agent '{name}': {func!r} is not callable")
        if timeout is not None and not timeout > 0:
            raise UwfError(f"agent '{name}': timeout must be a positive number of seconds")
        for key in secrets:
            if not is_env_name(key):
                raise UwfError(f"agent '{name}': {key!r} is not a .env key name")
        target = entry_point(func)
        if isolate:
            target = isolated_target(name, func, target)
        self.entries[name] = AgentConfig(
            name, "", (), "python", timeout, {}, tuple(secrets), reuse, python=target, isolate=isolate,
        )
        self.functions[name] = func
        return func

    def unregister(self, name: str) -> None:
        """Forget a registered function (a config.yaml entry of that name is then the agent again)."""
        self.entries.pop(name, None)
        self.functions.pop(name, None)

    def name_of(self, func: Callable[..., object]) -> str:
        """The name a function given directly (StepOptions(agent=func)) is registered under: its
        entry point, module:function."""
        for name, known in self.functions.items():
            if known is func:
                return name
        from .agent_functions import check_signature, entry_point

        name = entry_point(func)
        check_signature(name, func)
        self._add(name, func)
        return name

    def __contains__(self, name: str) -> bool:
        return name in self.entries
