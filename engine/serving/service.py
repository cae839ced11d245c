"""The engine as a service: a Ray Serve deployment behind a versioned HTTP API.

Each replica loads its models once on its device (CUDA when present, float32 there with
the solver's log-domain fallback; else the CPU in float64, as embedded). Requests from
concurrent callers are batched with ``serve.batch`` twice: encoding (one padded forward
pass) and relating (requests on the same texts and view, such as a class moving the ε
slider, share one batched softmax and Sinkhorn call; a request arriving alone runs at
once). Encodings are kept per replica in a bounded LRU keyed by (model, mode, texts), so a
slider move never re-encodes. Ray Serve does everything else: replicas, routing,
queueing, autoscaling (``deploy/serve.yaml``).

HTTP API (FastAPI, mounted with ``serve.ingress``; README, "HTTP API"):

- ``GET /v1/health``: status, replica, device, memory.
- ``GET /v1/models``: the allow-listed models (name, layers, heads, token limit).
- ``POST /v1/relate``: ``{text_a, text_b, model, layer, head, eps, half_steps, mode,
  weights, pool_words, tol}`` → the document ``python -m engine relate ... --json`` prints
  (:func:`engine.io.export.relation_document`); ``layer="all", head="all"`` is the heads grid.
- ``POST /v1/eps_path``: the same texts and view, with ``eps_values`` and ``half_steps``
  → the Sinkhorn plans along ε (:func:`engine.eps_path`).
- ``POST /v1/lattice``: the same texts and view, with ``eps_values`` and ``steps`` → every
  (ε, half-step) frame of the live sliders, packed for a browser (:mod:`engine.relation.frames`).
- ``POST /v1/rank``: ``{text_a, candidates, model, eps}`` → the Sentences view's ranking
  of the candidates by sentence similarity and by Sinkhorn divergence
  (:func:`engine.relation.sentences.rank`).
- ``GET /v1/stats``: the answering replica's counters (batch sizes, cache).

Answers are JSON, or NPZ with ``Accept: application/x-npz`` (:mod:`engine.serving.wire`).
Errors are ``{"error": {"type", "message"}}``: the engine's own messages with 422, malformed
JSON 400, a body over ``SINKSCOPE_MAX_BODY`` 413 (checked before reading it), an unknown
path 404, anything unexpected 500 (logged here, never a traceback on the wire).

An endpoint is a request model and one pure function ``(encodings, request, device) ->
document`` (see :func:`relation_answer`): ``_serve`` reads, checks, encodes (batched,
cached), runs the function off the event loop and writes the answer.

Run it with ``python -m engine serve`` (a local Ray instance, loopback) or, on a cluster,
``serve deploy deploy/serve.yaml`` (``import_path: engine.serving.service:app``).
"""

# No ``from __future__ import annotations`` here: FastAPI reads the routes' annotations
# (``request: Request``) in the replica, where Serve's copy of the class cannot resolve
# annotations written as strings.
import asyncio
import collections
import contextlib
import copy
import dataclasses
import functools
import json
import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from ray import serve
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..relation import frames

from .. import settings

from . import wire
from ..models.encoder import CleanText, Encoder, allowed_models, clean_text
from ..errors import ModelError, SettingsError, SinkscopeError, TextError
from ..io.export import ranking_document, relation_document
from ..relation.lattice import relation_lattice
from ..relation.relate import check_mode, eps_path, relate_batch, relate_encodings
from ..relation.scores import check_layer_head
from ..relation.sentences import measures, rank
from ..settings import (DEFAULT_EPS, DEFAULT_HALF_STEPS, DEFAULT_MODEL, DEFAULT_TOL,
                       MAX_CANDIDATES, WEIGHTS)
from ..solver.sinkhorn import check_eps, check_half_steps
from ..types import Encoding

# A child of Serve's logger: messages land in the replica's log beside its access lines.
log = logging.getLogger("ray.serve.sinkscope")

APP_NAME = "sinkscope"
EPS_PATH_SCHEMA = "sinkscope.eps_path/1"
EPS_PATH_MAX_VALUES = 64
LATTICE_SCHEMA = "sinkscope.lattice/1"
MEASURES_KEPT = 16  # Sentences requests whose encoded texts a replica keeps
ENDPOINTS = ("GET /v1/health", "GET /v1/models", "GET /v1/stats", "POST /v1/relate",
             "POST /v1/eps_path", "POST /v1/lattice", "POST /v1/rank")
# Replica settings Serve can change without a restart (user_config → reconfigure).
# batch_wait_timeout_s: how long an encode batch waits to fill; relate_wait_timeout_s:
# the same for slider moves, which join a batch only while others are being related (one
# arriving alone never waits); 10–30 ms gave the most relations per second here.
TUNING = {"max_batch_size": 16, "batch_wait_timeout_s": 0.005, "relate_wait_timeout_s": 0.02,
          "cache_mb": None}
