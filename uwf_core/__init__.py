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
    "start_thread": "threads",
    "thread_info": "threads",
    "list_threads": "threads",
    "fork_thread": "threads",
    "fork_with_output": "threads",
    "resume_thread": "threads",
    "kill_thread": "threads",
    "perform_step": "step",
    "run_thread": "step",
    "read_thread": "thread_read",
    "thread_timeline": "timeline",
    "build_context": "context",
    "evaluate": "moderator",
    "run_agent": "agent_kit",
    "AgentAnswer": "agent_kit",
    "AgentContext": "agent_kit",
    "load_config": "config",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'uwf_core' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
