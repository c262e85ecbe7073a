"""Modal screens: confirm, choose, new thread, go to hash, help, edit output, human answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import (
    Button,
    Footer,
    Input,
    Label,
    OptionList,
    Select,
    Static,
    TextArea,
)
from textual.widgets.option_list import Option

from ..formatting import literal
from ..widgets.text_fields import BurstInput, BurstTextArea


class ConfirmScreen(ModalScreen[bool]):
    """Yes/no for destructive actions (kill, quitting with agents running). The safe answer is
    the default: Enter on the focused button says No; only `y` or the Yes button says yes."""

    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str, yes: str = "Yes") -> None:
        super().__init__()
        self.question = question
        self.yes = yes

    def compose(self) -> ComposeResult:
        yield Footer(compact=True)  # the dialog's own keys, not the app's behind it
        with Vertical(classes="dialog"):
            yield Static(self.question, classes="question")
            with Horizontal(classes="buttons"):
                yield Button("No (n)", variant="primary", id="no")
                yield Button(f"{self.yes} (y)", variant="error", id="yes")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


@dataclass(frozen=True)
class WorkflowFields:
    """What the new-thread dialog offers for one workflow: each role with the agent it gets when
    its field is left empty, and the workflow's own budget (the default of the budget fields)."""

    roles: tuple[tuple[str, str], ...] = ()  # (role, its default agent)
    max_tokens: int | None = None
    max_cost: float | None = None


@dataclass(frozen=True)
class NewThreadDraft:
    """The new-thread dialog's fields as typed: kept when it is closed without starting."""

    workflow: str
    prompt: str = ""
    workspace: str = ""
    agents: dict[str, str] = field(default_factory=dict)  # role -> agent as typed
    max_tokens: str = ""
    max_cost: str = ""


def parse_budget(max_tokens: str, max_cost: str) -> tuple[int | None, float | None]:
    """The budget fields as numbers (empty: none); a ValueError says in one line which is wrong."""
    tokens = cost = None
    text = max_tokens.strip()
    if text:
        if not (text.isascii() and text.isdigit() and int(text) > 0):
            raise ValueError(f"max tokens must be a positive whole number, not {text!r}")
        tokens = int(text)
    text = max_cost.strip()
    if text:
        try:
            cost = float(text.removeprefix("$"))
        except ValueError:
            cost = None
        if cost is None or not 0 < cost < float("inf"):  # refuses nan and inf too
            raise ValueError(f"max cost must be a positive number of dollars, not {text!r}")
    return tokens, cost


