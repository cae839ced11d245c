"""``python -m engine serve`` as a separate process, started and stopped by tests and
benchmarks (the way an operator runs it); and :func:`scripted`, a loopback stand-in that
answers what a test tells it to."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.support.server import ROOT, die_with_parent, kill_group


class EngineProcess:
    """The served engine on 127.0.0.1:``port``; :meth:`start` and :meth:`stop` it as often
    as needed (the port stays the same, as after an operator's restart). Its output goes to
    ``log`` (by default a file in a new temporary folder, made at the first launch)."""

    def __init__(self, port: int, *args: str, log: Path | None = None,
                 root: Path | None = None):
        self.port, self.args = port, args
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen | None = None
        self.log = log
        self.root = root or ROOT  # the checkout whose engine runs (its code on PYTHONPATH)

    def start(self, timeout: float = 180) -> None:
        """Start the engine and return once it answers its health check."""
        self.launch()
        self.wait_ready(timeout)

    def launch(self) -> None:
        """Start the engine's process and return at once (:meth:`wait_ready` waits for it).
        Call it from the thread that outlives the engine (see ``die_with_parent``)."""
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "RAY_AUTH_MODE": "disabled"}
        if self.root != ROOT:
            env["PYTHONPATH"] = str(self.root)
        if self.log is None:
            self.log = Path(tempfile.mkdtemp(prefix="sinkscope-engine-")) / "engine.log"
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "engine", "serve", "--port", str(self.port),
                 *self.args], cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() kills all of it
                preexec_fn=die_with_parent())  # and SIGTERM (Serve and Ray shut down) if we die

    def wait_ready(self, timeout: float = 180) -> None:
        """Return once the launched engine answers its health check; stop it and raise if
        it exits first or does not answer within ``timeout`` seconds."""
        proc = self.proc
        if proc is None:
            raise RuntimeError("the engine was not launched")
        t0 = time.monotonic()
        while True:
            if proc.poll() is not None:
                self.stop()  # Ray's processes may have outlived it
                raise RuntimeError(f"the engine exited: {self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/v1/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() - t0 > timeout:
                self.stop()
                raise RuntimeError(f"the engine did not answer within {timeout} s: "
                                   f"{self.log.read_text()[-3000:]}")
            time.sleep(0.25)

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM (the engine shuts Serve and Ray down), then SIGKILL to whatever is left of
        its process group: on every path, also when the engine had already exited or
        crashed, since Ray's processes (GCS, raylet, workers, replicas) can outlive it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            kill_group(proc)


class Seen(list):
    """When requests came (a list of times), and their headers (``headers``)."""

    def __init__(self):
        super().__init__()
        self.headers: list[dict] = []


@contextlib.contextmanager
def scripted(*answers):
    """A loopback HTTP server that answers its n-th request with ``answers[n]`` (status,
    headers, body; the last one again after that). Yields (URL, the times requests came,
    with ``.headers``: each request's headers)."""
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        def answer(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.headers.append(dict(self.headers))
            seen.append(time.monotonic())
            status, headers, body = answers[min(len(seen), len(answers)) - 1]
            self.send_response(status)
            for k, v in {"Content-Type": "application/json", **headers}.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def listeners(pids: set[int]) -> list[tuple[str, int]]:
    """(local address, pid) of every listening TCP socket the processes ``pids`` hold,
    from ``ss -ltnp``."""
    import re

    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        for pid in map(int, re.findall(r"pid=(\d+)", line)):
            if pid in pids:
                found.append((line.split()[3], pid))
                break
    return found


def loopback(address: str) -> bool:
    """Whether a listening address (``ss``'s form: 127.0.0.1:P, [::ffff:127.0.0.1]:P,
    [::1]:P) is on the loopback interface."""
    host = address.rsplit(":", 1)[0].strip("[]")
    return host in ("::1", "localhost") or host.removeprefix("::ffff:").startswith("127.")


def reset_peak(pid: int) -> None:
    """Reset a process's peak resident memory (VmHWM) to its current one (Linux:
    ``clear_refs`` 5), so that the next peak read is of what comes after."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
