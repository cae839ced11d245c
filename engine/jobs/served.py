"""The served engine's jobs: Ray tasks with resource requests, tracked by a named actor.

The board (:class:`BoardActor`, a detached named actor on the engine's own Ray instance,
in namespace :data:`NAMESPACE`) keeps each job's record (:class:`~engine.jobs.board.Board`):
any replica answers for any job, and a front end that restarts finds its job by id. It
launches the first jobs in line as Ray tasks (:func:`run_job`, ``num_cpus`` and
``num_gpus`` from ``SINKSCOPE_JOB_CPUS`` / ``SINKSCOPE_JOB_GPUS``; at most
``SINKSCOPE_HEAVY_JOBS`` at once), so Ray places them on the cluster's nodes (a GPU job
only where a GPU is), and awaits each task:

- the task reports progress, partial results and reads the Stop flag through the board
  (every ~0.25 s); it returns how the job ended (done, stopped, failed);
- a task whose worker dies (``WorkerCrashedError``, a node lost, ...) is recorded as
  ``lost`` at once: a dead worker never reports again (neither does a cancelled task);
- a job that ignores its deadline (``SINKSCOPE_JOB_DEADLINE_S``) for :data:`GRACE_S` more
  is cancelled (its worker killed) and recorded as stopped at its deadline, its partial
  result kept.

:class:`Jobs` is what a replica holds: the board's handle and async calls to it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import ray

from .. import settings as engine_settings
from .board import Board
from .errors import JobError, coded

log = logging.getLogger("ray.serve.sinkscope")
BOARD, NAMESPACE = "sinkscope-jobs", "sinkscope"
GRACE_S = 30.0  # how long a job may overrun its deadline before its worker is stopped
WATCH_S = 1.0  # how often the board looks for such jobs


_ENCODERS: dict[str, Any] = {}


def _encoder(name: str):
    """The allow-listed model ``name`` in this worker process, loaded once (a worker runs
    job after job)."""
    if name not in _ENCODERS:
        from ..models.encoder import Encoder

        _ENCODERS[name] = Encoder(name)
    return _ENCODERS[name]


@ray.remote(max_retries=0)
def run_job(job_id: str, body: dict, deadline_s: float | None, board) -> dict:
    """One job in a Ray worker: begin on ``board`` (the actor that launched it), run the
    work with a context that reports to it, return how the job ended (the board records
    it)."""
    from .context import Context
    from .runner import bound_arenas, run

    bound_arenas()
    ctx_ray = ray.get_runtime_context()
    worker = {"pid": os.getpid(), "node": ctx_ray.get_node_id(),
              "gpus": [str(g) for g in ray.get_gpu_ids()]}
    stop = ray.get(board.begin.remote(job_id, worker))

    def sync(progress: float, info: dict, partial) -> bool:
        return ray.get(board.report.remote(job_id, progress, info, partial))

    ctx = Context(sync, deadline_s=deadline_s, encoder=_encoder)
    if stop:
        ctx.stop()
    return run(job_id, body, ctx)


class BoardActor:
    """The board as a Ray actor (async: it awaits its tasks while it answers calls).

    Args:
        slots, queue, keep_bytes: the board's limits (:class:`~engine.jobs.board.Board`).
        deadline_s: each job's deadline. resources: what each job asks Ray for
        (``num_cpus``, ``num_gpus``).
    """

    def __init__(self, slots: int, queue: int, keep_bytes: int, deadline_s: float,
                 resources: dict) -> None:
        self.board = Board(slots, queue, keep_bytes)
        self.deadline_s, self.resources = deadline_s, dict(resources)
        self.refs: dict[str, Any] = {}
        self._watching = False

    async def submit(self, kind: str, body: dict) -> dict:
        st = self.board.submit(kind, body, self.resources)
        self._launch()
        if not self._watching:
            self._watching = True
            asyncio.get_running_loop().create_task(self._watch())
        return self.board.status(st["id"])

    async def begin(self, job_id: str, worker: dict) -> bool:
        return self.board.begin(job_id, worker)

    async def report(self, job_id: str, progress, info, partial) -> bool:
        return self.board.report(job_id, progress, info, partial)

    async def status(self, job_id: str) -> dict:
        return self.board.status(job_id)

    async def stop(self, job_id: str) -> dict:
        st = self.board.stop(job_id)
        self._launch()
        return st

    async def outcome(self, job_id: str) -> tuple[dict, dict]:
        return self.board.outcome(job_id)

    async def body(self, job_id: str) -> tuple:
        return self.board.body(job_id)

    def _launch(self) -> None:
        for rec in self.board.launchable():
            opts = {k: v for k, v in self.resources.items() if v is not None}
            ref = run_job.options(name=f"sinkscope-job-{rec.kind}", **opts).remote(
                rec.id, rec.body, self.deadline_s, ray.get_runtime_context().current_actor)
            self.board.launched(rec.id)
            self.refs[rec.id] = ref
            asyncio.get_running_loop().create_task(self._await(rec.id, ref))

    async def _await(self, job_id: str, ref) -> None:
        """Record how the task ended; a crash or a lost node is ``lost``."""
        try:
            out = await ref
            self.board.finish(job_id, out["state"], out["result"], out["files"],
                              out["error"], out["reason"])
        except ray.exceptions.TaskCancelledError:
            self.board.finish(job_id, "stopped", reason="requested")
        except ray.exceptions.RayTaskError as e:  # the runner catches the work's errors
            log.error("job %s: %s", job_id, e)
            self.board.finish(job_id, "failed", error=coded(
                "job_failed", reason=type(getattr(e, "cause", e)).__name__))
        except Exception as e:  # WorkerCrashedError, NodeDiedError, OwnerDiedError, ...
            self.board.lose(job_id, type(e).__name__)
        finally:
            self.refs.pop(job_id, None)
            self._launch()

    async def _watch(self) -> None:
        """Stop the jobs that ran past their deadline and its grace without stopping."""
        while True:
            await asyncio.sleep(WATCH_S)
            for job_id in self.board.overdue(self.deadline_s, GRACE_S):
                ref = self.refs.get(job_id)
                self.board.finish(job_id, "stopped", error=coded(
                    "job_deadline", deadline_s=float(self.deadline_s)), reason="deadline")
                if ref is not None:
                    ray.cancel(ref, force=True)


def job_file(job_id: str, file: str) -> bytes | None:
    """One file of an ended job (a trained aligner's zip) from the board, or None: what
    ``engine.aligner.registry`` reads an aligner ``FILE@JOB`` from. Blocking: call it off
    the event loop (a replica looks aligners up in its worker threads)."""
    try:
        board = ray.get_actor(BOARD, namespace=NAMESPACE)
        _, files = ray.get(board.outcome.remote(job_id))
    except Exception:  # no board, no such job, no result yet
        return None
    return files.get(file)


def resources(config=None) -> dict:
    """What each job asks Ray for: ``SINKSCOPE_JOB_CPUS`` CPUs and ``SINKSCOPE_JOB_GPUS``
    GPUs ("auto": one where the cluster has a GPU, else none)."""
    c = config or engine_settings.CONFIG
    gpus = engine_settings.job_gpus(c.job_gpus)
    if gpus is None:
        gpus = 1.0 if ray.cluster_resources().get("GPU", 0) >= 1 else 0.0
    return {"num_cpus": float(c.job_cpus), "num_gpus": float(gpus)}


class Jobs:
    """A replica's line to the board (created on first use, or found by name).

    Args:
        resources: what each job asks Ray for (default :func:`resources`); only the call
            that creates the board sets it.
        name: the board's actor name in :data:`NAMESPACE` (another name: a board of its
            own, with its own line and resources).
    """

    def __init__(self, resources: dict | None = None, name: str = BOARD) -> None:
        self._resources, self.name = resources, name
        self._board = None

    def board(self):
        if self._board is None:
            c = engine_settings.CONFIG
            self._board = ray.remote(BoardActor).options(
                name=self.name, namespace=NAMESPACE, lifetime="detached", get_if_exists=True,
                num_cpus=0, max_concurrency=1000, max_restarts=0).remote(
                c.heavy_jobs, c.job_queue, c.job_keep_mb * 2**20, c.job_deadline_s,
                self._resources or resources(c))
        return self._board

    async def _call(self, method: str, *args):
        try:
            return await getattr(self.board(), method).remote(*args)
        except ray.exceptions.RayTaskError as e:  # the board's own errors: not found, ...
            cause = getattr(e, "cause", None)
            if isinstance(cause, JobError):
                raise cause from None
            raise
        except ray.exceptions.RayActorError:  # the board died: a new one next time
            self._board = None
            raise

    async def submit(self, spec) -> dict:
        """Put a checked and priced job (:class:`~engine.jobs.spec.Spec`) in line."""
        return await self._call("submit", spec.kind, spec.body)

    async def status(self, job_id: str) -> dict:
        return await self._call("status", job_id)

    async def stop(self, job_id: str) -> dict:
        return await self._call("stop", job_id)

    async def outcome(self, job_id: str) -> tuple[dict, dict]:
        return await self._call("outcome", job_id)

    async def body(self, job_id: str) -> tuple:
        return await self._call("body", job_id)
