"""uwf reads git's config files itself (engine/contain/git/config.py: a git process would cost every step
~10 ms); what it reads is held to what `git config --list` says of the same file."""

from __future__ import annotations

import subprocess

import pytest

from uwf_core.engine.contain.git.config import config_entries, parse

SAMPLES = [
    "[core]\n\tfsmonitor = touch /x\n\tbare = false\n",
    '[filter "lfs"]\n\tclean = git-lfs clean -- %f\n\tsmudge = "git-lfs smudge -- %f"\n\trequired\n',
    '[alias]\n\tst = "!sh ./tools/st.sh \\"a b\\""  ; comment\n\tco = checkout # x\n',
    '[branch.Main]\n\tremote = origin\n[Section "Sub \\"q\\" ]x"]\n\tKey = va\\\n  lue\n',
    '[include]\n  path = ../shared.gitconfig\n[includeIf "gitdir:~/w/"]\n  path = ~/w.gitconfig\n',
    '[core]\n  editor = "vim"   \n  pager = less -R # pager\n  hooksPath = .husky\n',
    '[a]b=1\n[c] d = "  spaced  " \n; a comment\n# another\n[e]\n\tf = x\\ty\\\\z\n',
]


@pytest.mark.parametrize("text", SAMPLES)
def test_parse_reads_a_config_file_as_git_lists_it(text, tmp_path):
    path = tmp_path / "config"
    path.write_text(text)
    listed = subprocess.run(["git", "config", "--file", str(path), "--list", "-z"], capture_output=True, text=True, check=True)
    expected = []
    for item in filter(None, listed.stdout.split("\0")):
        key, newline, value = item.partition("\n")
        expected.append((key, value if newline else "true"))
    assert parse(text) == expected


def test_includes_are_followed_conditional_ones_too(tmp_path):
    gitdir = tmp_path / "repo" / ".git"
    gitdir.mkdir(parents=True)
    (gitdir / "config").write_text('[include]\n\tpath = ../shared.gitconfig\n[includeIf "gitdir:/nowhere/"]\n\tpath = ../maybe.gitconfig\n')
    (tmp_path / "repo" / "shared.gitconfig").write_text("[core]\n\thooksPath = .husky\n")
    (tmp_path / "repo" / "maybe.gitconfig").write_text("[core]\n\tfsmonitor = ./fsmon.sh\n")
    entries = config_entries(str(gitdir), {"HOME": str(tmp_path / "home"), "GIT_CONFIG_NOSYSTEM": "1"})
    assert ("core.hookspath", ".husky") in [(key, value) for _, key, value in entries]
    assert ("core.fsmonitor", "./fsmon.sh") in [(key, value) for _, key, value in entries]
    assert {origin for origin, _, _ in entries} >= {str(gitdir / "config"), str(gitdir / ".." / "shared.gitconfig")}
