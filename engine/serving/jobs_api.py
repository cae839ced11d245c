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
from ..jobs.spec import check, check_names, price
from . import wire

ZIP = "application/zip"
PREFIXES = ("/v1/jobs", "/v1/lab/predict")
ENDPOINTS = ("POST /v1/jobs", "GET /v1/jobs/{id}", "DELETE /v1/jobs/{id}",
             "GET /v1/jobs/{id}/result", "POST /v1/jobs/{id}/restart", "POST /v1/lab/predict")
_ERR = {"model": None}
_ERRORS = {404: {**_ERR, "description": "No job with that id (JobNotFound, code "
                 "job_not_found)."},
           409: {**_ERR, "description": "The job has no result yet, or none (JobConflict)."},
           413: {**_ERR, "description": "The body is over SINKSCOPE_JOB_MAX_BODY, or the job "
                 "over its work budget (WorkTooLarge, SINKSCOPE_JOB_WORK_*)."},
           422: {**_ERR, "description": "The engine's own error, with a code."},
           503: {**_ERR, "description": "Too many jobs wait (SINKSCOPE_JOB_QUEUE); "
                 "Retry-After."}}


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
                refusal = _engine_error(e, request.url.path)
                if refusal is None:
                    raise  # not JSON, no body: the API's own answers (400, 415)
                return error(422, type(refusal).__name__, str(refusal), refusal.code,
                             refusal.params)
        return route


def _engine_error(e: RequestValidationError, path: str) -> Optional[SinkscopeError]:
    """The engine's error for a JSON body that does not fit the schema: what
    :func:`~engine.jobs.spec.check` says of a job's body, else the schema's first
    complaint (where, and what)."""
    errors = list(e.errors())
    if any(err.get("type") == "json_invalid" or tuple(err.get("loc") or ()) == ("body",)
           and err.get("type") == "missing" for err in errors):
        return None
    if path.rstrip("/").endswith("/v1/jobs"):
        try:
            check(e.body)
        except SinkscopeError as err:
            return err
    first = errors[0] if errors else {}
    where = ".".join(str(x) for x in (first.get("loc") or ())[1:]) or "the body"
    problem = str(first.get("msg", "is not allowed"))[:200]
    return SettingsError(f"{where}: {problem}.", code="job_body",
                         params={"where": where, "problem": problem})


def _json(doc: dict, status: int = 200) -> Response:
    return Response(wire.dumps(doc, wire.JSON), status_code=status, media_type=wire.JSON)


def register(api: FastAPI, engine) -> None:
    """Add the jobs' routes to the replica's API (``engine``: the replica, whose ``jobs``
    is an :class:`engine.jobs.served.Jobs`)."""
    router = APIRouter(route_class=JobRoute)

    @router.post("/v1/jobs", status_code=202, response_model=JobStatusResponse,
                 responses={**_ERRORS})
    async def submit(req: Annotated[Union[BODIES], Body(discriminator="kind")]) -> Response:
        """Start a job: checked, priced, put in line; its status (202)."""
        spec = check_names(check(req.model_dump()), engine.encoders)
        price(spec).check()
        return _json(await engine.jobs.submit(spec), 202)

    @router.get("/v1/jobs/{job_id}", response_model=JobStatusResponse, responses={**_ERRORS})
    async def status(job_id: str) -> Response:
        """A job's state, progress, place in line, details, partial result and error."""
        return _json(await engine.jobs.status(job_id))

    @router.delete("/v1/jobs/{job_id}", response_model=JobStatusResponse,
                   responses={**_ERRORS})
    async def stop(job_id: str) -> Response:
        """Stop a job: it keeps its best or partial result (a waiting job ends at once)."""
        return _json(await engine.jobs.stop(job_id))

    @router.get("/v1/jobs/{job_id}/result", response_model=JobDocument,
                responses={200: {"content": {wire.NPZ: {}, ZIP: {}},
                                 "description": "The result as JSON, NPZ (Accept: "
                                 f"{wire.NPZ}), or a file as a zip (Accept: {ZIP})."},
                           **_ERRORS})
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
                 response_model=JobStatusResponse, responses={**_ERRORS})
    async def restart(job_id: str) -> Response:
        """The same job again, as a new job (after it was lost, failed or stopped)."""
        _, body, _ = await engine.jobs.body(job_id)
        spec = check_names(check(body), engine.encoders)
        price(spec).check()
        return _json(await engine.jobs.submit(spec), 202)

    @router.post("/v1/lab/predict", response_model=LabPredictDocument,
                 responses={200: {"content": {wire.NPZ: {}}}, **_ERRORS})
    async def lab_predict(req: LabPredictRequest, request: Request) -> Response:
        """Trained Lab models on one held-out pair: the target's plan, each model's plan
        and errors (no job: a quick call)."""
        from ..jobs.lab import predict_body

        media = wire.media_type(request.headers.get("accept"))
        doc = await asyncio.to_thread(predict_body, req.model_dump())
        return Response(await asyncio.to_thread(wire.dumps, doc, media), media_type=media)

    api.include_router(router)