GPU_BUCKET = 32  # tokens: on an accelerator, jobs up to this much apart share a pass


def load_model(name: str) -> Encoder:
    """The one place a replica loads a model (on its device, offline). Allow-listed names
    only: ``Encoder.load`` would also take a folder, which no HTTP caller may name."""
    return Encoder(name)


# --------------------------------------------------------------------------- requests
class ApiError(Exception):
    """A request the API refuses before the engine sees it (400, 413)."""

    def __init__(self, status: int, kind: str, message: str):
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


class TextsRequest(BaseModel):
    """The texts and the view of them that every endpoint reads.

    Values are checked by the engine itself (the same messages as the embedded engine and
    the command line), so fields are typed loosely here.
    """

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    text_a: Any = Field(description="Text A: its queries are the rows.")
    text_b: Any = Field(None, description="Text B: its keys are the columns (not used in "
                        "self mode).")
    model: Any = Field(DEFAULT_MODEL, description="An allow-listed model (GET /v1/models).")
    mode: Any = Field("separate", description="separate, joint or self.")
    layer: Any = Field(-1, description="Layer index (negative from the end) or \"all\".")
    head: Any = Field("mean", description="Head index, \"mean\" or \"all\" (with layer "
                      "\"all\": the heads grid).")
    weights: Any = Field("content", description="content, uniform or norm.")
    pool_words: Any = Field(False, description="Merge subwords into words.")

    def check(self, enc: Encoder) -> None:
        """Check everything but the texts before any encoding (SinkscopeError)."""
        check_mode(self.mode)
        if not isinstance(self.weights, str) or self.weights not in WEIGHTS:
            raise SettingsError(f"weights must be one of {', '.join(WEIGHTS)}; "
                                f"got {_short(self.weights)}.")
        if not isinstance(self.pool_words, bool):
            raise SettingsError(f"pool_words must be true or false, got {_short(self.pool_words)}.")
        check_layer_head(self.layer, self.head, enc.n_layers, enc.n_heads)


class RelateRequest(TextsRequest):
    """POST /v1/relate: one relation (or the heads grid) at one ε and half-step count."""

    eps: Any = Field(DEFAULT_EPS, description="Entropy ε > 0 (1 = the model's softmax).")
    half_steps: Any = Field(DEFAULT_HALF_STEPS, description="Sinkhorn half-steps (1 = "
                            "softmax).")
    tol: Any = Field(DEFAULT_TOL, description="L1 marginal tolerance for \"converged\".")

    def check(self, enc: Encoder) -> None:
        super().check(enc)
        check_eps(self.eps), check_half_steps(self.half_steps)
        _check_tol(self.tol)


class EpsPathRequest(TextsRequest):
    """POST /v1/eps_path: Sinkhorn plans of one head along decreasing ε."""

    eps_values: Any = Field(None, description=f"Up to {EPS_PATH_MAX_VALUES} ε values, large "
                            "to small (default: 12 from 10 to 0.03).")
    half_steps: Any = Field(4000, description="Most half-steps per ε (stops at tol).")
    tol: Any = Field(DEFAULT_TOL, description="L1 marginal tolerance to stop at.")

    def check(self, enc: Encoder) -> None:
        super().check(enc)
        if self.layer == "all":
            raise SettingsError("The ε path is for one layer and head; choose a head first.")
        if self.eps_values is not None:
            if (not isinstance(self.eps_values, list) or not self.eps_values
                    or len(self.eps_values) > EPS_PATH_MAX_VALUES):
                raise SettingsError(f"eps_values must be a list of 1 to {EPS_PATH_MAX_VALUES} "
                                    "numbers.")
            for e in self.eps_values:
                check_eps(e)
        check_half_steps(self.half_steps)
        _check_tol(self.tol)


class LatticeRequest(TextsRequest):
    """POST /v1/lattice: every frame of the live sliders for one layer and head."""

    eps_values: Any = Field(description="The lattice's ε values (engine.relation.frames.grid).")
    steps: Any = Field(description="The lattice's half-step counts, 1 first.")
    id: Any = Field("", description="A name the browser gives this lattice.")
    max_bytes: Any = Field(3_000_000, description="The largest payload wanted; above it the "
                           "answer holds no payload.")

    def check(self, enc: Encoder) -> None:
        super().check(enc)
        if self.layer == "all":
            raise SettingsError("A lattice is for one layer and head; choose a head first.")
        for name, values, most in (("eps_values", self.eps_values, 128),
                                   ("steps", self.steps, 128)):
            if not isinstance(values, list) or not 0 < len(values) <= most:
                raise SettingsError(f"{name} must be a list of 1 to {most} numbers.")
        for e in self.eps_values:
            check_eps(e)
        for t in self.steps:
            check_half_steps(t)
        if max(self.steps) > settings.HALF_STEPS_CAP // 10:
            raise SettingsError(f"steps go up to {settings.HALF_STEPS_CAP // 10:,} here.")
        if not isinstance(self.id, str) or len(self.id) > 64:
            raise SettingsError("id must be a short text.")
        if isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int) \
                or not 0 < self.max_bytes <= 64 * 2**20:
            raise SettingsError("max_bytes must be a whole number of bytes up to 64 MiB.")


