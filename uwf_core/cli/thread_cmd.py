"""`uwf thread start | step | run | dry-run | show | list | steps | read | fork | resume | kill | pause | unpause | step-details | runs | cost`
(`live`: live_cmd.py; `files`, `checkout`, `export-git`: files_cmd.py; `step --agents`, `pick`: pick_cmd.py)."""

from __future__ import annotations

import sys

from .common import (
    command,
    group,
    positive_int,
    positive_number,
    positive_number_any,
    repo_of,
)
from .output import emit_json, emit_text, note
from .pick_cmd import register_step_options as register_side_by_side


def register(groups, common) -> None:
    sub = group(groups, common, "thread", "start, step and inspect threads")
    start = command(sub, common, "start", cmd_start, "start a thread (no step is run); prints {workflow, thread}")
    start.add_argument("workflow", help="registry name or hash")
    start.add_argument("-p", "--prompt", required=True, help="the task (use - to read it from stdin)")
    start.add_argument("-w", "--workspace", metavar="DIR", help="the agents' working directory")
    start.add_argument(
        "--agent", action="append", default=[], metavar="ROLE=AGENT", help="bind a role to an agent for this thread (repeatable)"
    )
    start.add_argument("--no-snapshot", action="store_true", help="keep no snapshots of the workspace's files (a huge tree)")
    start.add_argument("--max-tokens", type=positive_int, metavar="N", help="budget: no new step once the thread's steps used N tokens")
    start.add_argument("--max-cost", type=positive_number_any, metavar="X", help="budget: no new step once they cost X (prices in config.yaml)")
    step = command(sub, common, "step", cmd_step, "run one moderator → agent → verify cycle")
    _agent_options(step)
    register_side_by_side(step)
    run = command(sub, common, "run", cmd_run, "step until done, a failure, or --max N steps")
    _agent_options(run)
    run.add_argument("--max", "--max-steps", type=positive_int, metavar="N", help="stop after N steps")
    run.add_argument("--detach", action="store_true", help="queue the thread for `uwf worker` processes and return at once")
    dry = command(sub, common, "dry-run", cmd_dry_run, "what the next step would do (role and why, agent and why, the prompt); writes nothing")
    dry.add_argument("thread")
    dry.add_argument("--role", metavar="ROLE", help="preview this role's step instead of the moderator's choice")
    dry.add_argument("--agent", metavar="CMD", help="as `thread step --agent`")
    dry.add_argument("--reuse", action="store_true", help="as `thread step --reuse`: say whether an earlier output would be reused")
    dry.add_argument("--prompt-only", action="store_true", help="print only the prompt, as the agent would get it")
    cost = command(sub, common, "cost", cmd_cost, "tokens and cost per step, agent, model and role; --tree adds the threads forked from it")
    cost.add_argument("thread")
    cost.add_argument("--tree", action="store_true", help="the fork subtree: this thread and the threads forked from it, each step once")
    cost.add_argument("--json", action="store_true", help="JSON instead of text")
    show = command(sub, common, "show", cmd_show, "{workflow, thread, head, done}")
    show.add_argument("thread")
    listing = command(sub, common, "list", cmd_list, "active threads, newest first")
    listing.add_argument("--all", action="store_true", help="include archived threads (with their reason)")
    steps = command(sub, common, "steps", cmd_steps, "a thread's steps, oldest first, outputs expanded")
    steps.add_argument("thread")
    read = command(sub, common, "read", cmd_read, "the whole thread as markdown")
    read.add_argument("thread")
    read.add_argument("--quota", type=positive_int, metavar="N", help="at most N characters (the newest steps are kept)")
    read.add_argument("--before", metavar="HASH", help="only the steps before this step")
    fork = command(sub, common, "fork", cmd_fork, "a new thread whose head is an existing step")
    fork.add_argument("step", help="a StepNode (or StartNode) hash or prefix; with --from-role, a thread")
    fork.add_argument("--from-role", metavar="ROLE", help="fork from the thread's last step of this role")
    fork.add_argument("--nth", type=positive_int, metavar="K", help="with --from-role: its Kth step of that role (1 the first)")
    fork.add_argument(
        "--edit-output",
        metavar="FILE",
        help="fork from a copy of the step with this output (JSON or YAML mapping, - for stdin), recorded as agent 'human'",
    )
    fork.add_argument(
        "-w", "--workspace", metavar="DIR", help="the fork's own directory (default: a new one in the root's workspaces directory)"
    )
    resume = command(sub, common, "resume", cmd_resume, "continue an archived thread with a new prompt")
    resume.add_argument("thread")
    resume.add_argument("-p", "--prompt", required=True, help="the new task (use - to read it from stdin)")
    kill = command(sub, common, "kill", cmd_kill, "archive a thread as killed and stop its running agent")
    kill.add_argument("thread")
    pause = command(sub, common, "pause", cmd_pause, "let the step in flight finish and start none after it (run, workers, the TUI) until unpause")
    pause.add_argument("thread", help="a thread id or a unique prefix")
    unpause = command(sub, common, "unpause", cmd_unpause, "let a paused thread go on (a queued one: the workers take it up again)")
    unpause.add_argument("thread", help="a thread id or a unique prefix")
    rm = command(sub, common, "rm", cmd_rm, "remove a thread from the root's index and archive (its nodes are gc's)")
    rm.add_argument("thread")
    details = command(sub, common, "step-details", cmd_step_details, "a step's output, detail, answer and prompt")
    details.add_argument("step")
    runs = command(sub, common, "runs", cmd_runs, "a thread's step attempts from runs.jsonl (ok, failed, timeout, killed)")
    runs.add_argument("thread")
    from .files_cmd import register as register_files
    from .inbox_cmd import register_answer
    from .live_cmd import register as register_live
    from .pick_cmd import register as register_pick

    register_live(sub, common)
    register_files(sub, common)
    register_pick(sub, common)
    register_answer(sub, common)


