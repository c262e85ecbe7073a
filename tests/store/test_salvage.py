"""A damaged node file is salvaged: plain `cas fsck` names the damage (a damaged header is not "no
permission"), `cas fsck --repair` rebuilds the file from every row still readable — each verified
by its hash — keeps the damaged file beside it, and names what was lost and the threads needing it.

The expected rows are found without the repair's reader: what SQLite itself still reads, and
every row whose record lies whole on one page the damage did not touch (its bytes are searched
for in the file, as a hash, a type and the stored data in a row)."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest
from conftest import EXAMPLES, _uwf_command
from node_file import DB_NAME, db_path

AGENT = f"uwf-script --script {EXAMPLES / 'solve-issue.script.yaml'}"
# "N": byte N flipped; "N=V": byte N set to V, a value that still looks plausible (a page size
# that is another power of two, reserved bytes at the end of each page); "leaf-type": the type byte
# of the table leaf page holding the most node rows set to 0, its cells intact.
HEADER_DAMAGE = ["0", "16", "16=0x20", "16=0x08", "18", "20=0x20", "20=0x01", "20=0xC8", "28", "100"]
DAMAGES = [*HEADER_DAMAGE, "4096", "4100", "8192", "truncated"]
HEADER_NAMED = ["0", "16", "16=0x20", "18", "20=0x20", "20=0x01", "20=0xC8", "28"]
PAGE = 4096


def _run(root, *args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([*_uwf_command(), "--root", str(root), *args], capture_output=True, text=True, timeout=120, env=env)


def _ok(root, *args) -> str:
    done = _run(root, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _rows(root) -> dict[str, tuple[str, bytes]]:
    with closing(sqlite3.connect(db_path(root))) as conn:
        return {hash_: (type_, bytes(data)) for hash_, type_, data in conn.execute("select hash, type, data from nodes")}


def _put_contents(root) -> None:
    """Some 300 content nodes: small ones, compressed ones, and ones larger than a page (overflow
    chains); then the WAL folded into the file, as a clean close leaves it."""
    from uwf_core.repo import Repo
    from uwf_core.store.builtin_schemas import BUILTIN_HASHES

    repo = Repo.open(str(root))
    rnd = random.Random(22)
    with repo.nodes.nodes.batch():
        for index in range(300):
            if index % 20 == 0:
                text = rnd.randbytes(3000 + 40 * index).hex()  # hex of random bytes: compressed, still pages long
            elif index % 5 == 0:
                text = f"a line that compresses well {index}\n" * 50
            else:
                text = f"small {index} {rnd.random()}"
            repo.nodes.put(BUILTIN_HASHES["content"], text)
    repo.backend.nodes.db.checkpoint()
    repo.backend.nodes.db.close()


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("salvage") / "root"
    _ok(root, "workflow", "put", str(EXAMPLES / "solve-issue.yaml"))
    threads = []
    for index in range(3):
        threads.append(json.loads(_ok(root, "thread", "start", "solve-issue", "-p", f"task {index}"))["thread"])
        for _ in range(2):
            _ok(root, "thread", "step", threads[-1], "--agent", AGENT)
    _put_contents(root)
    assert not Path(str(db_path(root)) + "-wal").exists()
    rows = _rows(root)
    assert len(rows) > 300
    assert sum(data[:1] == b"\x78" for _, data in rows.values()) > 50
    assert sum(len(data) > 4096 for _, data in rows.values()) >= 10
    return root, threads


def _damaged(base, tmp_path, damage: str) -> Path:
    root = tmp_path / "root"
    shutil.copytree(base, root)
    path = db_path(root)
    if damage == "truncated":
        os.truncate(path, int(path.stat().st_size * 0.6))
        return root
    data = bytearray(path.read_bytes())
    at = _damaged_offset(base, damage)
    value = damage.partition("=")[2]
    if damage == "leaf-type":
        data[at] = 0
    else:
        data[at] = int(value, 16) if value else data[at] ^ 0xFF
    path.write_bytes(bytes(data))
    return root


def _damaged_offset(base, damage: str) -> int | None:
    """The byte a damage changes (None for a truncation)."""
    if damage == "truncated":
        return None
    if damage != "leaf-type":
        return int(damage.partition("=")[0])
    data = db_path(base).read_bytes()
    pages = [_row_at(data, hash_, type_, stored) // PAGE for hash_, (type_, stored) in _rows(base).items()]
    page = max(set(pages) - {-1, 0}, key=pages.count)
    assert data[page * PAGE] == 0x0D and pages.count(page) >= 10  # a table leaf, with rows to lose
    return page * PAGE


def _sqlite_reads(root) -> set[str]:
    """The nodes SQLite still reads from the damaged file, row by row until it gives up."""
    found = set()
    try:
        with closing(sqlite3.connect(f"file:{db_path(root)}?mode=ro", uri=True)) as conn:
            for hash_, _ in conn.execute("select hash, data from nodes"):
                found.add(hash_)
    except sqlite3.Error:
        pass
    return found


def _whole_rows(base_rows, damaged: bytes, hit: int | None, page_size: int = PAGE) -> set[str]:
    """Rows of at most a page whose record (hash, type, (touched,) data) is found whole in what the
    damage left, on a page other than the one holding the damaged byte `hit`."""
    hit_page = None if hit is None else hit // page_size
    found = set()
    for hash_, (type_, data) in base_rows.items():
        if len(data) > page_size // 2:
            continue  # may be on an overflow chain: not judged here
        at = _row_at(damaged, hash_, type_, data)
        if at >= 0 and at // page_size != hit_page:
            found.add(hash_)
    return found


def _row_at(data: bytes, hash_: str, type_: str, stored: bytes) -> int:
    """Where a node's record is in a file's bytes (hash, type, then touched and data, or data and
    touched as older node files keep them), or -1."""
    found = re.search(re.escape(hash_.encode() + type_.encode()) + b".{0,9}" + re.escape(stored), data, re.DOTALL)
    return found.start() if found is not None else -1


def _repair(root) -> dict:
    done = _run(root, "cas", "fsck", "--repair")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), done
    return json.loads(done.stdout)


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_node_file_is_reported_then_salvaged(base, tmp_path, damage):
    base_root, threads = base
    base_rows = _rows(base_root)
    root = _damaged(base_root, tmp_path, damage)
    damaged_bytes = db_path(root).read_bytes()
    expected = _sqlite_reads(root) | _whole_rows(base_rows, damaged_bytes, _damaged_offset(base_root, damage))
    if damage in HEADER_DAMAGE:
        expected = set(base_rows)
    assert len(expected) > 100

    checked = _run(root, "cas", "fsck")
    assert "Traceback" not in checked.stderr
    assert checked.returncode == 1
    assert [line for line in checked.stderr.splitlines() if line.startswith("uwf:")][0].startswith("uwf: error: fsck found")
    problems = json.loads(checked.stdout)["problems"]
    assert any("--repair" in problem["message"] for problem in problems), problems
    if damage in HEADER_NAMED:
        assert any(problem["message"].startswith("damaged header") for problem in problems), problems

    report = _repair(root)
    assert report["damaged"] is True
    recovered = _rows(root)
    assert expected <= set(recovered), f"lost what was readable: {sorted(expected - set(recovered))[:5]}"
    assert set(recovered) <= set(base_rows)
    assert report["recovered"] == len(recovered)
    for hash_, (type_, data) in recovered.items():
        assert (type_, data) == base_rows[hash_]

    aside = root / "cas" / report["setAside"][0]
    assert aside.name.startswith(f"{DB_NAME}.damaged-")
    assert aside.read_bytes() == damaged_bytes
    lost = {entry["hash"]: entry["neededBy"] for entry in report["lost"]}
    if damage in HEADER_DAMAGE:
        assert not lost

    after = _run(root, "cas", "fsck")
    assert "Traceback" not in after.stderr
    errors = [problem for problem in json.loads(after.stdout)["problems"] if problem["severity"] == "error"]
    assert all(re.search(r"[0-9A-Z]{13}", problem["message"]).group(0) in lost for problem in errors), errors
    assert (after.returncode == 0) == (not errors)
    listed = json.loads(_ok(root, "thread", "list"))
    assert {entry["thread"] for entry in listed} == set(threads)


def test_every_node_is_verified_and_a_step_goes_on_after_a_repair(base, tmp_path):
    from uwf_core.repo import Repo

    base_root, threads = base
    root = _damaged(base_root, tmp_path, "100")
    assert _run(root, "thread", "step", threads[0], "--agent", AGENT).returncode == 1
    _repair(root)
    store = Repo.open(str(root)).nodes
    for hash_ in store.all_hashes():
        store.get(hash_)  # verified against its name
    _ok(root, "thread", "step", threads[0], "--agent", AGENT)
    assert _run(root, "cas", "fsck").returncode == 0


def test_lost_nodes_are_named_with_the_threads_that_need_them(base, tmp_path):
    base_root, threads = base
    root = tmp_path / "root"
    shutil.copytree(base_root, root)
    head = json.loads(_ok(root, "thread", "show", threads[1]))["head"]
    type_ = _rows(root)[head][0]
    data = bytearray(db_path(root).read_bytes())
    at = data.find(head.encode() + type_.encode())
    page = at // 4096
    data[page * 4096 : (page + 1) * 4096] = bytes(4096)  # the page holding the head's row, wiped
    db_path(root).write_bytes(bytes(data))

    done = _run(root, "cas", "fsck", "--repair")
    assert done.returncode == 1
    assert "that are needed could not be recovered" in done.stderr
    report = json.loads(done.stdout)
    lost = {entry["hash"]: entry["neededBy"] for entry in report["lost"]}
    assert f"thread {threads[1]}" in lost[head]
    assert head not in _rows(root)
    fsck = json.loads(_run(root, "cas", "fsck").stdout)
    assert any(head in problem["message"] and threads[1] in problem["target"] for problem in fsck["problems"])


def test_a_leaf_page_with_a_damaged_type_byte_loses_no_row(base, tmp_path):
    """Only the page's first byte is gone: its cells are whole, so every row on it is recovered."""
    base_root, _ = base
    base_rows = _rows(base_root)
    root = _damaged(base_root, tmp_path, "leaf-type")
    assert _sqlite_reads(root) != set(base_rows)  # SQLite gives up on the page
    checked = _run(root, "cas", "fsck")
    assert checked.returncode == 1 and "Traceback" not in checked.stderr and "--repair" in checked.stderr

    report = _repair(root)
    assert report["damaged"] is True and not report["lost"]
    assert _rows(root) == base_rows
    assert _run(root, "cas", "fsck").returncode == 0


