"""A worker cut off from its PostgreSQL root mid-step loses its thread within 30 s, another worker
finishes it, and the first one's late result is refused by compare-and-set when its link comes
back. PostgreSQL and each worker run in network namespaces of their own, joined by veth pairs
with addresses that exist only inside them; the cut is `ip link set ... down`. As root only (the
namespaces need it); the lease takeover itself is tested without them below."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time

import pytest
from conftest import EXAMPLES, REPO, _uwf_command

SUBNET = "10.213"
PLANNER = json.dumps({"plan": "p", "steps": ["s"]})
DEVELOPER = json.dumps({"filesChanged": ["a.py"], "summary": "s"})
# Worker A (SLOWPOKE set) plans the slow task for 40 s; worker B develops it for 30 s: B's
# developer step is still running when A's late plan comes back, so A meets a moved head.
AGENT = (
    "prompt=$(cat); case \"$prompt\" in *'slow task'*) slow=1;; *) slow=0;; esac; "
    "if [ \"$slow\" = 1 ] && [ -n \"$SLOWPOKE\" ] && [ \"$UWF_ROLE\" = planner ]; then sleep 40; fi; "
    "if [ \"$slow\" = 1 ] && [ -n \"$DEV_SLEEP\" ] && [ \"$UWF_ROLE\" = developer ]; then sleep \"$DEV_SLEEP\"; fi; "
    f"case \"$UWF_ROLE\" in planner) echo '{PLANNER}';; developer) echo '{DEVELOPER}';; "
    "*) echo '{\"approved\": true, \"comments\": \"ok\"}';; esac"
)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


class Net:
    """Namespaces `db`, `a` and `b`; a veth pair joins each worker's to the database's."""

    def __init__(self) -> None:
        tag = str(os.getpid() % 100000)
        self.db, self.a, self.b = f"uwfdb{tag}", f"uwfa{tag}", f"uwfb{tag}"
        self.links = {self.a: (f"ua{tag}", f"uda{tag}", 1), self.b: (f"ub{tag}", f"udb{tag}", 2)}

    def up(self) -> Net:
        for ns in (self.db, self.a, self.b):
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        for ns, (near, far, net) in self.links.items():
            _ip("link", "add", near, "type", "veth", "peer", "name", far)
            _ip("link", "set", near, "netns", ns)
            _ip("link", "set", far, "netns", self.db)
            _ip("-n", ns, "addr", "add", f"{SUBNET}.{net}.2/30", "dev", near)
            _ip("-n", self.db, "addr", "add", f"{SUBNET}.{net}.1/30", "dev", far)
            _ip("-n", ns, "link", "set", near, "up")
            _ip("-n", self.db, "link", "set", far, "up")
        return self

    def cut(self, ns: str, up: bool = False) -> None:
        _ip("-n", ns, "link", "set", self.links[ns][0], "up" if up else "down")

    def down(self) -> None:
        for ns in (self.a, self.b, self.db):  # deleting a namespace deletes its veth ends
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True, timeout=30)


def _can_partition() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 is not installed"
    probe = f"uwfprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot make a network namespace here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "delete", probe], capture_output=True)
    return None


@pytest.fixture
def partitioned(pg_cluster, root_dir):
    """A PostgreSQL of its own in the `db` namespace, reached over TCP from `a` and `b`, and over
    its Unix socket (which no link cuts) by the test itself."""
    from pg_cluster import Cluster

    why = _can_partition()
    if why:
        pytest.skip(why)
    net = Net().up()
    cluster = Cluster()
    try:
        cluster.run("initdb", "-D", cluster.data, "-U", "postgres", "--auth", "trust", "-E", "UTF8")
        with open(os.path.join(cluster.data, "pg_hba.conf"), "a") as hba:
            hba.write(f"host all all {SUBNET}.0.0/16 trust\n")
        listen = f"{SUBNET}.1.1,{SUBNET}.2.1"
        options = f"-c listen_addresses='{listen}' -c unix_socket_directories={cluster.dir} -p {cluster.port} -c fsync=off"
        start = ["ip", "netns", "exec", net.db, "runuser", "-u", cluster.owner, "--"] if cluster.owner else ["ip", "netns", "exec", net.db]
        subprocess.run([*start, os.path.join(cluster.bin, "pg_ctl"), "-D", cluster.data, "-l", os.path.join(cluster.dir, "log"), "-w", "-o", options, "start"],
                       check=True, capture_output=True, timeout=60)
        cluster.create_database("part")
        yield net, cluster, root_dir
    finally:
        cluster.stop()
        net.down()


class Worker:
    """`uwf worker` in a namespace; its log lines, each with the time it was read."""

    def __init__(self, ns: str, url: str, name: str, env: dict) -> None:
        self.name = name
        self.lines: list[tuple[float, str]] = []
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, *_uwf_command(), "worker", "--name", name],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=dict(env, UWF_STORAGE_ROOT=url), cwd=str(REPO))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append((time.monotonic(), line.rstrip()))

    def first(self, *words: str) -> float | None:
        return next((at for at, line in self.lines if all(word in line for word in words)), None)

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        return "\n".join(line for _, line in self.lines)


def _until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


def test_a_partitioned_worker_loses_its_thread_and_its_late_result_is_refused(partitioned):
    net, cluster, root_dir = partitioned
    local = cluster.url("part")  # the Unix socket: the test's own view, never cut
    env = dict(os.environ, UWF_ENV_FILE=str(root_dir / "host.env"))

    def uwf(*args: str) -> dict | list:
        done = subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=dict(env, UWF_STORAGE_ROOT=local), cwd=str(REPO), timeout=60)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        return json.loads(done.stdout) if done.stdout.strip() else {}

    uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml"))
    uwf("agent", "add", "slow", "--protocol", "text", "--", "sh", "-c", AGENT)
    uwf("setup", "--default-agent", "slow")
    slow = uwf("thread", "start", "solve-issue", "-p", "the slow task")["thread"]
    quick = uwf("thread", "start", "solve-issue", "-p", "the quick task")["thread"]
    start_head = uwf("thread", "show", slow)["head"]
    uwf("thread", "run", slow, "--detach")
    port = cluster.port
    a = Worker(net.a, f"postgresql://postgres@{SUBNET}.1.1:{port}/part", "A", dict(env, SLOWPOKE="1"))
    b = None
    try:
        _until(lambda: (uwf("thread", "show", slow).get("running") or {}).get("worker") == "A", 60, "A to run the slow task's planner")
        time.sleep(1.0)
        net.cut(net.a)
        cut = time.monotonic()
        b = Worker(net.b, f"postgresql://postgres@{SUBNET}.2.1:{port}/part", "B", dict(env, DEV_SLEEP="30"))

        def taken_over():
            running = uwf("thread", "show", slow).get("running") or {}
            return running.get("worker") == "B" or uwf("thread", "show", slow)["head"] != start_head

        _until(taken_over, 45, "B to take the slow task over")
        takeover = time.monotonic()
        _until(lambda: uwf("thread", "show", slow)["head"] != start_head, 30, "B's planner step to land")
        moved = time.monotonic()
        uwf("thread", "run", quick, "--detach")  # other work, for A once it is back (B is busy developing)
        net.cut(net.a, up=True)
        back = time.monotonic()
        refused_at = _until(lambda: a.first(slow, "left"), 60, "A to find its late result refused")
        _until(lambda: any(item["thread"] == quick and item.get("reason") == "done" for item in uwf("thread", "list", "--all")), 90, "A to finish the quick task")
        _until(lambda: any(item["thread"] == slow and item.get("reason") == "done" for item in uwf("thread", "list", "--all")), 90, "B to finish the slow task")
    finally:
        a_log = a.stop()
        b_log = b.stop() if b is not None else ""
    print(f"\npartition timeline (s after the cut): claim lost and taken over by B {takeover - cut:.1f}; "
          f"B's first step landed {moved - cut:.1f}; link back {back - cut:.1f}; A's late result refused {refused_at - cut:.1f}")
    print(f"A's log:\n{a_log}\nB's log:\n{b_log}")
    assert takeover - cut <= 30, f"the claim outlived the link by {takeover - cut:.1f}s"
    runs = uwf("thread", "runs", slow)
    late = [run for run in runs if run.get("worker") == "A" and run["role"] == "planner" and run["status"] != "killed"]
    assert len(late) == 1 and late[0]["status"] == "failed" and late[0]["head"] == start_head, runs
    assert "moved from" in late[0]["error"], late[0]  # compare-and-set refused it: on record, the head never moved by it
    taken = [run for run in runs if run["status"] == "killed"]
    assert taken and "lost its lock" in taken[0]["error"] and "died" not in taken[0]["error"], taken
    steps = uwf("thread", "steps", slow)
    assert [step["role"] for step in steps] == ["planner", "developer", "reviewer"]
    assert all(run["worker"] == "B" for run in runs if run["status"] == "ok")
    assert {run["worker"] for run in uwf("thread", "runs", quick) if run["status"] == "ok"} == {"A"}  # A went on with other work
    assert "Traceback" not in a_log + b_log
    assert uwf("cas", "fsck")["ok"]


def test_a_lapsed_lease_is_taken_over_and_its_step_told_apart(pg_url, root_dir):
    """A worker that stops beating (here: its beat set back by hand, its process alive) loses the
    claim and its step lock to the next worker that looks; the runs log says why."""
    from uwf_core.api import Repo
    from uwf_core.store.pg.locks import LEASE_SECONDS

    env = dict(os.environ, UWF_STORAGE_ROOT=pg_url, UWF_ENV_FILE=str(root_dir / "host.env"))

    def uwf(*args: str):
        done = subprocess.run([*_uwf_command(), *args], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=60)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if done.stdout.strip() else {}

    uwf("workflow", "put", str(EXAMPLES / "solve-issue.yaml"))
    uwf("agent", "add", "slow", "--protocol", "text", "--", "sh", "-c", AGENT)
    uwf("setup", "--default-agent", "slow")
    thread = uwf("thread", "start", "solve-issue", "-p", "the slow task")["thread"]
    uwf("thread", "run", thread, "--detach")
    stuck = subprocess.Popen([*_uwf_command(), "worker", "--name", "stuck"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=dict(env, SLOWPOKE="1"), cwd=str(REPO))
    try:
        _until(lambda: (uwf("thread", "show", thread).get("running") or {}).get("worker") == "stuck", 60, "the stuck worker's step")
        stuck.send_signal(signal.SIGSTOP)  # alive, silent: no beat, sessions open
        repo = Repo.open(pg_url)
        repo.backend.db.execute("update uwf_queue set beat = now() - make_interval(secs => %s) where thread = %s", (LEASE_SECONDS + 1, thread))
        claim = repo.backend.queue.claim("rescuer")
        assert claim is not None and claim.thread == thread
        claim.release()
        done = subprocess.run([*_uwf_command(), "worker", "--once", "--name", "rescuer"], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=180)
        assert done.returncode == 0, done.stderr
    finally:
        stuck.send_signal(signal.SIGCONT)
        stuck.send_signal(signal.SIGTERM)
        stuck.communicate(timeout=60)
    runs = uwf("thread", "runs", thread)
    killed = [run for run in runs if run["status"] == "killed"]
    assert killed and "no heartbeat" in killed[0]["error"] and "worker stuck" in killed[0]["error"], runs
    assert [step["role"] for step in uwf("thread", "steps", thread)] == ["planner", "developer", "reviewer"]
