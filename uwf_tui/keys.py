"""The app's keys: each binding (its help line in `?` and the palette), and which apply where: a
key that cannot act on what is selected is hidden from the footer (and ignored), so the footer
shows the few keys that matter; s and r on a thread that cannot step say why instead of nothing."""

from __future__ import annotations

from textual.binding import Binding
from textual.screen import ModalScreen

from .screens.report import ReportScreen

THREAD_ACTIONS = {"step", "run", "queue", "fork", "kill", "cancel", "edit", "preview", "pause", "unpause", "follow"}
# Keys that act on the selection: checked again when they act, after the keys of a burst before them
# (a check when pressed would judge the selection those keys are about to move).
WAIT_FOR_BURST = THREAD_ACTIONS | {"mark", "diff", "cost", "copy_hash", "pick"}
REPORT_ACTIONS = {"cursor_down", "cursor_up", "half_page", "last_row", "help", "quit"}  # the app's keys a diff or preview view keeps


def key_applies(app, action: str, parameters: tuple[object, ...]) -> bool:
    if isinstance(app.screen, ModalScreen):
        # The dialog has its own keys; of the app's only moving between its fields applies.
        return action in ("focus_next", "focus_previous")
    if isinstance(app.screen, ReportScreen):
        return action in REPORT_ACTIONS  # a diff or a preview: reading it, not acting on the view behind
    if action in WAIT_FOR_BURST and app.current_view == "threads" and app.threads_view.timeline_table.waiting:
        return True  # keys before it still wait for rows: it acts (or says why not) where they leave the selection
    if action == "switch_tab":
        return app.view_widget.tabs() is not None
    if action == "new_thread" and not parameters:
        # In the footer where starting a thread is the next thing to do; `n` works everywhere.
        return app.current_view != "threads" or not app.threads_view.infos
    if action == "sort":
        return app.current_view == "threads"
    if action == "view" and parameters == ("inbox",):
        # In the footer while someone is asked something and the Inbox is not on screen, where there
        # is room (below 110 columns the tab's title, "i Inbox (2)", says it); `i` works everywhere.
        return app.current_view != "inbox" and app.inbox_view.count > 0 and not app.has_class("-narrow")
    if action == "answer":
        return app.current_view == "inbox" and (not app.inbox_view.table.loaded or app.inbox_view.selected() is not None)
    if action == "cost":
        return app.current_view == "threads" and app.threads_view.current_thread() is not None
    if action == "why_not":
        return app.current_view == "threads" and app.threads_view.current_thread() is not None
    if action in THREAD_ACTIONS:
        return _thread_action_applies(app, action)
    if action in ("mark", "diff"):
        return _mark_action_applies(app, action, bool(parameters))
    if action == "pick":
        return app.current_view == "threads" and app.threads_view.selected_candidate() is not None
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
    if action in ("step", "run"):  # not on one another process steps (its status, read at the last reload: no query here)
        return not running and info.active and thread not in view.paused and view.statuses.get(thread) != "running"
    if action in ("pause", "unpause"):
        return info.active and (thread in view.paused) == (action == "unpause")
    if action == "follow":  # steps another process runs; L again stops following
        return thread in app.followers or (info.active and not running)
    if action == "queue":
        return info.active and not running and view.statuses.get(thread) not in ("queued", "mapping", "running", "asking")
    if action == "cancel":
        return running or app.repo.locks.running(thread) is not None
    if action in ("kill", "preview"):
        return info.active
    if action == "edit":  # a start has no output to edit; on rows still loading, wait and see
        return not view.timeline_table.is_ready() or view.selected_output_step() is not None
    return not view.timeline_table.is_ready() or view.selected_step_hash() is not None  # fork


def why_not(app, action: str) -> str | None:
    """Why s, r, p, d, x, f, D or P does nothing on the selection (None: nothing to say)."""
    view = app.threads_view
    if action == "diff":
        if view.mark is None:
            return "nothing is marked: m marks a step (or a fork row), then D diffs the selected one with it"
        return None
    if action == "fork":
        return "f forks from a step or the prompt row: move the cursor onto one"
    if action == "pick":
        return ("P picks a candidate: the row of an active fork of the thread's head (uwf thread step --agents makes them); "
                "move the cursor onto one")
    thread = view.current_thread()
    info = view.infos.get(thread or "")
    if thread is None or info is None:
        return None
    running = app.repo.locks.running(thread) if thread not in app.running else None
    if action == "cancel":
        return f"nothing runs for thread {thread[:10]}, here or in another process"
    if thread in app.running:
        return f"thread {thread[:10]} is already running here (x cancels it)"
    if thread in view.paused and info.active and action in ("step", "run"):
        return f"thread {thread[:10]} is paused: space unpauses it (then s or r goes on; workers take it up again)"
    if running is not None:
        return f"thread {thread[:10]} is running in another process: {running.describe()}"
    if not info.active:
        ended = {"done": "is done", "killed": "was killed", "max-steps": "stopped at its maxSteps"}.get(info.reason or "done", f"ended ({info.reason})")
        return f"{thread[:10]} {ended}: nothing to {action}; f forks from a step"
    if action == "queue" and view.statuses.get(thread) == "asking":
        return f"thread {thread[:10]} is queued, asking a person: answer it in the Inbox (i) and a worker takes it up"
    if action == "queue" and view.statuses.get(thread) in ("queued", "mapping", "running"):
        return f"thread {thread[:10]} is already {view.statuses[thread]}"
    return None


