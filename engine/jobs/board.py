"""The board: every job's state, progress, place in line, partial result, Stop and result.

One :class:`Board` per engine. The embedded engine holds it in its process
(:mod:`engine.jobs.local`, its threads report to it under a lock); the served engine holds
it in a named Ray actor (:mod:`engine.jobs.served`), so any replica answers for any job and
a front end that restarts finds its job by id. Plain Python, no Ray, no torch: the
scheduling rules live here once.

A job is ``waiting`` (in line, or launched and not yet started), ``running``, then ``done``,
``stopped`` (Stop, or its deadline: what it reached is kept), ``failed`` (an error with a
code) or ``lost`` (its worker died: recorded here, since a dead worker never reports
again). At most ``slots`` jobs are launched at once; the others wait, first come first
served, and know their place in line (1: next). Ended jobs keep their results until
``keep_bytes`` of results are held; then the oldest ended ones are dropped.
"""

from __future__ import annotations

import itertools
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import JobConflict, JobError, JobNotFound, JobQueueFull, coded

STATES = ("waiting", "running", "done", "stopped", "failed", "lost")
ACTIVE = ("waiting", "running")
ENDED = ("done", "stopped", "failed", "lost")
KEEP_ENDED = 1000  # ended jobs kept at most, whatever their size


@dataclass
class Record:
    """One job as the board knows it.

    Attributes:
        id: its id. kind: one of ``engine.jobs.KINDS``. body: what was submitted (checked),
            kept for a restart. resources: what it asks Ray for (``num_cpus``, ``num_gpus``).
        state: one of :data:`STATES`. progress: the share done, 0 … 1. info: the last
            report's details (codes and numbers). partial: what it has reached so far (a
            small document). result: its result document once ended. files: named bytes
            (an aligner's zip). error: ``{"type", "code", "params", "message"}`` or None.
        reason: why it stopped ("requested", "deadline") or was lost. stop: Stop was asked.
        launched: handed to a worker. submitted, started, ended: wall-clock times.
        worker: where it runs (``pid``, ``node``, ``gpus``). size: bytes of its result.
    """

    id: str
    kind: str
    body: dict
    resources: dict = field(default_factory=dict)
    state: str = "waiting"
    progress: float = 0.0
    info: dict = field(default_factory=dict)
    partial: dict | None = None
    result: dict | None = None
    files: dict = field(default_factory=dict)
    error: dict | None = None
    reason: str = ""
    stop: bool = False
    launched: bool = False
    submitted: float = 0.0
    started: float = 0.0
    ended: float = 0.0
    worker: dict = field(default_factory=dict)
    size: int = 0

    @property
    def active(self) -> bool:
        return self.state in ACTIVE


