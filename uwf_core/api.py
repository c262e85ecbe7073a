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
    "PausedError": "errors",
    "WorkflowError": "errors",  # a workflow put_workflow refused
    "speak_cli": "errors",  # messages in the command line's words (uwf-tui's, a CLI built on the API)
    # workflows
    "Workflow": "workflow.model",
    "Role": "workflow.model",
    "START": "workflow.model",
    "END": "workflow.model",
    "workflow_edges": "workflow.graph_text:edges",
    "put_workflow": "workflow.ops",
    "PutResult": "workflow.ops",
    "RegistryEntry": "store.registry_model",  # a name's current version and its earlier ones
    "lint_workflow": "workflow.ops",
    "WorkflowSpec": "workflow.builder",  # a workflow built in code, for put_workflow
    "RoleSpec": "workflow.builder",
    "Route": "workflow.builder",
    "lint_file": "workflow.ops",
    "lint_text": "workflow.ops",
    "put_workflow_text": "workflow.ops",
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
    "role_step": "thread.ops",
    "remove_thread": "thread.remove",
    "pause_thread": "thread.pause",
    "unpause_thread": "thread.pause",
    "paused_since": "thread.pause",
    "follow_thread": "thread.live",
    "latest_thread": "thread.live",
    "LiveEvent": "thread.live",
    "remove_workflow": "thread.remove",
    "Removed": "thread.remove",
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
    "STATUS_MAPPING": "thread.details",
    "STATUS_ASKING": "thread.details",
    "queue_thread": "engine.queue.worker",
    "Worker": "engine.queue.worker",
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
    "Usage": "llm.usage",  # a step's or a thread's tokens
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
    "step_cost": "thread.spend",
    "thread_cost_text": "thread.ledger_text",
    "tree_cost_text": "thread.ledger_text",
    "budget_status": "thread.budget",
    "ThreadCost": "thread.ledger",
    "TreeCost": "thread.ledger",
    "TreeThread": "thread.ledger",
    "StepCost": "thread.spend",
    "ModelSpend": "thread.spend",
    "Spend": "thread.spend",
    "BudgetStatus": "thread.budget",
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
    "Cancel": "engine.contain.process",
    "perform_step": "engine.step",
    "run_thread": "engine.step",
    "MAP_AGENT": "engine.fanout.map",
    "map_progress": "engine.fanout.map",
    "step_side_by_side": "engine.fanout.side_by_side",
    "pick_step": "engine.fanout.side_by_side",
    "SideBySide": "engine.fanout.side_by_side",
    "Candidate": "engine.fanout.side_by_side",
    "Picked": "engine.fanout.side_by_side",
    "LineageReader": "engine.fanout.lineage",
    "Lineage": "engine.fanout.lineage",
    "dry_run": "engine.dry_run",
    # people across hosts: threads waiting for a person, answered from anywhere
    "inbox": "engine.queue.inbox",
    "InboxItem": "engine.queue.inbox",
    "waiting_item": "engine.queue.inbox",
    "answer_thread": "engine.queue.inbox",
    "frontmatter_template": "engine.prompt",  # the template a person fills in (`uwf thread answer`'s $EDITOR)
    "DryRun": "engine.dry_run",
    "AgentChoice": "engine.dry_run",
    "agent_problem": "engine.dry_run",
    "choose_agent_spec": "engine.resolve",
    "kill_thread": "engine.control",
    "extract_fast": "engine.extraction.extract",
    "ExtractError": "engine.extraction.extract",
    "validation_errors": "store.schemas",
    "fsck": "store.fsck:fsck_root",
    "FsckReport": "store.fsck",
    "field_order": "store.schemas",
    # traces (OpenTelemetry, the otel extra)
    "set_trace_warning_handler": "telemetry.export:set_warning_handler",
    "flush_traces": "telemetry.export:flush_all",
    # config
    "Config": "config.model",
    "Price": "config.model",  # a model's price per million tokens (config.yaml's prices)
    "SetupRequest": "config.setup",
    "apply_setup": "config.setup",
    # agents a user manages
    "AgentEntry": "config.agents",
    "agent_entries": "config.agents",
    "AgentCheck": "engine.check",
    "check_agent": "engine.check",
    # writing agents: Python functions (the python protocol), and step-protocol programs (the kit)
    "PythonContext": "engine.python.context",
    "PythonAnswer": "engine.python.context",
    "WrittenStep": "engine.python.context",
    "Correction": "engine.python.context",  # ctx.correction: why the last answer was refused
    "StepView": "engine.python.context",  # an earlier step as a function sees it (ctx.steps, ctx.last)
    "AgentFunction": "engine.python.agent_types",  # what register takes: (PythonContext) -> AgentOutput (or awaits it)
    "AgentOutput": "engine.python.agent_types",
    "AgentFunctions": "repo",  # the type of repo.agents, where a program registers functions as agents
    "run_agent": "agents.kit",
    "AgentAnswer": "agents.kit",
    "AgentContext": "agents.kit",
    "load_agent_context": "agents.kit",
    "complete_step": "agents.kit",
}

