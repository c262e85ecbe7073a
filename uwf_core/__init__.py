"""uwf_core: the reusable engine behind `uwf` and `uwf-tui`.

Names are loaded lazily (PEP 562) so importing the package costs nothing:
`uwf` starts once per step, and its start-up time is the product's hot path.
"""

from __future__ import annotations

from importlib import import_module

from .version import __version__

_EXPORTS = {
    "Root": "storage",
    "resolve_root": "storage",
    "CasStore": "cas",
    "Node": "cas",
    "UwfError": "errors",
    "Workflow": "workflow_model",
    "put_workflow": "workflows",
    "load_workflow": "workflows",
    "list_workflows": "workflows",
    "lint_file": "workflows",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'uwf_core' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
