"""Running one job, wherever it runs (a thread of the embedded engine, a Ray worker):
its body checked again, its work called with a :class:`~engine.jobs.context.Context`, and
how it ended, as the board records it."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from typing import Any, Callable

from .. import settings as engine_settings
from .context import Context, Stopped
from .errors import coded, error_dict
from .spec import Spec, check

log = logging.getLogger("sinkscope.jobs")
_BOUNDED: list = []


def work_of(kind: str) -> Callable[[Context, Spec], tuple[dict, dict]]:
    """The work function of ``kind`` (imported on first use: it imports torch)."""
    from . import lab, text

    return {"lab_train": lab.train_models, "lab_sweep": lab.sweep,
            "align_corpus": text.align_corpus, "train_aligner": text.train_aligner,
            "compare_text": text.compare_text}[kind]


def bound_arenas() -> None:
    """Keep worker threads' memory bounded: glibc's mmap threshold fixed at 64 KiB (as
    ``MALLOC_MMAP_THRESHOLD_=65536`` does), once per process; nothing elsewhere. A worker
    thread's arena kept ~3× the memory of the same work on the main thread without it."""
    if _BOUNDED:
        return
    _BOUNDED.append(True)
    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt(-3, 65536)
    except (OSError, AttributeError):
        pass


def one_thread() -> None:
    """torch's thread count in this thread (``SINKSCOPE_TORCH_THREADS``; OpenMP's setting
    is per thread, and each job is a new thread or process)."""
    n = engine_settings.CONFIG.torch_threads
    if n > 0:
        import torch

        if torch.get_num_threads() != n:
            torch.set_num_threads(n)


def run(job_id: str, body: dict, ctx: Context,
        works: Callable[[str], Callable] = work_of) -> dict[str, Any]:
    """Run a job; how it ended: ``{"state", "result", "files", "error", "reason"}``
    (state done, stopped or failed; a stopped job keeps what its work returned, or its
    last partial result). Never raises for the job's own failures. ``works``: kind → its
    work function (tests give their own)."""
    try:
        spec = check(body)
        one_thread()
        doc, files = (None, {}) if ctx.stopping else works(spec.kind)(ctx, spec)
        state = "stopped" if ctx.stopping else "done"
    except Stopped:
        doc, files, state = None, {}, "stopped"
    except Exception as e:  # the page says what went wrong; the log keeps the rest
        if not getattr(e, "code", None) and not isinstance(e, ValueError):
            log.exception("job %s failed", job_id)
            err = coded("job_failed", reason=type(e).__name__)
        else:
            err = error_dict(e)
        return {"state": "failed", "result": None, "files": {}, "error": err, "reason": ""}
    error = None
    if state == "stopped" and ctx.reason == "deadline":
        error = coded("job_deadline", deadline_s=float(ctx.deadline_s or 0))
    return {"state": state, "result": doc if doc is not None else ctx.partial, "files": files,
            "error": error, "reason": ctx.reason if state == "stopped" else ""}
