"""A replica's batching, without Ray: which requests share one forward pass or one solve,
how a batch's results go back to each request, and the overload bounds.

Ray Serve collects concurrent calls into lists (``serve.batch`` on the deployment's two
batch methods) and queues, routes and rejects requests; this module decides what a list
becomes:

- encoding: jobs (:class:`~engine.serving.cache.Job`) are grouped by their pass key, one
  padded forward pass per group (:func:`pass_groups`, :func:`encode_jobs`); each job gets
  its encodings and the batch size, or the exception its own pass raised;
- relating: requests on the same texts and view share one batched softmax and Sinkhorn
  call (:func:`relate_items`); a request arriving while none is being related runs at once
  (:meth:`Batcher.solve`), so a lone slider move never waits for company;
- encodings are looked up in the replica's LRU first, and concurrent requests for the same
  texts wait for one encoding (:meth:`Batcher.encodings`);
- overload: at most :attr:`Overload.max_ongoing` requests per replica and
  :attr:`Overload.max_queued` waiting per caller; above that Serve answers 503 with
  ``Retry-After`` (:class:`Overload`), instead of queueing without bound.

Everything here is plain Python and asyncio, so it is tested without Ray
(``tests/test_batching.py``).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, Sequence

from ..errors import SettingsError
from ..models.encoder import clean_text
from .cache import EncodingCache, Job

# Replica settings Serve can change without a restart (user_config → reconfigure).
# batch_wait_timeout_s: how long an encode batch waits to fill; relate_wait_timeout_s:
# the same for slider moves, which join a batch only while others are being related (one
# arriving alone never waits); 10–30 ms gave the most relations per second here.
TUNING = {"max_batch_size": 16, "batch_wait_timeout_s": 0.005, "relate_wait_timeout_s": 0.02,
          "cache_mb": None}
GPU_BUCKET = 32  # tokens: on an accelerator, jobs up to this much apart share a pass


@dataclass(frozen=True)
class Overload:
    """How much a deployment holds before it refuses: ``max_ongoing`` requests computed
    per replica at once, ``max_queued`` waiting per caller (an HTTP proxy) beyond them;
    a request over that gets ``status`` (503) with ``Retry-After: retry_after_s`` from
    Serve, which :class:`~engine.serving.client.EngineClient` honours.

    Raises:
        SettingsError: a bound below 1, a negative wait, or a status other than 503/429.
    """

    max_ongoing: int = 32
    max_queued: int = 64
    retry_after_s: float = 1
    status: int = 503

    def __post_init__(self):
        for name in ("max_ongoing", "max_queued"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise SettingsError(f"{name} must be a whole number ≥ 1, got {v!r}.")
        if not isinstance(self.retry_after_s, (int, float)) or isinstance(
                self.retry_after_s, bool) or not 0 <= self.retry_after_s < math.inf:
            raise SettingsError(f"retry_after_s must be a number of seconds ≥ 0, got "
                                f"{self.retry_after_s!r}.")
        if self.status not in (503, 429):
            raise SettingsError(f"status must be 503 or 429 (what Serve can answer), got "
                                f"{self.status!r}.")

    def serve_options(self) -> dict:
        """The ``serve.deployment`` options that enforce these bounds (the backpressure
        answer as keyword arguments of Serve's ``BackpressureConfig``)."""
        return {"max_ongoing_requests": self.max_ongoing,
                "max_queued_requests": self.max_queued,
                "backpressure": {"status_code": self.status,
                                 "retry_after_s": self.retry_after_s}}

    def answer(self) -> tuple[int, dict[str, str]]:
        """The status and headers of a refused request (Serve rounds the wait up)."""
        return self.status, {"Retry-After": str(math.ceil(self.retry_after_s))}


OVERLOAD = Overload()


def job_for(req, enc) -> Job:
    """The encoding a relation request needs (its texts checked, no model call)."""
    a = clean_text(req.text_a, name="Text A")
    texts = (a,) if req.mode == "self" else (
        a, clean_text(req.text_b if req.text_b is not None else "", name="Text B"))
    return Job(model=enc.name, mode=req.mode, texts=texts)


def measure(job: Job, count: Callable[[list[str]], Sequence[int]], *,
            accelerator: bool) -> Job:
    """The job with the padded length of its forward pass: ``count`` gives each text's
    token count; on an accelerator lengths are bucketed by :data:`GPU_BUCKET`."""
    return dataclasses.replace(job, length=max(count([t.text for t in job.texts])),
                               bucket=GPU_BUCKET if accelerator else 1)


def pass_groups(jobs: Sequence[Job]) -> list[list[int]]:
    """Indices of the jobs that share one forward pass, groups in order of first job."""
    groups: dict[tuple, list[int]] = collections.defaultdict(list)
    for i, job in enumerate(jobs):
        groups[job.pass_key].append(i)
    return list(groups.values())


def encode_group(enc, group: Sequence[Job]) -> list[tuple]:
    """One forward pass for jobs of one pass key: each job's encodings, in order (a joint
    pair is one sequence, encoded on its own)."""
    if group[0].mode == "joint":
        return [(enc.encode_pair(*j.texts),) for j in group]
    flat = enc.encode_many([t for j in group for t in j.texts], attentions=False)
    results, k = [], 0
    for j in group:
        results.append(tuple(flat[k:k + len(j.texts)]))
        k += len(j.texts)
    return results


def encode_jobs(jobs: Sequence[Job], encoders: Mapping[str, Any],
                groups: Sequence[Sequence[int]] | None = None) -> list:
    """Run the forward passes of a batch: one per group of job indices (:func:`pass_groups`
    by default). Each job gets (encodings, batch size) or the exception its pass raised;
    a failing pass leaves the others standing."""
    out: list[Any] = [None] * len(jobs)
    for idx in (pass_groups(jobs) if groups is None else groups):
        group = [jobs[i] for i in idx]
        try:
            results = encode_group(encoders[group[0].model], group)
            for i, r in zip(idx, results):
                out[i] = (r, len(jobs))
        except Exception as e:  # this pass fails, the others stand
            for i in idx:
                out[i] = e
    return out


def relate_items(items: Sequence[tuple], relate: Callable[[list], list],
                 dump: Callable[[Any, str], bytes], clock: Callable[[], float]) -> list:
    """Relate a batch of (encodings, request, media type) in one call: ``relate`` takes
    [(encodings, request)] and gives each request's document or its exception; ``dump``
    writes a document as ``media``. Each item gets (body, ``clock()`` when computed,
    batch size) or its exception; one failing answer leaves the others standing."""
    docs = relate([(e, req) for e, req, _ in items])
    t = clock()
    out: list[Any] = []
    for doc, (_, _, media) in zip(docs, items):
        if isinstance(doc, BaseException):
            out.append(doc)
            continue
        try:
            out.append((dump(doc, media), t, len(items)))
        except Exception as e:  # this answer fails, the others stand
            out.append(e)
    return out


class Batcher:
    """One replica's batching state: its encoding cache, the encodings being computed,
    how many relations are being computed now, and the counters ``GET /v1/stats`` shows.

    Args:
        encoders: model name → encoder (``encode_many``, ``encode_pair``).
        cache: the replica's :class:`~engine.serving.cache.EncodingCache`.
        max_batch_size: the batch size Serve's batchers use (1 turns joining off).
    """

    def __init__(self, encoders: Mapping[str, Any], cache: EncodingCache, *,
                 max_batch_size: int = TUNING["max_batch_size"]):
        self.encoders = encoders
        self.cache = cache
        self.max_batch_size = max_batch_size
        self.inflight: dict[tuple, asyncio.Future] = {}
        self.batches: collections.Counter[int] = collections.Counter()
        self.relate_batches: collections.Counter[int] = collections.Counter()
        self.relating = 0  # relate requests being computed now (alone or in a batch)
        self.passes = 0

    async def encodings(self, job: Job, encode_batch: Callable[[Job], Awaitable]
                        ) -> tuple[tuple, int]:
        """The job's encodings and the size of the batch that made them (0: cached).

        ``encode_batch(job)`` is the batched encoder (Serve's ``serve.batch`` over
        :meth:`encode`); concurrent requests for the same texts wait for one encoding."""
        hit = self.cache.get(job.key)
        if hit is not None:
            return hit, 0
        future = self.inflight.get(job.key)
        if future is None:
            future = asyncio.ensure_future(encode_batch(job))
            self.inflight[job.key] = future
            future.add_done_callback(lambda _: self.inflight.pop(job.key, None))
        outcome = await asyncio.shield(future)
        if isinstance(outcome, BaseException):
            raise outcome
        encodings, batch = outcome
        self.cache.put(job.key, encodings)
        return encodings, batch

    async def encode(self, jobs: list[Job]) -> list:
        """A batch of jobs from concurrent requests: one forward pass per padded length,
        in a worker thread (:func:`encode_jobs`)."""
        self.batches[len(jobs)] += 1
        groups = pass_groups(jobs)
        self.passes += len(groups)
        return await asyncio.to_thread(encode_jobs, jobs, self.encoders, groups)

    async def relate(self, items: list[tuple], relate: Callable[[list], list],
                     dump: Callable[[Any, str], bytes], clock: Callable[[], float]) -> list:
        """A batch of relations from concurrent requests, in a worker thread
        (:func:`relate_items`)."""
        self.relate_batches[len(items)] += 1
        return await asyncio.to_thread(relate_items, items, relate, dump, clock)

    async def solve(self, item: tuple, work: Callable[[], tuple[bytes, float]],
                    relate_batch: Callable[[tuple], Awaitable] | None) -> tuple:
        """Answer one request: ``work()`` (in a worker thread) gives (body, time computed).

        With ``relate_batch`` (relations), a request that arrives while others are being
        related joins them in ``relate_batch(item)`` (Serve's batcher over :meth:`relate`),
        one batched solve; one arriving alone runs at once, without waiting for company.
        Returns (body, time computed, how many requests were solved together)."""
        if relate_batch is None:
            return (*await asyncio.to_thread(work), 1)
        together = self.relating > 0 and self.max_batch_size > 1
        self.relating += 1
        try:
            if together:
                outcome = await relate_batch(item)
                if isinstance(outcome, BaseException):
                    raise outcome
                return outcome
            return (*await asyncio.to_thread(work), 1)
        finally:
            self.relating -= 1

    def stats(self) -> dict:
        """Requests per encode and relate batch, forward passes, the cache's counters."""
        return {"batch_sizes": {str(k): v for k, v in sorted(self.batches.items())},
                "relate_batch_sizes": {str(k): v for k, v in
                                       sorted(self.relate_batches.items())},
                "forward_passes": self.passes, "cache": self.cache.stats()}
