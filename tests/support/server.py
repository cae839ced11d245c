"""A real ``streamlit run app.py`` on a loopback port, and Debian's Chromium settings.

Shared by the browser tests (tests/conftest.py), the load test and the latency benchmark.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]


def chromium_path() -> str:
    """Debian's chromium (override with SINKSCOPE_CHROMIUM)."""
    return os.environ.get("SINKSCOPE_CHROMIUM", "/usr/bin/chromium")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status_mb(pid: int, field: str) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (from /proc), 0 when it is gone."""
    return _status_mb(pid, "VmRSS")


def peak_rss_mb(pid: int) -> float:
    """Peak resident memory (VmHWM) of a process in MB, 0 when it is gone."""
    return _status_mb(pid, "VmHWM")


def cpu_seconds(pid: int, *, reaped: bool = False) -> float:
    """User + system CPU seconds a process has used so far (all its threads; with
    ``reaped``, also its children that have exited and been waited for), from /proc; 0
    when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15 if reaped else 13]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def descendants(root: int) -> set[int]:
    """The live processes descending from ``root`` (children, theirs, …; not root)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    kids, todo = set(), [root]
    while todo:
        p = todo.pop()
        for c, pp in parents.items():
            if pp == p and c not in kids:
                kids.add(c)
                todo.append(c)
    return kids


def tree_cpu(root: int, *, only: str = "") -> float:
    """CPU seconds so far of ``root`` and its descendants whose command line holds
    ``only``, with the children each has already reaped (a closed page's renderer)."""
    def cmdline(pid: int) -> str:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
        except OSError:
            return ""

    return sum(cpu_seconds(p, reaped=True) for p in {root} | descendants(root)
               if only in cmdline(p))


def command(port: int, *, launcher: bool = False) -> list[str]:
    """``streamlit run app.py`` on 127.0.0.1:port, headless, without usage statistics;
    with ``launcher``, ``python -m sinkscope_app.launch`` (``make run``: the same server,
    loading the model from its start)."""
    start = (["-m", "sinkscope_app.launch"] if launcher
             else ["-m", "streamlit", "run", str(ROOT / "app.py")])
    return [sys.executable, *start,
            "--server.headless", "true", "--server.port", str(port),
            "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
            "--server.fileWatcherType", "none"]


def die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn`` that has the child sent SIGTERM when the process that started it
    dies (Linux ``PR_SET_PDEATHSIG``), so a test run killed from outside (a CI timeout, a
    ``kill``) leaves no server behind even though the server runs in its own process group.

    Linux sends the signal when the *thread* that started the child ends: start children
    from a thread that lives as long as they should (the main thread), not a helper thread.
    """
    parent = os.getpid()

    def preexec() -> None:
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return  # not Linux: stop() is then the only way out
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def stop(proc: subprocess.Popen) -> None:
    """Terminate a server, killing it if it does not stop within 10 s; a server started in
    its own process group (``start_new_session=True``) takes whatever is left of the group
    with it."""
    try:
        own_group = os.getpgid(proc.pid) == proc.pid
    except ProcessLookupError:
        own_group = False
    try:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    finally:
        if own_group:
            kill_group(proc)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL every process left in ``proc``'s group (``proc`` was started with
    ``start_new_session=True``, so its pid is the group's id) and reap ``proc``."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    end = time.monotonic() + 5  # SIGKILL is delivered asynchronously: see it done
    while group_alive(proc.pid) and time.monotonic() < end:
        time.sleep(0.05)


def group_alive(pgid: int) -> bool:
    """Whether any live (not zombie) process is left in process group ``pgid``."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def wait_healthy(url: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> float:
    """Poll /_stcore/health until it answers ok; returns the seconds it took."""
    t0 = time.monotonic()
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return time.monotonic() - t0
        except OSError:
            pass
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"streamlit did not answer /_stcore/health within {timeout} s")
        time.sleep(0.1)


@contextlib.contextmanager
def streamlit_server(env: dict | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """Start the app on a free loopback port; yield (url, process); stop it after. Its log
    is deleted after a clean stop and kept (its end printed) if it holds a traceback."""
    port = free_port()
    log_path = Path(tempfile.mkdtemp(prefix="sinkscope-server-")) / "streamlit.log"
    cmd = command(port)
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=die_with_parent())
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, proc, log_path)
            yield url, proc
        finally:
            stop(proc)
    text = log_path.read_text()
    if "Traceback" in text:
        sys.stderr.write(f"\n--- streamlit server log ({log_path}) ---\n{text[-4000:]}\n")
    else:
        shutil.rmtree(log_path.parent, ignore_errors=True)