def _agent_options(parser) -> None:
    parser.add_argument("thread")
    parser.add_argument("--agent", metavar="CMD", help="agent alias or command line for this step (step protocol)")
    parser.add_argument("--timeout", type=positive_number, metavar="S", help="the whole step's time limit in seconds (agent, extraction, corrections)")
    parser.add_argument(
        "--reuse", action="store_true", help="memoized replay: reuse the output of an earlier step with the same role, agent and prompt"
    )


def _prompt(text: str) -> str:
    return sys.stdin.read() if text == "-" else text


def _stream_line(line: str) -> None:
    from .output import stream

    stream(line)


def cmd_start(args) -> int:
    from ..engine.resolve import parse_assignments
    from ..thread.ops import start_thread

    bindings = parse_assignments(args.agent)
    info = start_thread(
        repo_of(args),
        args.workflow,
        _prompt(args.prompt),
        args.workspace,
        bindings or None,
        max_tokens=args.max_tokens,
        max_cost=args.max_cost,
        snapshot=not args.no_snapshot,
        say=_stream_line,
    )
    emit_json({"workflow": info.workflow, "thread": info.thread, "head": info.head})
    return 0


def _step_options(args, repo):
    from functools import partial

    from ..engine.attempt import StepOptions
    from .human_editor import editor_answer

    # no terminal: a person's role is recorded as asking (`uwf inbox`), not failed
    human = partial(editor_answer, scratch_dir=repo.backend.scratch_dir) if sys.stdin.isatty() else None
    return StepOptions(agent=args.agent, timeout=args.timeout, on_output=_stream_line, human=human, reuse=args.reuse)


def cmd_step(args) -> int:
    from ..engine.step import perform_step
    from ..telemetry.settings import hand_off_at_exit

    hand_off_at_exit()  # one step and the process ends: traced spans go to a shipper at exit
    repo = repo_of(args)
    if args.pick and not args.agents:
        from ..errors import UsageError

        raise UsageError("--pick chooses among the agents of --agents: give them (e.g. --agents claude,codex --pick first)")
    if args.agents:
        from .pick_cmd import cmd_step_agents

        return cmd_step_agents(args, repo, _step_options(args, repo))
    result = perform_step(repo, args.thread, _step_options(args, repo))
    emit_json(result.to_json())
    return _killed(result)