HELP = [
    ("Views", [("1", "Workflows"), ("2", "Threads"), ("3", "CAS"), ("i", "Inbox")]),
    ("Threads", [("s", "step"), ("r", "run to the end"), ("p", "preview the next step"), ("d", "queue for workers"), ("x", "cancel its agent"),
                 ("space", "pause/unpause"), ("L", "follow steps run elsewhere"),
                 ("K", "kill (asks)"), ("n", "new thread"), ("f", "fork the step"), ("e", "edit its output and fork"),
                 ("m", "mark the step"), ("D", "diff it with the mark"), ("$", "its cost, and its forks'"),
                 ("P", "on a fork row: move the thread to its step")]),
    ("", [("enter", "thread → timeline → step; on a fork row, the fork"), ("esc", "back; clears the filter")]),
    ("Workflows", [("enter", "into the graph, roles or YAML"), ("n", "new thread")]),
    ("CAS", [("enter", "opens a node"), ("g", "go to a hash (from any view)")]),
    ("Inbox", [("enter/a", "answer a thread waiting for a person (its form)")]),
    ("Moving", [("j/k", "down/up or scroll"), ("home/end g g/G", "first/last"), ("ctrl+d/u", "half a pane"), ("z", "zoom"), ("h/l tab", "pane left/right"),
                ("[ ]", "tabs (Output…, Graph…)"), ("/", "filter this view's list"),
                ("o", "sort the threads by the next column")]),
    ("Anywhere", [("?", "this help"), ("y", "copy the hash"), ("ctrl+p", "commands (test an agent…)"), ("q", "quit")]),
]
# Textual's own palette commands worth keeping, retitled; the rest (Keys, Maximize, its
# quit-at-once) are noise here or bypass our own quit, which asks while agents run.
# Each gets a help line of its own, so the palette reads one command per entry (Textual's own help
# line said the title again).
TEXTUAL_COMMANDS = {
    "Theme": ("Change the colour theme", "pick from the themes Textual has; this session only"),
    "Screenshot": ("Save a screenshot", "an SVG of the screen as it is, in the current directory"),
}

