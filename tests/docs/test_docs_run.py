"""Every command, workflow and Python block the docs show runs (the conventions: doc_blocks.py).
One test per page and kind, named by the page's path under docs/."""

from __future__ import annotations

import pytest

from doc_blocks import REPO, DocFailure, check_yaml_page, doc_pages, load_page, python_blocks, run_python_page, run_shell_page, yaml_blocks

DOCS = REPO / "docs"
PAGES = [load_page(path, DOCS) for path in doc_pages(DOCS)]
README = load_page(REPO / "README.md", DOCS)  # named ../README.md

SHELL_PAGES = [page for page in PAGES if page.commands]
PYTHON_PAGES = [page for page in PAGES if python_blocks(page)]
YAML_PAGES = [page for page in [*PAGES, README] if yaml_blocks(page)]


def by_name(pages):
    return pytest.mark.parametrize("page", pages, ids=[page.name for page in pages])


def fails_with(check) -> None:
    """Fail with the harness's message alone: it says what to fix on the page."""
    try:
        check()
    except DocFailure as error:
        message = str(error)
    else:
        return
    pytest.fail(message, pytrace=False)  # outside the except: no "during handling" chain in the report


def test_markers_lead_to_blocks_and_blocks_split_into_commands():
    problems = [problem for page in [*PAGES, README] for problem in page.problems]
    assert not problems, "\n".join(problems)


def test_the_docs_hold_runnable_blocks():
    """A marker typo everywhere must not leave the run tests checking nothing."""
    assert sum(len(page.commands) for page in PAGES) >= 1, "no `<!-- test: run -->` block under docs/ holds a command"


def postgres_for(request) -> dict[str, str]:
    """The session's PostgreSQL cluster (conftest's pg_cluster), found by libpq's defaults (PGHOST,
    PGPORT, PGUSER), its `uwf` database dropped first: the page may `createdb uwf` itself."""
    cluster = request.getfixturevalue("pg_cluster")  # skips where PostgreSQL or libpq is missing
    cluster.run("dropdb", "-h", cluster.dir, "-p", str(cluster.port), "-U", "postgres", "--if-exists", "uwf")
    return {"PGHOST": cluster.dir, "PGPORT": str(cluster.port), "PGUSER": "postgres"}


@by_name(SHELL_PAGES)
def test_shell_blocks_run(page, tmp_path, request):
    extra = postgres_for(request) if "postgres" in page.needs else {}
    fails_with(lambda: run_shell_page(page, tmp_path, extra))


@by_name(PYTHON_PAGES)
def test_python_blocks_run(page, tmp_path):
    fails_with(lambda: run_python_page(page, tmp_path))


@by_name(YAML_PAGES)
def test_yaml_blocks_parse_and_workflows_lint(page, tmp_path):
    fails_with(lambda: check_yaml_page(page, tmp_path))
