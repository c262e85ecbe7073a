"""The functions a Python program registers as agents (`repo.agents`), checked as they are
registered rather than at their step: the signature a type checker would hold them to, what an
isolated one's child process can import again, and a one-word agent that names none of them.
Only the standard library, imported when a check runs: nothing here is on `uwf`'s start-up path."""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Callable


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
