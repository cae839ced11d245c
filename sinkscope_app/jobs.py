"""Long work as jobs: the engine's (the helpers at the end: :func:`submit`, :func:`status`,
:func:`follow`, :func:`stop`, :func:`restart`, :func:`result`), and, until every page uses
those, jobs of a session run here: off the script thread, with progress and Stop, kept
across reruns, page and language switches and Back, under a machine-wide limit.

A job is ``work(job)``, a plain function (no Streamlit inside) run in a worker thread.
It reports with :meth:`Job.report` (a share done and the details the page words), keeps
what it has so far in :attr:`Job.result` (so a stopped job keeps its partial results),
and polls :meth:`Job.check` (or :attr:`Job.stopping`) between steps: Stop is a
cooperative cancel, honoured at the next poll. A page starts a job with :func:`start`
under a name and the key of its inputs (the same key is the same job: a rerun, a language
switch or a page switch finds it running and never starts it again), finds it again with
:func:`get`, and draws its progress with :func:`watch` until it ends. Jobs live in the
session's state, so they survive every rerun of the session; their threads belong to no
run.

Heavy jobs (a corpus, a Lab run, a sweep, a text comparison) take one of
``SINKSCOPE_HEAVY_JOBS`` slots, machine-wide (lock files shared by every server process on
the machine); the others wait, and :attr:`Job.place` says their place in this server's
line. glibc's per-thread memory arenas grew a worker thread's memory ~3× on this machine;
the first job bounds them (``mallopt(M_MMAP_THRESHOLD, 65536)``, what
``MALLOC_MMAP_THRESHOLD_=65536`` sets at start).

Example::

    def work(job):
        for k in range(n):
            job.check()                      # Stop ends the job here
            job.result = partial = ...
            job.report((k + 1) / n, done=k + 1, total=n)
        return partial

    job = jobs.start("corpus", key, work)    # the same key: the same job, never restarted
    jobs.watch(job, lambda j: bar.progress(j.progress))
"""

from __future__ import annotations

import collections
import fcntl
import logging
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engine import settings

log = logging.getLogger("sinkscope.jobs")
WATCH_S = 24 * 3600.0  # how long one run draws a job's progress (tests set 0: one look)
POLL_S = 0.25  # how often a drawing refreshes, and a waiting job looks for a free slot
STATES = ("waiting", "running", "done", "stopped", "failed")


class Stopped(Exception):
    """Raised by :meth:`Job.check` once Stop was asked: the job ends "stopped", keeping
    its :attr:`Job.result` so far."""


