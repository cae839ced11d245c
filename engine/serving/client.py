"""A client for the served engine: the same Relation as the embedded ``relate``, over HTTP.

```python
from engine.serving.client import EngineClient

engine = EngineClient("http://127.0.0.1:8000")
engine.health()                        # {"status": "ok", "device": "cpu", ...}
engine.models()                        # [ServedModel(name="all-MiniLM-L6-v2", n_layers=6, ...)]
r = engine.relate("text A", "text B", layer=5, head=3, eps=0.5)   # engine.types.Relation
eps, plans = engine.eps_path("text A", "text B", layer=5, head=3)
engine.aligners()                      # [ServedAligner(name=..., base_model=..., theta=...)]
engine.align(pairs, method="trained", aligner="name")             # one Alignment per pair
data, why = engine.align_live("text A", "text B", method="unbalanced")   # SKA1 bytes
p = engine.project("text A", "text B", layer=5, head=3, method="pca")  # engine.types.Projection
engine.toy("clusters", 0.5, "coupling", eps=0.2)                  # engine.lab.clouds.ToyPlan
```

Bad input raises the engine's own errors (``TextError``, ``SettingsError``, ``ModelError``:
ValueErrors whose message says what to change), exactly as the embedded engine does; a
request over the service's limits raises :class:`RequestTooLarge` (413: its work budget or
body size) or :class:`RequestTimedOut` (408: stopped at its deadline), both SettingsErrors
saying what to ask for instead. A service that cannot be reached, fails, or is not a
sinkscope engine raises :class:`EngineUnavailable` (a RuntimeError: not bad input) naming
the URL and what to check; one that stays busy (503 after every retry) raises
:class:`EngineBusy`, an EngineUnavailable.

Every call is idempotent (an answer is a pure function of its request), so a call that
meets a refused or dropped connection, or an answer 502, 503 or 504 (or a 500 that did not
come from the engine: a replica that died mid-request), is sent again after a bounded
exponential backoff with jitter, honouring ``Retry-After`` (what an overloaded service
answers), until ``retries`` more tries or the call's ``timeout`` are spent; then
:class:`EngineUnavailable` says so. A bad request (4xx) is never retried.

Torch-free: it imports numpy, urllib3 and the engine's torch-free modules only, so a front
end that uses a served engine never loads torch or a model. Connections are kept open and
reused (one urllib3 pool).
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import urllib3

from .. import errors

from . import wire
from .jobs_client import ZIP, JobCalls
from .limits import DEADLINE_HEADER
from ..io.export import ranking_from_dict, relation_from_dict
from ..jobs.errors import JOB_ERRORS
from ..lab.clouds import Clouds, ToyPlan
from ..settings import DEFAULT_MODEL, Settings
from ..types import Projection, Ranking, Relation

_ERRORS = {"TextError": errors.TextError, "SettingsError": errors.SettingsError,
           "ModelError": errors.ModelError, "AlignerError": errors.AlignerError}
_ERRORS.update(JOB_ERRORS)  # JobNotFound (404), JobConflict (409), JobError


class EngineUnavailable(RuntimeError):
    """The served engine did not answer, failed, or is not a sinkscope engine.

    Attributes:
        url: the engine's base URL. reason: what went wrong, in a few words.
        status: the HTTP status it answered with, or None when it did not answer at all.
    """

    def __init__(self, url: str, reason: str, status: int | None = None):
        self.url, self.reason, self.status = url, reason, status
        super().__init__(
            f"The sinkscope engine at {url} is not available ({reason}). Check that it is "
            f"running (`python -m engine serve` or `make engine`), that SINKSCOPE_ENGINE "
            f"names it, and that this machine can reach it.")


class EngineBusy(EngineUnavailable):
    """The served engine answered 503 to every try: overloaded, or busy with other large
    requests (it computes a few at a time per replica). Try again later, or ask for less."""

    def __init__(self, url: str, reason: str, status: int | None = 503):
        self.url, self.reason, self.status = url, reason, status
        RuntimeError.__init__(
            self, f"The sinkscope engine at {url} is busy ({reason}): it is computing other "
            "requests. Try again in a moment, ask for less (fewer half-steps, shorter texts), "
            "or ask its operator for more replicas.")


class RequestTooLarge(errors.SettingsError):
    """HTTP 413: the request asks for more than the service allows (its route's work budget,
    ``SINKSCOPE_SERVE_WORK_*``, or its body size); the message names the limit, the
    request's figure and what to change."""

    status = 413