class RankRequest(BaseModel):
    """POST /v1/rank: candidate texts ranked against text A (the Sentences view)."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    text_a: Any = Field(description="Text A, the text the candidates are ranked against.")
    candidates: Any = Field(description=f"Up to {MAX_CANDIDATES} candidate texts: a list, or "
                            "one text with one candidate per line.")
    model: Any = Field(DEFAULT_MODEL, description="An allow-listed model (GET /v1/models).")
    eps: Any = Field(DEFAULT_EPS, description="ε of the Sinkhorn divergence.")

    def check(self, enc: Encoder) -> None:
        check_eps(self.eps)
        ok = isinstance(self.candidates, str) or (
            isinstance(self.candidates, list) and all(isinstance(c, str) for c in self.candidates))
        if not ok:
            raise SettingsError("candidates must be a list of texts, or one text with one "
                                "candidate per line.")


def _check_tol(tol: Any) -> None:
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < float("inf"):
        raise SettingsError(f"tol must be a number > 0, got {_short(tol)}.")


def _short(v: Any, n: int = 60) -> str:
    s = repr(v)
    return s if len(s) <= n else s[:n] + "…"


def parse(model: type[TextsRequest], obj: Any) -> TextsRequest:
    """A request model from a decoded JSON body, or a SinkscopeError saying what is wrong."""
    fields = ", ".join(model.model_fields)
    if not isinstance(obj, dict):
        raise SettingsError(f"The body must be a JSON object with the fields {fields}; "
                            f"got a JSON {type(obj).__name__}.")
    unknown = [k for k in obj if k not in model.model_fields]
    if unknown:
        names = ", ".join(_short(k, 40) for k in unknown[:5])
        raise SettingsError(f"Unknown field {names}: the fields are {fields}.")
    if "text_a" not in obj:
        raise TextError("text_a is required: the text whose tokens are the rows.")
    return model.model_validate(obj)


async def read_json(request: Request, limit: int) -> Any:
    """The request's body decoded as JSON; 413 before reading a body over ``limit`` bytes,
    400 for one that is not JSON."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise ApiError(400, "BadRequest", "Content-Length is not a number.") from None
        if size > limit:
            raise ApiError(413, "PayloadTooLarge", f"The body has {size:,} bytes; the limit "
                           f"is {limit:,} (SINKSCOPE_MAX_BODY).")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, "PayloadTooLarge", f"The body is over the limit of {limit:,} "
                           "bytes (SINKSCOPE_MAX_BODY).")
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as e:
        raise ApiError(400, "BadRequest", f"The body is not valid JSON ({_short(str(e), 120)}"
                       '). Send a JSON object such as {"text_a": "…", "text_b": "…"}.') from None


def error(status: int, kind: str, message: str) -> JSONResponse:
    """The API's one error shape."""
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status)


# --------------------------------------------------------------------------- answers
def relate_settings(encodings: tuple[Encoding, ...], req: RelateRequest) -> dict:
    """The keyword arguments of :func:`engine.relate_encodings` for a request (a
    SettingsError for a heads grid over ``SINKSCOPE_GRID_MAX_CELLS``)."""
    if req.layer == "all":
        n, m = token_counts(encodings, req.mode)
        if n * m > settings.CONFIG.grid_max_cells:
            raise SettingsError(
                f"The texts have {n} × {m} tokens: too many for the heads grid (the limit is "
                f"{settings.CONFIG.grid_max_cells:,} token pairs, SINKSCOPE_GRID_MAX_CELLS). "
                "Shorten the texts or ask for one layer and head.")
    return dict(layer=req.layer, head=req.head, eps=req.eps, half_steps=req.half_steps,
                mode=req.mode, weights=req.weights, pool_words=req.pool_words, tol=req.tol)


def relation_answer(encodings: tuple[Encoding, ...], req: RelateRequest, device) -> dict:
    """POST /v1/relate: the Relation's document (the CLI's ``--json``)."""
    return relation_document(relate_encodings(encodings, device=device,
                                              **relate_settings(encodings, req)))


def relation_answers(items: list[tuple[tuple[Encoding, ...], RelateRequest]],
                     device) -> list:
    """POST /v1/relate for requests that arrived together: their problems solved in as few
    batched calls as they allow (:func:`engine.relation.relate.relate_batch`). Returns each
    request's document, or the SinkscopeError it raised."""
    out: list[Any] = [None] * len(items)
    jobs = []
    for i, (encodings, req) in enumerate(items):
        try:
            jobs.append((i, (encodings, relate_settings(encodings, req))))
        except SinkscopeError as e:
            out[i] = e
    for (i, _), r in zip(jobs, relate_batch([job for _, job in jobs], device=device)):
        out[i] = r if isinstance(r, Exception) else relation_document(r)
    return out


