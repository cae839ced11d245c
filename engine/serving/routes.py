"""The HTTP API (FastAPI): routes, the error shape, the body-size limit.

Every route is a few lines that hand a typed request (:mod:`engine.serving.schemas`) to the
replica (:class:`engine.serving.deployment.Engine`), which computes the answer
(:mod:`engine.serving.answers`). Errors have one shape, ``{"error": {"type", "message"}}``:

- the engine's own errors (``engine.errors``: TextError, SettingsError, ModelError) → 422
  with their message, a body that does not fit its schema included (the message the
  embedded engine gives for the same value);
- a body that is not JSON → 400, one sent without ``Content-Type: application/json`` →
  415; a body over ``SINKSCOPE_MAX_BODY`` bytes → 413, before it is read whole; a request
  over its route's work budget → 413 (``WorkTooLarge``, :mod:`engine.serving.limits`);
  an unknown path → 404, a wrong method → 405;
- a computation past the deadline (the operator's, or a shorter one in the request's
  ``X-Sinkscope-Deadline`` header) → 408 (``DeadlineExceeded``); no heavy slot free
  within it → 503 (``Busy``, with ``Retry-After``);
- anything unexpected → 500, logged on the replica, never a traceback on the wire.

Under overload Ray Serve itself answers 503 with ``Retry-After`` (the deployment's
``max_queued_requests``).
"""

# No ``from __future__ import annotations``: FastAPI reads the routes' annotations.
import copy
import json
import logging
from typing import Any, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import SinkscopeError
from ..solver.cancel import Cancelled, DeadlineExceeded
from . import answers, jobs_api, limits, wire
from .limits import Busy, WorkTooLarge
from .openapi import refine
from .schemas import (AlignersResponse, AlignLiveDocument, AlignLiveRequest,
                      AlignmentsDocument, AlignRequest, EpsPathDocument, EpsPathRequest,
                      ErrorResponse, HealthResponse, LatticeDocument, LatticeRequest,
                      ModelsResponse, ProjectionDocument, ProjectRequest, RankingDocument,
                      RankRequest, RelateRequest, RelationDocument, StatsResponse, ToyDocument,
                      ToyRequest, engine_error, max_body)

log = logging.getLogger("ray.serve.sinkscope")

ENDPOINTS = ("GET /v1/health", "GET /v1/models", "GET /v1/aligners", "GET /v1/stats",
             "POST /v1/relate", "POST /v1/eps_path", "POST /v1/lattice", "POST /v1/rank",
             "POST /v1/align", "POST /v1/align/live", "POST /v1/project", "POST /v1/toy",
             *jobs_api.ENDPOINTS)
BODIES = {"/v1/relate": RelateRequest, "/v1/eps_path": EpsPathRequest,
          "/v1/lattice": LatticeRequest, "/v1/rank": RankRequest, "/v1/align": AlignRequest,
          "/v1/align/live": AlignLiveRequest, "/v1/project": ProjectRequest,
          "/v1/toy": ToyRequest}
EXAMPLE = '{"text_a": "…", "text_b": "…"}'
_ERRORS = {400: {"model": ErrorResponse, "description": "The body is not JSON."},
           408: {"model": ErrorResponse, "description": "The computation ran past "
                 "SINKSCOPE_SERVE_DEADLINE_S and was stopped: ask for less."},
           413: {"model": ErrorResponse, "description": "The body is over SINKSCOPE_MAX_BODY, "
                 "or the request over its route's work budget (SINKSCOPE_SERVE_WORK_*)."},
           415: {"model": ErrorResponse, "description": "The body is not sent as "
                 "Content-Type: application/json."},
           422: {"model": ErrorResponse, "description": "The engine's own error "
                 "(TextError, SettingsError, ModelError, AlignFileError, AlignerError), with "
                 "its code and params: a body the schema refuses, or one it allows that a "
                 "rule refuses (info.x-sinkscope-rules: a text the model reads nothing of, a "
                 "gold link outside its words, …). The message says what to change."},
           503: {"model": None, "description": "Overloaded or busy: try again after "
                 "Retry-After seconds."}}
