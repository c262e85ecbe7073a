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