def eps_path_answer(encodings: tuple[Encoding, ...], req: EpsPathRequest, device) -> dict:
    """POST /v1/eps_path: ε values (K,) and Sinkhorn plans (K, n, m), large ε to small."""
    r = relate_encodings(encodings, layer=req.layer, head=req.head, eps=1.0, half_steps=1,
                         mode=req.mode, weights=req.weights, pool_words=req.pool_words)
    eps, plans = eps_path(r, req.eps_values, half_steps=int(req.half_steps),
                          tol=float(req.tol), device=device)
    return {"schema": EPS_PATH_SCHEMA, "model": r.model,
            "settings": {"layer": r.layer, "head": r.head, "mode": r.mode,
                         "weights": r.weights, "pool_words": r.pool_words,
                         "half_steps": int(req.half_steps), "tol": float(req.tol)},
            "tokens_a": list(r.tokens_a), "tokens_b": list(r.tokens_b),
            "eps": eps, "plans": plans}


def lattice_answer(encodings: tuple[Encoding, ...], req: LatticeRequest, device) -> dict:
    """POST /v1/lattice: the live sliders' frames as the browser's payload (uint8 bytes),
    or no payload (over ``max_bytes`` even at 8 bits)."""
    cells = np.prod(token_counts(encodings, req.mode))
    if cells > settings.CONFIG.live_max_cells:
        raise SettingsError(f"{cells:,} token pairs is more than the {settings.CONFIG.live_max_cells:,}"
                            " whose frames are precomputed (SINKSCOPE_LIVE_MAX_CELLS).")
    r = relate_encodings(encodings, layer=req.layer, head=req.head, eps=1.0, half_steps=1,
                         mode=req.mode, weights=req.weights, pool_words=req.pool_words)
    lat = relation_lattice(r, np.asarray(req.eps_values, float), np.asarray(req.steps, int))
    data, bits = frames.encode(lat, req.id, max_bytes=int(req.max_bytes))
    return {"schema": LATTICE_SCHEMA, "id": req.id, "bits": bits,
            "payload": None if data is None else np.frombuffer(data, dtype=np.uint8)}


def rank_answer(enc: Encoder, req: RankRequest, measured) -> dict:
    """POST /v1/rank: the Sentences ranking's document, from the texts' measures."""
    ms, dropped = measured
    return ranking_document(rank(ms, eps=float(req.eps), pooling=enc.pooling,
                                 mean_pooled=enc.mean_pooled, dropped=dropped))


def warm_up(enc: Encoder, device) -> None:
    """One small relation, heads grid and ε path, so that the first request does not pay
    for lazy imports (POT, the solver's kernels) and first calls (~1.5 s on a CPU)."""
    try:
        encodings = tuple(enc.encode_many(["warm up", "warm up"], attentions=False))
        r = relate_encodings(encodings, half_steps=3, device=device)
        relate_encodings(encodings, layer="all", head="all", half_steps=3, device=device)
        eps_path(r, [1.0], half_steps=3, device=device)
        wire.dumps(relation_document(r), wire.NPZ)
    except Exception:  # an optimisation only
        log.exception("warm-up failed")


def token_counts(encodings: tuple[Encoding, ...], mode: str) -> tuple[int, int]:
    """(n, m) tokens of text A and text B before word pooling."""
    if mode == "joint":
        seg = encodings[0].segment
        return int((seg == 0).sum()), int((seg == 1).sum())
    return encodings[0].n, encodings[-1].n


