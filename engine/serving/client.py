"""A client for the served engine: the same Relation as the embedded ``relate``, over HTTP.

```python
from engine.serving.client import EngineClient

engine = EngineClient("http://127.0.0.1:8000")
engine.health()                        # {"status": "ok", "device": "cpu", ...}
engine.models()                        # [ModelInfo(name="all-MiniLM-L6-v2", n_layers=6, ...)]
r = engine.relate("text A", "text B", layer=5, head=3, eps=0.5)   # engine.types.Relation
eps, plans = engine.eps_path("text A", "text B", layer=5, head=3)
```

Bad input raises the engine's own errors (``TextError``, ``SettingsError``, ``ModelError``:
ValueErrors whose message says what to change), exactly as the embedded engine does. A
service that cannot be reached, fails, or is not a sinkscope engine raises
:class:`EngineUnavailable` (a RuntimeError: not bad input) naming the URL and what to check.

Torch-free: it imports numpy, urllib3 and the engine's torch-free modules only, so a front
end that uses a served engine never loads torch or a model. Connections are kept open and
reused (one urllib3 pool; idempotent calls are retried once on a dropped connection).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import urllib3

from .. import errors

from . import wire
from ..io.export import ranking_from_dict, relation_from_dict
from ..settings import DEFAULT_MODEL
from ..types import Ranking, Relation

_ERRORS = {"TextError": errors.TextError, "SettingsError": errors.SettingsError,
           "ModelError": errors.ModelError}


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


@dataclass(frozen=True)
class ModelInfo:
    """A model as the served engine describes it (``GET /v1/models``).

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


class EngineClient:
    """Talks to ``python -m engine serve`` (or a Ray Serve cluster running it).

    Args:
        url: the engine's base URL, e.g. ``http://127.0.0.1:8000``.
        timeout: seconds to wait for an answer (a 512-token heads grid or a long ε path
            takes seconds on a CPU).
        binary: ask for NPZ answers (``Accept: application/x-npz``): the same document,
            tens of times faster to write and read than JSON for large arrays.
        pool_size: connections kept open for concurrent callers (threads).
    """

    def __init__(self, url: str, *, timeout: float = 60.0, binary: bool = True,
                 pool_size: int = 4):
        parts = urlsplit(str(url).strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise errors.SettingsError(
                f"The engine's URL must look like http://host:8000, got {url!r} "
                "(SINKSCOPE_ENGINE: 'embedded' or such a URL).")
        self.url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        self.timeout = float(timeout)
        self.binary = binary
        self._pool = urllib3.PoolManager(
            num_pools=1, maxsize=pool_size, block=False,
            timeout=urllib3.Timeout(connect=min(5.0, self.timeout), read=self.timeout),
            # Requests are pure functions of their body: resending one is safe. Retry a
            # refused or dropped connection (a restarted service, a stale kept-alive
            # socket) a little, then report the engine unavailable.
            retries=urllib3.Retry(total=2, connect=2, read=1, status=0, redirect=0,
                                  backoff_factor=0.05, allowed_methods=None,
                                  raise_on_status=False))

    def __repr__(self) -> str:
        return f"EngineClient({self.url!r})"

    # ----------------------------------------------------------------------- API
    def health(self, *, timeout: float | None = None) -> dict[str, Any]:
        """``GET /v1/health``: status, replica, device, memory of the replica that answered."""
        return self._call("GET", "/v1/health", timeout=timeout)

    def models(self) -> list[ModelInfo]:
        """``GET /v1/models``: the models the engine serves, its default first."""
        d = self._call("GET", "/v1/models")
        try:
            infos = [ModelInfo(name=m["name"], n_layers=int(m["n_layers"]),
                               n_heads=int(m["n_heads"]), d_head=int(m["d_head"]),
                               max_tokens=int(m["max_tokens"]), device=str(d["device"]),
                               dtype=str(d["dtype"])) for m in d["models"]]
        except (KeyError, TypeError, ValueError) as e:
            raise EngineUnavailable(self.url, f"GET /v1/models gave an unexpected answer: "
                                    f"{type(e).__name__} {e}", 200) from None
        return sorted(infos, key=lambda m: m.name != d.get("default"))

    def relate(self, text_a: str, text_b: str | None = None, *, model: str = DEFAULT_MODEL,
               **settings: Any) -> Relation:
        """``POST /v1/relate``: what :func:`engine.relation.relate` returns for the same arguments
        (layer, head, eps, half_steps, mode, weights, pool_words, tol)."""
        doc = self._call("POST", "/v1/relate",
                         {"text_a": text_a, "text_b": text_b, "model": model, **settings})
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

    def close(self) -> None:
        """Close the kept-open connections."""
        self._pool.clear()

    # ----------------------------------------------------------------------- transport
    def _call(self, method: str, path: str, body: dict | None = None, *,
              timeout: float | None = None) -> dict[str, Any]:
        """One request; the decoded document, an engine error, or EngineUnavailable."""
        headers = {"Accept": wire.NPZ if self.binary else wire.JSON}
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, allow_nan=True,
                              default=_plain).encode()
            headers["Content-Type"] = wire.JSON
        kw = {} if timeout is None else {"timeout": urllib3.Timeout(
            connect=min(timeout, 5.0), read=timeout)}
        try:
            resp = self._pool.request(method, self.url + path, body=data, headers=headers,
                                      **kw)
        except urllib3.exceptions.HTTPError as e:
            raise EngineUnavailable(self.url, _why(e)) from None
        media = (resp.headers.get("Content-Type") or "").split(";")[0].strip()
        try:
            doc = wire.loads(resp.data, wire.NPZ if media == wire.NPZ else wire.JSON)
        except (ValueError, UnicodeDecodeError):
            doc = None
        if resp.status == 200 and isinstance(doc, dict):
            return doc
        err = doc.get("error") if isinstance(doc, dict) else None
        if not isinstance(err, dict) or "message" not in err:
            raise EngineUnavailable(self.url, f"{method} {path} answered HTTP {resp.status} "
                                    "without a sinkscope error: is this a sinkscope engine?",
                                    resp.status)
        message = str(err["message"])
        if resp.status >= 500 or resp.status == 404:
            raise EngineUnavailable(self.url, f"HTTP {resp.status}: {message}", resp.status)
        raise _ERRORS.get(str(err.get("type")), errors.SinkscopeError)(message)


def _plain(v: Any) -> Any:
    """numpy numbers in a request body as Python numbers."""
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(f"{type(v).__name__} cannot be sent to the engine")


def _why(e: Exception) -> str:
    """A few words on a transport failure (the innermost cause urllib3 kept)."""
    reason = getattr(e, "reason", None) or e
    text = str(reason)
    if "Connection refused" in text or "Errno 111" in text:
        return "connection refused"
    if isinstance(reason, urllib3.exceptions.TimeoutError) or "timed out" in text:
        return "no answer in time"
    return f"{type(reason).__name__}: {text[:200]}"
