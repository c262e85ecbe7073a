"""uwf_core: the reusable engine behind `uwf` and `uwf-tui`.

The public names are those of `uwf_core.api`, re-exported here lazily (PEP 562)
so importing the package costs nothing: `uwf` starts once per step, and its
start-up time is the product's hot path. See docs/explanation/architecture.md for the layers.
"""

from __future__ import annotations

from .version import __version__  # noqa: F401  (the one eager name)


def __getattr__(name: str):
    # `from uwf_core import api` asks the package for `api` before importing the submodule:
    # answered by importing it, not by `from . import api`, which would ask this function again.
    from importlib import import_module

    api = import_module("uwf_core.api")
    if name == "api":
        return api
    try:
        value = getattr(api, name)
    except AttributeError:
        raise AttributeError(f"module 'uwf_core' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    from importlib import import_module

    api = import_module("uwf_core.api")
    return ["__version__", *api.__all__]
