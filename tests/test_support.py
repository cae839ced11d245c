"""The test helpers stop what they start: a served engine's or a server's whole process
group goes, also when its leader had already exited (as Ray's processes outlive a crashed
``python -m engine serve``)."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.support.engine_server import EngineProcess
from tests.support.server import free_port, group_alive, kill_group, stop

# A leader that leaves a child behind in its process group, and one that stays with it.
LEAVES = ["sh", "-c", "sleep 60 & echo $!"]
STAYS = ["sh", "-c", "sleep 60 & echo $!; wait"]


def started(cmd: list[str]) -> tuple[subprocess.Popen, int]:
    """``cmd`` in its own process group; returns it and its child's pid."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
    child = int(proc.stdout.readline())
    proc.stdout.close()
    return proc, child


def cleanup(proc: subprocess.Popen) -> None:
    kill_group(proc)  # SIGKILL to the group, then wait until it is gone


def test_engine_stop_kills_the_group_its_exited_leader_left_behind():
    proc, child = started(LEAVES)
    try:
        proc.wait(timeout=10)  # the leader is gone, its child is not
        assert group_alive(proc.pid)
        engine = EngineProcess(free_port())
        engine.proc = proc
        engine.stop(timeout=5)
        assert engine.proc is None
        assert not group_alive(proc.pid), f"pid {child} outlived stop()"
    finally:
        cleanup(proc)


def test_engine_stop_terminates_a_live_leader_and_its_group():
    proc, child = started(STAYS)
    try:
        engine = EngineProcess(free_port())
        engine.proc = proc
        t0 = time.monotonic()
        engine.stop(timeout=5)
        assert proc.returncode is not None
        assert not group_alive(proc.pid), f"pid {child} outlived stop()"
        assert time.monotonic() - t0 < 8
        engine.stop()  # a second stop is a no-op
    finally:
        cleanup(proc)


def test_server_stop_takes_its_group_with_it():
    proc, child = started(STAYS)
    try:
        stop(proc)
        assert proc.returncode is not None
        assert not group_alive(proc.pid), f"pid {child} outlived stop()"
    finally:
        cleanup(proc)


@pytest.mark.parametrize("cmd", [LEAVES, STAYS], ids=["leader-exited", "leader-alive"])
def test_group_alive_sees_only_live_members(cmd):
    proc, _child = started(cmd)
    try:
        assert group_alive(proc.pid)
    finally:
        cleanup(proc)
    assert not group_alive(proc.pid)


ORPHAN = """
import subprocess, sys
from tests.support.server import die_with_parent
child = subprocess.Popen(["sleep", "60"], start_new_session=True, preexec_fn=die_with_parent())
print(child.pid, flush=True)
"""  # exits at once, as a test run killed from outside would, without stopping its child


def test_a_server_dies_with_the_run_that_started_it():
    import os
    import sys

    from tests.support.server import ROOT

    out = subprocess.run([sys.executable, "-c", ORPHAN], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True)
    child = int(out.stdout)
    end = time.monotonic() + 10
    while group_alive(child) and time.monotonic() < end:
        time.sleep(0.05)
    alive = group_alive(child)
    if alive:  # clean up before failing
        os.killpg(child, 9)
    assert not alive, f"pid {child} outlived the process that started it"


def test_relay_refuses_while_down_relays_while_up_and_resets_on_down():
    """The outage relay: what a client sees of a server that stops and starts again."""
    import http.server
    import threading

    import urllib3

    from tests.support.outage import Relay

    body = b"x" * 200_000

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the pooled connection is the one reset

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    http_ = urllib3.PoolManager(retries=False, timeout=5)
    relay = Relay(server.server_address[1], free_port())
    try:
        with pytest.raises(urllib3.exceptions.HTTPError):  # nothing listens yet
            http_.request("GET", relay.url)
        relay.up()
        assert [http_.request("GET", relay.url).data for _ in range(3)] == [body] * 3
        relay.down()
        with pytest.raises(urllib3.exceptions.HTTPError):  # the kept connection was reset
            http_.request("GET", relay.url)
        with pytest.raises(urllib3.exceptions.HTTPError):  # and the port is closed again
            http_.request("GET", relay.url)
        relay.up()  # the same port again
        assert http_.request("GET", relay.url).data == body
    finally:
        relay.down()
        server.shutdown()
        server.server_close()


def test_descendants_and_cpu_seconds_read_the_process_tree():
    """A child and its grandchild are descendants; the CPU a child burned is counted in
    its parent's time once the child has exited and been reaped (``reaped``)."""
    import os
    import sys

    from tests.support.server import cpu_seconds, descendants

    proc = subprocess.Popen([sys.executable, "-c",
                             "import subprocess, sys, time; p = subprocess.Popen(['sleep', '30']);"
                             " print(p.pid, flush=True); time.sleep(30)"],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        grandchild = int(proc.stdout.readline())
        proc.stdout.close()
        kids = descendants(os.getpid())
        assert {proc.pid, grandchild} <= kids and os.getpid() not in kids
        assert descendants(grandchild) == set()
    finally:
        kill_group(proc)
        proc.wait(timeout=10)
    before = cpu_seconds(os.getpid(), reaped=True)
    subprocess.run([sys.executable, "-c", "t = __import__('time').process_time()\n"
                    "while __import__('time').process_time() - t < 0.3: pass"], check=True)
    assert cpu_seconds(os.getpid(), reaped=True) - before >= 0.25
    assert cpu_seconds(os.getpid()) > 0 and cpu_seconds(2**22 + 12345) == 0.0


def test_the_cpu_report_counts_a_reaped_child_and_sums_by_file():
    import os

    from tests.support.cpu import by_file
    from tests.support.server import tree_cpu

    before = tree_cpu(os.getpid())
    subprocess.run(["sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"], check=True)
    assert tree_cpu(os.getpid()) - before > 0.05  # the child's CPU, reaped into this tree
    rows = [("tests/a.py::x", 1.0, 2.0), ("tests/b.py::y", 5.0, 5.0), ("tests/a.py::z", 0.5, 1.0)]
    assert by_file(rows) == [("tests/b.py", 5.0, 5.0, 1), ("tests/a.py", 1.5, 3.0, 2)]
