"""A `uwf` runner bound to one root (a directory or a PostgreSQL URL), for tests that run the real
command on both backends: `run(*args, code=0)` asserts the exit code and no traceback and returns
the JSON printed (or, for a failure, the CompletedProcess); `run.spawn(*args)` starts one."""

from __future__ import annotations

import json
import os
import subprocess

from conftest import REPO, _uwf_command


def runner(location: str, env_file: str):
    env = dict(os.environ, UWF_STORAGE_ROOT=location, UWF_ENV_FILE=env_file)

    def run(*args: str, code: int = 0):
        done = subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=180)
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode == code, done.stderr
        return json.loads(done.stdout) if done.stdout.strip() and code == 0 else done

    def spawn(*args: str) -> subprocess.Popen:
        return subprocess.Popen([*_uwf_command(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO))

    run.spawn = spawn
    run.location = location
    return run


def loop_runner(location: str, root_dir, tmp_path, agents: dict[str, str], default: str):
    """A runner on a root with the loop workflow and text agents (name → `sh -c` script)."""
    from loop_workflow import loop_workflow

    run = runner(location, str(root_dir / "host.env"))
    (tmp_path / "loop.yaml").write_text(loop_workflow(50))
    run("workflow", "put", str(tmp_path / "loop.yaml"))
    for name, script in agents.items():
        run("agent", "add", name, "--protocol", "text", "--", "sh", "-c", script)
    run("setup", "--default-agent", default)
    return run