# The footer shows what applies to the current view and selection (check_action hides the rest);
# every key is in `?` help, grouped by view, and in the command palette with its title.
BINDINGS = [
    Binding("1", "view('workflows')", "Workflows", show=False, id="view-workflows", tooltip="show the Workflows view"),
    Binding("2", "view('threads')", "Threads", show=False, id="view-threads", tooltip="show the Threads view"),
    Binding("3", "view('cas')", "CAS", show=False, id="view-cas", tooltip="show the CAS view"),
    Binding("i", "view('inbox')", "Inbox", id="view-inbox", tooltip="show the Inbox: every thread waiting for a person, to answer"),
    Binding("i", "view('inbox', 'unlisted')", "Inbox", show=False, id="view-inbox-unlisted"),  # its twin: `i` where the footer leaves it out
    Binding("left_square_bracket", "switch_tab(-1)", "Tab", show=False, id="previous-tab",
            tooltip="show the previous tab of the view's detail pane"),
    Binding("right_square_bracket", "switch_tab(1)", "Tab", key_display="[ ]", id="next-tab",
            tooltip="show the next tab of the view's detail pane (Output, Body, … or Graph, Roles, YAML)"),
    Binding("s", "step", "Step", id="step", tooltip="run one step of the selected thread"),
    Binding("r", "run", "Run", id="run", tooltip="step the selected thread until it is done"),
    Binding("p", "preview", "Preview", id="preview",
            tooltip="preview the selected thread's next step (its role and why, the agent, the prompt), running nothing"),
    Binding("d", "queue", "Queue", id="queue", tooltip="queue the selected thread for `uwf worker` processes (they step it to its end)"),
    Binding("x", "cancel", "Cancel", id="cancel", tooltip="stop the agent running for the selected thread"),
    Binding("f", "fork", "Fork", id="fork", tooltip="fork a new thread from the selected step"),
    Binding("e", "edit", "Edit", id="edit", tooltip="edit the selected step's output and fork from it"),
    Binding("m", "mark", "Mark", id="mark", tooltip="mark the selected step (or thread) to diff another with it (D)"),
    Binding("D", "diff", "Diff", id="diff", tooltip="diff the marked step with the selected one, side by side from their common ancestor"),
    Binding("K", "kill", "Kill", id="kill", tooltip="kill the selected thread (asks first)"),
    Binding("space", "pause", "Pause", show=False, id="pause",
            tooltip="pause the selected thread: its step in flight finishes, none starts after it (here, in `uwf thread run`, on workers)"),
    Binding("space", "unpause", "Unpause", id="unpause", tooltip="let the selected paused thread go on (s, r and workers step it again)"),
    Binding("L", "follow", "Live", show=False, id="follow",
            tooltip="follow the selected thread's steps that another process or host runs: their agents' lines in the log; again to stop"),
    Binding("P", "pick", "Pick", id="pick", tooltip="move the thread to the selected fork's step (a candidate of `uwf thread step --agents`)"),
    Binding("dollar_sign", "cost", "Cost", show=False, id="cost", key_display="$",
            tooltip="the selected thread's ledger (tokens, cost and time of each step, totals, budget) and its fork subtree's"),
    Binding("a", "answer", "Answer", id="answer", tooltip="answer the thread selected in the Inbox (its role's form, prefilled)"),
    Binding("n", "new_thread", "New", id="new-thread", tooltip="start a thread: pick a workflow, type a prompt"),
    # Twins, kept out of the footer: where the key above is hidden (check_action False) the
    # twin takes the key, so `n` still works in the threads view and `s` on a finished thread
    # says why it does nothing.
    Binding("n", "new_thread('unlisted')", "New", show=False, id="new-thread-unlisted"),
    Binding("s", "why_not('step')", "Step", show=False, id="step-unavailable"),
    Binding("r", "why_not('run')", "Run", show=False, id="run-unavailable"),
    Binding("p", "why_not('preview')", "Preview", show=False, id="preview-unavailable"),
    Binding("D", "why_not('diff')", "Diff", show=False, id="diff-unavailable"),
    Binding("d", "why_not('queue')", "Queue", show=False, id="queue-unavailable"),
    Binding("x", "why_not('cancel')", "Cancel", show=False, id="cancel-unavailable"),
    Binding("f", "why_not('fork')", "Fork", show=False, id="fork-unavailable"),
    Binding("P", "why_not('pick')", "Pick", show=False, id="pick-unavailable"),
    # With a mark set the footer offers D rather than m (there is room for one of them at 80
    # columns); m still marks another step, or unmarks the marked one.
    Binding("m", "mark('again')", "Mark", show=False, id="mark-again"),
    Binding("slash", "filter", "Filter", show=False, id="filter", tooltip="filter the list of the current view"),
    Binding("o", "sort", "Sort", show=False, id="sort", tooltip="sort the thread list by its next column (status, workflow, steps, updated, prompt), then back"),
    Binding("g", "goto_hash", "Go to hash", show=False, id="goto-hash", tooltip="open any node by its hash or a prefix"),
    Binding("y", "copy_hash", "Copy", show=False, id="copy-hash", tooltip="copy the selected hash or thread id to the clipboard (OSC 52: over ssh; in tmux with set-clipboard on)"),
    Binding("z", "zoom", "Zoom", show=False, id="zoom", tooltip="zoom the focused pane to the whole screen, or back"),
    Binding("j", "cursor_down", "Down", show=False, id="down"),
    Binding("ctrl+d", "half_page(1)", "Half page down", show=False, id="half-down"),
    Binding("ctrl+u", "half_page(-1)", "Half page up", show=False, id="half-up"),
    Binding("G", "last_row", "Last row", show=False, id="last-row"),
    Binding("k", "cursor_up", "Up", show=False, id="up"),
    Binding("h", "pane(-1)", "Pane left", show=False, id="pane-left"),
    Binding("l", "pane(1)", "Pane right", show=False, id="pane-right"),
    Binding("escape", "back", "Back", show=False, id="back"),
    Binding("question_mark", "help", "Help", id="help", tooltip="show every key, grouped by view"),
    Binding("q", "quit", "Quit", id="quit", tooltip="quit uwf-tui (asks first while agents run)"),
]