def test_a_damaged_header_is_not_called_a_permission_problem(base, tmp_path):
    root = _damaged(base[0], tmp_path, "18")
    done = _run(root, "cas", "put", "content", '"a new node"')
    assert done.returncode == 1
    assert "header is damaged" in done.stderr and "--repair" in done.stderr
    assert "permission" not in done.stderr


def test_rows_still_in_the_wal_are_salvaged_too(base, tmp_path):
    """Frames the WAL holds (not yet folded into the file), behind a header that is gone, and a
    page size that has to be guessed."""
    from uwf_core.repo import Repo
    from uwf_core.store.builtin_schemas import BUILTIN_HASHES

    live = tmp_path / "live"
    shutil.copytree(base[0], live)
    repo = Repo.open(str(live))
    db = repo.backend.nodes.db
    db.write_query("pragma wal_autocheckpoint=0")
    with repo.nodes.nodes.batch():
        added = [repo.nodes.put(BUILTIN_HASHES["content"], f"in the WAL {index} " + "x" * (5000 if index % 7 == 0 else index)) for index in range(40)]
    root = tmp_path / "root"
    shutil.copytree(live, root)  # the file and its WAL as a crash would leave them
    db.close()
    assert Path(str(db_path(root)) + "-wal").stat().st_size > 4096
    with open(db_path(root), "r+b") as handle:
        handle.write(bytes(100))  # magic, page size and all

    report = _repair(root)
    assert report["damaged"] and not report["lost"]
    assert set(added) | set(_rows(base[0])) == set(_rows(root))