class RequestTimedOut(errors.SettingsError):
    """HTTP 408: the service stopped the request at its deadline; ask for less work."""

    status = 408


RETRY_STATUSES = (502, 503, 504)


@dataclass(frozen=True)
class ServedModel:
    """A model as the served engine describes it (``GET /v1/models``); the embedded
    engine's description of a model is :class:`engine.models.encoder.ModelInfo`.

    Attributes:
        name: the allow-list name. n_layers, n_heads, d_head: the transformer's shape.
        max_tokens: the token limit a text is cut at. device: where the engine computes
        ("cpu", "cuda", ...). dtype: "float64" (CPU) or "float32" (accelerator).
    """

    name: str
    n_layers: int
    n_heads: int
    d_head: int
    max_tokens: int
    device: str = "cpu"
    dtype: str = "float64"


# The name this class had before (sinkscope_app.compute still imports it).
ModelInfo = ServedModel


@dataclass(frozen=True)
class ServedAligner:
    """A trained aligner a served engine aligns with (``GET /v1/aligners``).

    Attributes:
        name: its name (``align(..., method="trained", aligner=name)``). base_model: the
        model it was trained on. final: "sinkhorn" or "softmax". theta: its own θ.
        dev_total_f1: its dev score, if known. registered: registered in the engine's
        process rather than listed by its operator (``SINKSCOPE_ALIGNERS``).
    """

    name: str
    base_model: str
    final: str
    theta: float
    dev_total_f1: float | None = None
    registered: bool = False