_DOCUMENT = {200: {"content": {wire.NPZ: {}}, "description": "The document as JSON, or as "
                   f"NPZ with Accept: {wire.NPZ}."}}


def error(status: int, kind: str, message: str, code: str = "",
          params: dict | None = None) -> JSONResponse:
    """The API's one error shape: ``{"error": {"type", "message"}}``, with the engine's
    ``code`` and ``params`` (for a client to word it in its language) when it has them."""
    body: dict[str, Any] = {"type": kind, "message": message}
    if code:
        body["code"] = code
        try:  # params are numbers and names; one that is not plain JSON is left out
            body["params"] = json.loads(json.dumps(params or {}, allow_nan=False))
        except (TypeError, ValueError):
            body["params"] = {}
    return JSONResponse({"error": body}, status_code=status)


def _short(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[:n] + "…"


def _not_json(why: str) -> JSONResponse:
    return error(400, "BadRequest", f"The body is not valid JSON ({_short(why)}). Send a "
                 f"JSON object such as {EXAMPLE}.")


class Guard:
    """ASGI middleware: a POST body over ``SINKSCOPE_MAX_BODY`` gets 413 before it is read
    whole (by its Content-Length, or while it streams in), and an unexpected exception
    gets 500 in the API's shape (logged here). ``count(status)`` sees every error."""

    def __init__(self, app, count: Callable[[int], None]):
        self.app, self.count = app, count

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def tracked(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if message["status"] >= 400:
                    self.count(message["status"])
            await send(message)

        headers = dict(scope.get("headers") or [])
        asked = limits.asked_deadline.set(limits.parse_deadline(
            (headers.get(limits.DEADLINE_HEADER.lower().encode()) or b"").decode() or None))
        try:
            if scope["method"] in ("POST", "PUT", "PATCH"):
                refused, receive = await self._read(scope, receive)
                if refused is not None:
                    return await refused(scope, receive, tracked)
            await self.app(scope, receive, tracked)
        except Exception:
            log.exception("request failed")
            if not started:
                await error(500, "InternalError", "The engine failed on this request; the "
                            "operator's log has the details. Try again or change the "
                            "input.")(scope, receive, tracked)
        finally:
            limits.asked_deadline.reset(asked)

    @staticmethod
    async def _read(scope, receive):
        """(a refusal or None, a ``receive`` that replays the body read here)."""
        limit, env = max_body(), "SINKSCOPE_MAX_BODY"
        if scope.get("path", "").startswith(jobs_api.PREFIXES):  # jobs carry corpora
            limit, env = jobs_api.max_body(), "SINKSCOPE_JOB_MAX_BODY"
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                return error(400, "BadRequest", "Content-Length is not a number."), receive
            if size > limit:
                return error(413, "PayloadTooLarge", f"The body has {size:,} bytes; the limit "
                             f"is {limit:,} ({env}).", "body_size",
                             {"size": size, "limit": limit, "env": env}), receive
        body, more = bytearray(), True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return None, receive  # the client went away
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > limit:
                return error(413, "PayloadTooLarge", f"The body is over the limit of "
                             f"{limit:,} bytes ({env}).", "body_size",
                             {"size": len(body), "limit": limit, "env": env}), receive
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        return None, replay


def _error_answers(api: FastAPI) -> None:
    """The replica's errors as the engine's JSON: its own, a body that does not validate
    (worded by the request's model), and HTTP's (404, 405 with every allowed method)."""

    @api.exception_handler(SinkscopeError)
    async def _engine_error(request: Request, e: SinkscopeError) -> JSONResponse:
        return error(422, type(e).__name__, str(e), e.code, e.params)

    _limit_errors(api)

    @api.exception_handler(RequestValidationError)
    async def _invalid(request: Request, e: RequestValidationError) -> JSONResponse:
        media = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        if media != wire.JSON and not media.endswith("+json"):
            return error(415, "UnsupportedMediaType", "Send the body as JSON with the header "
                         f"Content-Type: {wire.JSON} (got {_short(media, 60) or 'none'}).")
        errors = list(e.errors())
        for err in errors:
            loc = tuple(err.get("loc") or ())
            if err.get("type") == "json_invalid":
                pos = loc[1] if len(loc) > 1 else "?"
                return _not_json(f"{(err.get('ctx') or {}).get('error', 'JSON decode error')}"
                                 f" at character {pos}")
            if err.get("type") == "missing" and loc == ("body",):
                return _not_json("the body is empty")
        model = max(((p, m) for p, m in BODIES.items() if request.url.path.endswith(p)),
                    key=lambda pm: len(pm[0]), default=("", RelateRequest))[1]
        # (the longest path that ends it: behind a route prefix too)
        return await _engine_error(request, engine_error(model, errors, e.body))

    @api.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, e: StarletteHTTPException) -> JSONResponse:
        if e.status_code == 400:  # FastAPI could not decode the body
            return _not_json(str(e.detail))
        kind = {404: "NotFound", 405: "MethodNotAllowed"}.get(e.status_code, "HTTPError")
        answer = error(e.status_code, kind, f"No endpoint {request.method} "
                       f"{request.url.path}. The endpoints are: {', '.join(ENDPOINTS)}.")
        answer.headers.update(getattr(e, "headers", None) or {})
        allowed = _allowed(api, request.url.path) if e.status_code == 405 else []
        if allowed:  # every method of the path, not only its first route's
            answer.headers["Allow"] = ", ".join(allowed)
        return answer


def build_api(engine) -> FastAPI:
    """The FastAPI app of one replica; ``engine`` answers (an
    :class:`engine.serving.deployment.Engine`, or None for the schema alone)."""
    api = FastAPI(title="sinkscope engine", version="1",
                  description="Softmax attention beside Sinkhorn couplings, served.",
                  docs_url=None, redoc_url=None, openapi_url="/v1/openapi.json")

    def count(status: int) -> None:
        if engine is not None:
            engine.errors[status] += 1

    api.add_middleware(Guard, count=count)
    _document(api, engine)

    _error_answers(api)

    @api.get("/v1/health", response_model=HealthResponse)
    async def health() -> dict:
        """Alive, with the replica that answered and where it computes."""
        return engine.health()

    @api.get("/v1/models", response_model=ModelsResponse)
    async def models() -> dict:
        """The models this replica serves: name, layers, heads, head size, token limit."""
        return engine.models()

    @api.get("/v1/aligners", response_model=AlignersResponse)
    async def aligners() -> dict:
        """The trained aligners this replica aligns with (method "trained" of POST
        /v1/align): name, base model, final layer, θ."""
        return engine.aligners()

    @api.get("/v1/stats", response_model=StatsResponse)
    async def stats() -> dict:
        """This replica's counters: requests per encode batch and per relate batch,
        forward passes, cache, errors."""
        return engine.stats()

    @api.post("/v1/relate", response_model=RelationDocument,
              responses={**_DOCUMENT, **_ERRORS})
    async def relate(req: RelateRequest, request: Request) -> Response:
        """One relation, or the heads grid with layer = head = "all"."""
        return await engine.answer(req, answers.relation_answer,
                                   request.headers.get("accept"), batched=True)

    @api.post("/v1/eps_path", response_model=EpsPathDocument,
              responses={**_DOCUMENT, **_ERRORS})
    async def eps_path(req: EpsPathRequest, request: Request) -> Response:
        """Sinkhorn plans of one head from large ε to small."""
        return await engine.answer(req, answers.eps_path_answer, request.headers.get("accept"))

    @api.post("/v1/lattice", response_model=LatticeDocument,
              responses={**_DOCUMENT, **_ERRORS})
    async def lattice(req: LatticeRequest, request: Request) -> Response:
        """Every (ε, half-step) frame of one head, packed for the live sliders."""
        return await engine.answer(req, answers.lattice_answer, request.headers.get("accept"))

    @api.post("/v1/rank", response_model=RankingDocument, responses={**_DOCUMENT, **_ERRORS})
    async def rank(req: RankRequest, request: Request) -> Response:
        """Candidates ranked against text A by similarity and by Sinkhorn divergence."""
        return await engine.rank(req, request.headers.get("accept"))

    @api.post("/v1/align", response_model=AlignmentsDocument,
              responses={**_DOCUMENT, **_ERRORS})
    async def align(req: AlignRequest, request: Request) -> Response:
        """Word alignments of many pairs (engine.alignment), solved in batches on the replica."""
        return await engine.align(req, request.headers.get("accept"))

    @api.post("/v1/align/live", response_model=AlignLiveDocument,
              responses={**_DOCUMENT, **_ERRORS})
    async def align_live(req: AlignLiveRequest, request: Request) -> Response:
        """The Align page's live θ/τ/m payload of one pair and method (engine.alignment.live),
        the same bytes as embedded."""
        return await engine.align_live(req, request.headers.get("accept"))

    @api.post("/v1/project", response_model=ProjectionDocument,
              responses={**_DOCUMENT, **_ERRORS})
    async def project(req: ProjectRequest, request: Request) -> Response:
        """Both texts' points of one layer and head projected jointly by PCA or UMAP."""
        return await engine.answer(req, answers.project_answer, request.headers.get("accept"))

    @api.post("/v1/toy", response_model=ToyDocument, responses={**_DOCUMENT, **_ERRORS})
    async def toy(req: ToyRequest, request: Request) -> Response:
        """One plan between the Learn page's two clouds: softmax, t half-steps, the coupling
        at ε, or exact transport."""
        return await engine.toy(req, request.headers.get("accept"))

    jobs_api.register(api, engine)  # /v1/jobs, /v1/lab/predict
    return api


def _allowed(api: FastAPI, path: str) -> list[str]:
    """The methods the document lists for ``path`` (a path that two routes share, such as
    ``/v1/jobs/{id}``: GET and DELETE)."""
    from starlette.routing import compile_path

    return sorted({m.upper() for template, ops in api.openapi()["paths"].items()
                   if compile_path(template)[0].match(path) for m in ops})


def _document(api: FastAPI, engine) -> None:
    """The app's OpenAPI document, refined with the models it serves
    (:func:`engine.serving.openapi.refine`): the replica's loaded ones, or the operator's
    allow-list read from their configuration files (no engine: the docs)."""
    from fastapi.openapi.utils import get_openapi

    def trained() -> list[str]:
        from ..aligner.registry import infos

        try:
            return [a.name for a in infos()[0]]
        except SinkscopeError:  # a malformed SINKSCOPE_ALIGNERS: no aligner is offered
            return []

    def shapes() -> dict[str, tuple[int, int]]:
        if engine is not None:
            return {n: (e.n_layers, e.n_heads) for n, e in engine.encoders.items()}
        from ..models.registry import allowed_models, describe

        out = {}
        for name in allowed_models():
            try:
                info = describe(name)
            except SinkscopeError:  # a broken entry is not served
                continue
            out[name] = (info.n_layers, info.n_heads)
        return out

    base: list[dict] = []

    def document() -> dict[str, Any]:
        """FastAPI's document (made once) refined with the models and the aligners of now
        (an aligner registered later is listed from then on)."""
        if not base:
            base.append(get_openapi(title=api.title, version=api.version,
                                    description=api.description, routes=api.routes))
        return refine(copy.deepcopy(base[0]), shapes(), trained())

    api.openapi = document


def _limit_errors(api: FastAPI) -> None:
    """The answers of :mod:`engine.serving.limits`' refusals: over a budget 413, past the
    deadline 408, no heavy slot 503 with Retry-After; a cancelled request (its client has
    gone) 499, which nobody reads."""

    @api.exception_handler(WorkTooLarge)
    async def _too_much(request: Request, e: WorkTooLarge) -> JSONResponse:
        return error(413, "WorkTooLarge", str(e), e.code, e.params)

    @api.exception_handler(DeadlineExceeded)
    async def _late(request: Request, e: DeadlineExceeded) -> JSONResponse:
        return error(408, "DeadlineExceeded", str(e), "deadline", {})

    @api.exception_handler(Busy)
    async def _busy(request: Request, e: Busy) -> JSONResponse:
        answer = error(503, "Busy", str(e))
        answer.headers["Retry-After"] = str(Busy.retry_after_s)
        return answer

    @api.exception_handler(Cancelled)
    async def _gone(request: Request, e: Cancelled) -> JSONResponse:
        return error(499, "Cancelled", "The request was cancelled.")


def openapi() -> dict[str, Any]:
    """The API's OpenAPI document, without Ray or a model (docs/serving.md is checked
    against it)."""
    return build_api(None).openapi()


def markdown() -> str:
    """The API reference in docs/serving.md, generated from :func:`openapi`: each endpoint
    with its summary, then each request body's fields (type, default, limits, meaning).
    ``python -m engine.serving.routes`` prints it; a test keeps the docs equal to it."""
    spec = openapi()
    schemas = spec["components"]["schemas"]

    def kind(p: dict) -> str:
        if "$ref" in p:
            return p["$ref"].rsplit("/", 1)[1]
        if "anyOf" in p:
            return " or ".join(kind(q) for q in p["anyOf"])
        if "enum" in p:
            return " / ".join(f"`{v}`" for v in p["enum"])
        if "const" in p:
            return f"`{p['const']}`"
        if p.get("type") == "array":
            return f"list of {kind(p.get('items', {}))}"
        return {"integer": "int", "number": "float", "string": "str", "boolean": "bool",
                "null": "null"}.get(p.get("type", ""), p.get("type", "any"))

    def limits(p: dict) -> str:
        out = []
        for key, sign in (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"),
                          ("minItems", "count ≥"), ("maxItems", "count ≤"),
                          ("maxLength", "length ≤")):
            if key in p:
                v = p[key]
                whole = isinstance(v, int) or (float(v).is_integer() and abs(v) < 1e8)
                out.append(f"{sign} {int(v)}" if whole else f"{sign} {v:g}")
        for q in p.get("anyOf", []) + [p.get("items", {})]:
            if q and q is not p:
                inner = limits(q)
                if inner:
                    out.append(inner)
        return ", ".join(out)

    lines = ["| endpoint | what it answers |", "|---|---|"]
    bodies = []
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            summary = " ".join(op.get("description", op.get("summary", "")).split())
            lines.append(f"| `{method.upper()} {path}` | {summary} |")
            ref = (op.get("requestBody", {}).get("content", {}).get("application/json", {})
                   .get("schema", {}).get("$ref"))
            if ref:
                bodies.append((f"`{method.upper()} {path}`", ref.rsplit("/", 1)[1]))
    nested = [("a pair of `POST /v1/align`", "AlignPair")] if "AlignPair" in schemas else []
    seen: dict[str, tuple[str, str]] = {}  # a field's row → where it was first listed
    for where, name in bodies + nested:
        s = schemas[name]
        rows, same = [], []
        for field, p in s["properties"].items():
            default = ("required" if field in s.get("required", [])
                       else f"`{json.dumps(p.get('default'), ensure_ascii=False)}`")
            row = (f"| `{field}` | {kind(p)} | {default} | {limits(p)} | "
                   f"{' '.join(p.get('description', '').split())} |")
            if row in seen:  # listed already, for an earlier endpoint
                same.append((field, seen[row][0]))
                continue
            seen[row] = (where, field)
            rows.append(row)
        first = {w for _, w in same}
        also = (f" {', '.join(f'`{f}`' for f, _ in same)} as for {' and '.join(sorted(first))}"
                ", and:" if same else "")
        lines += ["", f"{where} ({name}):{also}", "",
                  "| field | type | default | limits | meaning |", "|---|---|---|---|---|",
                  *rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