def _killed(result) -> int:
    """Return code 1 when the supervisor ended the thread (the seeds' returnCode), with its reason;
    or when what comes after the step cannot be decided (the step itself stands)."""
    from .output import error, note

    if result.next_error:
        return error(f"the step is recorded (head {result.head}), but what comes next cannot be decided: {result.next_error}")
    if not result.killed_by:
        return 0
    note(f"thread {result.thread} {result.killed_by}")
    return 1


def cmd_run(args) -> int:
    from ..encoding.records import replace
    from ..engine.step import run_thread
    from ..errors import UwfError

    if args.max is not None and args.max < 1:
        raise UwfError("--max must be at least 1")
    if args.detach:
        return _detach(args)

    def landed(node) -> None:  # each node as the head moves to it: a step, then any check after it
        note(f"{node.role} ({node.agent}) -> {node.head}" + (f"  {node.note}" if node.note else ""))

    def progress(result) -> None:
        if not result.role:
            note(f"thread finished ({result.reason})")

    repo = repo_of(args)
    options = replace(_step_options(args, repo), on_commit=landed)
    result = run_thread(repo, args.thread, options, max_steps=args.max, on_step=progress)
    if result.paused:
        note(f"thread {result.thread} was paused: it stops here; `uwf thread unpause {result.thread}` lets it go on")
    emit_json(result.to_json())
    return _killed(result)


def _detach(args) -> int:
    from ..engine.queue.worker import queue_thread
    from ..errors import UsageError
    from ..thread.ops import resolve_thread_id

    if args.agent or args.timeout or args.max or args.reuse:
        raise UsageError("--detach queues the thread as it is: --agent, --timeout, --max and --reuse apply to a run here (set them in config.yaml for workers)")
    repo = repo_of(args)
    thread = resolve_thread_id(repo, args.thread)
    queued = queue_thread(repo, thread)
    emit_json({"thread": thread, "queued": True})
    if not queued:
        note(f"thread {thread} was already queued")
    if thread in repo.threads.paused():
        note(f"thread {thread} is paused: workers pass it over until `uwf thread unpause {thread}`")
    return 0


def cmd_pause(args) -> int:
    from ..thread.pause import pause_thread

    repo = repo_of(args)
    thread, now = pause_thread(repo, args.thread)
    running = repo.locks.running(thread)
    emit_json({"thread": thread, "paused": True})
    if not now:
        note(f"thread {thread} was already paused")
    elif running is not None:
        note(f"thread {thread} is paused: its step in flight ({running.role or 'starting'}) finishes, none starts after it")
    return 0


def cmd_unpause(args) -> int:
    from ..thread.pause import unpause_thread

    repo = repo_of(args)
    thread = unpause_thread(repo, args.thread)
    emit_json({"thread": thread, "paused": False})
    if any(entry.thread == thread for entry in repo.backend.queue.entries()):
        note(f"thread {thread} is queued: a worker takes it up again")
    return 0


def cmd_show(args) -> int:
    from ..thread.reports import thread_report

    emit_json(thread_report(repo_of(args), args.thread))
    return 0


def cmd_list(args) -> int:
    from ..thread.ops import damaged_entries
    from ..thread.reports import threads_report
    from .output import warn

    repo = repo_of(args)
    for entry in damaged_entries(repo):
        warn(entry.message)
    emit_json(threads_report(repo, include_archived=args.all))
    return 0


def cmd_steps(args) -> int:
    from ..thread.reports import steps_report

    emit_json(steps_report(repo_of(args), args.thread))
    return 0


def cmd_read(args) -> int:
    from ..thread.read import read_thread

    emit_text(read_thread(repo_of(args), args.thread, quota=args.quota, before=args.before))
    return 0


