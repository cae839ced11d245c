"""The Ray Serve deployment: one replica's wiring.

Each replica loads its models once on its device (CUDA when present, float32 there with
the solver's log-domain fallback; else the CPU in float64, as embedded), mounts the HTTP
API (:mod:`engine.serving.routes`) and hands requests to its batching
(:mod:`engine.serving.batching`: what shares a forward pass or a solve, the encoding cache,
the overload bounds) through Serve's ``serve.batch``, twice: encoding and relating. What
each endpoint computes is in :mod:`engine.serving.answers`. Ray Serve does everything
else: replicas, routing, bounded queues (503 with ``Retry-After`` when they are full),
autoscaling (``deploy/serve.yaml``, ``import_path: engine.serving.deployment:app``).
"""

# No ``from __future__ import annotations``: Serve pickles this class, and the routes'
# annotations must resolve in the replica.
import asyncio
import collections
import copy
import json
import logging
import os
import time
import weakref
from typing import Any, Callable

from fastapi.responses import Response, StreamingResponse
from ray import serve
from ray.serve.config import BackpressureConfig

from .. import settings
from ..errors import ModelError, SinkscopeError
from ..jobs.served import Jobs, job_file
from ..models.encoder import Encoder, allowed_models
from ..relation.sentences import measures
from ..settings import DEFAULT_MODEL
from ..types import Encoding
from ..solver.cancel import scope
from . import answers, batching, limits, runtime, stream, wire
from .batching import OVERLOAD, TUNING, Batcher
from .cache import EncodingCache, Job
from .schemas import EpsPathRequest, LatticeRequest, ProjectRequest

log = logging.getLogger("ray.serve.sinkscope")

# Overload (batching.Overload): each caller (an HTTP proxy) queues at most MAX_QUEUED
# requests beyond what the replicas hold (MAX_ONGOING each); above it Serve answers 503
# with Retry-After.
MAX_ONGOING = OVERLOAD.max_ongoing
MAX_QUEUED = OVERLOAD.max_queued
RETRY_AFTER_S = OVERLOAD.retry_after_s


def load_model(name: str) -> Encoder:
    """The one place a replica loads a model (on its device, offline). Allow-listed names
    only: ``Encoder.load`` would also take a folder, which no HTTP caller may name."""
    return Encoder(name)


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


@serve.deployment(max_ongoing_requests=MAX_ONGOING, max_queued_requests=MAX_QUEUED,
                  backpressure_config=BackpressureConfig(**OVERLOAD.serve_options()[
                      "backpressure"]),
                  ray_actor_options={"num_cpus": 1}, user_config=TUNING,
                  health_check_period_s=5)
