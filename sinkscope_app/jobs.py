"""Long work as the engine's jobs, for the pages: a corpus aligned, the Lab's trainings and
sweep, an aligner trained, the text comparison.

A job runs where the engine runs (``engine.jobs``: a thread of this process embedded, a
Ray task of the served engine), reached through the engine interface
(:mod:`sinkscope_app.engines`). A page starts one with :func:`submit` under a name of its
own; the session remembers the engine's id (and the body, for Restart) and keeps the id
in the page's address too (the session key ``<name>_job``, declared in the page's
``params.py``), so a reload, another tab or a restarted front end finds the job again
(:func:`find`). The page draws its progress by polling (:func:`follow`), stops it
(:func:`stop`: the job keeps its best or partial result), restarts a lost, failed or
stopped one (:func:`restart`), and fetches its typed result (:func:`result`,
``engine.jobs.results``) once it ends. Nothing here imports torch: the results come back
as torch-free dataclasses.

Example::

    st = jobs.submit(ss, "align_corpus", {"kind": "align_corpus", "settings": {...},
                                          "data": {"pairs": [...]}})
    jobs.follow(ss, "align_corpus", lambda st: bar.progress(st.progress))
    corpus = jobs.result(ss, "align_corpus")   # a CorpusResult (partial after Stop)
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable

WATCH_S = 24 * 3600.0  # how long one run draws a job's progress (tests set 0: one look)
POLL_S = 0.25  # how often a drawing asks the engine again
ENGINE_JOBS = "_engine_jobs"  # session key: name → {"id", "body", "result"}
ID = re.compile(r"^[0-9a-f]{1,16}-[0-9a-f]{12}$")  # an engine's job id (engine.jobs.board)
GONE = "_jobs_gone"  # session key: name → the id of a job the engine no longer knows
#: Session key: the trained aligners this session's jobs made and the person chose to use
#: (name ``FILE@JOB`` → its θ); the Align page offers them as the method ``trained``.
SESSION_ALIGNERS = "_session_aligners"


def key(name: str) -> str:
    """The session key (and the page's address parameter's) that holds job ``name``'s id."""
    return f"{name}_job"


def _engine(engine=None):
    from . import engines

    return engine or engines.current()


def _kept(store: dict, name: str) -> dict | None:
    return store.get(ENGINE_JOBS, {}).get(name)


def _keep(store: dict, name: str, job_id: str, body: dict | None) -> None:
    store.setdefault(ENGINE_JOBS, {})[name] = {"id": str(job_id), "body": body,
                                               "result": None}
    store[key(name)] = str(job_id)


def submit(store: dict, name: str, body: dict, *, engine=None):
    """Start ``body`` (``{"kind", "settings", "data"}``) as the engine's job and remember it
    as the session's job ``name`` (its id also under :func:`key`, for the address); its
    ``JobStatus``. The session's previous job of that name is stopped (when it still runs)
    and forgotten.

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
    _keep(store, name, st.id, body)
    return st


def adopt(store: dict, name: str, job_id: str) -> None:
    """Make the job ``job_id`` (from the page's address, after a reload or a restart of
    the front end) the session's job ``name``, unless it is already."""
    kept = _kept(store, name)
    if kept is None or kept["id"] != job_id:
        _keep(store, name, job_id, None)


def job_id(store: dict, name: str) -> str | None:
    """The engine's id of the session's job ``name``, or None."""
    kept = _kept(store, name)
    return None if kept is None else kept["id"]


def forget(store: dict, name: str, *, engine=None) -> None:
    """Stop the session's job ``name`` (if it runs) and drop it, its id and its result."""
    kept = store.get(ENGINE_JOBS, {}).pop(name, None)
    store.pop(key(name), None)
    if kept is not None:
        with _quiet():
            _engine(engine).stop_job(kept["id"])


def find(store: dict, name: str, *, engine=None):
    """The ``JobStatus`` of the session's job ``name``, adopting the id its address holds
    (:func:`key`) first; None when there is none, or when the engine no longer knows it
    (then it is forgotten, and :func:`gone` says which id it was, once).

    Raises:
        EngineUnavailable: a served engine that does not answer.
    """
    wanted = store.get(key(name))
    if wanted and ID.match(str(wanted)):
        adopt(store, name, str(wanted))
    return status(store, name, engine=engine)


def gone(store: dict, name: str) -> str | None:
    """The id of the session's job ``name`` that the engine no longer knew, once (then
    forgotten): the page says so."""
    return store.get(GONE, {}).pop(name, None)


def status(store: dict, name: str, *, engine=None):
    """The ``JobStatus`` of the session's job ``name`` (None when there is none, or when
    the engine no longer knows it: then it is forgotten, see :func:`gone`)."""
    from engine.jobs.errors import JobNotFound

    kept = _kept(store, name)
    if kept is None:
        return None
    try:
        return _engine(engine).job(kept["id"])
    except JobNotFound:
        store[ENGINE_JOBS].pop(name, None)
        store.pop(key(name), None)
        store.setdefault(GONE, {})[name] = kept["id"]
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
    _keep(store, name, st.id, kept["body"])
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


def zip_of(store: dict, name: str, file: str, *, engine=None) -> Callable[[], bytes]:
    """What a download button calls (outside the page's run, where there is no session)
    for the aligner ``file`` of the session's job ``name``: its zip."""
    eng, job = _engine(engine), job_id(store, name)
    return lambda: eng.job_zip(job, file)


def register_aligner(store: dict, name: str, file: str, theta: float, *,
                     engine=None) -> str:
    """Make the aligner ``file`` of the session's ended job ``name`` (its θ ``theta``)
    usable for this session: the engine finds it by the name returned (method
    ``trained``: ``FILE@JOB``), and the session offers it (:data:`SESSION_ALIGNERS`).

    Raises:
        AlignerError: the job holds no such aligner (any more).
    """
    kept = _kept(store, name)
    if kept is None:
        raise KeyError(name)
    used = _engine(engine).register_aligner(kept["id"], file)
    store[SESSION_ALIGNERS] = {**(store.get(SESSION_ALIGNERS) or {}), used: float(theta)}
    return used


def follow(store: dict, name: str, draw: Callable[[Any], None], *, engine=None,
           every: float = POLL_S):
    """Poll the session's job ``name`` and draw its status with ``draw(status)`` every
    ``every`` seconds until it ends (or :data:`WATCH_S` passed); its last status (None
    when there is none). Each drawing sends an element, so a click meanwhile ends this
    run at once (Streamlit reruns the page) while the job runs on; the next run follows
    it again. A served engine that stops answering raises ``EngineUnavailable`` here (the
    page says so; nothing waits on it)."""
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


def read_id(raw: str, ctx: Any = None) -> str:
    """A job id from a page's address (a ``Param`` reader): refused (notice ``bad_job`` of
    the page's ``url`` words) unless it has the form of the engine's ids."""
    from .inputs import Refused, quote

    value = str(raw).strip()
    if not ID.match(value):
        raise Refused("bad_job", value=quote(raw, 40))
    return value


class _quiet:
    """Ignore the engine's refusals and absence (stopping a job that may be gone)."""

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb) -> bool:
        from engine.errors import SinkscopeError

        from .engines import EngineUnavailable

        return e is not None and isinstance(e, (SinkscopeError, EngineUnavailable))


__all__ = ["ENGINE_JOBS", "ID", "POLL_S", "SESSION_ALIGNERS", "WATCH_S", "adopt", "aligner_zip", "find",
           "follow", "forget", "gone", "job_id", "key", "read_id", "register_aligner", "restart",
           "result", "status", "stop", "submit", "zip_of"]