class NewThreadScreen(ModalScreen[object]):
    """Pick a workflow, type the prompt and optionally a workspace, an agent per role and a budget
    — what `uwf thread start` takes. `start(workflow, prompt, workspace, agents, max_tokens,
    max_cost)` returns the new thread, or an error message: then the dialog stays open with
    everything typed kept and the message under the fields. Closed without starting, what was
    typed goes to `keep` and comes back as `draft` the next time."""

    # Tab and shift+tab move between the fields in the order they were typed (the fields handle
    # them: text_fields._OwnBindingsInOrder); these are for the Select and the buttons.
    BINDINGS = [
        Binding("escape", "cancel", "Close (keeps the text)"),
        Binding("ctrl+s", "submit", "Start"),
        Binding("tab", "app.focus_next", "Next field", show=False),
        Binding("shift+tab", "app.focus_previous", "Previous field", show=False),
    ]
    # The prompt, not the workflow Select, has the focus from the start: keys typed in the burst
    # with `n` are text for it.
    AUTO_FOCUS = "#prompt"

    def __init__(
        self,
        workflows: list[str],
        selected: str | None,
        start: Callable[[str, str, str | None, dict[str, str], int | None, float | None], object],
        fields_of: Callable[[str], WorkflowFields],
        draft: NewThreadDraft | None = None,
        keep: Callable[[NewThreadDraft | None], None] | None = None,
    ) -> None:
        super().__init__()
        self.workflows = workflows
        self.draft = draft if draft is not None and draft.workflow in workflows else None
        self.selected = self.draft.workflow if self.draft else (selected if selected in workflows else workflows[0])
        self.start = start
        self.fields_of = fields_of
        self.keep = keep or (lambda draft: None)
        # Agents typed per role name, so switching workflows back and forth loses none of them.
        self.typed_agents: dict[str, str] = dict(self.draft.agents) if self.draft else {}
        self.shown_workflow = self.selected

    def compose(self) -> ComposeResult:
        draft = self.draft or NewThreadDraft(self.selected)
        fields = self.fields_of(self.selected)
        yield Footer(compact=True)  # the dialog's own keys, not the app's behind it
        with Vertical(classes="dialog wide", id="new-thread"):
            yield Label("New thread", classes="title")
            # The fields scroll (the title, the error and the buttons stay) when they do not fit.
            with VerticalScroll(id="new-thread-fields", can_focus=False):
                yield Select([(name, name) for name in self.workflows], value=self.selected, allow_blank=False, id="workflow")
                yield Label("Prompt (ctrl+s to start):")
                yield BurstTextArea(draft.prompt, id="prompt", tab_behavior="focus")  # Tab moves on, as in every other field
                yield BurstInput(draft.workspace, placeholder="workspace directory (optional)", id="workspace")
                yield Label("Agent per role (empty: the one shown):")
                with Vertical(id="agents"):
                    yield from self._agent_rows(fields)
                with Horizontal(id="budget", classes="field-row"):
                    yield Label("max tokens", classes="field-label")
                    yield BurstInput(draft.max_tokens, placeholder=_default(fields.max_tokens), compact=True, id="max-tokens")
                    yield Label("max cost ($)", classes="field-label", id="max-cost-label")
                    yield BurstInput(draft.max_cost, placeholder=_default(fields.max_cost), compact=True, id="max-cost")
            yield Static("", id="error", classes="error")  # wraps: errors can be long
            with Horizontal(classes="buttons"):
                yield Button("Start", variant="primary", id="start")
                yield Button("Cancel", id="cancel")

    def _agent_rows(self, fields: WorkflowFields) -> list[Horizontal]:
        """One row per role: its name, and a field for its agent that shows the default."""
        return [
            Horizontal(
                Label(role, classes="field-label"),
                BurstInput(self.typed_agents.get(role, ""), placeholder=agent, compact=True, name=role, classes="agent"),
                classes="field-row",
            )
            for role, agent in fields.roles
        ]

    def on_mount(self) -> None:
        prompt = self.query_one("#prompt", TextArea)
        prompt.move_cursor(prompt.document.end)

    async def on_select_changed(self, event: Select.Changed) -> None:
        """Another workflow: its roles' fields replace the last one's, and its budget shows."""
        workflow = str(event.value)
        if workflow == self.shown_workflow:
            return
        self.shown_workflow = workflow
        self.typed_agents.update(self._agents_typed())
        fields = self.fields_of(workflow)
        agents = self.query_one("#agents", Vertical)
        await agents.remove_children()
        await agents.mount_all(self._agent_rows(fields))
        self.query_one("#max-tokens", Input).placeholder = _default(fields.max_tokens)
        self.query_one("#max-cost", Input).placeholder = _default(fields.max_cost)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            self.action_submit()
        else:
            self.action_cancel()

    def _agents_typed(self) -> dict[str, str]:
        """role -> agent for each role field of the workflow shown, as typed."""
        return {str(entry.name): entry.value for entry in self.query(".agent").results(Input)}

    def _typed(self) -> NewThreadDraft:
        return NewThreadDraft(
            str(self.query_one("#workflow", Select).value),
            self.query_one("#prompt", TextArea).text,
            self.query_one("#workspace", Input).value,
            self._agents_typed(),
            self.query_one("#max-tokens", Input).value,
            self.query_one("#max-cost", Input).value,
        )

    def action_submit(self) -> None:
        typed = self._typed()
        error = self.query_one("#error", Static)
        if not typed.prompt.strip():
            error.update("The prompt is empty.")
            return
        try:
            max_tokens, max_cost = parse_budget(typed.max_tokens, typed.max_cost)
        except ValueError as exc:
            error.update(str(exc))
            return
        agents = {role: agent.strip() for role, agent in typed.agents.items() if agent.strip()}
        outcome = self.start(typed.workflow, typed.prompt.strip(), typed.workspace.strip() or None, agents, max_tokens, max_cost)
        if isinstance(outcome, str):
            error.update(outcome)
            return
        self.keep(None)
        self.dismiss(outcome)

    def action_cancel(self) -> None:
        typed = self._typed()
        anything = typed.prompt, typed.workspace, *typed.agents.values(), typed.max_tokens, typed.max_cost
        self.keep(typed if any(text.strip() for text in anything) else None)
        self.dismiss(None)


def _default(budget: float | None) -> str:
    """A budget field's placeholder: what applies when it is left empty (each on its own)."""
    return "workflow's: none" if budget is None else f"workflow's: {budget:g}"


