"""The jobs' errors: a code and its parameters, worded in English here and by a page in
its own language (torch-free)."""

from __future__ import annotations

from ..errors import SinkscopeError

MESSAGES: dict[str, str] = {
    "job_not_found": "No job {id!r} on this engine: it never existed, or it ended long ago "
                     "and its result was dropped (SINKSCOPE_JOB_KEEP_MB). Start it again.",
    "job_not_ended": "Job {id} is {state}: its result comes once it ends (poll "
                     "GET /v1/jobs/{id}).",
    "job_no_result": "Job {id} ended {state} without a result; restart it.",
    "job_no_aligner": "Job {id} holds no aligner {name!r}; it holds: {names}.",
    "job_queue_full": "{waiting} jobs are already waiting on this engine (the most is "
                      "{limit}, SINKSCOPE_JOB_QUEUE); try again in a moment.",
    "job_deadline": "The job ran past its deadline of {deadline_s:g} s "
                    "(SINKSCOPE_JOB_DEADLINE_S) and was stopped; what it had reached is "
                    "kept. Ask for less work.",
    "job_lost": "The worker running the job died ({reason}); restart the job.",
    "job_failed": "The job failed on the engine ({reason}); the operator's log has the "
                  "details. Restart it, or change its settings.",
    "job_model": "Model {model!r} is not served here; choose one of: {models}. Operators "
                 "add models with SINKSCOPE_MODELS.",
    "job_kind": "kind must be one of {kinds}, got {value!r}.",
    "job_body": "{where} {problem}.",
    "job_unknown": "Unknown field {name!r} in {where}: the fields are {fields}.",
    "job_pairs": "{where} holds {count:,} pairs; give {least:,} to {most:,}.",
    "job_gold": "{where}: pair {pair} has no gold links; every pair needs them here.",
    "job_work": "This job needs {work} {unit}; the engine allows {limit} per job ({env}). "
                "{change}",
    "job_weights": "The weights of {model!r} do not fit its settings ({reason}); send the "
                   "weights of a Lab job run with the same settings.",
}


class JobError(SinkscopeError):
    """A job that cannot be found, has no result yet, or ended badly; or a body that does
    not describe a job. ``code`` is a key of :data:`MESSAGES`; ``status`` the HTTP status
    the served engine answers with."""

    status = 422

    @classmethod
    def of(cls, code: str, **params) -> "JobError":
        return cls(MESSAGES[code].format(**params), code=code, params=params)


class JobNotFound(JobError):
    """No job with that id (HTTP 404)."""

    status = 404


class JobConflict(JobError):
    """The job has no result (yet), or not the one asked for (HTTP 409)."""

    status = 409


class JobQueueFull(JobError):
    """Too many jobs wait already (HTTP 503, Retry-After)."""

    status = 503
    retry_after_s = 5


JOB_ERRORS = {c.__name__: c for c in (JobError, JobNotFound, JobConflict, JobQueueFull)}


def error_dict(e: BaseException) -> dict:
    """An exception as the board keeps it: ``{"type", "code", "params", "message"}``."""
    import json

    params = getattr(e, "params", None) or {}
    try:  # params are numbers and names; one that is not plain JSON is left out
        params = json.loads(json.dumps(params, allow_nan=False))
    except (TypeError, ValueError):
        params = {}
    return {"type": type(e).__name__, "code": str(getattr(e, "code", "") or ""),
            "params": params, "message": str(e)}


def coded(code: str, **params) -> dict:
    """A job's error from a code of :data:`MESSAGES` (as :func:`error_dict` shapes it)."""
    return error_dict(JobError.of(code, **params))
