"""The new-thread dialog (`n`) offers what `uwf thread start` takes: an agent per role of the
chosen workflow, a budget, checked before anything starts; Esc keeps all of it, and keys typed
in the burst with `n` are the prompt's. At 80x24 and at 160x48."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_tui import run_app, settle, until
from textual import events

from uwf_core.api import context_of, list_threads, thread_info

SIZES = [(80, 24), (160, 48)]


async def open_dialog(app, pilot, workflow: str | None = None):
    """`n`, then (optionally) another workflow, waiting for its role fields."""
    await settle(app, pilot)
    await pilot.press("n")
    assert await until(pilot, lambda: type(app.screen).__name__ == "NewThreadScreen")
    dialog = app.screen
    if workflow is not None:
        dialog.query_one("#workflow").value = workflow
        assert await until(pilot, lambda: dialog.shown_workflow == workflow and dialog.query(".agent"))
        await pilot.pause(0.1)
    return dialog


def agent_fields(dialog) -> dict:
    return {field.name: field for field in dialog.query(".agent")}


def shown(dialog, widget) -> bool:
    """The widget (or selector) is drawn whole: inside the scrolled fields' window (a field) or
    the dialog (a button), and the dialog on the screen."""
    widget = dialog.query_one(widget) if isinstance(widget, str) else widget
    fields, box = dialog.query_one("#new-thread-fields"), dialog.query_one("#new-thread")
    frame = fields if fields in widget.ancestors else box
    return frame.region.contains_region(widget.region) and dialog.region.contains_region(box.region)


def new_threads(root, before: set) -> list[str]:
    return sorted({info.thread for info in list_threads(root)} - before)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_a_thread_starts_with_an_agent_per_role_and_a_budget(fixed, size):
    root, ids = fixed
    config = Path(root.location, "config.yaml")
    config.write_text(config.read_text() + 'agentOverrides:\n  "solve-issue":\n    reviewer: "human"\n')
    before = {info.thread for info in list_threads(root)}

    async def script(app, pilot):
        dialog = await open_dialog(app, pilot, "solve-issue")
        fields = agent_fields(dialog)
        placeholders = {role: field.placeholder for role, field in fields.items()}
        dialog.query_one("#prompt").text = "Add a password rule."
        fields["planner"].focus()
        await pilot.press(*"human")  # typed, as a person would
        dialog.query_one("#max-tokens").value = "12000"
        dialog.query_one("#max-cost").value = "$1.50"
        visible = [shown(dialog, selector) for selector in ("#max-cost", "#start")]
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        return placeholders, visible, type(app.screen).__name__

    placeholders, visible, screen = run_app(root, script, size=size)
    # What each role gets when its field is left empty: the override, else the default agent.
    assert placeholders == {"planner": "script", "developer": "script", "reviewer": "human"}
    assert all(visible), "the fields and the buttons fit"
    assert screen != "NewThreadScreen"
    (new,) = new_threads(root, before)
    start = context_of(root, thread_info(root, new).head).start
    assert start.prompt == "Add a password rule."
    assert start.agents == {"planner": "human"}  # only what was typed: the others keep resolving
    assert (start.max_tokens, start.max_cost) == (12000, 1.5)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_tab_walks_every_field_in_order(fixed, size):
    root, ids = fixed

    async def script(app, pilot):
        dialog = await open_dialog(app, pilot, "solve-issue")
        start = app.focused
        walked = []
        for _ in range(11):
            await pilot.press("tab")
            await pilot.pause(0.05)
            focused = app.focused
            walked.append(focused.id or focused.name)
            if focused is start:
                break
        return start.id, walked, shown(dialog, "#start")

    start, walked, fits = run_app(root, script, size=size)
    assert start == "prompt"
    assert walked == ["workspace", "planner", "developer", "reviewer", "max-tokens", "max-cost", "start", "cancel", "workflow", "prompt"]
    assert fits


SEVEN_ROLES = ["scout", "planner", "architect", "developer", "tester", "reviewer", "writer"]


def _seven_roles_yaml() -> str:
    """A workflow of seven roles in a line, with a budget of its own."""
    lines = ["name: seven-roles", "description: more roles than fit at 80x24", "maxTokens: 50000", "maxCost: 2.5", "roles:"]
    for role in SEVEN_ROLES:
        lines += [f"  {role}:", f"    description: the {role}", "    goal: g", "    capabilities: [c]", "    procedure: p", "    output: o"]
        lines += ["    meta: {type: object, properties: {ok: {type: boolean}}}"]
    lines += ["conditions: {}", "graph:", "  $START:", f"    - {{role: {SEVEN_ROLES[0]}, condition: null}}"]
    for role, after in zip(SEVEN_ROLES, SEVEN_ROLES[1:] + ["$END"]):
        lines += [f"  {role}:", f"    - {{role: {after}, condition: null}}"]
    return "\n".join(lines) + "\n"


def test_more_roles_than_fit_at_80x24_scroll_to_each_field_tab_reaches(fixed, tmp_path):
    from uwf_core.api import put_workflow

    root, ids = fixed
    source = tmp_path / "seven-roles.yaml"
    source.write_text(_seven_roles_yaml())
    put_workflow(root, str(source))

    async def script(app, pilot):
        dialog = await open_dialog(app, pilot, "seven-roles")
        budget = dialog.query_one("#max-tokens").placeholder, dialog.query_one("#max-cost").placeholder
        seen = {}
        for _ in range(20):
            await pilot.press("tab")
            await pilot.pause(0.1)
            focused = app.focused
            seen[focused.id or focused.name] = shown(dialog, focused)
            if focused.id == "start":
                break
        return budget, seen, shown(dialog, "#start")

    budget, seen, buttons = run_app(root, script, size=(80, 24))
    assert budget == ("workflow's: 50000", "workflow's: 2.5")
    assert list(seen) == ["workspace", *SEVEN_ROLES, "max-tokens", "max-cost", "start"]
    assert all(seen.values()), seen  # each field scrolled into view as Tab reached it
    assert buttons


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_a_bad_budget_is_refused_in_the_dialog_with_everything_kept(fixed, size):
    root, ids = fixed
    before = {info.thread for info in list_threads(root)}

    async def script(app, pilot):
        dialog = await open_dialog(app, pilot, "solve-issue")
        dialog.query_one("#prompt").text = "A long prompt I do not want to type again."
        agent_fields(dialog)["developer"].value = "human"
        errors = []
        for tokens, cost in (("12.5", ""), ("0", ""), ("", "-1"), ("", "lots")):
            dialog.query_one("#max-tokens").value = tokens
            dialog.query_one("#max-cost").value = cost
            await pilot.press("ctrl+s")
            await pilot.pause(0.1)
            errors.append(str(dialog.query_one("#error").render()))
        kept = dialog.query_one("#prompt").text, agent_fields(dialog)["developer"].value, dialog.query_one("#max-cost").value
        return errors, kept, app.screen is dialog

    errors, kept, still_open = run_app(root, script, size=size)
    assert errors == [
        "max tokens must be a positive whole number, not '12.5'",
        "max tokens must be a positive whole number, not '0'",
        "max cost must be a positive number of dollars, not '-1'",
        "max cost must be a positive number of dollars, not 'lots'",
    ]
    assert still_open and kept == ("A long prompt I do not want to type again.", "human", "lots")
    assert new_threads(root, before) == []


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_esc_keeps_the_agents_and_the_budget_for_next_time(fixed, size):
    root, ids = fixed
    before = {info.thread for info in list_threads(root)}

    async def script(app, pilot):
        dialog = await open_dialog(app, pilot, "solve-issue")
        dialog.query_one("#prompt").text = "Half a thought"
        agent_fields(dialog)["reviewer"].value = "human"
        dialog.query_one("#max-tokens").value = "9000"
        dialog.query_one("#max-cost").value = "2"
        # Another workflow and back: the role typed for is still there.
        dialog.query_one("#workflow").value = "analyze-topic"
        assert await until(pilot, lambda: list(agent_fields(dialog)) == ["analyst"])
        dialog.query_one("#workflow").value = "solve-issue"
        assert await until(pilot, lambda: "reviewer" in agent_fields(dialog))
        await pilot.press("escape")
        await pilot.pause(0.3)
        dialog = await open_dialog(app, pilot)
        kept = (
            str(dialog.query_one("#workflow").value),
            dialog.query_one("#prompt").text,
            {role: field.value for role, field in agent_fields(dialog).items()},
            dialog.query_one("#max-tokens").value,
            dialog.query_one("#max-cost").value,
        )
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        return kept

    kept = run_app(root, script, size=size)
    assert kept == ("solve-issue", "Half a thought", {"planner": "", "developer": "", "reviewer": "human"}, "9000", "2")
    (new,) = new_threads(root, before)
    start = context_of(root, thread_info(root, new).head).start
    assert (start.agents, start.max_tokens, start.max_cost) == ({"reviewer": "human"}, 9000, 2)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_keys_typed_in_the_burst_with_n_land_in_the_prompt(fixed, size):
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        # One burst, as a fast typist sends it: every key queued before `n` is handled (Pilot.press
        # would wait for the app to go idle between them).
        for key in "nhello":
            app.post_message(events.Key(key, key))
        await settle(app, pilot, 0.5)
        dialog = app.screen
        return dialog.query_one("#prompt").text, str(dialog.query_one("#workflow").value), app.focused.id

    assert run_app(root, script, size=size) == ("hello", "analyze-topic", "prompt")


def test_n_opens_on_the_selected_threads_workflow(fixed):
    """In the Threads view the dialog starts from the workflow of the thread under the cursor:
    the one a person most likely starts again."""
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        table = app.query_one("#threads")
        table.move_cursor(row=table.get_row_index(ids["solve"]))
        await pilot.press("n")
        await settle(app, pilot, 0.3)
        return str(app.screen.query_one("#workflow").value)

    assert run_app(root, script) == "solve-issue"


def test_tab_and_text_typed_at_once_fill_the_budget_fields_in_order(fixed):
    """`Tab 1000 Tab 0.5` sent at once from the last role's field: Tab was a priority binding, run
    when it arrived, before the characters typed ahead of it were in, so max cost got `0.51000`."""
    root, ids = fixed

    async def script(app, pilot):
        await settle(app, pilot)
        await pilot.press("n")
        await settle(app, pilot, 0.3)
        dialog = app.screen
        fields = list(dialog.query("Input.agent"))
        fields[-1].focus()
        await pilot.pause(0.1)
        for key in ["tab", *"1000", "tab", *"0.5"]:
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await settle(app, pilot, 0.5)
        return {field.id: field.value for field in dialog.query("Input") if field.id in ("max-tokens", "max-cost")}

    assert run_app(root, script) == {"max-tokens": "1000", "max-cost": "0.5"}


def test_an_agent_that_cannot_run_here_is_said_when_the_thread_starts(fixed):
    """Started (a worker on another host sharing the root may have the command), and said at once,
    rather than as a failed attempt at the first step."""
    root, ids = fixed
    said = []

    async def script(app, pilot):
        app.notify = lambda message, **_: said.append(message)
        await settle(app, pilot)
        await pilot.press("n")
        await settle(app, pilot, 0.3)
        dialog = app.screen
        dialog.query_one("#prompt").text = "a prompt"
        list(dialog.query("Input.agent"))[0].value = "no-such-agent-cli --flag"
        await pilot.press("ctrl+s")
        await settle(app, pilot, 0.5)
        return type(app.screen).__name__

    assert run_app(root, script) == "Screen"
    assert any(message.startswith("started thread") for message in said), said
    assert any("agent command 'no-such-agent-cli' not found on PATH" in message for message in said), said