# --------------------------------------------------------------------------- replica state
@dataclass(frozen=True)
class Job:
    """Texts to encode for one request. ``key`` names the encodings (the cache key);
    ``pass_key`` groups jobs that share one forward pass."""

    model: str
    mode: str
    texts: tuple[CleanText, ...]
    length: int = 0  # padded length of the job's own forward pass (its longest text)
    bucket: int = 1  # jobs whose lengths round up to the same multiple share a pass

    @property
    def key(self) -> tuple:
        return (self.model, self.mode, self.texts)

    @property
    def pass_key(self) -> tuple:
        # On the CPU (bucket 1) jobs share a pass only when their padded length is equal:
        # then every text is encoded exactly as the embedded engine encodes it (measured:
        # the float32 rounding of a text depends on its padded length, not on the other
        # rows). On an accelerator, where results are float32 anyway, lengths within one
        # bucket share a pass. A joint pair is one sequence and is encoded on its own.
        if self.mode == "joint":
            return (self.model, "pair", self.texts)
        return (self.model, "many", -(-self.length // self.bucket))


class EncodingCache:
    """A least-recently-used store of encodings bounded by their arrays' bytes."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: collections.OrderedDict[tuple, tuple[tuple[Encoding, ...], int]] = (
            collections.OrderedDict())
        self.bytes = 0
        self.hits = self.misses = self.evictions = 0

    def get(self, key: tuple) -> tuple[Encoding, ...] | None:
        item = self._items.get(key)
        if item is None:
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return item[0]

    def put(self, key: tuple, encodings: tuple[Encoding, ...]) -> None:
        size = sum(x.nbytes for e in encodings for x in (e.hidden, e.q, e.k, e.attentions)
                   if x is not None)
        if size > self.max_bytes or key in self._items:
            return
        self._items[key] = (encodings, size)
        self.bytes += size
        self.shrink()

    def shrink(self) -> None:
        while self.bytes > self.max_bytes and self._items:
            _, (_, size) = self._items.popitem(last=False)
            self.bytes -= size
            self.evictions += 1

    def __len__(self) -> int:
        return len(self._items)


def _rss_mb() -> float:
    """This process's resident memory in MB (0 where /proc is missing)."""
    try:
        with open(f"/proc/{os.getpid()}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _guard(route: Callable) -> Callable:
    """Turn every failure of a route into the API's error shape (never a traceback)."""

    @functools.wraps(route)
    async def guarded(self: "Engine", *args, **kwargs):
        try:
            return await route(self, *args, **kwargs)
        except ApiError as e:
            response = error(e.status, e.kind, e.message)
        except SinkscopeError as e:
            response = error(422, type(e).__name__, str(e))
        except Exception:
            log.exception("request failed")
            response = error(500, "InternalError", "The engine failed on this request; the "
                             "operator's log has the details. Try again or change the input.")
        self.errors[response.status_code] += 1
        return response

    return guarded


api = FastAPI(title="sinkscope engine", version="1",
              description="Softmax attention beside Sinkhorn couplings, served.",
              docs_url=None, redoc_url=None, openapi_url="/v1/openapi.json")


@api.exception_handler(StarletteHTTPException)
async def _http_error(request: Request, e: StarletteHTTPException) -> JSONResponse:
    """Unknown paths and methods, in the API's error shape."""
    kind = {404: "NotFound", 405: "MethodNotAllowed"}.get(e.status_code, "HTTPError")
    return error(e.status_code, kind, f"No endpoint {request.method} {request.url.path}. "
                 f"The endpoints are: {', '.join(ENDPOINTS)}.")


def _body(model: type[BaseModel]) -> dict:
    """OpenAPI for a JSON body read by hand (the size limit comes before parsing)."""
    return {"requestBody": {"required": True, "content": {
        "application/json": {"schema": model.model_json_schema()}}}}


@serve.deployment(max_ongoing_requests=32, ray_actor_options={"num_cpus": 1},
                  user_config=TUNING, health_check_period_s=5)
@serve.ingress(api)
class Engine:
    """One replica: the allow-listed models on this replica's device, an encoding cache
    and the batcher. Ray Serve runs as many as the deployment asks for."""

    def __init__(self) -> None:
        import torch

        if settings.CONFIG.torch_threads > 0:
            torch.set_num_threads(settings.CONFIG.torch_threads)
        self.encoders: dict[str, Encoder] = {}
        self.broken: dict[str, str] = {}
        for name in allowed_models():
            try:
                self.encoders[name] = load_model(name)
            except SinkscopeError as e:  # serve the others; say why this one is missing
                log.error("model %s: %s", name, e)
                self.broken[name] = str(e)
        if not self.encoders:
            raise ModelError(f"No model could be loaded: {self.broken}")
        # Token counts are read on the event loop while a batch is encoded in a worker
        # thread: each model gets a tokenizer of its own for that (tokenizers keep state).
        self.counters = {n: copy.deepcopy(e.tokenizer) for n, e in self.encoders.items()}
        self.device = next(iter(self.encoders.values())).device
        self.on_device = None if self.device.type == "cpu" else self.device
        warm_up(next(iter(self.encoders.values())), self.on_device)
        self.device_name = (torch.cuda.get_device_name(self.device)
                            if self.device.type == "cuda" else "")
        self.cache = EncodingCache(settings.CONFIG.cache_mb * 2**20)
        self.inflight: dict[tuple, asyncio.Future] = {}
        self.measures: dict[tuple, tuple] = {}  # the Sentences view's texts, newest last
        self.batches: collections.Counter[int] = collections.Counter()
        self.relate_batches: collections.Counter[int] = collections.Counter()
        self.relating = 0  # relate requests being computed now (alone or in a batch)
        self.max_batch_size = TUNING["max_batch_size"]
        self.passes = 0
        self.requests = 0
        self.errors: collections.Counter[int] = collections.Counter()
        try:
            self.replica = serve.get_replica_context().replica_tag
        except Exception:  # constructed outside Serve (tests of the class itself)
            self.replica = f"local-{os.getpid()}"

    def reconfigure(self, config: dict) -> None:
        """Serve's ``user_config``: batch size, batch waits and cache size, changed live."""
        config = {**TUNING, **(config or {})}
        self.max_batch_size = int(config["max_batch_size"])
        for batcher, wait in ((self._encode_batch, "batch_wait_timeout_s"),
                              (self._relate_batch, "relate_wait_timeout_s")):
            batcher.set_max_batch_size(self.max_batch_size)
            batcher.set_batch_wait_timeout_s(float(config[wait]))
        if config.get("cache_mb") is not None:
            self.cache.max_bytes = int(config["cache_mb"]) * 2**20
            self.cache.shrink()

    # ----------------------------------------------------------------------- routes
    @api.get("/v1/health")
    @_guard
    async def health(self) -> dict:
        """Alive, with the replica that answered and where it computes."""
        return {"status": "ok", "service": "sinkscope", "api": "v1", "replica": self.replica,
                "pid": os.getpid(), "device": str(self.device), "device_name": self.device_name,
                "dtype": "float64" if self.on_device is None else "float32",
                "models": list(self.encoders), "memory_mb": round(_rss_mb(), 1)}

    @api.get("/v1/models")
    @_guard
    async def models(self) -> dict:
        """The models this replica serves: name, layers, heads, head size, token limit."""
        return {"default": DEFAULT_MODEL if DEFAULT_MODEL in self.encoders
                else next(iter(self.encoders)),
                "device": str(self.device),
                "dtype": "float64" if self.on_device is None else "float32",
                "models": [{"name": n, "n_layers": e.n_layers, "n_heads": e.n_heads,
                            "d_head": e.d_head, "max_tokens": e.max_tokens}
                           for n, e in self.encoders.items()],
                "unavailable": [{"name": n, "message": m} for n, m in self.broken.items()]}

    @api.get("/v1/stats")
    @_guard
    async def stats(self) -> dict:
        """This replica's counters: requests per encode batch and per relate batch,
        forward passes, cache."""
        return {"replica": self.replica, "requests": self.requests,
                "batch_sizes": {str(k): v for k, v in sorted(self.batches.items())},
                "relate_batch_sizes": {str(k): v for k, v in
                                       sorted(self.relate_batches.items())},
                "forward_passes": self.passes,
                "cache": {"entries": len(self.cache), "bytes": self.cache.bytes,
                          "max_bytes": self.cache.max_bytes, "hits": self.cache.hits,
                          "misses": self.cache.misses, "evictions": self.cache.evictions},
                "errors": {str(k): v for k, v in sorted(self.errors.items())}}

    @api.post("/v1/relate", openapi_extra=_body(RelateRequest))
    @_guard
    async def relate(self, request: Request) -> Response:
        """One relation, or the heads grid with layer = head = "all"."""
        return await self._serve(request, RelateRequest, relation_answer, batched=True)

    @api.post("/v1/eps_path", openapi_extra=_body(EpsPathRequest))
    @_guard
    async def eps_path(self, request: Request) -> Response:
        """Sinkhorn plans of one head from large ε to small."""
        return await self._serve(request, EpsPathRequest, eps_path_answer)

    @api.post("/v1/lattice", openapi_extra=_body(LatticeRequest))
    @_guard
    async def lattice(self, request: Request) -> Response:
        """Every (ε, half-step) frame of one head, packed for the live sliders."""
        return await self._serve(request, LatticeRequest, lattice_answer)

    @api.post("/v1/rank", openapi_extra=_body(RankRequest))
    @_guard
    async def rank(self, request: Request) -> Response:
        """Candidates ranked against text A by similarity and by Sinkhorn divergence."""
        self.requests += 1
        req = parse(RankRequest, await read_json(request, settings.CONFIG.max_body))
        enc = self._encoder(req.model)
        req.check(enc)
        media = wire.media_type(request.headers.get("accept"))

        def work() -> bytes:  # the measures are kept: an ε move does not re-encode
            key = (enc.name, str(req.text_a), json.dumps(req.candidates))
            measured = self.measures.get(key)
            if measured is None:
                measured = self.measures[key] = measures(enc, req.text_a, req.candidates)
                while len(self.measures) > MEASURES_KEPT:
                    self.measures.pop(next(iter(self.measures)))
            return wire.dumps(rank_answer(enc, req, measured), media)

        return Response(await asyncio.to_thread(work), media_type=media,
                        headers={"X-Sinkscope-Replica": self.replica})

    # ----------------------------------------------------------------------- machinery
    async def _serve(self, request: Request, model: type[TextsRequest],
                     answer: Callable[[tuple[Encoding, ...], Any, Any], dict], *,
                     batched: bool = False) -> Response:
        """Read and check a request, get its encodings, run ``answer`` off the event loop
        and write its document as JSON or NPZ (Accept).

        ``batched`` (relations): a request that arrives while others are being related
        joins them in :meth:`_relate_batch`, one batched solve; one arriving alone runs at
        once, without waiting for company."""
        self.requests += 1
        t0 = time.perf_counter()
        req = parse(model, await read_json(request, settings.CONFIG.max_body))
        encodings, batch = await self._encodings(self._job(req))
        t1 = time.perf_counter()
        media = wire.media_type(request.headers.get("accept"))
        together = batched and self.relating > 0 and self.max_batch_size > 1
        if batched:
            self.relating += 1

        def work() -> tuple[bytes, float]:  # one trip to a worker thread
            doc = answer(encodings, req, self.on_device)
            t = time.perf_counter()
            return wire.dumps(doc, media), t

        try:
            if together:
                outcome = await self._relate_batch((encodings, req, media))
                if isinstance(outcome, BaseException):
                    raise outcome
                body, t2, solved = outcome
            else:
                (body, t2), solved = await asyncio.to_thread(work), 1
        finally:
            if batched:
                self.relating -= 1
        t3 = time.perf_counter()
        timing = ", ".join(f"{k};dur={v * 1e3:.1f}" for k, v in
                           (("encode", t1 - t0), ("compute", t2 - t1), ("write", t3 - t2)))
        return Response(body, media_type=media, headers={
            "X-Sinkscope-Replica": self.replica, "X-Sinkscope-Batch": str(batch),
            "X-Sinkscope-Solved-With": str(solved), "Server-Timing": timing})

    def _encoder(self, name: Any) -> Encoder:
        if isinstance(name, str) and name in self.encoders:
            return self.encoders[name]
        if isinstance(name, str) and name in self.broken:
            raise ModelError(self.broken[name])
        raise ModelError(f"Model {_short(name)} is not served here; choose one of: "
                         f"{', '.join(self.encoders)}. Operators add models with "
                         "SINKSCOPE_MODELS.")

    def _job(self, req: TextsRequest) -> Job:
        """Check the request and name the encoding it needs (no model call)."""
        enc = self._encoder(req.model)
        req.check(enc)
        a = clean_text(req.text_a, name="Text A")
        texts = (a,) if req.mode == "self" else (
            a, clean_text(req.text_b if req.text_b is not None else "", name="Text B"))
        return Job(model=enc.name, mode=req.mode, texts=texts)

    def _measured(self, job: Job) -> Job:
        """The job with the padded length of its forward pass (tokenised here)."""
        enc = self.encoders[job.model]
        ids = self.counters[job.model]([t.text for t in job.texts], truncation=True,
                                       max_length=enc.max_tokens,
                                       split_special_tokens=True)["input_ids"]
        return dataclasses.replace(job, length=max(map(len, ids)),
                                   bucket=1 if self.on_device is None else GPU_BUCKET)

    async def _encodings(self, job: Job) -> tuple[tuple[Encoding, ...], int]:
        """The job's encodings and the size of the batch that made them (0: cached).

        Concurrent requests for the same texts wait for one encoding."""
        hit = self.cache.get(job.key)
        if hit is not None:
            return hit, 0
        future = self.inflight.get(job.key)
        if future is None:
            future = asyncio.ensure_future(self._encode_batch(self._measured(job)))
            self.inflight[job.key] = future
            future.add_done_callback(lambda _: self.inflight.pop(job.key, None))
        outcome = await asyncio.shield(future)
        if isinstance(outcome, BaseException):
            raise outcome
        encodings, batch = outcome
        self.cache.put(job.key, encodings)
        return encodings, batch

    @serve.batch(max_batch_size=TUNING["max_batch_size"],
                 batch_wait_timeout_s=TUNING["batch_wait_timeout_s"])
    async def _encode_batch(self, jobs: list[Job]) -> list:
        """Encode the jobs of concurrent requests: one forward pass per padded length."""
        self.batches[len(jobs)] += 1
        groups: dict[tuple, list[int]] = collections.defaultdict(list)
        for i, job in enumerate(jobs):
            groups[job.pass_key].append(i)
        self.passes += len(groups)
        return await asyncio.to_thread(self._encode_now, jobs, list(groups.values()))

    def _encode_now(self, jobs: list[Job], groups: list[list[int]]) -> list:
        """Run the forward passes (in a worker thread): one per group of job indices.
        Each job gets (encodings, batch size) or the exception its pass raised."""
        out: list[Any] = [None] * len(jobs)
        for idx in groups:
            group = [jobs[i] for i in idx]
            enc = self.encoders[group[0].model]
            try:
                if group[0].mode == "joint":
                    results = [(enc.encode_pair(*j.texts),) for j in group]
                else:
                    flat = enc.encode_many([t for j in group for t in j.texts],
                                           attentions=False)
                    results, k = [], 0
                    for j in group:
                        results.append(tuple(flat[k:k + len(j.texts)]))
                        k += len(j.texts)
                for i, r in zip(idx, results):
                    out[i] = (r, len(jobs))
            except Exception as e:  # this pass fails, the others stand
                for i in idx:
                    out[i] = e
        return out


    @serve.batch(max_batch_size=TUNING["max_batch_size"],
                 batch_wait_timeout_s=TUNING["relate_wait_timeout_s"])
    async def _relate_batch(self, items: list[tuple]) -> list:
        """Relate the requests of concurrent callers (encodings, request, media type):
        requests on the same texts and view share one batched softmax and Sinkhorn call
        (:func:`relation_answers`). Each gets (body, time computed, batch size) or the
        exception it raised."""
        self.relate_batches[len(items)] += 1
        return await asyncio.to_thread(self._relate_now, items)

    def _relate_now(self, items: list[tuple]) -> list:
        docs = relation_answers([(e, req) for e, req, _ in items], self.on_device)
        t = time.perf_counter()
        out: list[Any] = []
        for doc, (_, _, media) in zip(docs, items):
            if isinstance(doc, BaseException):
                out.append(doc)
                continue
            try:
                out.append((wire.dumps(doc, media), t, len(items)))
            except Exception as e:  # this answer fails, the others stand
                out.append(e)
        return out


# Everything the class uses is defined above it: Serve pickles the class when it is
# decorated, with the module's names as they are at that moment.


# --------------------------------------------------------------------------- running it
def build(*, replicas: int = 1, gpus_per_replica: float = 0.0, cpus_per_replica: float = 1.0,
          max_ongoing_requests: int = 32, max_batch_size: int = 16,
          batch_wait_timeout_s: float = TUNING["batch_wait_timeout_s"],
          relate_wait_timeout_s: float = TUNING["relate_wait_timeout_s"],
          cache_mb: int | None = None):
    """The Serve application: ``replicas`` copies of :class:`Engine`, each with
    ``gpus_per_replica`` GPUs (fractions share one) and ``cpus_per_replica`` CPUs; the
    rest is the replicas' ``user_config`` (``TUNING``)."""
    return Engine.options(
        num_replicas=replicas, max_ongoing_requests=max_ongoing_requests,
        ray_actor_options={"num_cpus": cpus_per_replica, "num_gpus": gpus_per_replica},
        user_config={"max_batch_size": max_batch_size,
                     "batch_wait_timeout_s": batch_wait_timeout_s,
                     "relate_wait_timeout_s": relate_wait_timeout_s, "cache_mb": cache_mb},
    ).bind()


# ``serve deploy deploy/serve.yaml`` imports this (import_path: engine.serving.service:app); the
# file's ``deployments:`` section sets replicas, GPUs, autoscaling and user_config.
app = Engine.bind()


# Ray Serve's own throughput settings (the ones its RAY_SERVE_THROUGHPUT_OPTIMIZED switch
# sets, less direct ingress, which would drop the proxy): user code on the replica's own
# event loop, gRPC from proxy to replica, buffered request logs. Measured here with 16
# clients and 0.24 MB answers: 1.6× the requests per second. Read by every Ray process
# when it starts, so set before Ray starts (on a cluster: in the environment of
# ``ray start``); a value already set wins.
RAY_THROUGHPUT = {"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0",
                  "RAY_SERVE_USE_GRPC_BY_DEFAULT": "1",
                  "RAY_SERVE_RUN_ROUTER_IN_SEPARATE_LOOP": "0",
                  "RAY_SERVE_REQUEST_PATH_LOG_BUFFER_SIZE": "1000",
                  "RAY_SERVE_LOG_TO_STDERR": "0"}


@contextlib.contextmanager
def local_ray(num_cpus: int | None = None) -> Iterator[None]:
    """A local Ray instance for this process: no dashboard, worker logs kept in Ray's log
    folder, token authentication off (it listens on this machine only), Serve's
    throughput settings (``RAY_THROUGHPUT``); shut down after."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    for name, value in RAY_THROUGHPUT.items():
        os.environ.setdefault(name, value)
    import ray

    ray.init(num_cpus=num_cpus or max(2, os.cpu_count() or 2), include_dashboard=False,
             log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            serve.shutdown()
        ray.shutdown()


def start(application=None, *, host: str = "127.0.0.1", port: int = 8000) -> str:
    """Start Serve's HTTP proxy on host:port and run the application (on the Ray instance
    of this process); returns the base URL once every replica is ready."""
    serve.start(http_options={"host": host, "port": port})
    deploy(application)
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    return f"http://{shown}:{port}"


def deploy(application=None) -> None:
    """Deploy (or update in place) the application on the running Serve; a change of
    ``user_config`` only reconfigures the replicas, which keep their models and caches."""
    serve.run(application if application is not None else build(), name=APP_NAME,
              route_prefix="/")


def stop() -> None:
    """Stop Serve (proxy, controller, replicas); the Ray instance stays."""
    serve.shutdown()
