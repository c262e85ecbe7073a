"""`uwf init`: each template's project runs as its README says, offline, and its own test passes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import _uwf_command


@pytest.mark.parametrize("template", ["review-loop", "solve-issue", "python"])
def test_a_new_project_runs_as_its_readme_says_and_its_test_passes(uwf, root_dir, tmp_path, template):
    project = tmp_path / "project"
    made = uwf("init", str(project), "--template", template)
    assert made.code == 0, made.err
    assert sorted(made.json()["files"]) == sorted(os.listdir(project))
    block = (project / "README.md").read_text().split("```sh\n", 1)[1].split("```", 1)[0]
    env = {**os.environ, "UWF_STORAGE_ROOT": str(root_dir), "PATH": f"{Path(_uwf_command()[0]).parent}{os.pathsep}{os.environ['PATH']}"}
    thread = None
    for line in block.splitlines():
        command = line.split("   #", 1)[0].strip()
        if not command:
            continue
        if thread is not None:
            command = command.replace("THREAD", thread)
        done = subprocess.run(["sh", "-c", command], cwd=project, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (command, done.stderr)
        if " thread start " in command:
            thread = json.loads(done.stdout)["thread"]
        if " thread run " in command:
            assert json.loads(done.stdout)["done"] is True
    assert thread is not None
    steps = json.loads(subprocess.run(["sh", "-c", f"uwf thread steps {thread}"], cwd=project, env=env, capture_output=True, text=True,
                                      timeout=60, check=True).stdout)
    workflow = json.loads(subprocess.run(["sh", "-c", f"uwf thread show {thread}"], cwd=project, env=env, capture_output=True,
                                         text=True, timeout=60, check=True).stdout)["workflow"]
    roles = json.loads(subprocess.run(["sh", "-c", f"uwf workflow show {workflow}"], cwd=project, env=env, capture_output=True,
                                      text=True, timeout=60, check=True).stdout)["roles"]
    for step in steps:  # the canned answers say what their authors meant: no key a YAML comma made up
        schema = json.loads(subprocess.run(["sh", "-c", f"uwf cas schema get {roles[step['role']]['meta']}"], cwd=project, env=env,
                                           capture_output=True, text=True, timeout=60, check=True).stdout)
        assert set(step["output"]) <= set(schema.get("properties", {})), (step["role"], step["output"])
    tested = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", str(project)],
                            cwd=project, capture_output=True, text=True, timeout=300, env={**env, "PYTHONDONTWRITEBYTECODE": "1"})
    assert tested.returncode == 0 and re.search(r"\b1 passed\b", tested.stdout), tested.stdout[-2000:]


def test_init_refuses_a_directory_with_anything_in_it(uwf, tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("keep me\n")
    refused = uwf("init", str(tmp_path / "busy"))
    assert refused.code == 1 and "is not empty" in refused.err
    assert os.listdir(tmp_path / "busy") == ["mine.txt"]
    assert uwf("init", str(tmp_path / "other"), "--template", "nope").code == 2
