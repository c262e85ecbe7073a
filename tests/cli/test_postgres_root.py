"""Every command on a PostgreSQL root answers as on a directory, with the same hashes; a URL that
cannot be reached is one line; `uwf root copy` moves a root either way, every hash kept, and can
run again; secrets stay in the host's .env, never in the database."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import EXAMPLES, REPO, _uwf_command

SCRIPT = f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"


def _runner(location: str, env_file) -> callable:
    env = dict(os.environ, UWF_STORAGE_ROOT=location, UWF_ENV_FILE=str(env_file))

    def run(*args: str, check: bool = True):
        done = subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=120)
        assert "Traceback" not in done.stderr, done.stderr
        if check:
            assert done.returncode == 0, (args, done.stderr)
        return done

    return run


def _session(run) -> dict:
    """The same commands on either root; what they printed that does not depend on time or ids."""
    seen = {}
    seen["put"] = json.loads(run("workflow", "put", str(EXAMPLES / "solve-issue.yaml")).stdout)
    run("workflow", "put", str(EXAMPLES / "triage-bug.yaml"))
    seen["list"] = json.loads(run("workflow", "list").stdout)
    seen["show"] = json.loads(run("workflow", "show", "solve-issue").stdout)
    seen["graph"] = run("workflow", "graph", "solve-issue").stdout
    thread = json.loads(run("thread", "start", "solve-issue", "-p", "same everywhere").stdout)["thread"]
    run("thread", "run", thread, "--agent", SCRIPT)
    steps = json.loads(run("thread", "steps", thread).stdout)
    seen["roles"] = [step["role"] for step in steps]
    seen["outputs"] = [step["output"] for step in steps]
    seen["output hashes"] = [json.loads(run("cas", "get", step["hash"], "--payload").stdout)["output"] for step in steps]
    seen["schemas"] = sorted(item["title"] or "" for item in json.loads(run("cas", "schema", "list").stdout))
    fork = json.loads(run("thread", "fork", steps[1]["hash"]).stdout)["thread"]
    seen["fork steps"] = len(json.loads(run("thread", "steps", fork).stdout))
    run("thread", "kill", fork)
    seen["walk"] = len(json.loads(run("cas", "walk", steps[-1]["hash"]).stdout))
    seen["fsck"] = json.loads(run("cas", "fsck").stdout)["ok"]
    seen["gc"] = json.loads(run("cas", "gc", "--grace", "0").stdout)["deleted"]
    seen["has"] = run("cas", "has", steps[0]["hash"][:8], check=False).returncode
    seen["read"] = "## Prompt" in run("thread", "read", thread).stdout
    run("agent", "add", "echo", "--protocol", "text", "--", "sh", "-c", "cat >/dev/null; echo '{}'")
    seen["agents"] = sorted(item["name"] for item in json.loads(run("agent", "list").stdout) if item["source"] == "config.yaml")
    seen["rollback"] = json.loads(run("workflow", "history", "solve-issue").stdout)["current"]["hash"]
    return seen


def test_every_command_answers_the_same_on_postgresql_as_on_a_directory(pg_url, tmp_path):
    on_disk = _session(_runner(str(tmp_path / "root"), tmp_path / "a.env"))
    in_db = _session(_runner(pg_url, tmp_path / "b.env"))
    assert in_db == on_disk
    assert in_db["put"]["hash"] == on_disk["put"]["hash"] and in_db["fsck"] is True


def test_an_unreachable_url_is_one_line_and_no_directory(tmp_path):
    run = subprocess.run(
        [*_uwf_command(), "--root", "postgresql:///nowhere?host=/nonexistent", "thread", "list"],
        capture_output=True, text=True, cwd=str(tmp_path), timeout=60,
    )
    assert run.returncode == 1 and run.stderr.startswith("uwf: error: cannot reach the PostgreSQL root") and run.stderr.count("\n") == 1
    assert not any(tmp_path.iterdir())  # never a directory named postgresql:
    secret = subprocess.run(
        [*_uwf_command(), "--root", "postgresql://me:hunter2-secret@127.0.0.1:1/db", "thread", "list"],
        capture_output=True, text=True, timeout=60,
    )
    assert "hunter2-secret" not in secret.stderr and "me:***@" in secret.stderr


@pytest.mark.parametrize("location", ["postgresql+psycopg://me:pw@127.0.0.1:1/uwf", "postgresql:/uwf", "postgres:uwf"])
def test_a_url_uwf_cannot_read_is_refused_by_name_and_makes_no_directory(tmp_path, location):
    run = subprocess.run([*_uwf_command(), "--root", location, "workflow", "put", str(EXAMPLES / "solve-issue.yaml")],
                         capture_output=True, text=True, cwd=str(tmp_path), timeout=60)
    assert run.returncode == 1 and run.stderr.count("\n") == 1
    assert "is not a PostgreSQL URL uwf reads: write postgresql://" in run.stderr and ":pw@" not in run.stderr
    assert not any(tmp_path.iterdir())


def test_root_copy_both_ways_keeps_every_hash_and_runs_again(pg_url, tmp_path):
    source = _runner(str(tmp_path / "source"), tmp_path / "a.env")
    (tmp_path / "a.env").write_text("MY_KEY=never-in-the-database-123\n")
    source("workflow", "put", str(EXAMPLES / "solve-issue.yaml"))
    done = json.loads(source("thread", "start", "solve-issue", "-p", "copy me").stdout)["thread"]
    source("thread", "run", done, "--agent", SCRIPT)
    active = json.loads(source("thread", "start", "solve-issue", "-p", "still going").stdout)["thread"]
    source("thread", "step", active, "--agent", SCRIPT)
    report = json.loads(source("root", "copy", str(tmp_path / "source"), pg_url).stdout)
    assert report["fsck"]["ok"] and report["nodes"] > 0 and report["threads"] == 1 and report["archived"] == 1
    again = json.loads(source("root", "copy", str(tmp_path / "source"), pg_url).stdout)
    assert again["nodes"] == 0 and again["nodesThere"] == report["nodes"] and again["threads"] == 0 and again["runs"] == 0
    back = json.loads(source("root", "copy", pg_url, str(tmp_path / "back")).stdout)
    assert back["fsck"]["ok"]
    copy = _runner(str(tmp_path / "back"), tmp_path / "a.env")
    for thread in (done, active):
        assert copy("thread", "steps", thread).stdout == source("thread", "steps", thread).stdout
        assert copy("thread", "runs", thread).stdout == source("thread", "runs", thread).stdout
    assert json.loads(copy("thread", "list", "--all").stdout) == json.loads(source("thread", "list", "--all").stdout)
    # the key stayed in the host's .env: nothing of it in the database
    from uwf_core.store.pg.libpq import connect

    conn = connect(pg_url, {})
    try:
        tables = [row[0] for row in conn.execute("select tablename from pg_tables where tablename like 'uwf_%%'", ()).fetchall()]
        for table in tables:
            dump = conn.execute(f"select string_agg(t::text, ' ') from {table} t").fetchone()[0] or ""
            assert "never-in-the-database" not in dump, table
    finally:
        conn.close()
