"""A Python function as an agent, found: registered on the Repo, imported from its entry point
(again when its file changed, so a long-lived uwf runs the code on disk), or, for an isolated one,
only located; and known by what identifies its code — its package's version and the hash of its
module's source as loaded — which the detail and the reuse key record."""

from __future__ import annotations

import os
import sys
import threading

from ...encoding.records import record
from ...errors import UwfError

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Callable

    from ...repo import Repo
    from ..resolve import ResolvedAgent



@record(frozen=True)
class PythonFunction:
    """A function an agent entry names, with what identifies its code."""

    func: Callable | None  # None: an isolated function, imported only in its own process
    target: str  # "module:qualname", or "/path/file.py:name"
    version: str | None = None  # its top-level package's __version__
    source: str | None = None  # the XXH64 of its module's source file

    @property
    def identity(self) -> str:
        """What the reuse key holds of it: a change of code is a different agent."""
        return f"{self.target}@{self.version or ''}#{self.source or ''}"

    def to_detail(self) -> dict:
        data: dict = {"function": self.target}
        if self.version:
            data["version"] = self.version
        if self.source:
            data["source"] = self.source
        return data


def function_of(repo: Repo, resolved: ResolvedAgent) -> PythonFunction:
    """A python agent's function: the one registered under its name for this session
    (`repo.agents`), else imported from its entry point — but an isolated one only found, not
    imported: its module's code runs in its own process, never in uwf's."""
    if resolved.isolate:  # registered or not: the code its process will load, as it is on disk now
        return PythonFunction(None, resolved.python or "", None, _read_code(locate(resolved.python or ""))[1])
    registered = repo.agents.functions.get(resolved.label)
    if registered is not None:
        return describe(registered, resolved.python)
    return describe(load_function(resolved.python or ""), resolved.python)


def locate(target: str) -> str:
    """The source file of an entry point's module, looked up on sys.path as the import system
    would find it, without running any of it (not even its packages' __init__)."""
    place = target.rpartition(":")[0]
    if place.endswith(".py") or os.sep in place:
        path = os.path.expanduser(place)
        if not os.path.isfile(path):
            raise UwfError(f"there is no file {path}")
        return path
    *packages, module = place.split(".")
    places = [entry or os.getcwd() for entry in sys.path if isinstance(entry, str)]
    for package in packages:
        found = [os.path.join(where, package) for where in places if os.path.isdir(os.path.join(where, package))]
        regular = [where for where in found if os.path.isfile(os.path.join(where, "__init__.py"))]
        places = regular[:1] or found  # a regular package is the first one found; a namespace package is all of them
    for where in places:
        for candidate in (os.path.join(where, f"{module}.py"), os.path.join(where, module, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
    raise UwfError(f"cannot find module {place} (install it, or add its directory to PYTHONPATH)")


def check_unrun(target: str) -> None:
    """What `uwf agent test` can say of an isolated function without running any of its code:
    its module is found, compiles, and defines the name at its top level."""
    import ast

    path = locate(target)
    place, _, name = target.rpartition(":")
    try:
        with open(path, "rb") as file:
            tree = ast.parse(file.read(), path)
    except SyntaxError as exc:
        raise UwfError(f"cannot import {place}: SyntaxError: {exc.msg} ({path}, line {exc.lineno})") from None
    except OSError as exc:
        raise UwfError(f"cannot read {path}: {exc.strerror}") from None
    first = name.split(".")[0]
    defined = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(target.id for target in targets if isinstance(target, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    if first not in defined and not any(isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names) for node in tree.body):
        raise UwfError(f"{place} has no {first!r}")


def load_function(target: str) -> Callable:
    """The callable an entry point names; one line saying why when it cannot be had. A module
    whose file changed since this process imported it is imported again (a worker or uwf-tui
    that lives on runs the code on disk, and records that code's hash)."""
    place, _, name = target.rpartition(":")
    try:
        with _LOADING:
            if place.endswith(".py") or os.sep in place:
                module = _module_from_file(os.path.expanduser(place))
            else:
                from importlib import import_module

                module = _fresh(import_module(place))
        value = module
        for part in name.split("."):
            value = getattr(value, part)
    except UwfError:
        raise
    except AttributeError:
        raise UwfError(f"{place} has no {name!r}") from None
    except ModuleNotFoundError as exc:
        raise UwfError(f"cannot import {place}: {exc} (install it, or add its directory to PYTHONPATH)") from None
    except Exception as exc:  # SyntaxError, an error raised while the module ran
        raise UwfError(f"cannot import {place}: {type(exc).__name__}: {exc}") from None
    if not callable(value):
        raise UwfError(f"{target} is a {type(value).__name__}, not a function")
    return value


_LOADING = threading.Lock()  # worker lanes may load the same module at once
_CODE: dict[str, tuple[object, str | None]] = {}  # module name -> (its file's stat when loaded, the file's hash then)


def _fresh(module):
    """The module, imported again if its file changed since it was loaded here."""
    from importlib import reload

    then = _code_of(module)[0]
    if then is not None and then != _stat(getattr(module, "__file__", None)):
        module = reload(module)
        _CODE[module.__name__] = _read_code(getattr(module, "__file__", None))
    return module


def _module_from_file(path: str):
    """A module loaded from a .py file (its name derived from the path); again when the file changed."""
    from importlib.util import module_from_spec, spec_from_file_location

    from ...encoding.ids import xxh64_hash

    if not os.path.isfile(path):
        raise UwfError(f"there is no file {path}")
    key = "uwf_agent_" + xxh64_hash(os.path.abspath(path).encode()).lower()
    loaded = sys.modules.get(key)
    if loaded is not None and _code_of(loaded)[0] == _stat(path):
        return loaded
    spec = spec_from_file_location(key, path)
    module = module_from_spec(spec)
    code = _read_code(path)
    sys.modules[key] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if loaded is not None:
            sys.modules[key] = loaded
        else:
            del sys.modules[key]
        raise
    _CODE[key] = code
    return module


def describe(func: Callable, target: str | None = None) -> PythonFunction:
    """The function with its code's identity: the module's __version__ (of its top-level package)
    and the hash of its source file as it was when the module was loaded here."""
    from ...agent_functions import entry_point

    target = target or entry_point(func)
    module = sys.modules.get(getattr(func, "__module__", None) or "")
    version = source = None
    if module is not None:
        top = sys.modules.get(module.__name__.partition(".")[0])
        version = getattr(top, "__version__", None)
        version = version if isinstance(version, str) else None
        source = _code_of(module)[1]
    return PythonFunction(func, target, version, source)


def _code_of(module) -> tuple[object, str | None]:
    """(stat, hash) of a module's file when this process first saw the module."""
    name = module.__name__
    if name not in _CODE:
        _CODE[name] = _read_code(getattr(module, "__file__", None))
    return _CODE[name]


def _stat(path: str | None) -> object:
    try:
        stat = os.stat(path) if path else None
    except OSError:
        return None
    return None if stat is None else (stat.st_size, stat.st_mtime_ns, stat.st_ino)


def _read_code(path: str | None) -> tuple[object, str | None]:
    from ...encoding.ids import xxh64_hash

    stat = _stat(path)
    if stat is None:
        return None, None
    try:
        with open(path, "rb") as file:
            return stat, xxh64_hash(file.read())
    except OSError:
        return None, None