@dataclass(eq=False)
class Job:
    """One piece of long work of a session.

    Attributes:
        name: which job of the session ("align_corpus", "lab_train", …).
        key: the identity of its inputs: the same key is the same job.
        heavy: whether it takes one of the machine's heavy-job slots.
        state: "waiting" (for a slot), "running", "done", "stopped" or "failed".
        progress: the share done, 0 … 1. info: the details of the last report.
        result: what the work returned, or what it kept so far (partial results).
        error: the exception a failed job raised.
        place: its place in line while waiting (1: next), 0 otherwise.
        seconds: how long it has run (so far, or in all).
    """

    name: str
    key: Any
    heavy: bool = True
    state: str = "waiting"
    progress: float = 0.0
    info: dict = field(default_factory=dict)
    result: Any = None
    error: BaseException | None = None
    place: int = 0
    started: float = 0.0
    ended: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def active(self) -> bool:
        """Waiting or running."""
        return self.state in ("waiting", "running")

    @property
    def stopping(self) -> bool:
        """Whether Stop was asked (the work polls this, or :meth:`check`)."""
        return self._stop.is_set()

    @property
    def seconds(self) -> float:
        if not self.started:
            return 0.0
        return (self.ended or time.monotonic()) - self.started

    def stop(self) -> None:
        """Ask the job to stop at its next poll (a waiting job never starts)."""
        self._stop.set()

    def check(self) -> None:
        """Raise :class:`Stopped` once Stop was asked: the work's cooperative cancel."""
        if self._stop.is_set():
            raise Stopped()

    def report(self, share: float, **info: Any) -> None:
        """The work's progress: ``share`` done (clamped to 0 … 1) and details for the page
        (``done=448, total=1200``); a poll of Stop too."""
        self.progress = float(min(max(share, 0.0), 1.0))
        self.info = info
        self.check()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job has ended (True) or ``timeout`` seconds passed (False)."""
        if self.thread is not None:
            self.thread.join(timeout)
        return not self.active


# --------------------------------------------------------------------------- the slots
class Slots:
    """At most ``limit`` heavy jobs at once on this machine: one lock file per slot in a
    folder every server process shares (``flock``, released by the kernel when a process
    dies), and this process's waiting jobs in one first-come line."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or Path(tempfile.gettempdir()) / "sinkscope-jobs"
        self.line: collections.deque[Job] = collections.deque()
        self.guard = threading.Lock()

    @property
    def limit(self) -> int:
        return max(1, int(settings.CONFIG.heavy_jobs))

    def _try(self) -> int | None:
        self.folder.mkdir(parents=True, exist_ok=True)
        for k in range(self.limit):
            fd = os.open(self.folder / f"slot-{k}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except OSError:
                os.close(fd)
        return None

    def acquire(self, job: Job) -> int | None:
        """A slot's lock for ``job``, waiting in line for it; None when the job was
        stopped while it waited."""
        with self.guard:
            self.line.append(job)
        try:
            while not job.stopping:
                with self.guard:
                    first = self.line[0] is job
                    for k, j in enumerate(self.line):
                        j.place = k + 1
                fd = self._try() if first else None
                if fd is not None:
                    return fd
                time.sleep(POLL_S)
            return None
        finally:
            with self.guard:
                self.line.remove(job)
                for k, j in enumerate(self.line):
                    j.place = k + 1
            job.place = 0

    @staticmethod
    def release(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


SLOTS = Slots()


def bound_arenas() -> None:
    """Keep worker threads' memory bounded (``engine.jobs.runner.bound_arenas``: glibc's
    mmap threshold at 64 KiB, once per process)."""
    from engine.jobs.runner import bound_arenas as bound

    bound()


def _run(job: Job, work: Callable[[Job], Any]) -> None:
    fd = None
    try:
        if job.heavy:
            fd = SLOTS.acquire(job)
            if fd is None:
                job.state = "stopped"
                return
        job.state, job.started = "running", time.monotonic()
        from .engines import one_thread

        one_thread()
        value = work(job)
        job.result = value if value is not None else job.result
        job.progress, job.state = 1.0, "stopped" if job.stopping else "done"
    except Stopped:
        job.state = "stopped"
    except Exception as e:  # the page says what went wrong; the log keeps the rest
        if not getattr(e, "code", None) and not isinstance(e, ValueError):
            log.exception("job %s failed", job.name)
        job.error, job.state = e, "failed"
    finally:
        job.ended = time.monotonic()
        if fd is not None:
            SLOTS.release(fd)


def start(store: dict, name: str, key: Any, work: Callable[[Job], Any], *,
          heavy: bool = True) -> Job:
    """The job ``name`` of a session (``store``: its ``st.session_state``) for inputs
    ``key``: the same one when it exists for that key (running or ended), else a new one
    running ``work(job)`` in a worker thread (a previous job of that name is stopped)."""
    jobs = store.setdefault("_jobs", {})
    old = jobs.get(name)
    if old is not None and old.key == key and old.state != "failed":
        return old
    if old is not None:
        old.stop()
    job = Job(name, key, heavy)
    bound_arenas()
    job.thread = threading.Thread(target=_run, args=(job, work), name=f"sinkscope-{name}",
                                  daemon=True)
    jobs[name] = job
    job.thread.start()
    return job


def get(store: dict, name: str) -> Job | None:
    """The session's job ``name``, running or ended, or None."""
    return store.get("_jobs", {}).get(name)


def forget(store: dict, name: str) -> None:
    """Stop the session's job ``name`` (if it runs) and drop it with its results."""
    job = store.get("_jobs", {}).pop(name, None)
    if job is not None:
        job.stop()


def watch(job: Job, draw: Callable[[Job], None], *, every: float = POLL_S) -> None:
    """Redraw ``job``'s progress with ``draw(job)`` every ``every`` seconds until it ends
    (or :data:`WATCH_S` passed). Each drawing sends an element, so any click meanwhile
    ends this run at once (Streamlit reruns the page) while the job runs on; the next run
    finds the job and watches again."""
    end = time.monotonic() + WATCH_S
    draw(job)
    while job.active and time.monotonic() < end:
        time.sleep(every)
        draw(job)


# --------------------------------------------------------------------------- engine jobs
# Long work as the engine's jobs (``engine.jobs``: threads embedded, Ray tasks served),
# reached through the engine interface (``sinkscope_app.engines``); a session remembers
# each of its jobs by name: the engine's id (for the page's address) and the body (for
# Restart). Torch-free: the results come back as ``engine.jobs.results``' dataclasses.
ENGINE_JOBS = "_engine_jobs"  # session key: name → {"id", "body", "result"}


def _engine(engine=None):
    from . import engines

    return engine or engines.current()


def _kept(store: dict, name: str) -> dict | None:
    return store.get(ENGINE_JOBS, {}).get(name)


def submit(store: dict, name: str, body: dict, *, engine=None):
    """Start ``body`` (``{"kind", "settings", "data"}``) as the engine's job and remember it
    as the session's job ``name``; its ``JobStatus`` (``.id`` goes in the page's address).
    The session's previous job of that name is stopped (when it still runs) and forgotten.

    Raises:
        SinkscopeError: a bad body (with a code), ``WorkTooLarge`` over the job budget;
        ``EngineUnavailable`` / ``EngineBusy`` from a served engine.
    """
    eng = _engine(engine)
    old = _kept(store, name)
    if old is not None:
        with _quiet():
            eng.stop_job(old["id"])
    st = eng.start_job(body)
    store.setdefault(ENGINE_JOBS, {})[name] = {"id": st.id, "body": body, "result": None}
    return st


def adopt(store: dict, name: str, job_id: str) -> None:
    """Make the job ``job_id`` (from the page's address, after a reload or a restart of
    the front end) the session's job ``name``, unless it is already."""
    kept = _kept(store, name)
    if kept is None or kept["id"] != job_id:
        store.setdefault(ENGINE_JOBS, {})[name] = {"id": str(job_id), "body": None,
                                                   "result": None}


def job_id(store: dict, name: str) -> str | None:
    """The engine's id of the session's job ``name``, or None."""
    kept = _kept(store, name)
    return None if kept is None else kept["id"]


def status(store: dict, name: str, *, engine=None):
    """The ``JobStatus`` of the session's job ``name`` (None when there is none, or when
    the engine no longer knows it: then it is forgotten)."""
    from engine.jobs.errors import JobNotFound

    kept = _kept(store, name)
    if kept is None:
        return None
    try:
        return _engine(engine).job(kept["id"])
    except JobNotFound:
        store[ENGINE_JOBS].pop(name, None)
        return None


def stop(store: dict, name: str, *, engine=None):
    """Stop the session's job ``name`` (it keeps its best or partial result); its status,
    or None when there is none."""
    kept = _kept(store, name)
    return None if kept is None else _engine(engine).stop_job(kept["id"])


def restart(store: dict, name: str, *, engine=None):
    """The session's job ``name`` again, with the same body (a lost, failed or stopped
    job's Restart): a new job, remembered under the same name; its status."""
    eng = _engine(engine)
    kept = _kept(store, name)
    if kept is None:
        return None
    st = eng.start_job(kept["body"]) if kept["body"] is not None else eng.restart_job(kept["id"])
    store[ENGINE_JOBS][name] = {"id": st.id, "body": kept["body"], "result": None}
    return st


def result(store: dict, name: str, *, engine=None):
    """The typed result of the session's ended job ``name`` (kept in the session once
    fetched), or None while it runs or when it has none."""
    from engine.jobs.errors import JobConflict, JobNotFound

    kept = _kept(store, name)
    if kept is None:
        return None
    if kept["result"] is None:
        try:
            kept["result"] = _engine(engine).job_result(kept["id"])
        except (JobConflict, JobNotFound):
            return None
    return kept["result"]


def aligner_zip(store: dict, name: str, file: str | None = None, *, engine=None) -> bytes:
    """A trained aligner of the session's job ``name`` as a zip (``file``: which one)."""
    kept = _kept(store, name)
    if kept is None:
        raise KeyError(name)
    return _engine(engine).job_zip(kept["id"], file)


def follow(store: dict, name: str, draw: Callable[[Any], None], *, engine=None,
           every: float = POLL_S):
    """Poll the session's job ``name`` and draw its status with ``draw(status)`` every
    ``every`` seconds until it ends (or :data:`WATCH_S` passed); its last status (None
    when there is none). As with :func:`watch`, a click meanwhile ends this run while the
    job runs on; the next run follows it again."""
    st = status(store, name, engine=engine)
    if st is None:
        return None
    end = time.monotonic() + WATCH_S
    draw(st)
    while st.active and time.monotonic() < end:
        time.sleep(every)
        st = status(store, name, engine=engine)
        if st is None:
            return None
        draw(st)
    return st


class _quiet:
    """Ignore the engine's refusals and absence (stopping a job that may be gone)."""

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb) -> bool:
        from engine.errors import SinkscopeError

        from .engines import EngineUnavailable

        return e is not None and isinstance(e, (SinkscopeError, EngineUnavailable))
