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
    from .config.env import Secrets
    from .config.model import Config
    from .store.base import Backend
    from .store.cas import CasStore
    from .thread.model import ThreadContext
    from .workflow.model import Workflow

CACHE_CONTEXTS = 64  # thread contexts kept by head (a TUI browses many threads)


class Repo:
    __slots__ = ("backend", "_nodes", "_config", "_env_values", "_secrets", "workflows", "contexts")

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._nodes: CasStore | None = None
        self._config: Config | None = None
        self._env_values: dict[str, str] | None = None
        self._secrets: Secrets | None = None
        self.workflows: dict[str, Workflow] = {}
        self.contexts: dict[str, ThreadContext] = {}

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
    def threads(self):
        return self.backend.threads

    @property
    def registry(self):
        return self.backend.registry

    @property
    def runs(self):
        return self.backend.runs

    @property
    def locks(self):
        return self.backend.locks

    @property
    def env_path(self) -> str:
        return self.backend.env_path

    # -- config and secrets, read once ---------------------------------------------------

    @property
    def config(self) -> Config:
        if self._config is None:
            from .config.model import parse_config

            self._config = parse_config(self.backend.config.read(), self.backend.config.location)
        return self._config

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

    # -- immutable things, cached for the Repo's lifetime -----------------------------------
    # Filled by workflow.ops.workflow_of and thread.context.context_of: a node never changes,
    # so neither does the workflow or the chain behind a hash.

    def remember_context(self, context: ThreadContext) -> None:
        if len(self.contexts) >= CACHE_CONTEXTS:
            self.contexts.pop(next(iter(self.contexts)))
        self.contexts[context.head] = context
