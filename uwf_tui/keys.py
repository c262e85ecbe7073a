"""Which of the app's keys apply where: a key that cannot act on what is selected is hidden from
the footer (and ignored), so the footer shows the few keys that matter; s and r on a thread that
cannot step say why instead of nothing."""

from __future__ import annotations

from textual.screen import ModalScreen

from .screens.report import ReportScreen

THREAD_ACTIONS = {"step", "run", "queue", "fork", "kill", "cancel", "edit", "preview"}
REPORT_ACTIONS = {"cursor_down", "cursor_up", "help", "quit"}  # the app's keys a diff or preview view keeps


def key_applies(app, action: str, parameters: tuple[object, ...]) -> bool:
    if isinstance(app.screen, ModalScreen):
        # The dialog has its own keys; of the app's only moving between its fields applies.
        return action in ("focus_next", "focus_previous")
    if isinstance(app.screen, ReportScreen):
        return action in REPORT_ACTIONS  # a diff or a preview: reading it, not acting on the view behind
    if action == "switch_tab":
        return app.view_widget.tabs() is not None
    if action == "new_thread" and not parameters:
        # In the footer where starting a thread is the next thing to do; `n` works everywhere.
        return app.current_view != "threads" or not app.threads_view.infos
    if action == "why_not":
        return app.current_view == "threads" and app.threads_view.current_thread() is not None
    if action in THREAD_ACTIONS:
        return _thread_action_applies(app, action)
    if action in ("mark", "diff"):
        return _mark_action_applies(app, action, bool(parameters))
    return True


def _mark_action_applies(app, action: str, again: bool) -> bool:
    view = app.threads_view
    if app.current_view != "threads" or view.selected_node() is None:
        return False
    if action == "mark":
        return again == (view.mark is not None)
    return view.mark is not None


def _thread_action_applies(app, action: str) -> bool:
    view = app.threads_view
    thread = view.current_thread() if app.current_view == "threads" else None
    info = view.infos.get(thread or "")
    if thread is None or info is None:
        return False
    running = thread in app.running
    if action in ("step", "run"):
        return not running and info.active
    if action == "queue":
        return info.active and not running and view.statuses.get(thread) not in ("queued", "running")
    if action == "cancel":
        return running or app.repo.locks.running(thread) is not None
    if action in ("kill", "preview"):
        return info.active
    if action == "edit":  # a start has no output to edit; on rows still loading, wait and see
        return not view.timeline_table.is_ready() or view.selected_output_step() is not None
    return not view.timeline_table.is_ready() or view.selected_step_hash() is not None  # fork


def why_not(app, action: str) -> str | None:
    """Why s, r, p or D does nothing on the selected thread (None: nothing to say)."""
    if action == "diff":
        if app.threads_view.mark is None:
            return "nothing is marked: m marks a step (or a fork row), then D diffs the selected one with it"
        return None
    thread = app.threads_view.current_thread()
    info = app.threads_view.infos.get(thread or "")
    if thread is None or info is None:
        return None
    if thread in app.running:
        return f"thread {thread[:10]} is already running here (x cancels it)"
    if not info.active:
        ended = {"done": "is done", "killed": "was killed", "max-steps": "stopped at its maxSteps"}.get(info.reason or "done", f"ended ({info.reason})")
        return f"{thread[:10]} {ended}: nothing to {action}; f forks from a step"
    return None