def size_of(x: Any) -> int:
    """Roughly how many bytes a document holds (arrays and bytes exactly)."""
    if isinstance(x, np.ndarray):
        return int(x.nbytes)
    if isinstance(x, (bytes, bytearray, str)):
        return len(x)
    if isinstance(x, dict):
        return sum(size_of(k) + size_of(v) for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return 8 * len(x) + sum(size_of(v) for v in x if not isinstance(v, (int, float)))
    return 8


class Board:
    """Jobs, their line and their results (see the module's docstring).

    Args:
        slots: jobs launched at once (``SINKSCOPE_HEAVY_JOBS``).
        queue: jobs that may wait (``SINKSCOPE_JOB_QUEUE``); more: :class:`JobQueueFull`.
        keep_bytes: bytes of ended jobs' results kept (``SINKSCOPE_JOB_KEEP_MB``).
        clock: wall-clock time (tests pass their own).
    """

    def __init__(self, slots: int = 1, queue: int = 64, keep_bytes: int = 512 * 2**20,
                 clock=time.time) -> None:
        self.slots, self.queue, self.keep_bytes = max(1, int(slots)), int(queue), int(keep_bytes)
        self.clock = clock
        self.jobs: dict[str, Record] = {}
        self._order = itertools.count()

    # ------------------------------------------------------------------ the line
    def submit(self, kind: str, body: dict, resources: dict | None = None) -> dict:
        """Put a checked job in line; its status (``waiting``, with its place)."""
        waiting = sum(1 for r in self.jobs.values() if r.state == "waiting")
        if waiting >= self.queue:
            raise JobQueueFull.of("job_queue_full", waiting=waiting, limit=self.queue)
        rid = f"{next(self._order):x}-{secrets.token_hex(6)}"
        self.jobs[rid] = Record(rid, kind, body, dict(resources or {}),
                                submitted=self.clock())
        return self.status(rid)

    def launchable(self) -> list[Record]:
        """The jobs to hand to workers now: the first in line, while fewer than ``slots``
        are launched and not ended."""
        busy = sum(1 for r in self.jobs.values() if r.launched and r.active)
        line = [r for r in self.jobs.values()
                if r.state == "waiting" and not r.launched and not r.stop]
        return line[:max(0, self.slots - busy)]

    def launched(self, rid: str) -> None:
        """The job was handed to a worker (it still waits until the worker begins)."""
        self.jobs[rid].launched = True

    def place(self, rec: Record) -> int:
        """Its place in line while it waits (1: next), 0 otherwise."""
        if rec.state != "waiting":
            return 0
        line = [r for r in self.jobs.values() if r.state == "waiting"]
        return line.index(rec) + 1

    # ------------------------------------------------------------------ what workers say
    def begin(self, rid: str, worker: dict | None = None) -> bool:
        """The worker started the job: ``running``. Returns whether to stop at once."""
        rec = self.jobs.get(rid)
        if rec is None or not rec.active:
            return True
        rec.state, rec.started, rec.worker = "running", self.clock(), dict(worker or {})
        return rec.stop

    def report(self, rid: str, progress: float | None = None, info: dict | None = None,
               partial: dict | None = None) -> bool:
        """A running job's progress (clamped to 0 … 1), details and partial result; returns
        whether it should stop (Stop asked, or the job is no longer running here)."""
        rec = self.jobs.get(rid)
        if rec is None or rec.state != "running":
            return True
        if progress is not None:
            rec.progress = float(min(max(progress, 0.0), 1.0))
        if info is not None:
            rec.info = dict(info)
        if partial is not None:
            rec.partial = partial
        return rec.stop

    def finish(self, rid: str, state: str, result: dict | None = None,
               files: dict | None = None, error: dict | None = None, reason: str = "") -> None:
        """The job ended ``state`` (done, stopped, failed or lost). A job that has ended
        already keeps its first ending (a late word from a cancelled worker is ignored)."""
        rec = self.jobs.get(rid)
        if rec is None or not rec.active:
            return
        if state not in ENDED:
            raise ValueError(f"a job ends done, stopped, failed or lost, not {state!r}")
        rec.state, rec.ended = state, self.clock()
        rec.result, rec.files = result, dict(files or {})
        rec.error, rec.reason = error, reason or rec.reason
        if state == "done":
            rec.progress = 1.0
        rec.size = size_of(result) + size_of(rec.files) + size_of(rec.partial)
        self._drop_old()

    def lose(self, rid: str, reason: str) -> None:
        """The job's worker died (or its node): ``lost``, with what it had reached."""
        self.finish(rid, "lost", error=coded("job_lost", reason=reason), reason=reason)

    # ------------------------------------------------------------------ what callers ask
    def stop(self, rid: str) -> dict:
        """Stop: a job that was not handed to a worker ends ``stopped`` at once; a launched
        one is asked to stop at its next report (it keeps what it has reached)."""
        rec = self._get(rid)
        if rec.active:
            rec.stop, rec.reason = True, "requested"
            if rec.state == "waiting" and not rec.launched:
                self.finish(rid, "stopped", reason="requested")
        return self.status(rid)

    def status(self, rid: str) -> dict:
        """The job's status document (``GET /v1/jobs/{id}``)."""
        rec = self._get(rid)
        end = rec.ended or self.clock()
        return {"id": rec.id, "kind": rec.kind, "state": rec.state, "progress": rec.progress,
                "place": self.place(rec), "info": dict(rec.info), "partial": rec.partial,
                "error": rec.error, "reason": rec.reason, "stop": rec.stop,
                "submitted": rec.submitted,
                "seconds": max(0.0, end - rec.started) if rec.started else 0.0,
                "worker": dict(rec.worker), "resources": dict(rec.resources),
                "result": rec.result is not None or rec.partial is not None,
                "files": sorted(rec.files)}

    def outcome(self, rid: str) -> tuple[dict, dict]:
        """(result document, files) of an ended job: its result, else the partial result it
        had reached (a job stopped at its deadline, or lost); JobConflict before it ends or
        when it ended with neither."""
        rec = self._get(rid)
        if rec.active:
            raise JobConflict.of("job_not_ended", id=rid, state=rec.state)
        doc = rec.result if rec.result is not None else rec.partial
        if doc is None:
            raise JobConflict.of("job_no_result", id=rid, state=rec.state)
        return doc, rec.files

    def body(self, rid: str) -> tuple[str, dict, dict]:
        """(kind, body, resources) a job was submitted with, for a restart."""
        rec = self._get(rid)
        return rec.kind, rec.body, rec.resources

    def overdue(self, deadline_s: float, grace_s: float) -> list[str]:
        """Running jobs past their deadline by more than ``grace_s`` (they ignored it)."""
        now = self.clock()
        return [r.id for r in self.jobs.values()
                if r.state == "running" and now - r.started > deadline_s + grace_s]

    def _get(self, rid: str) -> Record:
        rec = self.jobs.get(rid) if isinstance(rid, str) else None
        if rec is None:
            shown = rid if isinstance(rid, str) and len(rid) <= 64 else repr(rid)[:64]
            raise JobNotFound.of("job_not_found", id=shown)
        return rec

    def _drop_old(self) -> None:
        """Drop the oldest ended jobs while their results exceed ``keep_bytes`` or there
        are more than :data:`KEEP_ENDED` of them (the newest one always stays)."""
        ended = sorted((r for r in self.jobs.values() if not r.active), key=lambda r: r.ended)
        held = sum(r.size for r in ended)
        while len(ended) > 1 and (held > self.keep_bytes or len(ended) > KEEP_ENDED):
            old = ended.pop(0)
            held -= old.size
            del self.jobs[old.id]


__all__ = ["ACTIVE", "Board", "ENDED", "JobError", "Record", "STATES", "size_of"]
