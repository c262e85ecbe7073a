"""uwf-tui and many agents at once: a map parent's children listed under its map step, what the
step pane says of one, Enter opens it (keys in a burst); the candidates' forks of `thread step
--agents` named by agent, and P picks one. At both sizes."""

from __future__ import annotations

import pytest
from conftest import EXAMPLES
from test_tui import run_app, select_thread, settle, until
from textual import events

from uwf_core.api import Repo, put_workflow, run_thread, StepOptions, start_thread

SIZES = [(80, 24), (160, 48)]


@pytest.fixture
def mapped(root_dir):
    """A fan-out thread run to its end with the scripted agent: (repo, parent, children)."""
    repo = Repo.open(str(root_dir))
    put_workflow(repo, str(EXAMPLES / "develop.yaml"))
    put_workflow(repo, str(EXAMPLES / "fan-out.yaml"))
    parent = start_thread(repo, "fan-out", "Fix the login bug").thread
    assert run_thread(repo, parent, StepOptions(agent=f"uwf-script --script-dir {EXAMPLES}")).done
    from uwf_core.api import thread_steps

    implement = next(step for step in thread_steps(repo, parent) if step.role == "implement")
    children = [result["thread"] for result in implement.output["results"]]
    return repo, parent, children, implement.hash


@pytest.mark.parametrize("size", SIZES)
def test_a_map_step_lists_its_children_and_enter_opens_one(mapped, size):
    repo, parent, children, implement = mapped

    async def script(app, pilot):
        await select_thread(app, pilot, parent)
        timeline = app.query_one("#timeline")
        keys = [f"child:{child}" for child in children]
        assert all(key in timeline.rows for key in keys)
        rows = [timeline.get_row_index(key) for key in keys]
        assert rows == sorted(rows)  # in item order, under the map step
        assert rows[0] == timeline.get_row_index(f"step:{implement}") + 1
        timeline.focus()
        timeline.move_cursor(row=rows[0])
        await pilot.pause(0.2)
        shown = str(app.query_one("#step-output").content)
        assert f"Child 1 of the map step: thread {children[0]}" in shown and "passed: true" in shown
        for tab in ("body", "prompt", "detail", "files"):  # never blank: each says where its content is
            said = str(app.query_one(f"#step-{tab}").content)
            assert f"thread {children[0]}" in said and "Enter opens it" in said, (tab, said)
        for key in ("down", "enter"):  # a burst: the second child, then into it
            app.post_message(events.Key(key, "\r" if key == "enter" else None))
        opened = await until(pilot, lambda: app.threads_view.selected_thread == children[1])
        await settle(app, pilot)
        return opened, app.threads_view.selected_thread

    opened, selected = run_app(repo, script, size=size)
    assert opened and selected == children[1]


@pytest.mark.parametrize("size", SIZES)
def test_p_on_a_candidate_s_fork_row_picks_its_step(root_dir, size):
    """`thread step --agents` without a pick leaves the candidates' forks under the thread's head:
    their rows name the agent and show its answer, and P on one (then y) moves the thread to its step."""
    from uwf_tui.formatting import tag
    from uwf_core.api import step_side_by_side

    repo = Repo.open(str(root_dir))
    put_workflow(repo, str(EXAMPLES / "solve-issue.yaml"))
    repo.agents.register("alpha", lambda ctx: {"plan": "alpha", "steps": ["a"]})
    repo.agents.register("beta", lambda ctx: {"plan": "beta", "steps": ["b"]})
    thread = start_thread(repo, "solve-issue", "pick one").thread
    result = step_side_by_side(repo, thread, ["alpha", "beta"])
    beta = result.candidates[1]

    async def script(app, pilot):
        await select_thread(app, pilot, thread)
        timeline = app.query_one("#timeline")
        assert await until(pilot, lambda: f"branch:{beta.thread}" in timeline.rows)
        row = timeline.get_row_index(f"branch:{beta.thread}")
        cells = [str(cell) for cell in timeline.get_row_at(row)]
        assert "beta" in cells[2] and cells[-1].startswith("plan: beta")  # its agent, and its answer first
        threads = app.query_one("#threads")
        assert await until(pilot, lambda: "candidate" in str(threads.get_row(beta.thread)[-1]))
        listed = [key.value for key in threads.rows]
        assert listed.index(beta.thread) > listed.index(thread)  # under the thread it was a candidate for
        assert str(threads.get_row(beta.thread)[-1]).startswith(f"↳ beta, candidate of {tag(thread)}")
        timeline.focus()
        timeline.move_cursor(row=row)
        await pilot.pause(0.2)
        for key in ("P", "y"):  # P asks first; y picks (in one burst)
            app.post_message(events.Key(key, key))
        moved = await until(pilot, lambda: repo.threads.heads().get(thread) == beta.step)
        await settle(app, pilot)
        return moved

    assert run_app(repo, script, size=size)
    archived = {record.thread: record.reason for record in repo.threads.history()}
    assert archived[beta.thread] == "picked" and archived[result.candidates[0].thread] == "not-picked"


@pytest.mark.parametrize("size", SIZES)
def test_the_list_draws_a_map_s_children_under_it_in_item_order(mapped, size):
    """Each child row comes right under its parent's, oldest first (item order), and says which
    item of which thread it is; the id column says it orders the rest (newest first)."""
    from uwf_tui.formatting import tag

    repo, parent, children, _ = mapped

    async def script(app, pilot):
        await select_thread(app, pilot, parent)
        threads = app.query_one("#threads")
        assert await until(pilot, lambda: f"of {tag(parent)}" in str(threads.get_row(children[0])[-1]))
        order = [key.value for key in threads.rows]
        prompts = {thread: str(threads.get_row(thread)[-1]) for thread in children}
        return order, prompts, [str(column.label) for column in threads.columns.values()]

    order, prompts, labels = run_app(repo, script, size=size)
    start = order.index(parent)
    assert order[start + 1 : start + 1 + len(children)] == children
    for number, child in enumerate(children, 1):
        assert prompts[child].startswith(f"↳ item {number} of {tag(parent)}: ")
    assert "id ▼" in labels