@serve.ingress()
class Engine:
    """One replica: the allow-listed models on this replica's device, its batching
    (:class:`~engine.serving.batching.Batcher`, with the encoding cache) and the HTTP API
    on top (``__serve_build_asgi_app__``)."""

    def __init__(self) -> None:
        import torch

        runtime.replica_setup()  # bounded malloc; loopback-only listeners on a local node
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
        answers.warm_up(next(iter(self.encoders.values())), self.on_device)
        self.device_name = (torch.cuda.get_device_name(self.device)
                            if self.device.type == "cuda" else "")
        self.batching = Batcher(self.encoders, EncodingCache(settings.CONFIG.cache_mb * 2**20),
                                max_batch_size=TUNING["max_batch_size"])
        self.lanes = limits.Lanes()
        self.jobs = Jobs()  # /v1/jobs: the board (a named actor) is found on first use
        from ..aligner.registry import add_source

        add_source(job_file)  # an aligner a job trained, by name (FILE@JOB), on any replica
        self.requests = 0
        self.errors: collections.Counter[int] = collections.Counter()
        try:
            self.replica = serve.get_replica_context().replica_tag
        except Exception:  # constructed outside Serve (tests of the class itself)
            self.replica = f"local-{os.getpid()}"

    def __serve_build_asgi_app__(self):
        """The HTTP API of this replica (Serve calls this after ``__init__``)."""
        from .routes import build_api

        return build_api(self)

    def reconfigure(self, config: dict) -> None:
        """Serve's ``user_config``: batch size, batch waits and cache size, changed live."""
        config = {**TUNING, **(config or {})}
        self.batching.max_batch_size = int(config["max_batch_size"])
        for batcher, wait in ((self._encode_batch, "batch_wait_timeout_s"),
                              (self._relate_batch, "relate_wait_timeout_s")):
            batcher.set_max_batch_size(self.batching.max_batch_size)
            batcher.set_batch_wait_timeout_s(float(config[wait]))
        if config.get("cache_mb") is not None:
            self.batching.cache.max_bytes = int(config["cache_mb"]) * 2**20
            self.batching.cache.shrink()

    # ----------------------------------------------------------------------- documents
    def health(self) -> dict:
        """GET /v1/health: alive, with the replica that answered and where it computes."""
        return {"status": "ok", "service": "sinkscope", "api": "v1", "replica": self.replica,
                "pid": os.getpid(), "device": str(self.device), "device_name": self.device_name,
                "dtype": "float64" if self.on_device is None else "float32",
                "models": list(self.encoders), "memory_mb": round(_rss_mb(), 1)}

    def models(self) -> dict:
        """GET /v1/models: name, layers, heads, head size, token limit of each model."""
        return {"default": DEFAULT_MODEL if DEFAULT_MODEL in self.encoders
                else next(iter(self.encoders)),
                "device": str(self.device),
                "dtype": "float64" if self.on_device is None else "float32",
                "models": [{"name": n, "n_layers": e.n_layers, "n_heads": e.n_heads,
                            "d_head": e.d_head, "max_tokens": e.max_tokens}
                           for n, e in self.encoders.items()],
                "unavailable": [{"name": n, "message": m} for n, m in self.broken.items()]}

    def stats(self) -> dict:
        """GET /v1/stats: requests per encode and relate batch, forward passes, cache."""
        b = self.batching.stats()
        return {"replica": self.replica, "requests": self.requests,
                "batch_sizes": b["batch_sizes"], "relate_batch_sizes": b["relate_batch_sizes"],
                "forward_passes": b["forward_passes"], "cache": b["cache"],
                "errors": {str(k): v for k, v in sorted(self.errors.items())}}

    # ----------------------------------------------------------------------- answering
    async def answer(self, req, answer: Callable[[tuple[Encoding, ...], Any, Any], dict],
                     accept: str | None, *, batched: bool = False) -> Response:
        """Check and price a request (:mod:`engine.serving.limits`: 413 over its budget,
        before any computation), get its encodings, compute ``answer`` off the event loop
        under the request's deadline, and write its document as JSON or NPZ (``accept``).
        A light request runs at once (``batched``, relations: it may be solved together
        with others, :meth:`Batcher.solve`); a heavy one waits for a heavy slot."""
        self.requests += 1
        t0, since = time.perf_counter(), time.monotonic()
        job = self._job(req)
        media = wire.media_type(accept)
        price = self._price(req, job, media)
        token = limits.token()
        try:
            encodings, batch = await self.batching.encodings(
                job, lambda job: self._encode_batch(self._measured(job)))
            t1 = time.perf_counter()
            headers = {"X-Sinkscope-Replica": self.replica, "X-Sinkscope-Batch": str(batch)}
            if not price.light:
                return await self._heavy(lambda: answer(encodings, req, self.on_device),
                                         media, headers, since)

            def work() -> tuple[bytes, float]:  # one trip to a worker thread
                with scope(token):
                    doc = answer(encodings, req, self.on_device)
                t = time.perf_counter()
                return stream.dumps(doc, media), t

            body, t2, solved = await self.batching.solve(
                (encodings, req, media), work, self._relate_batch if batched else None)
        except asyncio.CancelledError:  # the client went away, or Serve's timeout
            token.cancel()
            raise
        t3 = time.perf_counter()
        timing = ", ".join(f"{k};dur={v * 1e3:.1f}" for k, v in
                           (("encode", t1 - t0), ("compute", t2 - t1), ("write", t3 - t2)))
        return Response(body, media_type=media, headers={
            **headers, "X-Sinkscope-Solved-With": str(solved), "Server-Timing": timing})

    async def _heavy(self, compute: Callable[[], dict], media: str, headers: dict,
                     since: float) -> Response:
        """A heavy request (arrived at ``since``): wait for a heavy slot (503 after the
        deadline), compute in a worker thread under the deadline (the operator's counted
        from here: the wait had its own), and stream the answer in pieces while still
        holding the slot (a replica holds one heavy answer at a time)."""
        release = await self.lanes.acquire(limits.token(since).deadline_s)
        token = limits.token(since)
        try:
            def work():
                with scope(token):
                    doc = compute()
                return wire.dumps(doc, media) if media == wire.NPZ else doc

            out = await asyncio.to_thread(work)
        except BaseException as e:
            release()
            if isinstance(e, asyncio.CancelledError):
                token.cancel()
            raise
        pieces = stream.slices(out) if media == wire.NPZ else stream.json_chunks(out)
        del out

        async def body():
            try:
                while True:
                    piece = await asyncio.to_thread(next, pieces, None)
                    if piece is None:
                        return
                    yield piece
            finally:
                release()
                runtime.trim_memory()

        chunks = body()
        weakref.finalize(chunks, release)  # also when the client left before it started
        return StreamingResponse(chunks, media_type=media,
                                 headers={**headers, "X-Sinkscope-Solved-With": "1"})

    async def rank(self, req, accept: str | None) -> Response:
        """POST /v1/rank: the texts' measures are kept in the replica's cache (read and
        written here, on the event loop), so an ε move does not re-encode."""
        self.requests += 1
        enc = self.encoder(req.model)
        answers.check_request(req, enc)
        lines = answers.candidate_lines(req)
        counts = self._count(enc.name)([req.text_a, *lines])
        price = limits.rank_price(counts[0], counts[1:], len(req.text_a) + sum(map(
            len, lines))).check(wire.media_type(accept))
        key = ("measures", enc.name, req.text_a, json.dumps(req.candidates))
        kept = self.batching.cache.get(key)
        made: list = []

        def compute() -> dict:
            measured = kept or measures(enc, req.text_a, req.candidates)
            made.append(measured)
            return answers.rank_answer(enc, req, measured)

        answer = await self._run(compute, price, accept)
        if kept is None and made:
            self.batching.cache.put(key, made[0], size=sum(
                x.nbytes for m in made[0][0] for x in (m.points, m.embedding, m.mean)))
        return answer

    async def align(self, req, accept: str | None) -> Response:
        """POST /v1/align: every pair of the request aligned in padded batches, in a worker
        thread (the pairs' words are encoded here, not cached)."""
        self.requests += 1
        enc = self.encoder(req.model)
        answers.check_request(req, enc)
        price = limits.align_price([(p.text_a, p.text_b) for p in req.pairs], req.values)
        return await self._run(lambda: answers.align_answer(enc, req, self.on_device,
                                                            self.encoders),
                               price.check(wire.media_type(accept)), accept)

    async def align_live(self, req, accept: str | None) -> Response:
        """POST /v1/align/live: the Align page's live payload of one pair and method, in a
        worker thread (the pair's words encoded here, a trained aligner looked up)."""
        from ..alignment.live import MASS_STOPS, TAU_STOPS, grid_of

        self.requests += 1
        enc = self.encoder(req.model)
        answers.check_request(req, enc)
        _, grid = grid_of(req.method, TAU_STOPS, MASS_STOPS)
        price = limits.live_price(req.text_a, req.text_b, len(grid), int(req.max_bytes))
        return await self._run(lambda: answers.align_live_answer(enc, req, self.on_device,
                                                                 self.encoders),
                               price.check(wire.media_type(accept)), accept)

    async def toy(self, req, accept: str | None) -> Response:
        """POST /v1/toy: one plan between the Learn page's clouds (no model)."""
        self.requests += 1
        price = limits.toy_price(req.t).check(wire.media_type(accept))
        return await self._run(lambda: answers.toy_answer(req), price, accept)

    def aligners(self) -> dict:
        """GET /v1/aligners: the trained aligners this replica aligns with (the operator's
        SINKSCOPE_ALIGNERS, read here, and any registered in this process): name, base
        model, final layer, θ; and listed ones that cannot be read."""
        from ..aligner.registry import infos

        ok, broken = infos()
        return {"aligners": [a.to_dict() for a in ok],
                "unavailable": [{"name": n, "message": m} for n, m in broken]}

    async def _run(self, compute: Callable[[], dict], price: limits.Price,
                   accept: str | None) -> Response:
        """A request without batching: at once when it is light, else in the heavy lane."""
        media, token = wire.media_type(accept), limits.token()
        headers = {"X-Sinkscope-Replica": self.replica}
        if not price.light:
            return await self._heavy(compute, media, headers, time.monotonic())

        def work() -> bytes:
            with scope(token):
                return stream.dumps(compute(), media)

        try:
            return Response(await asyncio.to_thread(work), media_type=media, headers=headers)
        except asyncio.CancelledError:
            token.cancel()
            raise

    def _price(self, req, job: Job, media: str = wire.JSON) -> limits.Price:
        """The request's price from its token counts (tokenised here, no model call);
        WorkTooLarge (413) when it is over its route's budget, or its answer as ``media``
        could be over the answer limit."""
        enc = self.encoders[job.model]
        counts = self._count(job.model)([t.text for t in job.texts])
        n, m = counts[0], counts[-1]
        if isinstance(req, EpsPathRequest):
            return limits.eps_path_price(req, n, m).check(media)
        if isinstance(req, LatticeRequest):
            return limits.lattice_price(req, n, m).check(media)
        if isinstance(req, ProjectRequest):
            return limits.project_price(n, m, enc.n_heads * enc.d_head,
                                        int(req.dim)).check(media)
        if req.layer == "all":
            answers.check_grid(n, m)  # the app's own limit first: its message says more
        return limits.relate_price(req, n, m, enc.n_layers, enc.n_heads,
                                   enc.d_head).check(media)

    def encoder(self, name: Any) -> Encoder:
        """The served model ``name``, or a ModelError naming the ones served."""
        if isinstance(name, str) and name in self.encoders:
            return self.encoders[name]
        if isinstance(name, str) and name in self.broken:
            raise ModelError(self.broken[name])
        shown = repr(name) if len(repr(name)) <= 60 else repr(name)[:60] + "…"
        raise ModelError(f"Model {shown} is not served here; choose one of: "
                         f"{', '.join(self.encoders)}. Operators add models with "
                         "SINKSCOPE_MODELS.")

    def _job(self, req) -> Job:
        """Check the request and name the encoding it needs (no model call)."""
        enc = self.encoder(req.model)
        answers.check_request(req, enc)
        return batching.job_for(req, enc)

    def _count(self, model: str) -> Callable[[list[str]], list[int]]:
        """Token counts of texts for ``model``'s forward pass (its own tokenizer copy)."""
        enc, tok = self.encoders[model], self.counters[model]
        return lambda texts: [len(ids) for ids in tok(
            texts, truncation=True, max_length=enc.max_tokens,
            split_special_tokens=True)["input_ids"]]

    def _measured(self, job: Job) -> Job:
        """The job with the padded length of its forward pass (tokenised here)."""
        return batching.measure(job, self._count(job.model),
                                accelerator=self.on_device is not None)

    # Serve's batchers: each collects concurrent calls into a list for the Batcher.
    @serve.batch(max_batch_size=TUNING["max_batch_size"],
                 batch_wait_timeout_s=TUNING["batch_wait_timeout_s"])
    async def _encode_batch(self, jobs: list[Job]) -> list:
        """Encode the jobs of concurrent requests: one forward pass per padded length."""
        return await self.batching.encode(jobs)

    @serve.batch(max_batch_size=TUNING["max_batch_size"],
                 batch_wait_timeout_s=TUNING["relate_wait_timeout_s"])
    async def _relate_batch(self, items: list[tuple]) -> list:
        """Relations of concurrent callers (encodings, request, media type): requests on the
        same texts and view share one batched softmax and Sinkhorn call
        (:func:`engine.serving.answers.relation_answers`)."""
        return await self.batching.relate(
            items, lambda pairs: answers.relation_answers(pairs, self.on_device),
            stream.dumps, time.perf_counter)


