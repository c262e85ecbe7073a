"""The form a person answers a `human` role in: a frontmatter template of the role's output, the
prompt above it, and the check an answer must pass before it leaves the form. The same form for a
step this workbench runs (the step waits for it) and for a thread in the inbox (answered with
`answer_thread`)."""

from __future__ import annotations

from typing import Callable

from uwf_core.api import ExtractError, extract_fast, frontmatter_template

from .screens.modals import EditorScreen


def answer_template(schema: dict) -> str:
    """A frontmatter block with an example value for every field, in the schema's order: what
    `uwf thread answer` opens $EDITOR on."""
    return frontmatter_template(schema)


def answer_problem(text: str, template: str, schema: dict) -> str | None:
    """Why `text` cannot answer the role (None: it can): the untouched template, or what the
    extractor finds missing or wrong against the schema."""
    if text.strip() == template.strip():
        return "the form is still the template: fill in the fields (and write your answer below them)"
    try:
        extract_fast(text, schema)
    except ExtractError as exc:
        return exc.message
    return None


def answer_screen(title: str, prompt: str, schema: dict, template: str, *, draft: str | None = None,
                  keep: Callable[[str], None] | None = None) -> EditorScreen:
    """The form: the prompt above (it scrolls), the template (or the draft kept from the last time)
    to fill in below, checked when saved (ctrl+s); esc hands what was typed to `keep`."""
    return EditorScreen(
        title,
        draft if draft is not None else template,
        lambda text: answer_problem(text, template, schema),
        context=prompt,
        language="markdown",
        keep=keep,
    )
