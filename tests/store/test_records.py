"""`@record` behaves as `dataclasses.dataclass` does for what uwf's records use: the same
classes built both ways answer the same."""

from __future__ import annotations

import dataclasses
from functools import cached_property

import pytest

from uwf_core.encoding import records


def _both(frozen: bool):
    def make(decorator, field):
        class Point:
            x: int
            y: int = 0
            tags: list = field(default_factory=list)
            note: str | None = field(default=None, compare=False, repr=False)

            @cached_property
            def double(self) -> int:
                return self.x * 2

        return decorator(frozen=frozen)(Point)

    return make(records.record, records.field), make(dataclasses.dataclass, dataclasses.field)


@pytest.mark.parametrize("frozen", [True, False])
def test_a_record_answers_as_a_dataclass(frozen):
    ours, theirs = _both(frozen)
    for cls in (ours, theirs):
        a, b = cls(1, 2, ("t",), "n"), cls(1, 2, ("t",), "other note")
        assert a == b and a != cls(1, 3) and (a == 5) is False
        assert repr(a).endswith("Point(x=1, y=2, tags=('t',))")
        assert cls(3).tags == [] and cls(3).tags is not cls(3).tags  # a fresh default each time
        assert cls(x=4, y=5).y == 5 and cls(4).double == 8 and cls(4).double == 8  # cached_property works
        with pytest.raises(TypeError):
            cls()
        if frozen:
            assert hash(a) == hash(b)
            with pytest.raises(AttributeError):
                a.x = 9
        else:
            a.x = 9
            assert a.x == 9
            with pytest.raises(TypeError):
                hash(a)
    assert records.replace(ours(1, 2), y=7) == ours(1, 7)
    assert records.asdict(ours(1, 2, [ours(3)])) == {"x": 1, "y": 2, "tags": [{"x": 3, "y": 0, "tags": [], "note": None}], "note": None}
    with pytest.raises(TypeError):
        records.replace(ours(1), z=1)


def test_post_init_runs_and_order_of_defaults_is_checked():
    @records.record
    class Counter:
        start: int
        doubled: int = 0

        def __post_init__(self) -> None:
            self.doubled = self.start * 2

    assert Counter(4).doubled == 8
    with pytest.raises(TypeError):

        @records.record
        class Wrong:
            a: int = 1
            b: int


def test_a_killed_holder_not_yet_reaped_has_died(tmp_path):
    """A SIGKILLed worker whose parent has not waited for it is a zombie: `kill(pid, 0)` still
    finds it, but its locks and database sessions are gone. The next step says it died (a
    PostgreSQL root said it 'lost its session'), and a step lock it named is free."""
    import json
    import signal
    import subprocess
    import time

    from uwf_core.store.fs.locks import FsStepLocks
    from uwf_core.store.fs.root import Root
    from uwf_core.store.pg.locks import _why_lost
    from uwf_core.store.records import process_alive, this_host

    child = subprocess.Popen(["sleep", "30"])
    try:
        assert process_alive(child.pid)
        child.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 5
        while process_alive(child.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not process_alive(child.pid)  # a zombie: not reaped yet
        thread = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
        root = Root(str(tmp_path))
        (tmp_path / "locks").mkdir()
        (tmp_path / "locks" / f"thread-{thread}.lock").write_text(json.dumps({"pid": child.pid, "host": this_host()}))
        assert FsStepLocks(root).running(thread) is None
        assert _why_lost({"pid": child.pid, "host": this_host(), "serverStart": "s"}, "s") is None  # died
    finally:
        child.wait()
