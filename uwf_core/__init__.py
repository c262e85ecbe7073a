"""uwf_core: the reusable engine behind `uwf` and `uwf-tui`.

Names are loaded lazily (PEP 562) so importing the package costs nothing:
`uwf` starts once per step, and its start-up time is the product's hot path.
"""

from __future__ import annotations

from importlib import import_module

from .version import __version__

_EXPORTS = {
    "Root": "store.fs.files",
    "resolve_root": "store.fs.files",
    "CasStore": "store.cas",
    "Node": "store.cas",
    "UwfError": "errors",
    "Workflow": "workflow.model",
    "put_workflow": "workflow.ops",
    "load_workflow": "workflow.ops",
    "list_workflows": "workflow.ops",
    "lint_file": "workflow.ops",
    "start_thread": "thread.ops",
    "thread_info": "thread.ops",
    "list_threads": "thread.ops",
    "fork_thread": "thread.ops",
    "fork_with_output": "thread.ops",
    "resume_thread": "thread.ops",
    "kill_thread": "thread.ops",
    "perform_step": "engine.step",
    "run_thread": "engine.step",
    "read_thread": "thread.read",
    "thread_timeline": "thread.timeline",
    "build_context": "thread.context",
    "evaluate": "thread.moderator",
    "run_agent": "agents.kit",
    "AgentAnswer": "agents.kit",
    "AgentContext": "agents.kit",
    "load_config": "config.model",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'uwf_core' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