def build(*, replicas: int = 1, gpus_per_replica: float = 0.0, cpus_per_replica: float = 1.0,
          max_ongoing_requests: int = MAX_ONGOING, max_queued_requests: int = MAX_QUEUED,
          max_batch_size: int = 16,
          batch_wait_timeout_s: float = TUNING["batch_wait_timeout_s"],
          relate_wait_timeout_s: float = TUNING["relate_wait_timeout_s"],
          cache_mb: int | None = None):
    """The Serve application: ``replicas`` copies of :class:`Engine`, each with
    ``gpus_per_replica`` GPUs (fractions share one) and ``cpus_per_replica`` CPUs, at most
    ``max_ongoing_requests`` each and ``max_queued_requests`` waiting per caller (then 503
    with Retry-After); the rest is the replicas' ``user_config`` (:data:`TUNING`)."""
    return Engine.options(
        num_replicas=replicas, max_ongoing_requests=max_ongoing_requests,
        max_queued_requests=max_queued_requests,
        ray_actor_options={"num_cpus": cpus_per_replica, "num_gpus": gpus_per_replica},
        user_config={"max_batch_size": max_batch_size,
                     "batch_wait_timeout_s": batch_wait_timeout_s,
                     "relate_wait_timeout_s": relate_wait_timeout_s, "cache_mb": cache_mb},
    ).bind()


# ``serve deploy deploy/serve.yaml`` imports this (import_path:
# engine.serving.deployment:app); the file's ``deployments:`` section sets replicas, GPUs,
# queue bounds, autoscaling and user_config.
app = Engine.bind()
