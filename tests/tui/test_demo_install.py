"""`uwf-tui --demo` however uwf was installed: the wheel carries the examples
(<prefix>/share/uwf/examples), and the demo finds them there when no checkout is beside the
package, as in a venv that a wheel was installed into (pip, pipx, uv tool)."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from conftest import EXAMPLES, REPO


def test_the_wheel_carries_every_example(uwf_wheel):
    wheel = uwf_wheel
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {name.split("/share/uwf/examples/", 1)[1] for name in names if "/share/uwf/examples/" in name}
    expected = {path.relative_to(EXAMPLES).as_posix() for path in EXAMPLES.rglob("*") if path.suffix in (".yaml", ".py")}
    assert expected and shipped == expected


def test_the_demo_finds_the_examples_where_the_wheel_put_them(tmp_path, monkeypatch):
    import shutil

    import uwf_tui.demo as demo

    prefix = tmp_path / "venv"
    shutil.copytree(EXAMPLES, prefix / "share" / "uwf" / "examples")
    monkeypatch.delenv("UWF_EXAMPLES", raising=False)
    monkeypatch.setattr(demo, "EXAMPLES", tmp_path / "site-packages" / "examples")  # no checkout beside the package
    monkeypatch.setattr(sys, "prefix", str(prefix))
    assert demo.examples_dir() == prefix / "share" / "uwf" / "examples"
    repo = demo.setup_demo(str(tmp_path / "demo"))
    from uwf_core.api import list_threads, list_workflows

    assert {entry.name for entry in list_workflows(repo)} >= {"solve-issue", "triage-bug", "analyze-topic"}
    assert list_threads(repo)
    assert str(prefix / "share" / "uwf" / "examples") in (tmp_path / "demo" / "config.yaml").read_text()
