"""What the workbench's keys do besides stepping: fork, edit-and-fork, kill, new thread, go to a
hash, test an agent, answer a human role, diff two steps, preview a thread's next step. Each asks
through a dialog (or opens a view) where it must, calls one uwf_core function and says what
happened; the app binds the keys and calls these."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Callable

from uwf_core.api import UwfError

from . import moves, workers
from .runner import resolve
from .screens.modals import (
    ChoiceScreen,
    ConfirmScreen,
    EditorScreen,
    GoToHashScreen,
    NewThreadScreen,
    TWICE,
)

if TYPE_CHECKING:
    from typing import Any, Protocol

    from textual.screen import Screen

    from uwf_core.api import InboxItem, Repo

    from .messages import AgentChecked, HumanAnswerRequested, InboxAnswered
    from .widgets.threads_view import ThreadsView

    class Workbench(Protocol):
        """What these commands need of the app (app.py), named here so that this module does not
        import the app that imports it."""

        repo: Repo

        @property
        def threads_view(self) -> ThreadsView: ...

        def notify(self, message: str, *, title: str = "", severity: Any = "information", timeout: float | None = None, markup: bool = False) -> None: ...

        def poll_state(self) -> None: ...

        def push_screen(self, screen: Screen, callback: Any = None, wait_for_dismiss: bool = False) -> Any: ...


class Commands:
    def __init__(self, app: Workbench) -> None:
        self.app = app
        self.new_thread_draft = None  # a NewThreadDraft: what the dialog held when closed without starting

    def core_call(self, call: Callable, *args):
        """Run a quick uwf_core call on the UI thread; a user-facing error becomes a notification."""
        try:
            return call(self.app.repo, *args)
        except UwfError as exc:
            self.app.notify(exc.message, severity="error")
            return None

    def fork(self, step: str | None) -> None:
        from uwf_core.api import fork_thread

        info = self.core_call(fork_thread, step) if step else None
        if info is not None:
            self.app.notify(f"forked thread {info.thread} at {step}")
            self.app.threads_view.show_new_thread(info.thread)

    def pick(self, thread: str | None, candidate: tuple[str, str] | None) -> None:
        """P on a candidate's fork row: the thread moves to the fork's step (`uwf thread pick`)."""
        from uwf_core.api import pick_step

        if thread is None or candidate is None:
            return
        fork, head = candidate

        def confirmed(yes: bool | None) -> None:
            picked = self.core_call(pick_step, head, thread) if yes else None
            if picked is not None:
                others = f"; {len(picked.not_picked)} other candidate{'s' if len(picked.not_picked) != 1 else ''} archived" if picked.not_picked else ""
                self.app.notify(f"thread {thread[:10]} moved to {head}, the step of fork {fork[:10]}{others}")
                self.app.threads_view.show_new_thread(thread)

        question = (f"Move thread {thread[:10]} to {head}, the step of fork {fork[:10]}? The fork is archived as picked, "
                    "and the thread's other candidates still at their step as not picked.")
        self.app.push_screen(ConfirmScreen(question, yes="Pick"), confirmed)

    def edit(self, step: str | None) -> None:
        """Edit a step's output in YAML; saving forks a thread whose head is the edited step."""
        import yaml

        from uwf_core.api import fork_with_output, step_details, validation_errors

        if not step:
            self.app.notify("select a step to edit its output", severity="warning")
            return
        details = self.core_call(step_details, step)
        if details is None:
            return

        def validate(text: str) -> str | None:
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                return f"not valid YAML: {getattr(exc, 'problem', exc)}"
            if not isinstance(data, dict):
                return "the output must be a mapping of fields"
            if data == details.output:
                return "the output is unchanged: edit it, or esc (f forks the step as it is)"
            errors = validation_errors(details.schema, data) if details.schema is not None else []
            return f"does not match the {details.role} schema: {errors[0]}" if errors else None

        def saved(text: str | None) -> None:
            info = self.core_call(fork_with_output, step, yaml.safe_load(text)) if text is not None else None
            if info is not None:
                self.app.notify(f"forked thread {info.thread} from an edited {details.role} step (agent: human)")
                self.app.threads_view.show_new_thread(info.thread)

        text = yaml.safe_dump(details.output, sort_keys=False, allow_unicode=True)  # already in the schema's order
        self.app.push_screen(EditorScreen(f"Edit the {details.role} output of step {step}; saving forks a new thread", text, validate), saved)

    def diff(self, a: str, a_label: str, b: str, b_label: str):
        """Open the diff view of `a` and `b` (steps, starts or threads); returns the screen's mount,
        for the key's handler to await, so the keys typed after it act in the view."""
        from .screens.diff import DiffScreen

        return self.app.push_screen(DiffScreen(self.app.repo, a, b, a_label, b_label))

    def preview(self, thread: str, label: str):
        """Open the preview of the thread's next step (a dry run: nothing runs, nothing is written)."""
        from .screens.preview import PreviewScreen

        return self.app.push_screen(PreviewScreen(self.app.repo, thread, label))

    def queue(self, thread: str | None) -> None:
        """Queue the thread for `uwf worker` processes (on this host or any other on the same root)."""
        from uwf_core.api import queue_thread

        if thread and self.core_call(queue_thread, thread) is not None:
            self.app.notify(f"queued {thread[:10]}: a `uwf worker` on this root steps it to its end")
            self.app.poll_state()

    def kill(self, thread: str | None) -> None:
        """Asks first (No by default); the kill waits for the agent's process group, off the UI thread."""
        if not thread:
            return
        app = self.app

        def confirmed(yes: bool | None) -> None:
            if yes:
                app.runner.killing.add(thread)  # its step's end reads as killed, even before the archive is written
                app.runner.cancel(thread)
                app.run_worker(partial(workers.kill, app.repo, thread, app.post_message), thread=True, exit_on_error=False, group="kill")

        running = thread in app.runner or app.repo.locks.running(thread) is not None
        then = "its running agent will be stopped" if running else "it will take no more steps (its steps can still be forked)"
        app.push_screen(ConfirmScreen(f"Kill thread {thread}? It will be archived and {then}."), confirmed)

    def new_thread(self, names: list[str], selected: str | None):
        """The new-thread dialog; returns its mount, for a caller that must not handle the next key
        of a burst before the dialog's prompt has the focus."""
        from uwf_core.api import agent_problem, choose_agent_spec, load_workflow, start_thread

        from .screens.modals import WorkflowFields

        app = self.app
        if not names:
            app.notify("no workflows registered yet (uwf workflow put FILE)", severity="warning")
            return None

        def fields_of(workflow: str) -> WorkflowFields:
            """Its roles, each with the agent a step would get without a binding (as the engine's
            resolve_agent picks: agentOverrides, then defaultAgent), and its own budget."""
            try:
                definition = load_workflow(app.repo, workflow)
                config = app.repo.config
            except UwfError:
                return WorkflowFields()  # starting it says what is wrong
            chosen = {role: choose_agent_spec(config, definition.name, role, None, None) for role in definition.roles}
            roles = tuple((role, spec[0] if spec else "no agent configured") for role, spec in chosen.items())
            return WorkflowFields(roles, definition.max_tokens, definition.max_cost)

        problems: list[str] = []  # agents typed in the dialog that cannot run here
        said: list[str] = []  # what starting it said (a key typed into the prompt, stored redacted)

        def start(workflow: str, prompt: str, workspace: str | None, agents: dict[str, str], max_tokens: int | None, max_cost: float | None):
            said.clear()
            try:
                info = start_thread(app.repo, workflow, prompt, workspace, agents, max_tokens=max_tokens, max_cost=max_cost, say=said.append)
            except UwfError as exc:
                return exc.message  # shown in the dialog, which keeps what was typed
            # Said, not refused: a worker on another host sharing the root may have the command.
            problems[:] = [f"{role}: {problem}" for role, spec in agents.items() if (problem := agent_problem(app.repo, workflow, role, spec))]
            return info

        def started(info) -> None:
            if info:
                app.notify(f"started thread {info.thread}; press s to step it")
                for line in said:
                    app.notify(line.removeprefix("uwf: "), severity="warning")
                if problems:
                    app.notify(f"its agents may not run here: {'; '.join(problems)} (a worker elsewhere may have them)", severity="warning")
                app.action_view("threads")
                app.threads_view.show_new_thread(info.thread)

        def keep(draft) -> None:
            self.new_thread_draft = draft

        return app.push_screen(NewThreadScreen(names, selected, start, fields_of, self.new_thread_draft, keep), started)

    def goto_hash(self):
        """The go-to-hash dialog; returns its mount, so the key after `g` in a burst (`g g`) reaches it."""
        app = self.app
        pane = app.focused  # where `g g` goes to the first row

        def thread_of(value: str) -> str | None:
            """A thread id (or the start of one) typed instead of a hash."""
            found = [thread for thread in app.threads_view.infos if thread.startswith(value.upper())]
            return found[0] if len(found) == 1 else None

        def chosen(value: str | None) -> None:
            if value == TWICE:
                moves.first_row(pane)
            elif value and thread_of(value):
                app.action_view("threads")
                app.threads_view.open_thread(thread_of(value))
            elif value:
                app.action_view("cas")
                app.cas_view.open_hash(value)

        def findable(value: str) -> str | None:
            if thread_of(value):
                return None
            try:
                app.repo.nodes.resolve(value)
            except UwfError as exc:
                return exc.message
            return None

        return app.push_screen(GoToHashScreen("Go to a hash or a thread id (or a prefix)", "e.g. 3WF8Z; g again: the first row", validate=findable), chosen)

    def test_agent(self) -> None:
        """The palette's `uwf agent test`: one scratch step through an agent, nothing left behind."""
        from uwf_core.api import agent_entries

        app = self.app
        try:
            entries = agent_entries(app.repo.config)
        except UwfError as exc:
            app.notify(exc.message, severity="error")
            return
        choices = [(f"{entry.name}  ({entry.protocol}, {entry.source})", entry.name) for entry in entries if entry.protocol != "human"]

        def chosen(agent: str | None) -> None:
            if agent:
                app.notify(f"testing agent '{agent}': one scratch step, nothing is kept…", timeout=4)
                app.run_worker(partial(workers.check, app.repo, agent, app.post_message), thread=True, exit_on_error=False, group="check")

        app.push_screen(ChoiceScreen("Test an agent (a tiny prompt, as a real step runs it)", choices), chosen)

    def agent_checked(self, message: AgentChecked) -> None:
        result = message.result
        if result.warning:
            self.app.notify(result.warning, title="agent test", severity="warning", timeout=10)
        if result.ok:
            contained = f", {result.containment}" if result.containment else ""
            self.app.notify(f"agent '{result.agent}' ok in {result.seconds:.1f}s{contained} (answered {result.answer!r})", title="agent test")
        else:
            first = result.stderr_first_line
            detail = f"\nstderr: {first}" if first and first not in (result.error or "") else ""
            self.app.notify(f"{result.error}{detail}", title=f"agent '{result.agent}' failed", severity="error", timeout=15)

    def answer_human(self, message: HumanAnswerRequested) -> None:
        """A step worker waits for a person: show the prompt and a form; the form resolves the future."""
        from .answer_form import answer_screen

        request = message.request
        screen = answer_screen(
            f"{request.role} of {request.workflow} is yours to answer (agent: human)", request.prompt, request.schema, request.template
        )
        self.app.push_screen(screen, lambda answer: resolve(message.answer, answer))

    def answer_inbox(self, item: InboxItem):
        """The form for a thread of the inbox, prefilled with the role's template (or the answer
        typed last time and not recorded); saved, the answer is recorded off the UI thread
        (workers.answer). Returns the form's mount, for the key's handler to await."""
        from .answer_form import answer_screen, answer_template

        app = self.app
        view = app.inbox_view
        thread = item.thread
        if thread in view.answering:
            app.notify(f"the answer to {thread[:10]}'s {item.role} is being recorded", severity="warning")
            return None
        template = answer_template(item.schema)

        def keep(text: str) -> None:
            if text.strip() and text.strip() != template.strip():
                view.drafts[thread] = text
            else:
                view.drafts.pop(thread, None)
            view.show(view.shown)

        def answered(text: str | None) -> None:
            if text is None:
                return
            view.drafts[thread] = text  # until it is recorded: a refusal loses nothing
            view.mark_answering(thread, True)
            app.run_worker(partial(workers.answer, app.repo, item, text, app.post_message), thread=True, exit_on_error=False, group="answer")

        title = f"{item.role} of {item.workflow}, thread {thread[:10]}: yours to answer"
        return app.push_screen(answer_screen(title, item.prompt, item.schema, template, draft=view.drafts.get(thread), keep=keep), answered)

    def inbox_answered(self, message: InboxAnswered) -> None:
        """What became of an answer from the inbox: recorded (and who steps the thread on), or
        refused with the core's one line, the answer kept for the next Enter."""
        app = self.app
        item = message.item
        view = app.inbox_view
        view.mark_answering(item.thread, False)
        who = f"{item.thread[:10]}'s {item.role}"
        if message.error is not None:
            if message.still_waiting:
                view.drafts[item.thread] = message.text
                view.show(view.shown)
                app.notify(f"{message.error} (your answer to {who} is kept: enter opens it again)", severity="error")
                return
            view.drafts.pop(item.thread, None)  # it asks nothing any more: the answer goes whole to the log, to copy
            app.notify(f"{message.error} (your answer to {who} is in the log of 2 Threads)", severity="error")
            app.note(f"the answer that was not recorded for {who}:\n{message.text}", severity="warning")
            return
        view.drafts.pop(item.thread, None)
        result = message.result
        if result.done:
            then = "the thread is done" if result.reason in (None, "done") else f"the thread ended ({result.reason})"
        elif item.queued:
            then = "a worker takes it up"
        else:
            then = "step it with s (in 2 Threads)"
        app.notify(f"answered {who}; {then}")
