"""The public API documents itself: docs/api.md is what scripts/api_docs.py writes, and every
name it lists has a docstring and type annotations to show."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import pytest

import uwf_core.api as api

REPO = Path(__file__).resolve().parents[1]


def _load_generator():
    spec = importlib.util.spec_from_file_location("api_docs", REPO / "scripts" / "api_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


api_docs = _load_generator()


def missing_docstring(value: object) -> bool:
    """A function or class without its own docstring (a class's inherited one does not count)."""
    return (inspect.isfunction(value) or isinstance(value, type)) and not api_docs.docstring(value)


def missing_annotations(name: str, value: object) -> list[str]:
    """What lacks an annotation in a public function, or in the public methods, properties and
    constructor of a public class: `name(parameter)`, `name -> return`."""
    if inspect.isfunction(value):
        return _unannotated(name, value, first_is_self=False)
    if not isinstance(value, type):
        return []
    found = []
    members = api_docs.public_members(value)
    init = api_docs.own_members(value).get("__init__")
    if init is not None and not api_docs.is_record(value):  # a record's __init__ is built from its fields
        members.append(("__init__", init))
    for member, descriptor in members:
        function = api_docs.member_function(descriptor)
        returns = member != "__init__"  # __init__ returns None, and says so only by its name
        first_is_self = not isinstance(descriptor, staticmethod)
        found += _unannotated(f"{name}.{member}", function, first_is_self, returns)
    if api_docs.is_record(value):
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


def test_api_reference_is_current():
    text = (REPO / "docs" / "api.md").read_text() if (REPO / "docs" / "api.md").exists() else ""
    assert text == api_docs.render(), "docs/api.md is out of date: run `python scripts/api_docs.py`"


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