__all__ = list(_EXPORTS)

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:  # what type checkers and IDEs see: every name, typed and re-exported (at run time each loads lazily)
    from .agents.kit import (
        run_agent as run_agent,
        AgentAnswer as AgentAnswer,
        AgentContext as AgentContext,
        load_agent_context as load_agent_context,
        complete_step as complete_step,
    )
    from .config.agents import AgentEntry as AgentEntry, agent_entries as agent_entries
    from .config.model import Config as Config, Price as Price
    from .config.setup import SetupRequest as SetupRequest, apply_setup as apply_setup
    from .encoding.ids import ulid_timestamp_ms as ulid_timestamp_ms
    from .engine.attempt import (
        StepOptions as StepOptions,
        Committed as Committed,
        StepResult as StepResult,
        StepError as StepError,
        HumanRequest as HumanRequest,
    )
    from .engine.check import AgentCheck as AgentCheck, check_agent as check_agent
    from .engine.control import kill_thread as kill_thread
    from .engine.queue.inbox import (
        inbox as inbox,
        InboxItem as InboxItem,
        waiting_item as waiting_item,
        answer_thread as answer_thread,
    )
    from .engine.prompt import frontmatter_template as frontmatter_template
    from .engine.dry_run import (
        dry_run as dry_run,
        DryRun as DryRun,
        AgentChoice as AgentChoice,
        agent_problem as agent_problem,
    )
    from .engine.extraction.extract import extract_fast as extract_fast, ExtractError as ExtractError
    from .engine.contain.process import Cancel as Cancel
    from .telemetry.export import flush_all as _flush_all, set_warning_handler as _set_warning_handler
    from .engine.python.context import (
        PythonContext as PythonContext,
        PythonAnswer as PythonAnswer,
        WrittenStep as WrittenStep,
        Correction as Correction,
        StepView as StepView,
    )
    from .engine.python.agent_types import AgentFunction as AgentFunction, AgentOutput as AgentOutput
    from .engine.resolve import choose_agent_spec as choose_agent_spec
    from .engine.fanout.map import MAP_AGENT as MAP_AGENT, map_progress as map_progress
    from .engine.fanout.lineage import LineageReader as LineageReader, Lineage as Lineage
    from .engine.fanout.side_by_side import (
        step_side_by_side as step_side_by_side,
        pick_step as pick_step,
        SideBySide as SideBySide,
        Candidate as Candidate,
        Picked as Picked,
    )
    from .engine.step import perform_step as perform_step, run_thread as run_thread
    from .engine.queue.worker import queue_thread as queue_thread, Worker as Worker
    from .errors import (
        UwfError as UwfError,
        NotFoundError as NotFoundError,
        PausedError as PausedError,
        WorkflowError as WorkflowError,
        speak_cli as speak_cli,
    )
    from .repo import Repo as Repo, AgentFunctions as AgentFunctions
    from .store.copy import copy_root as copy_root
    from .store.fsck import FsckReport as FsckReport
    from .store.fsck import fsck_root as _fsck_root
    from .store.location import display_location as display_location, not_a_directory as not_a_directory
    from .store.records import RunningStep as RunningStep
    from .store.registry_model import RegistryEntry as RegistryEntry
    from .llm.usage import Usage as Usage
    from .store.schemas import validation_errors as validation_errors, field_order as field_order
    from .thread.bundle import (
        export_bundle as export_bundle,
        import_bundle as import_bundle,
        ExportReport as ExportReport,
        ImportReport as ImportReport,
    )
    from .thread.context import context_of as context_of
    from .thread.details import (
        StepDetails as StepDetails,
        step_details as step_details,
        step_counts as step_counts,
        thread_statuses as thread_statuses,
        ordered_output as ordered_output,
        role_schema as role_schema,
        STATUS_RUNNING as STATUS_RUNNING,
        STATUS_WAITING as STATUS_WAITING,
        STATUS_FAILED as STATUS_FAILED,
        STATUS_CANCELLED as STATUS_CANCELLED,
        STATUS_DAMAGED as STATUS_DAMAGED,
        STATUS_QUEUED as STATUS_QUEUED,
        STATUS_MAPPING as STATUS_MAPPING,
        STATUS_ASKING as STATUS_ASKING,
    )
    from .thread.diff import (
        diff_threads as diff_threads,
        ThreadDiff as ThreadDiff,
        StepPair as StepPair,
        DiffStep as DiffStep,
        DiffSide as DiffSide,
        Change as Change,
        Routing as Routing,
        structural_diff as structural_diff,
    )
    from .thread.files import step_files_text as step_files_text, step_changes as step_changes, files_of as files_of
    from .thread.ledger import (
        thread_cost as thread_cost,
        tree_cost as tree_cost,
        ThreadCost as ThreadCost,
        TreeCost as TreeCost,
        TreeThread as TreeThread,
    )
    from .thread.spend import (
        step_cost as step_cost,
        StepCost as StepCost,
        ModelSpend as ModelSpend,
        Spend as Spend,
    )
    from .thread.budget import (
        budget_status as budget_status,
        BudgetStatus as BudgetStatus,
    )
    from .thread.ledger_text import thread_cost_text as thread_cost_text, tree_cost_text as tree_cost_text
    from .thread.model import (
        ThreadContext as ThreadContext,
        StepContext as StepContext,
        is_check_role as is_check_role,
        check_line as check_line,
        step_numbers as step_numbers,
    )
    from .thread.moderator import evaluate as evaluate, Decision as Decision
    from .thread.ops import (
        ThreadInfo as ThreadInfo,
        start_thread as start_thread,
        thread_info as thread_info,
        list_threads as list_threads,
        damaged_entries as damaged_entries,
        thread_steps as thread_steps,
        fork_thread as fork_thread,
        fork_with_output as fork_with_output,
        role_step as role_step,
        resume_thread as resume_thread,
        resolve_thread_id as resolve_thread_id,
    )
    from .thread.live import LiveEvent as LiveEvent, follow_thread as follow_thread, latest_thread as latest_thread
    from .thread.pause import pause_thread as pause_thread, paused_since as paused_since, unpause_thread as unpause_thread
    from .thread.read import read_thread as read_thread, step_body as step_body
    from .thread.remove import Removed as Removed, remove_thread as remove_thread, remove_workflow as remove_workflow
    from .thread.timeline import (
        Timeline as Timeline,
        Branch as Branch,
        thread_timeline as thread_timeline,
        find_branches as find_branches,
    )
    from .thread.usage import step_usage as step_usage, thread_usage as thread_usage
    from .workflow.graph_text import edges as _workflow_edges

    fsck = _fsck_root  # under another name than its module's: an assignment, which strict checkers take as exported
    workflow_edges = _workflow_edges
    flush_traces = _flush_all
    set_trace_warning_handler = _set_warning_handler
    from .workflow.model import Workflow as Workflow, Role as Role, START as START, END as END
    from .workflow.builder import WorkflowSpec as WorkflowSpec, RoleSpec as RoleSpec, Route as Route
    from .workflow.ops import (
        put_workflow as put_workflow,
        PutResult as PutResult,
        lint_workflow as lint_workflow,
        lint_file as lint_file,
        lint_text as lint_text,
        put_workflow_text as put_workflow_text,
        list_workflows as list_workflows,
        load_workflow as load_workflow,
        workflow_of as workflow_of,
        workflow_source as workflow_source,
        workflow_history as workflow_history,
        rollback_workflow as rollback_workflow,
    )


def __getattr__(name: str) -> object:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'uwf_core.api' has no attribute {name!r}")
    module, _, attribute = target.partition(":")
    value = getattr(import_module(f"uwf_core.{module}"), attribute or name)
    globals()[name] = value
    return value