def test_a_healthy_node_file_is_left_as_it_is(base, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(base[0], root)
    before = db_path(root).read_bytes()
    done = _run(root, "cas", "fsck", "--repair")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["damaged"] is False
    assert "nothing was changed" in done.stderr
    assert db_path(root).read_bytes() == before
    assert sorted(os.listdir(root / "cas")) == [DB_NAME]


def test_a_running_step_holds_the_repair_off(base, tmp_path):
    import fcntl

    root = _damaged(base[0], tmp_path, "0")
    thread = base[1][0]
    with open(root / "locks" / f"thread-{thread}.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        done = _run(root, "cas", "fsck", "--repair")
    assert done.returncode == 1
    assert f"thread {thread} is being stepped" in done.stderr
    assert sorted(os.listdir(root / "cas")) == [DB_NAME]


def test_a_node_file_open_in_another_process_holds_the_repair_off(base, tmp_path):
    """A connection left on the old file would delete the new file's WAL when it closes."""
    root = _damaged(base[0], tmp_path, "18")  # SQLite still reads it
    with closing(sqlite3.connect(db_path(root))) as reader:
        reader.execute("select count(*) from nodes").fetchall()
        done = _run(root, "cas", "fsck", "--repair")
    assert done.returncode == 1
    assert "is open in another process" in done.stderr
    assert not [name for name in os.listdir(root / "cas") if ".damaged-" in name]


def test_a_postgresql_root_has_no_node_file_to_repair(pg_url):
    done = subprocess.run([*_uwf_command(), "--root", pg_url, "cas", "fsck", "--repair"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "PostgreSQL" in done.stderr


def test_a_row_whose_hash_text_is_damaged_is_recovered_under_its_contents_name(base, tmp_path):
    """A flipped byte in a row's hash column (and the index's copy of it): SQLite cannot decode
    the text; fsck says so and names --repair; the repair names each row by its content, so the
    node comes back whole."""
    base_root, threads = base
    base_rows = _rows(base_root)
    root = tmp_path / "root"
    shutil.copytree(base_root, root)
    head = json.loads(_ok(base_root, "thread", "show", threads[0]))["head"]
    path = db_path(root)
    data = path.read_bytes()
    assert data.count(head.encode()) >= 1
    path.write_bytes(data.replace(head.encode(), head[:5].encode() + b"\xff" + head[6:].encode()))

    checked = _run(root, "cas", "fsck")
    assert checked.returncode == 1 and "Traceback" not in checked.stderr
    assert any("--repair" in problem["message"] for problem in json.loads(checked.stdout)["problems"])
    report = _repair(root)
    assert report["damaged"] is True and not report["lost"], report
    assert _rows(root) == base_rows
    assert _run(root, "thread", "show", threads[0]).returncode == 0


WAL_FLIPS = {  # where a byte of the WAL is flipped: (frame index or None for the header, offset in it)
    "a frame's page": ("middle", 24 + 100),
    "a frame's salt": ("middle", 8),
    "a frame's page number": ("middle", 1),
    "the header's magic": (None, 0),
    "the header's page size": (None, 10),
    "the header's salt": (None, 16),
    "the header's checksum": (None, 24),
}


def _wal_of_commits(base, tmp_path) -> tuple[Path, Path, int, list[str]]:
    """A root whose WAL holds 40 transactions, one node each, as a crash would leave it: the root,
    its WAL, the WAL's frame count and the nodes' hashes."""
    from uwf_core.repo import Repo
    from uwf_core.store.builtin_schemas import BUILTIN_HASHES

    live = tmp_path / "live"
    shutil.copytree(base[0], live)
    repo = Repo.open(str(live))
    db = repo.backend.nodes.db
    db.write_query("pragma wal_autocheckpoint=0")
    added = []
    for index in range(40):  # one transaction each: frames 1..N, commits all along
        with repo.nodes.nodes.batch():
            added.append(repo.nodes.put(BUILTIN_HASHES["content"], f"committed {index} " + "y" * 300))
    root = tmp_path / "root"
    shutil.copytree(live, root)
    db.close()
    wal = Path(str(db_path(root)) + "-wal")
    frames = (wal.stat().st_size - 32) // (24 + PAGE)
    assert frames > 30
    return root, wal, frames, added


@pytest.mark.parametrize("flip", WAL_FLIPS)
def test_a_bad_frame_in_the_wal_loses_none_of_the_frames_after_it(base, tmp_path, flip):
    """One byte flipped in a frame of the WAL: SQLite reads up to it and takes the rest for garbage,
    and the next connection to close deleted the WAL with every node committed after it. Now fsck
    names it with --repair, no command writes to the file or deletes the WAL meanwhile, reads go
    on (up to the bad frame), and --repair recovers every node of every intact frame."""
    root, wal, frames, added = _wal_of_commits(base, tmp_path)
    frame, offset = WAL_FLIPS[flip]
    bad = offset if frame is None else 32 + (frames // 2) * (24 + PAGE) + offset
    data = bytearray(wal.read_bytes())
    data[bad] ^= 0xFF
    wal.write_bytes(bytes(data))
    (root / "cas" / f"{DB_NAME}-shm").unlink(missing_ok=True)

    checked = _run(root, "cas", "fsck")
    assert checked.returncode == 1 and "damaged WAL" in checked.stderr and "--repair" in checked.stderr
    size = wal.stat().st_size
    assert _run(root, "thread", "list").returncode == 0  # reads go on...
    assert wal.exists() and wal.stat().st_size == size  # ...and leave the WAL as it was
    refused = _run(root, "cas", "put", "content", '"new"')
    assert refused.returncode == 1 and "damaged" in refused.stderr and "Traceback" not in refused.stderr
    assert wal.stat().st_size == size

    report = _repair(root)
    assert report["damaged"] and "WAL" in report["problem"] and not report["lost"], report
    assert set(added) <= set(_rows(root))  # the frames after the bad one included
    assert _run(root, "cas", "fsck").returncode == 0


def test_a_commit_torn_by_a_crash_is_not_called_damage(base, tmp_path):
    """A writer SIGKILLed between its commit frame's header and its page leaves a last frame that
    fails its checksum: a transaction that never ended, which SQLite drops. That is no damaged
    WAL (it was called one, and every later write refused, once in a CI run of the gc race):
    fsck passes, writes go on, and every earlier commit is there."""
    root, wal, frames, added = _wal_of_commits(base, tmp_path)
    data = bytearray(wal.read_bytes())
    last = 32 + (frames - 1) * (24 + PAGE)
    assert int.from_bytes(data[last + 4 : last + 8], "big") != 0  # the last frame ends a transaction
    data[last + 24 + PAGE // 2 : last + 24 + PAGE] = bytes(PAGE // 2)  # its page half written
    wal.write_bytes(bytes(data))
    (root / "cas" / f"{DB_NAME}-shm").unlink(missing_ok=True)

    checked = _run(root, "cas", "fsck")
    assert checked.returncode == 0, checked.stderr
    written = _run(root, "cas", "put", "content", '"after the crash"')
    assert written.returncode == 0, written.stderr
    assert set(added[:-1]) <= set(_rows(root))


def test_an_empty_node_file_is_named_as_such(base, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(base[0], root)
    for suffix in ("-wal", "-shm"):
        Path(str(db_path(root)) + suffix).unlink(missing_ok=True)
    db_path(root).write_bytes(b"")
    checked = _run(root, "cas", "fsck")
    assert checked.returncode == 1 and "the file is empty (0 bytes)" in checked.stderr and "--repair" in checked.stderr
    repaired = _run(root, "cas", "fsck", "--repair")
    assert "not damaged" not in repaired.stderr and "empty" in json.loads(repaired.stdout)["problem"]


STRESS = """
import sys, time, multiprocessing as mp
from uwf_core.repo import Repo
from uwf_core.store.builtin_schemas import BUILTIN_HASHES
root = sys.argv[1]

def writer(n):
    repo = Repo.open(root)
    end, i = time.time() + 6, 0
    while time.time() < end:
        with repo.nodes.nodes.batch():
            for k in range(5):
                repo.nodes.put(BUILTIN_HASHES["content"], f"w{n}-{i}-{k}" + "z" * 3000)
        i += 1

if __name__ == "__main__":
    from uwf_core.store.fs.file_check import wal_damage
    Repo.open(root).nodes.ensure_builtins()
    writers = [mp.Process(target=writer, args=(n,)) for n in range(2)]
    for p in writers:
        p.start()
    looks = said = 0
    end = time.time() + 5
    while time.time() < end:
        said += bool(wal_damage(root + "/cas/nodes.sqlite"))
        looks += 1
    for p in writers:
        p.join()
    print(looks, said)
"""


def test_commits_in_flight_are_never_taken_for_a_damaged_wal(tmp_path):
    """A frame header another process has written before its page looks, for a moment, like a
    damaged frame with a commit after it (one look in nine, with writers at work): the WAL is
    called damaged only when three looks 50 ms apart agree."""
    import sys

    done = subprocess.run([sys.executable, "-c", STRESS, str(tmp_path / "root")], capture_output=True, text=True, timeout=120)
    looks, said = map(int, done.stdout.split())
    assert looks > 20 and said == 0, (looks, said, done.stderr)
