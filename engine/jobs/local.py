"""The embedded engine's jobs: the same kinds, states, progress, place in line and Stop as
the served engine's, run in threads of this process.

One :class:`LocalJobs` per embedded engine holds a :class:`~engine.jobs.board.Board` (under
a lock) and starts a thread for each job the board hands out (at most
``SINKSCOPE_HEAVY_JOBS`` at once; the others wait in line). Each thread bounds glibc's
arenas and sets torch's thread count (``SINKSCOPE_TORCH_THREADS``) before it computes.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from .. import settings as engine_settings
from .board import Board
from .context import Context
from .runner import bound_arenas, run, work_of
from .spec import check, check_model, check_names, price


def _allowed():
    from ..models.registry import allowed_models

    return allowed_models()


class LocalJobs:
    """Jobs in threads of this process.

    Args:
        encoder: ``encoder(name)`` → the loaded model ``name`` (the embedded engine's own,
            shared read-only); None: loaded by the job.
        models: ``models()`` → the names a job may ask for (default: the allow-list).
        slots, queue, keep_bytes, deadline_s: the board's limits and the jobs' deadline
            (default: ``SINKSCOPE_HEAVY_JOBS``, ``SINKSCOPE_JOB_QUEUE``,
            ``SINKSCOPE_JOB_KEEP_MB``, ``SINKSCOPE_JOB_DEADLINE_S``).
        every: seconds between a job's reports to the board.
        work: kind → work function, replacing the engine's (tests).
    """

    def __init__(self, encoder: Callable[[str], Any] | None = None, *,
                 models: Callable[[], Any] | None = None, slots: int | None = None, queue: int | None = None,
                 keep_bytes: int | None = None, deadline_s: float | None = None,
                 every: float = 0.2, work: dict | None = None) -> None:
        c = engine_settings.CONFIG
        self.board = Board(c.heavy_jobs if slots is None else slots,
                           c.job_queue if queue is None else queue,
                           c.job_keep_mb * 2**20 if keep_bytes is None else keep_bytes)
        self.deadline_s = c.job_deadline_s if deadline_s is None else deadline_s
        self.encoder, self.every, self.work = encoder, every, work
        self.models = models or _allowed
        self.lock = threading.Lock()
        self.threads: dict[str, threading.Thread] = {}

    def submit(self, body: Any) -> dict:
        """Check and price a job (SinkscopeError, WorkTooLarge), put it in line; its status."""
        spec = check_names(check(body), self.models())
        price(spec).check()
        check_model(spec, self.encoder)
        with self.lock:
            status = self.board.submit(spec.kind, spec.body)
            self._launch()
            return self.board.status(status["id"])

    def status(self, job_id: str) -> dict:
        with self.lock:
            return self.board.status(job_id)

    def stop(self, job_id: str) -> dict:
        with self.lock:
            return self.board.stop(job_id)

    def outcome(self, job_id: str) -> tuple[dict, dict]:
        with self.lock:
            return self.board.outcome(job_id)

    def restart(self, job_id: str) -> dict:
        """The same job again (a new id), e.g. after it failed or was stopped."""
        with self.lock:
            _, body, _ = self.board.body(job_id)
        return self.submit(body)

    def wait(self, job_id: str, timeout: float | None = None) -> dict:
        """Block until the job has ended or ``timeout`` seconds passed; its status."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            st = self.status(job_id)
            if st["state"] not in ("waiting", "running") or (
                    end is not None and time.monotonic() > end):
                return st
            time.sleep(0.02)

    def _launch(self) -> None:
        """Start a thread for each job the board hands out (under the lock)."""
        for rec in self.board.launchable():
            self.board.launched(rec.id)
            t = threading.Thread(target=self._run, args=(rec.id, rec.body),
                                 name=f"sinkscope-job-{rec.kind}", daemon=True)
            self.threads[rec.id] = t
            t.start()

    def _sync(self, job_id: str):
        def sync(progress: float, info: dict, partial) -> bool:
            with self.lock:
                return self.board.report(job_id, progress, info, partial)
        return sync

    def _run(self, job_id: str, body: dict) -> None:
        bound_arenas()
        with self.lock:
            stop = self.board.begin(job_id, {"thread": threading.current_thread().name})
        ctx = Context(self._sync(job_id), deadline_s=self.deadline_s, encoder=self.encoder,
                      every=self.every)
        if stop:
            ctx.stop()
        out = {"state": "failed", "result": None, "files": {}, "error": None, "reason": ""}
        try:
            out = run(job_id, body, ctx, self._works)
        finally:
            with self.lock:
                self.board.finish(job_id, out["state"], out["result"], out["files"],
                                  out["error"], out["reason"])
                self.threads.pop(job_id, None)
                self._launch()

    def _works(self, kind: str):
        return (self.work or {}).get(kind) or work_of(kind)
