"""The public API documents itself: docs/reference/python-api.md has a mkdocstrings entry for
every name of uwf_core.api (the site renders each from its code), and every name has a docstring
and type annotations to show."""

from __future__ import annotations

import importlib
import inspect
import re
from functools import cached_property
from pathlib import Path

import pytest

import uwf_core.api as api

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "reference" / "python-api.md"


def docstring(value: object) -> str:
    """The object's own docstring: never one inherited from a base class."""
    doc = value.__dict__.get("__doc__") if isinstance(value, type) else getattr(value, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) and doc.strip() else ""


def is_record(cls: type) -> bool:
    return "__record_fields__" in cls.__dict__


def own_members(cls: type) -> dict[str, object]:
    """What the classes of `cls`'s own package in its MRO define (not `object`'s or `Exception`'s)."""
    package = cls.__module__.partition(".")[0]
    members: dict[str, object] = {}
    for base in reversed(cls.__mro__):
        if base.__module__.partition(".")[0] == package:
            members.update(base.__dict__)
    return members


def public_members(cls: type) -> list[tuple[str, object]]:
    """Public methods and properties of `cls`, as (name, descriptor), in definition order."""
    kinds = (staticmethod, classmethod, property, cached_property)
    return [(name, value) for name, value in own_members(cls).items()
            if not name.startswith("_") and (isinstance(value, kinds) or inspect.isfunction(value))]


def member_function(value: object) -> object:
    """The function behind a member as `public_members` lists it (a property's getter)."""
    if isinstance(value, (staticmethod, classmethod)):
        return value.__func__
    if isinstance(value, property):
        return value.fget
    if isinstance(value, cached_property):
        return value.func
    return value


def page_groups(text: str) -> list[tuple[str, list[tuple[str, object]]]]:
    """The page's `## group` headings, each with (the public name, the object) of its `::: path`
    entries: the name is the path's last part under uwf_core.api, or its `heading:` for one
    exported under another name."""
    groups: list[tuple[str, list[tuple[str, object]]]] = []
    for heading, path, options in re.findall(r"^## (.+)$|^::: (\S+)\n((?:    .*\n)*)", text, re.M):
        if heading:
            groups.append((heading, []))
            continue
        renamed = re.search(r"heading: uwf_core\.api\.(\w+)", options)
        module, _, attribute = path.rpartition(".")
        assert renamed or module == "uwf_core.api", f"{path}: an entry outside uwf_core.api needs `heading: uwf_core.api.NAME`"
        groups[-1][1].append((renamed.group(1) if renamed else attribute, getattr(importlib.import_module(module), attribute)))
    return groups


def api_groups() -> list[tuple[str, list[str]]]:
    """api.py's _EXPORTS as written: each `# group` comment line with the names under it."""
    block = Path(api.__file__).read_text().split("_EXPORTS = {\n", 1)[1].split("\n}", 1)[0]
    groups: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.strip().startswith("#"):
            groups.append((line.strip().lstrip("# "), []))
        elif match := re.match(r'\s*"(\w+)":', line):
            groups[-1][1].append(match.group(1))
    return groups


def missing_docstring(value: object) -> bool:
    """A function or class without its own docstring (a class's inherited one does not count)."""
    return (inspect.isfunction(value) or isinstance(value, type)) and not docstring(value)


def missing_annotations(name: str, value: object) -> list[str]:
    """What lacks an annotation in a public function, or in the public methods, properties and
    constructor of a public class: `name(parameter)`, `name -> return`."""
    if inspect.isfunction(value):
        return _unannotated(name, value, first_is_self=False)
    if not isinstance(value, type):
        return []
    found = []
    members = public_members(value)
    init = own_members(value).get("__init__")
    if init is not None and not is_record(value):  # a record's __init__ is built from its fields
        members.append(("__init__", init))
    for member, descriptor in members:
        function = member_function(descriptor)
        returns = member != "__init__"  # __init__ returns None, and says so only by its name
        first_is_self = not isinstance(descriptor, staticmethod)
        found += _unannotated(f"{name}.{member}", function, first_is_self, returns)
    if is_record(value):
        annotations = value.__dict__.get("__annotations__", {})
        found += [f"{name}.{spec.name}" for spec in value.__record_fields__ if spec.name not in annotations]
    return found


def _unannotated(name: str, function: object, first_is_self: bool, returns: bool = True) -> list[str]:
    signature = inspect.signature(function)
    parameters = list(signature.parameters.values())[1 if first_is_self else 0 :]
    found = [f"{name}({p.name})" for p in parameters if p.annotation is p.empty]
    if returns and signature.return_annotation is signature.empty:
        found.append(f"{name} -> return")
    return found


def test_the_reference_page_has_every_public_name_in_its_group():
    """python-api.md's groups and entries are api.py's, in its order; each entry is the object
    uwf_core.api gives under that name."""
    page = page_groups(PAGE.read_text())
    assert [(heading.lower(), [name for name, _ in entries]) for heading, entries in page] == [
        (group.lower(), names) for group, names in api_groups()]
    assert [name for _, entries in page for name, _ in entries] == list(api.__all__)
    for name, value in (entry for _, entries in page for entry in entries):
        assert value is getattr(api, name), f"python-api.md's entry for {name} is another object"


@pytest.mark.parametrize("name", api.__all__)
def test_public_name_has_docstring(name):
    assert not missing_docstring(getattr(api, name)), f"uwf_core.api.{name} has no docstring"


@pytest.mark.parametrize("name", api.__all__)
def test_public_name_is_annotated(name):
    missing = missing_annotations(name, getattr(api, name))
    assert not missing, f"uwf_core.api.{name}: no annotation on {', '.join(missing)}"


# The checks above catch what they claim to: each is tried on a name that lacks it.


def _bare(thing, count=1):
    return thing


class _Bare:
    def __init__(self, value) -> None:
        self.value = value

    def method(self, other: int):
        return other

    @property
    def size(self):
        return 0

    @staticmethod
    def helper(value: int) -> int:
        return value


def test_checks_catch_what_is_missing():
    assert missing_docstring(_bare) and missing_docstring(_Bare)
    assert missing_docstring(type("Child", (ValueError,), {}))  # ValueError's docstring is not its own
    assert missing_annotations("_bare", _bare) == ["_bare(thing)", "_bare(count)", "_bare -> return"]
    assert missing_annotations("_Bare", _Bare) == ["_Bare.method -> return", "_Bare.size -> return", "_Bare.__init__(value)"]
    assert not missing_docstring(api.UwfError) and not missing_annotations("UwfError", api.UwfError)


def test_the_package_gives_its_api_module_and_names():
    """`from uwf_core import api` once ended in a RecursionError (the package's lazy __getattr__
    asked itself for `api`); a fresh interpreter, since this one has the module already."""
    import subprocess
    import sys

    code = "from uwf_core import api, Repo, perform_step; import uwf_core; from uwf_core import engine; print(api.Repo is Repo, 'Repo' in dir(uwf_core))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
