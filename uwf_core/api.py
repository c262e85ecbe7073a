"""The public API: what uwf-tui, the agent kit's users and anyone's Python code import.

Every CLI command is a thin layer over one of these. Names load lazily
(PEP 562): `from uwf_core.api import perform_step` imports the step engine
and nothing else, so a script pays only for what it uses. Everything not
listed here is internal and may move.
"""

from __future__ import annotations

from importlib import import_module

_EXPORTS = {
    # an opened root and errors
    "Repo": "repo",
    "display_location": "store.location",
    "not_a_directory": "store.location",
    "UwfError": "errors",
    "NotFoundError": "errors",
    # workflows
    "Workflow": "workflow.model",
    "Role": "workflow.model",
    "START": "workflow.model",
    "END": "workflow.model",
    "workflow_edges": "workflow.graph_text:edges",
    "put_workflow": "workflow.ops",
    "lint_file": "workflow.ops",
    "list_workflows": "workflow.ops",
    "load_workflow": "workflow.ops",
    "workflow_of": "workflow.ops",
    "workflow_source": "workflow.ops",
    "workflow_history": "workflow.ops",
    "rollback_workflow": "workflow.ops",
    # threads as data
    "ThreadInfo": "thread.ops",
    "start_thread": "thread.ops",
    "thread_info": "thread.ops",
    "list_threads": "thread.ops",
    "damaged_entries": "thread.ops",  # lines of threads.yaml / history.jsonl that cannot be read
    "thread_steps": "thread.ops",
    "fork_thread": "thread.ops",
    "fork_with_output": "thread.ops",
    "resume_thread": "thread.ops",
    "resolve_thread_id": "thread.ops",
    "ulid_timestamp_ms": "encoding.ids",  # when a thread was created (its id is a ULID)
    "context_of": "thread.context",
    "ThreadContext": "thread.model",
    "StepContext": "thread.model",
    "is_check_role": "thread.model",
    "check_line": "thread.model",
    "step_numbers": "thread.model",
    "evaluate": "thread.moderator",
    "StepDetails": "thread.details",
    "step_details": "thread.details",
    "step_counts": "thread.details",
    "thread_statuses": "thread.details",
    "ordered_output": "thread.details",
    "role_schema": "thread.details",
    "STATUS_RUNNING": "thread.details",
    "STATUS_WAITING": "thread.details",
    "STATUS_FAILED": "thread.details",
    "STATUS_CANCELLED": "thread.details",
    "STATUS_DAMAGED": "thread.details",
    "STATUS_QUEUED": "thread.details",
    "queue_thread": "engine.worker",
    "Worker": "engine.worker",
    "copy_root": "store.copy",
    "Timeline": "thread.timeline",
    "Branch": "thread.timeline",
    "thread_timeline": "thread.timeline",
    "find_branches": "thread.timeline",
    "RunningStep": "store.records",
    "read_thread": "thread.read",
    "step_body": "thread.read",
    "step_usage": "thread.usage",
    "thread_usage": "thread.usage",
    "Decision": "thread.moderator",
    # forks: diff, cost ledger and budgets, bundles
    "diff_threads": "thread.diff",
    "step_files_text": "thread.files",
    "step_changes": "thread.files",
    "files_of": "thread.files",
    "ThreadDiff": "thread.diff",
    "StepPair": "thread.diff",
    "DiffStep": "thread.diff",
    "DiffSide": "thread.diff",
    "Change": "thread.diff",
    "Routing": "thread.diff",
    "structural_diff": "thread.diff",
    "thread_cost": "thread.ledger",
    "tree_cost": "thread.ledger",
    "step_cost": "thread.ledger",
    "thread_cost_text": "thread.ledger_text",
    "tree_cost_text": "thread.ledger_text",
    "budget_status": "thread.ledger",
    "ThreadCost": "thread.ledger",
    "TreeCost": "thread.ledger",
    "TreeThread": "thread.ledger",
    "StepCost": "thread.ledger",
    "ModelSpend": "thread.ledger",
    "Spend": "thread.ledger",
    "BudgetStatus": "thread.ledger",
    "export_bundle": "thread.bundle",
    "import_bundle": "thread.bundle",
    "ExportReport": "thread.bundle",
    "ImportReport": "thread.bundle",
    # stepping
    "StepOptions": "engine.attempt",
    "Committed": "engine.attempt",
    "StepResult": "engine.attempt",
    "StepError": "engine.attempt",
    "HumanRequest": "engine.attempt",
    "Cancel": "engine.process",
    "perform_step": "engine.step",
    "run_thread": "engine.step",
    "dry_run": "engine.dry_run",
    "DryRun": "engine.dry_run",
    "AgentChoice": "engine.dry_run",
    "agent_problem": "engine.dry_run",
    "choose_agent_spec": "engine.resolve",
    "kill_thread": "engine.control",
    "extract_fast": "engine.extract",
    "ExtractError": "engine.extract",
    "validation_errors": "store.schemas",
    "fsck": "store.fsck:fsck_root",
    "FsckReport": "store.fsck",
    "field_order": "store.schemas",
    # config
    "Config": "config.model",
    "SetupRequest": "config.setup",
    "apply_setup": "config.setup",
    # agents a user manages
    "AgentEntry": "config.agents",
    "agent_entries": "config.agents",
    "AgentCheck": "engine.check",
    "check_agent": "engine.check",
    # writing agents: Python functions (the python protocol), and step-protocol programs (the kit)
    "PythonContext": "engine.python_context",
    "PythonAnswer": "engine.python_context",
    "WrittenStep": "engine.python_context",
    "AgentFunctions": "repo",  # repo.agents: register a function as an agent for a session
    "run_agent": "agents.kit",
    "AgentAnswer": "agents.kit",
    "AgentContext": "agents.kit",
    "load_agent_context": "agents.kit",
    "complete_step": "agents.kit",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'uwf_core.api' has no attribute {name!r}")
    module, _, attribute = target.partition(":")
    value = getattr(import_module(f"uwf_core.{module}"), attribute or name)
    globals()[name] = value
    return value
