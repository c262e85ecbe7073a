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
    from collections.abc import Iterable, Mapping
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
        name = entry_point(func)
        check_signature(name, func)
        self._add(name, func)
        return name

    def __contains__(self, name: str) -> bool:
        return name in self.entries


def refuse_unknown_agent(spec: str, source: str, functions: Mapping[str, object], configured: Iterable[str]) -> None:
    """In a program that registered functions, a one-word agent that is none of them, no agent of
    config.yaml and no command on PATH is a typo, most likely: said with the names there are,
    rather than looked for as a program."""
    import os
    import shutil
    import sys

    from .errors import UwfError

    if os.sep in spec or spec in functions or spec in configured or spec == "human":  # a person: no program
        return
    if shutil.which(spec, path=os.pathsep.join((os.environ.get("PATH", ""), os.path.dirname(sys.executable)))):
        return
    import difflib

    close = difflib.get_close_matches(spec, sorted({*functions, *configured}), n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise UwfError(f"agent '{spec}' (from {source}) is neither a registered function ({', '.join(sorted(functions))}), "
                   f"an agent of config.yaml, nor a command on PATH{hint}")


BAD_RETURNS = frozenset({"list", "tuple", "set", "frozenset", "int", "float", "bool", "bytes", "None", "NoneType"})


def check_signature(name: str, func: Callable[..., object]) -> None:
    """One argument (the context), and no return annotation that cannot be an output: what a
    type checker says of an agent function, said at registration for a program not checked."""
    import inspect

    from .errors import UwfError

    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return  # a builtin or a C callable: it says nothing of itself
    try:
        signature.bind(None)
    except TypeError:
        raise UwfError(f"agent '{name}': {entry_point(func)}{signature} must take one argument, the PythonContext") from None
    returned = signature.return_annotation
    if returned is inspect.Signature.empty:
        return
    text = returned if isinstance(returned, str) else inspect.formatannotation(returned)
    head = text.replace("typing.", "").replace("builtins.", "").split("[", 1)[0].strip()
    if head in BAD_RETURNS:
        raise UwfError(f"agent '{name}': {entry_point(func)} returns {text}; an agent function returns the role's output "
                       f"(a dict), an answer text, a PythonAnswer or a WrittenStep")


def isolated_target(name: str, func: Callable[..., object], target: str) -> str:
    """How a child process imports `func`: by module, or — for the script being run — by its
    file's path, which the child loads under another name than `__main__`, so only the script's
    definitions run there (its own work must be under `if __name__ == "__main__":`, as for
    multiprocessing). Only a plain function that its module names at its top level can be found
    again there; anything else is refused now rather than at its step. This guards the user's
    intent, not the host: whatever the child runs, it runs in its sandbox."""
    import os
    import sys
    import types

    from .errors import UwfError

    module, _, qualname = target.rpartition(":")
    if not isinstance(func, types.FunctionType) or "<" in qualname or "." in qualname:
        raise UwfError(f"agent '{name}': isolate needs a function a child process can import by name, and {target} is "
                       f"not one (define it with `def` at the top level of its module: not a method, a partial, a "
                       f"callable object, a lambda or a function inside a function)")
    if getattr(sys.modules.get(module), qualname, None) is not func:
        raise UwfError(f"agent '{name}': isolate imports {target} by name in the child, and that name is now another "
                       f"object (redefined, or the script run through another module such as cProfile)")
    if module != "__main__":
        return target
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    if not script or not script.endswith(".py"):
        raise UwfError(f"agent '{name}': isolate needs a function a child process can import, and {target} is defined "
                       f"in an interactive session (put it in a file)")
    script = os.path.abspath(script)
    if ":" in script or not script.isprintable():
        raise UwfError(f"agent '{name}': isolate loads the script by its path, and {script!r} holds a ':' or a character "
                       f"uwf cannot pass on: move the script")
    try:
        script.encode("utf-8")
    except UnicodeEncodeError:
        raise UwfError(f"agent '{name}': isolate loads the script by its path, and {script!r} is not UTF-8: move it") from None
    unguarded = top_level_work(script)
    if unguarded:
        raise UwfError(f"agent '{name}': isolate loads {os.path.basename(script)} again in the child process, and its line "
                       f"{unguarded} would run there: put the script's own work under `if __name__ == \"__main__\":`")
    return f"{script}:{qualname}"


def top_level_work(path: str) -> int | None:
    """The first line of a script that does work when it is imported — a statement of its own (a
    call, a loop, a `with`, an `if` other than the main guard) — beyond definitions, imports and
    assignments (which run again in the child: `WORKFLOW = WorkflowSpec(...)` is fine, and so is
    anything else whose value a definition needs); None when there is none. A script that cannot
    be read or parsed is said to do work at line 1: the child would fail to load it anyway."""
    import ast

    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())  # bytes: its coding line or BOM says how to read it
    except (OSError, SyntaxError, ValueError):
        return 1
    for node in tree.body:
        if not _only_definitions(node, top=True):
            return node.lineno
    return None


def _only_definitions(node: object, top: bool = False) -> bool:
    """A statement that only defines names when it runs (nested `try`/`if` blocks of them too, as
    `try: import x except ImportError: ...` and `if TYPE_CHECKING:` are)."""
    import ast

    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass,
                         ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return True  # a docstring
    if isinstance(node, ast.If):
        if top and _is_main_guard(node.test):
            return all(_only_definitions(part) for part in node.orelse)  # its else branch runs in the child
        return all(_only_definitions(part) for part in (*node.body, *node.orelse))
    if isinstance(node, ast.Try):
        parts = (*node.body, *node.orelse, *node.finalbody, *(part for handler in node.handlers for part in handler.body))
        return all(_only_definitions(part) for part in parts)
    return False


def _is_main_guard(test: object) -> bool:
    import ast

    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")


def entry_point(func: Callable[..., object]) -> str:
    """`module:qualname`: how a function is named in its steps' detail, and imported in a child."""
    module = getattr(func, "__module__", None) or "__main__"
    name = getattr(func, "__qualname__", None) or getattr(type(func), "__qualname__", "function")
    return f"{module}:{name}"