class ChoiceScreen(ModalScreen["str | None"]):
    """Pick one of a few named things (an agent to test); Esc picks none."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, choices: list[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.choices = choices  # (label, value)

    def compose(self) -> ComposeResult:
        yield Footer(compact=True)  # the dialog's own keys, not the app's behind it
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="title")
            yield OptionList(*(Option(label, id=value) for label, value in self.choices), id="choices")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


TWICE = "\x00twice"  # what GoToHashScreen returns for `g g`


class TextInputScreen(ModalScreen["str | None"]):
    """One line of input: a hash to go to, a filter. `validate` returns why a value cannot be
    used (shown under the field, the text kept) or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    FIELD = BurstInput

    def __init__(self, title: str, placeholder: str = "", value: str = "", validate: Callable[[str], str | None] | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.placeholder = placeholder
        self.value = value
        self.validate = validate

    def compose(self) -> ComposeResult:
        yield Footer(compact=True)  # the dialog's own keys, not the app's behind it
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="title")
            yield self.FIELD(value=self.value, placeholder=self.placeholder, id="value")
            yield Static("", id="error", classes="error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        problem = self.validate(value) if self.validate is not None and value else None
        if problem:
            self.query_one("#error", Static).update(problem)
            return
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class _HashField(BurstInput):
    """Leaves `g` to its screen's binding (an Input takes every printable key from the bindings)."""

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return key != "g" and super().check_consume_key(key, character)


class GoToHashScreen(TextInputScreen):
    """`g`'s dialog. `g` again into the empty field is vim's `g g` (the first row): it closes the
    dialog with TWICE. A binding, not the field's text, so the keys after it in a burst (`g g j`)
    are not typed into the field before it closes; a `g` later in a hash is typed as usual."""

    BINDINGS = [Binding("g", "again", show=False, priority=True)]
    FIELD = _HashField

    def action_again(self) -> None:
        field = self.query_one("#value", Input)
        if field.value:
            field.insert_text_at_cursor("g")
        else:
            self.dismiss(TWICE)


class HelpScreen(ModalScreen[None]):
    """Every key on one screen, even at 80x24: grouped by view, one line per group."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, groups: list[tuple[str, list[tuple[str, str]]]]) -> None:
        super().__init__()
        self.groups = groups  # (group, [(key, what it does)])

    def compose(self) -> ComposeResult:
        yield Footer(compact=True)  # the dialog's own keys, not the app's behind it
        from rich.text import Text

        text = Text()
        text.append("uwf-tui keys   ", style="bold")
        text.append("(esc closes)\n", style="dim")
        for group, keys in self.groups:
            text.append(f"\n{group:<10}", style="bold cyan")
            width = 10
            for index, (key, what) in enumerate(keys):
                item = f"{key} {what}"
                if index and width + len(item) + 3 > 70:
                    text.append("\n" + " " * 10)
                    width = 10
                elif index:
                    text.append("· ", style="dim")  # after the previous item's trailing space
                    width += 3
                # No segment starts with a space: SVG viewers drop a leading one (the screenshots).
                text.append(f"{key} ", style="bold yellow")
                text.append(f"{what} ")
                width += len(item)
        with Vertical(classes="dialog help"):
            yield Static(text, id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)


class EditorScreen(ModalScreen["str | None"]):
    """Edit a text (a step's output as YAML, a human answer); `validate` returns an error or None.
    Closed with esc, what was typed goes to `keep` (when given), to come back the next time."""

    # priority: one Esc cancels (the text area would otherwise take the first one)
    BINDINGS = [Binding("escape", "cancel", "Cancel", priority=True), Binding("ctrl+s", "submit", "Save")]
    # The text has the focus from the start: the keys typed in the burst that opened the form are its text.
    AUTO_FOCUS = "#text"

    def __init__(self, title: str, text: str, validate, context: str = "", language: str | None = "yaml",
                 keep: Callable[[str], None] | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.text = text
        self.validate = validate
        self.context_text = context
        self.language = language
        self.keep = keep

    def compose(self) -> ComposeResult:
        yield Footer(compact=True)  # the dialog's own keys, not the app's behind it
        with Vertical(classes="dialog editor"):
            yield Label(self.title_text + "   (ctrl+s save, esc cancel)", classes="title")
            if self.context_text:
                with VerticalScroll(classes="context"):
                    yield Static(literal(self.context_text))  # a prompt, as written: never markup
            yield BurstTextArea.code_editor(self.text, language=self.language, id="text") if self.language else BurstTextArea(self.text, id="text")
            yield Static("", id="error", classes="error")  # wraps: errors can be long
            with Horizontal(classes="buttons"):
                yield Button("Save", variant="primary", id="save")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#text", TextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self.action_submit()
        else:
            self.action_cancel()

    def action_submit(self) -> None:
        text = self.query_one("#text", TextArea).text
        problem = self.validate(text)
        if problem:
            self.query_one("#error", Static).update(literal(problem))  # it may quote the text, brackets and all
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        if self.keep is not None:
            self.keep(self.query_one("#text", TextArea).text)
        self.dismiss(None)
