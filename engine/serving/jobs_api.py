"""The jobs' HTTP routes: ``/v1/jobs`` and the Lab's quick ``/v1/lab/predict``.

- ``POST /v1/jobs`` — a typed body (:data:`engine.jobs.schemas.JobRequest`), checked and
  priced (413 ``WorkTooLarge`` over its budget), put in line: 202 with the job's status.
- ``GET /v1/jobs/{id}`` — state, progress, place in line, details, partial result, error.
- ``DELETE /v1/jobs/{id}`` — Stop: cooperative, the job keeps its best or partial result.
- ``GET /v1/jobs/{id}/result`` — the result document as JSON or NPZ (``Accept``), or one
  of its files as a zip (``Accept: application/zip``, ``?file=NAME``: a trained aligner).
- ``POST /v1/jobs/{id}/restart`` — the same body again, as a new job (202).
- ``POST /v1/lab/predict`` — trained Lab models on one held-out pair (no job: quick).

An unknown id is 404 (``JobNotFound``), a result asked for too early 409
(``JobConflict``), a full line 503 with ``Retry-After``; every error has the API's one
shape with a code. A body that does not fit its schema gets the engine's own error for it
(:func:`engine.jobs.spec.check`'s, the embedded engine's), 422.
"""

# No ``from __future__ import annotations``: FastAPI reads the routes' annotations.
import asyncio
from typing import Annotated, Callable, Optional, Union

from fastapi import APIRouter, Body, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import APIRoute

from .. import settings
from ..errors import SettingsError, SinkscopeError
from ..jobs.errors import JobConflict, JobError
from ..jobs.schemas import (BODIES, JobDocument, JobStatusResponse, LabPredictDocument,
                            LabPredictRequest)
from ..jobs.spec import check, check_model, check_names, price
from . import wire
from .schemas import ErrorResponse

ZIP = "application/zip"
PREFIXES = ("/v1/jobs", "/v1/lab/predict")
ENDPOINTS = ("POST /v1/jobs", "GET /v1/jobs/{id}", "DELETE /v1/jobs/{id}",
             "GET /v1/jobs/{id}/result", "POST /v1/jobs/{id}/restart", "POST /v1/lab/predict")
_ERR = {"model": ErrorResponse}
_ERRORS = {400: {**_ERR, "description": "The body is not JSON."},
           404: {**_ERR, "description": "No job with that id (JobNotFound, code "
                 "job_not_found): it never existed, or its result was dropped."},
           409: {**_ERR, "description": "The job has no result yet (code job_not_ended), "
                 "ended without one (job_no_result), or holds no such file (job_no_aligner) "
                 "(JobConflict)."},
           413: {**_ERR, "description": "The body is over SINKSCOPE_JOB_MAX_BODY, or the job "
                 "over its work budget (WorkTooLarge, SINKSCOPE_JOB_WORK_*)."},
           415: {**_ERR, "description": "The body is not sent as Content-Type: "
                 "application/json."},
           422: {**_ERR, "description": "The engine's own error, with a code: a body the "
                 "schema refuses, or one it allows that a rule refuses "
                 "(info.x-sinkscope-rules)."},
           503: {**_ERR, "description": "Too many jobs wait (JobQueueFull, code "
                 "job_queue_full, SINKSCOPE_JOB_QUEUE): try again after Retry-After seconds.",
                 "headers": {"Retry-After": {"description": "Seconds to wait.", "required": True,
                                             "schema": {"type": "integer"}}}}}


def _errors(*codes: int) -> dict:
    """The documented errors of a route (each in the API's one error shape)."""
    return {c: _ERRORS[c] for c in codes}


def max_body() -> int:
    """The largest body the jobs' routes read (``SINKSCOPE_JOB_MAX_BODY``)."""
    return settings.CONFIG.job_max_body


class JobRoute(APIRoute):
    """A route whose errors are the jobs' own: a JobError with its status (404, 409,
    503), and a body that does not fit the schema with the engine's error for it."""

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            from .routes import error

            try:
                return await handler(request)
            except JobError as e:
                answer = error(e.status, type(e).__name__, str(e), e.code, e.params)
                if e.status == 503:
                    answer.headers["Retry-After"] = str(getattr(e, "retry_after_s", 5))
                return answer
            except RequestValidationError as e:
                refusal = _engine_error(e, request)
                if refusal is None:
                    raise  # not JSON, no body: the API's own answers (400, 415)
                return error(422, type(refusal).__name__, str(refusal), refusal.code,
                             refusal.params)
        return route


def _engine_error(e: RequestValidationError, request: Request) -> Optional[SinkscopeError]:
    """The engine's error for a JSON body that does not fit the schema: what
    :func:`~engine.jobs.spec.check` says of a job's body, else the schema's first
    complaint (where, and what); None for a body that is not JSON at all."""
    errors = list(e.errors())
    media = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
    in_body = any(tuple(err.get("loc") or ("",))[0] == "body" for err in errors)
    if in_body and media != wire.JSON and not media.endswith("+json"):
        return None
    if any(err.get("type") == "json_invalid" or tuple(err.get("loc") or ()) == ("body",)
           and err.get("type") == "missing" for err in errors):
        return None
    if request.url.path.rstrip("/").endswith("/v1/jobs"):
        try:
            check(e.body)
        except SinkscopeError as err:
            return err
    first = errors[0] if errors else {}
    where = ".".join(str(x) for x in (first.get("loc") or ())[1:]) or "the body"
    problem = str(first.get("msg", "is not allowed"))[:200]
    return SettingsError(f"{where}: {problem}.", code="job_body",
                         params={"where": where, "problem": problem})


