"""Modal screens: confirm, choose, new thread, go to hash, help, edit output, human answer."""

from __future__ import annotations

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


class NewThreadScreen(ModalScreen[object]):
    """Pick a workflow, type the prompt (and optionally a workspace). `start(workflow, prompt,
    workspace)` returns the new thread, or an error message: then the dialog stays open with
    everything typed kept and the message under the fields. Closed without starting, what was
    typed goes to `keep` and comes back as `draft` the next time."""

    # priority: the prompt's text area would keep shift+tab (Tab it lets go, with tab_behavior="focus")
    BINDINGS = [
        Binding("escape", "cancel", "Close (keeps the text)"),
        Binding("ctrl+s", "submit", "Start"),
        Binding("tab", "app.focus_next", "Next field", show=False, priority=True),
        Binding("shift+tab", "app.focus_previous", "Previous field", show=False, priority=True),
    ]

    def __init__(
        self,
        workflows: list[str],
        selected: str | None,
        start: Callable[[str, str, "str | None"], object],
        draft: "tuple[str, str, str] | None" = None,
        keep: "Callable[[tuple[str, str, str] | None], None] | None" = None,
    ) -> None:
        super().__init__()
        self.workflows = workflows
        self.draft = draft if draft is not None and draft[0] in workflows else None
        self.selected = self.draft[0] if self.draft else selected
        self.start = start
        self.keep = keep or (lambda draft: None)

    def compose(self) -> ComposeResult:
        yield Footer(compact=True)  # the dialog's own keys, not the app's behind it
        with Vertical(classes="dialog wide"):
            yield Label("New thread", classes="title")
            yield Select([(name, name) for name in self.workflows], value=self.selected or self.workflows[0], allow_blank=False, id="workflow")
            yield Label("Prompt (ctrl+s to start):")
            prompt, workspace = (self.draft[1], self.draft[2]) if self.draft else ("", "")
            yield BurstTextArea(prompt, id="prompt", tab_behavior="focus")  # Tab moves on, as in every other field
            yield BurstInput(workspace, placeholder="workspace directory (optional)", id="workspace")
            yield Static("", id="error", classes="error")  # wraps: errors can be long
            with Horizontal(classes="buttons"):
                yield Button("Start", variant="primary", id="start")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        prompt = self.query_one("#prompt", TextArea)
        prompt.move_cursor(prompt.document.end)
        prompt.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            self.action_submit()
        else:
            self.action_cancel()

    def action_submit(self) -> None:
        prompt = self.query_one("#prompt", TextArea).text.strip()
        if not prompt:
            self.query_one("#error", Static).update("The prompt is empty.")
            return
        workspace = self.query_one("#workspace", Input).value.strip() or None
        outcome = self.start(str(self.query_one("#workflow", Select).value), prompt, workspace)
        if isinstance(outcome, str):
            self.query_one("#error", Static).update(outcome)
            return
        self.keep(None)
        self.dismiss(outcome)

    def action_cancel(self) -> None:
        prompt = self.query_one("#prompt", TextArea).text
        typed = (str(self.query_one("#workflow", Select).value), prompt, self.query_one("#workspace", Input).value)
        self.keep(typed if prompt.strip() else None)
        self.dismiss(None)


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


class TextInputScreen(ModalScreen["str | None"]):
    """One line of input: a hash to go to, a filter. `validate` returns why a value cannot be
    used (shown under the field, the text kept) or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

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
            yield BurstInput(value=self.value, placeholder=self.placeholder, id="value")
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
    """Edit a text (a step's output as YAML, a human answer); `validate` returns an error or None."""

    # priority: one Esc cancels (the text area would otherwise take the first one)
    BINDINGS = [Binding("escape", "cancel", "Cancel", priority=True), Binding("ctrl+s", "submit", "Save")]

    def __init__(self, title: str, text: str, validate, context: str = "", language: str | None = "yaml") -> None:
        super().__init__()
        self.title_text = title
        self.text = text
        self.validate = validate
        self.context_text = context
        self.language = language

    def compose(self) -> ComposeResult:
        yield Footer(compact=True)  # the dialog's own keys, not the app's behind it
        with Vertical(classes="dialog editor"):
            yield Label(self.title_text + "   (ctrl+s save, esc cancel)", classes="title")
            if self.context_text:
                with VerticalScroll(classes="context"):
                    yield Static(self.context_text)
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
            self.dismiss(None)

    def action_submit(self) -> None:
        text = self.query_one("#text", TextArea).text
        problem = self.validate(text)
        if problem:
            self.query_one("#error", Static).update(problem)
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)