def cmd_fork(args) -> int:
    from ..thread.ops import fork_thread, fork_with_output, role_step

    repo = repo_of(args)
    if args.nth is not None and not args.from_role:
        from ..errors import UsageError

        raise UsageError("--nth counts the steps of the role --from-role names: give it (e.g. --from-role reviewer --nth 2)")
    if args.from_role:
        args.step = role_step(repo, args.step, args.from_role, args.nth)
    if args.edit_output:
        info = fork_with_output(repo, args.step, _read_mapping(args.edit_output), args.workspace, say=_stream_line)
    else:
        info = fork_thread(repo, args.step, args.workspace, say=_stream_line)
    from ..thread.reports import fork_report

    emit_json(fork_report(repo, info))
    return 0


def _read_mapping(path: str) -> dict:
    """A JSON or YAML mapping from a file (or stdin), for --edit-output."""
    import json

    from ..encoding.limits import check_json_text, check_yaml_text
    from ..errors import UwfError
    from ..store.files import read_text

    text = sys.stdin.read() if path == "-" else read_text(path)
    if text is None:
        raise UwfError(f"cannot read {path}: no such file")
    try:
        check_json_text(text, path)
        data = json.loads(text)
    except ValueError:
        import yaml

        check_yaml_text(text, path)
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise UwfError(f"{path} is neither JSON nor YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict):
        raise UwfError(f"{path} must hold a mapping of the role's output fields")
    return data


def cmd_resume(args) -> int:
    from ..thread.ops import resume_thread

    info = resume_thread(repo_of(args), args.thread, _prompt(args.prompt), say=_stream_line)
    emit_json({"workflow": info.workflow, "thread": info.thread, "head": info.head})
    return 0


def cmd_kill(args) -> int:
    from ..engine.control import kill_thread

    emit_json(kill_thread(repo_of(args), args.thread).to_json())
    return 0


def cmd_rm(args) -> int:
    from ..thread.remove import remove_thread

    removed = remove_thread(repo_of(args), args.thread)
    note(f"thread {removed.name} removed" + (f", and its directory {removed.workspace}" if removed.workspace else "")
         + f"; `uwf cas gc` will free {removed.frees} node{'s' if removed.frees != 1 else ''} nothing else reaches")
    emit_json(removed.to_json())
    return 0


def cmd_step_details(args) -> int:
    from ..thread.details import step_details

    emit_json(step_details(repo_of(args), args.step).to_json())
    return 0


def cmd_runs(args) -> int:
    from ..thread.ops import resolve_thread_id
    from .output import warn

    repo = repo_of(args)
    thread = resolve_thread_id(repo, args.thread)
    emit_json([record.to_dict() for record in repo.runs.read(thread)])
    for entry in repo.runs.damaged():
        if thread in entry.text:  # one of this thread's attempts, or a line glued to one
            warn(entry.message)
    return 0


def cmd_dry_run(args) -> int:
    from ..engine.dry_run import dry_run

    preview = dry_run(repo_of(args), args.thread, role=args.role, agent=args.agent, reuse=args.reuse)
    if args.prompt_only:
        from ..errors import UwfError

        if preview.outcome == "map":
            raise UwfError(f"thread {preview.thread}'s next step, '{preview.role}', is a map: it starts child threads, no agent gets a prompt")
        if preview.prompt is None:
            raise UwfError(f"thread {preview.thread} would take no step ({preview.end_reason}): there is no prompt")
        sys.stdout.write(preview.prompt)
        return 0
    emit_json(preview.to_json())
    return 0


def cmd_cost(args) -> int:
    from ..thread.ledger import thread_cost, tree_cost
    from ..thread.ledger_text import thread_cost_text, tree_cost_text

    repo = repo_of(args)
    ledger = tree_cost(repo, args.thread) if args.tree else thread_cost(repo, args.thread)
    if args.json:
        emit_json(ledger.to_json())
    else:
        emit_text(tree_cost_text(ledger) if args.tree else thread_cost_text(ledger))
    return 0