class ThreadJobs:
    """A replica's job calls (those of :class:`engine.jobs.served.Jobs`) on threads of
    this process (:class:`engine.jobs.local.LocalJobs`, the embedded engine's runner): a
    replica without Ray, as the API's in-process tests run one."""

    def __init__(self, local) -> None:
        self.local = local

    async def submit(self, spec) -> dict:
        """Put a checked and priced job (:class:`~engine.jobs.spec.Spec`) in line."""
        return await asyncio.to_thread(self.local.submit, spec.body)

    async def status(self, job_id: str) -> dict:
        return self.local.status(job_id)

    async def stop(self, job_id: str) -> dict:
        return self.local.stop(job_id)

    async def outcome(self, job_id: str) -> tuple[dict, dict]:
        return self.local.outcome(job_id)

    async def body(self, job_id: str) -> tuple:
        with self.local.lock:
            return self.local.board.body(job_id)


def _json(doc: dict, status: int = 200) -> Response:
    return Response(wire.dumps(doc, wire.JSON), status_code=status, media_type=wire.JSON)


def register(api: FastAPI, engine) -> None:
    """Add the jobs' routes to the replica's API (``engine``: the replica, whose ``jobs``
    is an :class:`engine.jobs.served.Jobs`, or a :class:`ThreadJobs` without Ray)."""
    router = APIRouter(route_class=JobRoute)

    async def admit(body: dict) -> Response:
        """A job checked (against its loaded model too), priced, put in line."""
        spec = check_names(check(body), engine.encoders)
        price(spec).check()
        await asyncio.to_thread(check_model, spec, engine.encoders.__getitem__)
        return _json(await engine.jobs.submit(spec), 202)

    @router.post("/v1/jobs", status_code=202, response_model=JobStatusResponse,
                 responses=_errors(400, 413, 415, 422, 503))
    async def submit(req: Annotated[Union[BODIES], Body(discriminator="kind")]) -> Response:
        """Start a job: checked, priced, put in line; its status (202)."""
        return await admit(req.model_dump())

    @router.get("/v1/jobs/{job_id}", response_model=JobStatusResponse, responses=_errors(404))
    async def status(job_id: str) -> Response:
        """A job's state, progress, place in line, details, partial result and error."""
        return _json(await engine.jobs.status(job_id))

    @router.delete("/v1/jobs/{job_id}", response_model=JobStatusResponse,
                   responses=_errors(404))
    async def stop(job_id: str) -> Response:
        """Stop a job: it keeps its best or partial result (a waiting job ends at once)."""
        return _json(await engine.jobs.stop(job_id))

    @router.get("/v1/jobs/{job_id}/result", response_model=JobDocument,
                responses={200: {"content": {wire.NPZ: {}, ZIP: {}},
                                 "description": "The result as JSON, NPZ (Accept: "
                                 f"{wire.NPZ}), or a file as a zip (Accept: {ZIP})."},
                           **_errors(404, 409, 422)})
    async def result(job_id: str, request: Request,
                     file: Optional[str] = Query(None, max_length=64,
                                                 description="Which file, with Accept: "
                                                 "application/zip (default: the first).")
                     ) -> Response:
        """An ended job's result (a stopped one's: what it reached), or one of its files."""
        doc, files = await engine.jobs.outcome(job_id)
        accept = (request.headers.get("accept") or "").lower()
        if ZIP in accept:
            name = file or (sorted(files)[0] if files else "")
            if name not in files:
                raise JobConflict.of("job_no_aligner", id=job_id, name=name,
                                     names=", ".join(sorted(files)) or "(none)")
            return Response(files[name], media_type=ZIP, headers={
                "Content-Disposition": f'attachment; filename="{name}.zip"'})
        media = wire.media_type(accept)
        body = await asyncio.to_thread(wire.dumps, doc, media)
        return Response(body, media_type=media)

    @router.post("/v1/jobs/{job_id}/restart", status_code=202,
                 response_model=JobStatusResponse, responses=_errors(404, 413, 422, 503))
    async def restart(job_id: str) -> Response:
        """The same job again, as a new job (after it was lost, failed or stopped)."""
        _, body, _ = await engine.jobs.body(job_id)
        return await admit(body)

    @router.post("/v1/lab/predict", response_model=LabPredictDocument,
                 responses={200: {"content": {wire.NPZ: {}}}, **_errors(400, 413, 415, 422)})
    async def lab_predict(req: LabPredictRequest, request: Request) -> Response:
        """Trained Lab models on one held-out pair: the target's plan, each model's plan
        and errors (no job: a quick call)."""
        from ..jobs.lab import predict_body

        media = wire.media_type(request.headers.get("accept"))
        doc = await asyncio.to_thread(predict_body, req.model_dump())
        return Response(await asyncio.to_thread(wire.dumps, doc, media), media_type=media)

    api.include_router(router)