class EngineClient(JobCalls):
    """Talks to ``python -m engine serve`` (or a Ray Serve cluster running it).

    Args:
        url: the engine's base URL, e.g. ``http://127.0.0.1:8000``.
        timeout: seconds to wait for an answer (a 512-token heads grid or a long ε path
            takes seconds on a CPU).
        binary: ask for NPZ answers (``Accept: application/x-npz``): the same document,
            tens of times faster to write and read than JSON for large arrays.
        pool_size: connections kept open for concurrent callers (threads).
        retries: how many times a call is sent again after a connection error or a
            502/503/504 (within its timeout); 0: never.
        backoff: the first wait before a retry, in seconds; each next wait doubles, up
            to ``max_backoff``, and is drawn between half and all of that (jitter).
            A ``Retry-After`` header sets the wait instead (up to ``max_backoff`` × 4).

    Attributes:
        retried: how many retries this client has made (all threads together).
    """

    def __init__(self, url: str, *, timeout: float = 60.0, binary: bool = True,
                 pool_size: int = 4, retries: int = 6, backoff: float = 0.1,
                 max_backoff: float = 2.0):
        parts = urlsplit(str(url).strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise errors.SettingsError(
                f"The engine's URL must look like http://host:8000, got {url!r} "
                "(SINKSCOPE_ENGINE: 'embedded' or such a URL).")
        self.url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        self.timeout = float(timeout)
        self.binary = binary
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise errors.SettingsError(f"retries must be a whole number ≥ 0, got {retries!r}.")
        self.retries, self.backoff, self.max_backoff = retries, float(backoff), float(max_backoff)
        self.retried = 0
        self._lock = threading.Lock()
        # Retries are made here, in one place (_call), not by urllib3.
        self._pool = urllib3.PoolManager(num_pools=1, maxsize=pool_size, block=False,
                                         retries=False)

    def __repr__(self) -> str:
        return f"EngineClient({self.url!r})"

    # ----------------------------------------------------------------------- API
    def health(self, *, timeout: float | None = None) -> dict[str, Any]:
        """``GET /v1/health``: status, replica, device, memory of the replica that answered."""
        return self._call("GET", "/v1/health", timeout=timeout)

    def models(self) -> list[ServedModel]:
        """``GET /v1/models``: the models the engine serves, its default first."""
        d = self._call("GET", "/v1/models")
        try:
            infos = [ServedModel(name=m["name"], n_layers=int(m["n_layers"]),
                               n_heads=int(m["n_heads"]), d_head=int(m["d_head"]),
                               max_tokens=int(m["max_tokens"]), device=str(d["device"]),
                               dtype=str(d["dtype"])) for m in d["models"]]
        except (KeyError, TypeError, ValueError) as e:
            raise EngineUnavailable(self.url, f"GET /v1/models gave an unexpected answer: "
                                    f"{type(e).__name__} {e}", 200) from None
        return sorted(infos, key=lambda m: m.name != d.get("default"))

    def aligners(self) -> list[ServedAligner]:
        """``GET /v1/aligners``: the trained aligners the engine aligns with."""
        d = self._call("GET", "/v1/aligners")
        try:
            return [ServedAligner(name=str(a["name"]), base_model=str(a["base_model"]),
                                  final=str(a["final"]), theta=float(a["theta"]),
                                  dev_total_f1=None if a.get("dev_total_f1") is None
                                  else float(a["dev_total_f1"]),
                                  registered=bool(a.get("registered", False)))
                    for a in d["aligners"]]
        except (KeyError, TypeError, ValueError) as e:
            raise EngineUnavailable(self.url, f"GET /v1/aligners gave an unexpected answer: "
                                    f"{type(e).__name__} {e}", 200) from None

    def relate(self, text_a: str, text_b: str | None = None, *,
               settings: Settings | None = None, **overrides: Any) -> Relation:
        """``POST /v1/relate``: what :func:`engine.relation.relate.relate` returns for the
        same arguments: a :class:`engine.settings.Settings` and/or its fields as keywords
        (layer, head, eps, half_steps, mode, weights, pool_words, tol, model)."""
        s = Settings.of(settings, **overrides)
        doc = self._call("POST", "/v1/relate", {"text_a": text_a, "text_b": text_b,
                                                **s.to_dict()})
        try:
            return relation_from_dict(doc)
        except (KeyError, TypeError, ValueError) as e:
            raise EngineUnavailable(self.url, "POST /v1/relate gave something that is not "
                                    f"a sinkscope relation: {type(e).__name__} {e}",
                                    200) from None

    def eps_path(self, text_a: str, text_b: str | None = None, *,
                 model: str = DEFAULT_MODEL, eps_values=None, half_steps: int = 4000,
                 tol: float = 1e-6, **view: Any) -> tuple[np.ndarray, np.ndarray]:
        """``POST /v1/eps_path``: (ε (K,), Sinkhorn plans (K, n, m)), as
        :func:`engine.eps_path` gives for the relation of the same texts and view (layer,
        head, mode, weights, pool_words)."""
        body = {"text_a": text_a, "text_b": text_b, "model": model, "half_steps": half_steps,
                "tol": tol, **view}
        if eps_values is not None:
            body["eps_values"] = [float(e) for e in np.asarray(eps_values, float).ravel()]
        doc = self._call("POST", "/v1/eps_path", body)
        try:
            return (np.asarray(doc["eps"], dtype=np.float64),
                    np.asarray(doc["plans"], dtype=np.float64))
        except (KeyError, TypeError, ValueError) as e:
            raise EngineUnavailable(self.url, "POST /v1/eps_path gave an unexpected answer: "
                                    f"{type(e).__name__} {e}", 200) from None

    def lattice(self, text_a: str, text_b: str | None = None, *, model: str = DEFAULT_MODEL,
                eps_values, steps, id: str = "", max_bytes: int = 3_000_000,
                **view: Any) -> bytes | None:
        """``POST /v1/lattice``: the live sliders' frames for the relation of the same texts
        and view (layer, head, mode, weights, pool_words), as :func:`engine.relation.frames.encode`
        packs them; None when they would take more than ``max_bytes``."""
        body = {"text_a": text_a, "text_b": text_b, "model": model, "id": id,
                "eps_values": [float(e) for e in np.asarray(eps_values, float).ravel()],
                "steps": [int(t) for t in np.asarray(steps).ravel()],
                "max_bytes": int(max_bytes), **view}
        doc = self._call("POST", "/v1/lattice", body)
        try:
            payload = doc["payload"]
            return None if payload is None else np.asarray(payload, dtype=np.uint8).tobytes()
        except (KeyError, TypeError, ValueError) as e:
            raise EngineUnavailable(self.url, "POST /v1/lattice gave an unexpected answer: "
                                    f"{type(e).__name__} {e}", 200) from None

    def rank(self, text_a: str, candidates, *, model: str = DEFAULT_MODEL,
             eps: float = 1.0) -> Ranking:
        """``POST /v1/rank``: what :func:`engine.relation.sentences.rank_texts` returns (candidates:
        a list of texts, or one text with one candidate per line)."""
        if not isinstance(candidates, str):
            candidates = [str(c) for c in candidates]
        doc = self._call("POST", "/v1/rank", {"text_a": text_a, "candidates": candidates,
                                              "model": model, "eps": eps})
        try:
            return ranking_from_dict(doc)
        except (KeyError, TypeError, ValueError) as e:
            raise EngineUnavailable(self.url, "POST /v1/rank gave an unexpected answer: "
                                    f"{type(e).__name__} {e}", 200) from None

    def align(self, pairs, *, model: str = DEFAULT_MODEL, values: bool = True,
              **settings: Any) -> list:
        """``POST /v1/align``: what :func:`engine.alignment.api.align_pairs` returns for the
        same pairs (``(text_a, text_b[, gold])`` tuples, dicts or ``Pair`` s) and settings
        (method, source, layer, head, center, threshold, tau, mass, eps, lowercase): one
        ``engine.alignment.api.Alignment`` per pair, in order. ``values=False`` leaves each
        pair's value matrix out of the answer. ``method="trained", aligner=NAME``: the
        engine's trained aligner NAME (:meth:`aligners`; ``threshold`` its θ), as
        :func:`engine.aligner.extract.align` gives."""
        body_pairs = []
        for p in pairs:
            if isinstance(p, dict):
                d = {k: p.get(k) for k in ("text_a", "text_b", "gold")}
            elif isinstance(p, (tuple, list)):
                d = dict(zip(("text_a", "text_b", "gold"), p))
            else:  # an engine.alignment Pair: its gold as Pharaoh text
                links = [f"{i}-{j}" for i, j in sorted(p.sure)] + [
                    f"{i}p{j}" for i, j in sorted(p.possible - p.sure)]
                d = {"text_a": p.text_a, "text_b": p.text_b,
                     "gold": " ".join(links) if p.has_gold else None}
            body_pairs.append({k: v for k, v in d.items() if v is not None})
        doc = self._call("POST", "/v1/align", {"pairs": body_pairs, "model": model,
                                               "values": values, **settings})
        from ..alignment.methods import Alignment

        try:
            return [Alignment.from_dict(a) for a in doc["alignments"]]
        except (KeyError, TypeError, ValueError) as e:
            raise EngineUnavailable(self.url, "POST /v1/align gave an unexpected answer: "
                                    f"{type(e).__name__} {e}", 200) from None

    def align_live(self, text_a: str, text_b: str, gold: str | None = None, *,
                   method: str, lowercase: bool = False, model: str = DEFAULT_MODEL,
                   aligner: str | None = None, max_bytes: int = 3_000_000
                   ) -> tuple[bytes | None, str]:
        """``POST /v1/align/live``: (the Align page's live payload of one pair and method,
        the bytes :func:`engine.alignment.live.pair_payload` encodes embedded, or None; why
        there is none: "" or a code of :mod:`engine.alignment.live`, e.g. live_off_cells).
        ``method="trained"`` needs ``aligner``, one of :meth:`aligners`."""
        body = {"text_a": text_a, "text_b": text_b, "gold": gold, "method": method,
                "lowercase": lowercase, "model": model, "max_bytes": int(max_bytes)}
        if aligner is not None:
            body["aligner"] = aligner
        doc = self._call("POST", "/v1/align/live", body)
        try:
            payload = doc["payload"]
            data = None if payload is None else np.asarray(payload, dtype=np.uint8).tobytes()
            return data, str(doc.get("why") or "")
        except (KeyError, TypeError, ValueError) as e:
            raise EngineUnavailable(self.url, "POST /v1/align/live gave an unexpected answer: "
                                    f"{type(e).__name__} {e}", 200) from None

    def project(self, text_a: str, text_b: str | None = None, *,
                settings: Settings | None = None, space: str = "qk", method: str = "pca",
                dim: int = 2, seed: int = 0, **view: Any) -> Projection:
        """``POST /v1/project``: what :func:`engine.relation.projection.project` gives for
        the relation of the same texts and view (a :class:`~engine.settings.Settings` or
        its layer, head, mode, weights, pool_words, model as keywords)."""
        s = Settings.of(settings, **view)
        body = {"text_a": text_a, "text_b": text_b, "model": s.model, "mode": s.mode,
                "layer": s.layer, "head": s.head, "weights": s.weights,
                "pool_words": s.pool_words, "space": space, "method": method, "dim": dim,
                "seed": seed}
        doc = self._call("POST", "/v1/project", body)
        try:
            return Projection(
                xy_a=np.asarray(doc["xy_a"], dtype=np.float64).reshape(-1, int(doc["dim"])),
                xy_b=np.asarray(doc["xy_b"], dtype=np.float64).reshape(-1, int(doc["dim"])),
                method=str(doc["method"]), space=str(doc["space"]), dim=int(doc["dim"]),
                distance_cost_corr=float(doc["distance_cost_corr"]),
                explained=None if doc.get("explained") is None else float(doc["explained"]),
                note=str(doc.get("note") or ""), note_code=str(doc.get("note_code") or ""))
        except (KeyError, TypeError, ValueError) as e:
            raise EngineUnavailable(self.url, "POST /v1/project gave an unexpected answer: "
                                    f"{type(e).__name__} {e}", 200) from None

    def toy(self, preset: str = "clusters", shift: float = 0.0, plan: str = "softmax", *,
            t: int = 1, eps: float = 1.0, cost: str = "distance") -> ToyPlan:
        """``POST /v1/toy``: what :func:`engine.lab.toy.toy_plan` gives (the Learn page's
        clouds and one plan between them)."""
        doc = self._call("POST", "/v1/toy", {"preset": preset, "shift": float(shift),
                                              "plan": plan, "t": int(t), "eps": float(eps),
                                              "cost": cost})
        try:
            c = Clouds(xa=np.asarray(doc["xa"], dtype=np.float64),
                       a=np.asarray(doc["a"], dtype=np.float64),
                       xb=np.asarray(doc["xb"], dtype=np.float64),
                       b=np.asarray(doc["b"], dtype=np.float64), preset=str(doc["preset"]),
                       shift=float(doc["shift"]))
            opt = {k: doc.get(k) for k in ("t", "eps", "row_err", "col_err", "converged")}
            return ToyPlan(c, str(doc["kind"]), np.asarray(doc["values"], dtype=np.float64),
                           t=None if opt["t"] is None else int(opt["t"]),
                           eps=None if opt["eps"] is None else float(opt["eps"]),
                           row_err=None if opt["row_err"] is None else float(opt["row_err"]),
                           col_err=None if opt["col_err"] is None else float(opt["col_err"]),
                           converged=None if opt["converged"] is None
                           else bool(opt["converged"]))
        except (KeyError, TypeError, ValueError) as e:
            raise EngineUnavailable(self.url, "POST /v1/toy gave an unexpected answer: "
                                    f"{type(e).__name__} {e}", 200) from None

    def close(self) -> None:
        """Close the kept-open connections."""
        self._pool.clear()

    # ----------------------------------------------------------------------- transport
    def _call(self, method: str, path: str, body: dict | None = None, *,
              timeout: float | None = None, retry: bool = True,
              accept: str | None = None) -> dict[str, Any]:
        """One call: the decoded document, an engine error, or EngineUnavailable once the
        retries (connection errors, 502/503/504, a 500 not from the engine) or the
        ``timeout`` (seconds for the whole call, retries included) are spent.
        ``retry=False``: sent once (a call that is not idempotent); ``accept``: a media
        type instead of the document's (``application/zip``: the answer's bytes)."""
        headers = {"Accept": accept or (wire.NPZ if self.binary else wire.JSON)}
        retries = self.retries if retry else 0
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, allow_nan=True,
                              default=_plain).encode()
            headers["Content-Type"] = wire.JSON
        budget = self.timeout if timeout is None else float(timeout)
        deadline = time.monotonic() + budget
        for attempt in range(retries + 1):
            left = max(0.05, deadline - time.monotonic())
            # The engine stops computing a little before this call gives up, so its 408
            # arrives (RequestTimedOut) instead of nothing, and no work outlives the call.
            headers[DEADLINE_HEADER] = f"{max(0.05, left - min(1.0, left / 10)):.3f}"
            try:
                resp = self._pool.request(method, self.url + path, body=data, headers=headers,
                                          timeout=urllib3.Timeout(connect=min(5.0, left),
                                                                  read=left))
            except urllib3.exceptions.HTTPError as e:
                # An answer that did not come in time is not sent again (it would take as
                # long again); a refused or dropped connection is.
                timed_out = isinstance(e, urllib3.exceptions.ReadTimeoutError)
                failure, wait = (_why(e), None), None
            else:
                timed_out = False
                if not self._retryable(resp):
                    return self._answer(method, path, resp)
                failure = (f"HTTP {resp.status}", resp.status)
                wait = _retry_after(resp.headers.get("Retry-After"))
            delay = self._delay(attempt, wait)
            if timed_out or attempt == retries or time.monotonic() + delay >= deadline:
                tries = f" after {attempt + 1} tries" if attempt else ""
                raise (EngineBusy if failure[1] == 503 else EngineUnavailable)(
                    self.url, failure[0] + tries, failure[1])
            with self._lock:
                self.retried += 1
            time.sleep(delay)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """The wait before retry ``attempt + 1``: Retry-After when the service gave one
        (at most 4 × max_backoff), else min(max_backoff, backoff · 2^attempt) × U(½, 1)."""
        if retry_after is not None:
            return min(retry_after, 4 * self.max_backoff)
        return min(self.max_backoff, self.backoff * 2 ** attempt) * random.uniform(0.5, 1.0)

    @staticmethod
    def _retryable(resp) -> bool:
        """Whether an answer says "try again": 502/503/504 (a proxy without a replica, an
        overloaded service), or a 500 that is not the engine's own error (a replica
        that died with the request)."""
        if resp.status in RETRY_STATUSES:
            return True
        if resp.status == 500:
            try:
                err = json.loads(resp.data).get("error")
            except (ValueError, UnicodeDecodeError, AttributeError):
                return True
            return not (isinstance(err, dict) and err.get("type") == "InternalError")
        return False

    def _answer(self, method: str, path: str, resp) -> dict[str, Any]:
        """The document of an answer, or the engine's error it carries."""
        media = (resp.headers.get("Content-Type") or "").split(";")[0].strip()
        if resp.status == 200 and media == ZIP:  # a job's file
            return resp.data
        try:
            doc = wire.loads(resp.data, wire.NPZ if media == wire.NPZ else wire.JSON)
        except (ValueError, UnicodeDecodeError):
            doc = None
        if resp.status in (200, 202) and isinstance(doc, dict):  # 202: a job accepted
            return doc
        err = doc.get("error") if isinstance(doc, dict) else None
        coded = _coded(err)
        if resp.status == 408:  # the replica's deadline, or Serve's own timeout (plain text)
            raise RequestTimedOut(str(err["message"]) if isinstance(err, dict) else
                                  f"The engine at {self.url} stopped this request at its time "
                                  "limit; ask for less: fewer half-steps, fewer ε values, a "
                                  "larger ε, or shorter texts.", code="deadline")
        if resp.status == 413 and isinstance(err, dict):
            raise RequestTooLarge(str(err.get("message")), **coded)
        if not isinstance(err, dict) or "message" not in err:
            raise EngineUnavailable(self.url, f"{method} {path} answered HTTP {resp.status} "
                                    "without a sinkscope error: is this a sinkscope engine?",
                                    resp.status)
        message = str(err["message"])
        if str(err.get("type")) in JOB_ERRORS:  # an unknown job (404), no result yet (409)
            raise JOB_ERRORS[str(err["type"])](message, **coded)
        if resp.status >= 500 or resp.status == 404:
            raise EngineUnavailable(self.url, f"HTTP {resp.status}: {message}", resp.status)
        raise _ERRORS.get(str(err.get("type")), errors.SinkscopeError)(message, **coded)


def _coded(err: Any) -> dict[str, Any]:
    """The ``code`` and ``params`` an error document carries (keywords of
    :class:`~engine.errors.SinkscopeError`), or none."""
    if not isinstance(err, dict) or not isinstance(err.get("code"), str):
        return {}
    params = err.get("params")
    return {"code": err["code"], "params": params if isinstance(params, dict) else {}}


def _plain(v: Any) -> Any:
    """numpy numbers in a request body as Python numbers."""
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(f"{type(v).__name__} cannot be sent to the engine")


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delay-seconds; a date is not used)."""
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _why(e: Exception) -> str:
    """A few words on a transport failure (the innermost cause urllib3 kept)."""
    reason = getattr(e, "reason", None) or e
    text = str(reason)
    if "Connection refused" in text or "Errno 111" in text:
        return "connection refused"
    if isinstance(reason, urllib3.exceptions.TimeoutError) or "timed out" in text:
        return "no answer in time"
    return f"{type(reason).__name__}: {text[:200]}"
