"""One engine interface for every page, with two implementations, chosen once.

:class:`Embedded` computes in this process (the default); :class:`Served` sends every
computation to the served engine that ``SINKSCOPE_ENGINE`` names, through
:class:`engine.client.EngineClient` (no model is loaded here, torch is not even
imported). :func:`current` picks one per process from ``SINKSCOPE_ENGINE``; pages ask it,
never which kind it is. Methods take the engine's :class:`~engine.settings.Settings` (or
keywords), return the engine's own dataclasses, and raise the engine's errors
(``SinkscopeError``) or, from a served engine, ``EngineUnavailable``. Long work is an
engine job on both (``start_job``, ``job``, ``stop_job``, ``restart_job``, ``job_result``,
``job_zip``; ``engine.jobs``): threads here, Ray tasks there, the same ``JobStatus`` and
results (``engine.jobs.results``); ``lab_predict`` is the Lab's held-out view.

Caching lives in :mod:`sinkscope_app.compute` (``st.cache_data`` keyed by the engine's
name, the texts and the settings); this module holds no Streamlit state, so it can be
tested and benchmarked alone.
"""

from __future__ import annotations

import functools
import gc
import logging
import sys
import threading
import time
from typing import Any, Callable

from engine import settings as engine_settings
from engine.client import EngineClient, EngineUnavailable
from engine.errors import ModelError
from engine.settings import DEFAULT_MODEL, EMBEDDED, Settings

log = logging.getLogger("sinkscope.app")


def freeze_heap() -> None:
    """Move every object alive now (modules, the model) out of the garbage collector's reach.

    Python's full collections walk every tracked object: with torch, transformers, plotly
    and UMAP loaded that is ~640k objects and ~0.5 s, and building figures triggers one
    every other slider move, stalling the server mid-response. Objects loaded once per
    process never become garbage, so they are frozen; later garbage is still collected.
    """
    gc.freeze()


def one_thread() -> None:
    """torch's thread count in this thread (OpenMP's setting is per thread, and each run
    and job is a new thread): with other work on the cores, 2 threads made small solves
    ~10× slower than 1 (``SINKSCOPE_TORCH_THREADS``). Called before each computation (a
    thread that has not imported torch yet has nothing to set)."""
    n = engine_settings.CONFIG.torch_threads
    torch = sys.modules.get("torch")  # not imported here: whoever imports it computes next
    if n > 0 and torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)


def _b(text_b: str, mode: str) -> str | None:
    return None if mode == "self" else text_b


class Embedded:
    """The engine in this process: models loaded once (shared, read-only), encodings
    cached per texts, every relation computed here."""

    name = EMBEDDED
    served = False

    def __init__(self) -> None:
        self._loaded: dict[str, Any] = {}
        self._guard = threading.Lock()

    # ------------------------------------------------------------------ models
    def models(self) -> tuple[str, ...]:
        """Allow-listed model names, the packaged default first."""
        from engine.models.registry import allowed_models

        try:
            names = list(allowed_models())
        except Exception as e:  # a bad operator list should not hide the default model
            log.warning("model allow-list: %s", e)
            names = [DEFAULT_MODEL]
        return (DEFAULT_MODEL, *sorted(set(names) - {DEFAULT_MODEL}))

    def model_label(self, name: str) -> str:
        """The picker's line for a model: name, architecture, layers × heads, tokens."""
        from engine.models.registry import describe

        try:
            return describe(name).label
        except Exception as e:  # a broken entry still shows; choosing it says what is wrong
            log.warning("model %s: %s", name, e)
            return f"{name} (cannot read its configuration)"

    def model(self, name: str):
        """The model (an ``Encoder``), loaded once per process: the launcher's preload
        (waiting for it while it loads), else loaded here (allow-listed names only)."""
        with self._guard:
            if name in self._loaded:
                return self._loaded[name]
            from sinkscope_app.launch import PRELOAD

            enc = PRELOAD.get(name)
            if enc is None:
                from engine import Encoder

                one_thread()
                enc = Encoder(name)
            self._loaded[name] = enc
        freeze_heap()
        return enc

    def shape(self, name: str):
        """Without waiting: the loaded model, else its layers and heads read from its
        configuration file (``sinkscope_app.launch.config_shape``)."""
        from sinkscope_app.launch import PRELOAD, config_shape

        if name in self._loaded or PRELOAD.ready(name):
            return self.model(name)
        return config_shape(name)

    # ------------------------------------------------------------------ relations
    @functools.lru_cache(maxsize=32)
    def encodings(self, model: str, text_a: str, text_b: str, mode: str):
        """The model's forward pass(es) for the texts: a tuple of frozen ``Encoding``,
        shared read-only (a copy of a 512-token pair costs ~100 ms)."""
        from engine import encode_texts

        one_thread()
        return encode_texts(self.model(model), text_a, _b(text_b, mode), mode)

    def prepare(self, text_a: str, text_b: str, s: Settings) -> None:
        """Encode the texts once, before the sliders run."""
        self.encodings(s.model, text_a, text_b, s.mode)

    def relate(self, text_a: str, text_b: str, s: Settings):
        """One layer and head (or the head mean; or every one, ``layer="all"``)."""
        from engine import relate_encodings

        one_thread()
        return relate_encodings(self.encodings(s.model, text_a, text_b, s.mode), settings=s)

    def eps_path(self, text_a: str, text_b: str, s: Settings):
        """(ε (K,), plans (K, n, m)) from large ε to small, for one layer and head."""
        from engine import eps_path

        return eps_path(self.relate(text_a, text_b, s.replace(eps=1.0, half_steps=1)))

    def lattice(self, text_a: str, text_b: str, s: Settings, eps, steps, *, id: str,
                max_bytes: int) -> tuple[bytes | None, int]:
        """Every (ε, half-step) frame of one layer and head, packed for the browser
        (``engine.relation.frames``): (bytes or None over ``max_bytes``, bits)."""
        from engine.relation.frames import encode
        from engine.relation.lattice import relation_lattice

        r = self.relate(text_a, text_b, s.replace(eps=1.0, half_steps=1))
        return encode(relation_lattice(r, eps, steps), id, max_bytes=max_bytes)

    @functools.lru_cache(maxsize=16)
    def measures(self, model: str, text_a: str, candidates: str):
        """Text A and the candidates as measures of their last hidden states (shared)."""
        from engine.relation.sentences import measures

        return measures(self.model(model), text_a, candidates)

    def rank(self, text_a: str, candidates: str, *, model: str, eps: float):
        """The Sentences view's :class:`~engine.types.Ranking` at one ε."""
        from engine.relation.sentences import rank

        ms, dropped = self.measures(model, text_a, candidates)
        enc = self.model(model)
        return rank(ms, eps=eps, pooling=enc.pooling, mean_pooled=enc.mean_pooled,
                    dropped=dropped)

    # ------------------------------------------------------------------ alignment
    def word_scores(self, pairs, *, model: str, lowercase: bool,
                    progress: Callable[[int, int], None] | None = None):
        """Word scores S of each pair (``engine.alignment.api.score_corpus``)."""
        from engine.alignment.api import score_corpus

        one_thread()
        return score_corpus(pairs, encoder=self.model(model), lowercase=lowercase,
                            progress=progress)

    def align(self, pairs, methods, *, model: str, lowercase: bool,
              progress: Callable[..., None], bootstrap: int = 1000):
        """Every pair by every method (label → ``Method``), scored and ranked: an
        ``engine.alignment.api.Comparison`` (one batched pass over the pairs,
        ``compare_methods``; ``bootstrap`` resamples for its intervals, 0: none and no
        verdict). ``progress(share, what, **info)`` reports ("encode", with ``done`` and
        ``total`` texts, while the texts are encoded, then "links") and may raise to stop
        the work (``sinkscope_app.jobs.Stopped``)."""
        from engine.alignment.api import compare_methods

        scored = self.word_scores(pairs, model=model, lowercase=lowercase,
                                  progress=lambda done, n: progress(
                                      0.8 * done / max(n, 1), "encode", done=done, total=n))
        progress(0.8, "links")
        return compare_methods(scored, dict(methods), bootstrap=bootstrap,
                               ranked=bootstrap > 0)

    def answers(self) -> bool:
        return True

    # ------------------------------------------------------------------ jobs
    @functools.cached_property
    def jobs(self):
        """This process's jobs (``engine.jobs.local.LocalJobs``): threads, the models
        loaded here, ``SINKSCOPE_HEAVY_JOBS`` at once."""
        from engine.jobs.local import LocalJobs

        return LocalJobs(encoder=self.model, models=self.models)

    def start_job(self, body: dict):
        """Check, price and start a job (``{"kind", "settings", "data"}``); its
        ``JobStatus``. The engine's error (a code) for a bad body, ``WorkTooLarge`` over
        the job budget, ``JobQueueFull`` when too many wait."""
        from engine.jobs.results import JobStatus

        return JobStatus.from_dict(self.jobs.submit(body))

    def job(self, job_id: str):
        """A job's ``JobStatus``; ``JobNotFound`` for an unknown id."""
        from engine.jobs.results import JobStatus

        return JobStatus.from_dict(self.jobs.status(job_id))

    def stop_job(self, job_id: str):
        """Stop a job (it keeps its best or partial result); its ``JobStatus``."""
        from engine.jobs.results import JobStatus

        return JobStatus.from_dict(self.jobs.stop(job_id))

    def restart_job(self, job_id: str):
        """The same job again, as a new one; its ``JobStatus``."""
        from engine.jobs.results import JobStatus

        return JobStatus.from_dict(self.jobs.restart(job_id))

    def job_result(self, job_id: str):
        """An ended job's typed result (``engine.jobs.results.read``)."""
        from engine.jobs.results import read

        return read(self.jobs.outcome(job_id)[0])

    def job_zip(self, job_id: str, name: str | None = None) -> bytes:
        """A trained aligner of the job as a zip (``name``: one of its files)."""
        from engine.jobs.errors import JobConflict

        files = self.jobs.outcome(job_id)[1]
        name = name or (sorted(files)[0] if files else "")
        if name not in files:
            raise JobConflict.of("job_no_aligner", id=job_id, name=name,
                                 names=", ".join(sorted(files)) or "(none)")
        return files[name]

    def lab_predict(self, settings, weights: dict, size: int, pair: int = 0):
        """Held-out pair ``pair`` of ``size`` atoms as trained Lab models couple it: a
        ``LabPrediction`` (the target's plan, each model's plan and errors)."""
        from engine.jobs.lab import lab_fields, predict
        from engine.jobs.results import read

        one_thread()
        return read(predict(lab_fields(settings), weights, int(size), int(pair)))


# A method's settings as POST /v1/align fields (it takes no others).
ALIGN_FIELDS = ("method", "threshold", "tau", "mass", "eps")
SERVED_CHUNK = 256  # pairs per POST /v1/align (the served engine's limit)
AWAY_S = 1.0  # an engine that did not answer is not asked again for this long


class Served:
    """A served engine (``python -m engine serve``), reached over HTTP: the same calls,
    the same dataclasses. An engine that did not answer is not asked again for
    :data:`AWAY_S`, so a page's other calls in the same run fail at once."""

    served = True

    def __init__(self, url: str, client: EngineClient | None = None) -> None:
        self.name = url
        self.client = client or EngineClient(url)
        self._away: tuple[float, EngineUnavailable] | None = None
        self._models: tuple[float, tuple] | None = None

    def _infos(self) -> tuple:
        if self._away is not None and time.monotonic() - self._away[0] < AWAY_S:
            raise self._away[1]
        if self._models is not None and time.monotonic() - self._models[0] < 300:
            return self._models[1]
        try:
            infos = tuple(self.client.models())
        except EngineUnavailable as e:
            self._away = (time.monotonic(), e)
            raise
        self._models = (time.monotonic(), infos)
        freeze_heap()
        return infos

    def models(self) -> tuple[str, ...]:
        try:
            return tuple(m.name for m in self._infos())
        except EngineUnavailable:
            return (DEFAULT_MODEL,)

    def model_label(self, name: str) -> str:
        for m in self._infos():
            if m.name == name:
                return f"{name} · {m.n_layers} layers × {m.n_heads} heads · {m.max_tokens} tokens"
        return name

    def model(self, name: str):
        """What the engine says about the model (``ServedModel``: n_layers, n_heads,
        max_tokens, device, dtype)."""
        infos = self._infos()
        for m in infos:
            if m.name == name:
                return m
        raise ModelError(f"The engine at {self.name} does not serve {name!r}; it serves "
                         f"{', '.join(m.name for m in infos)}.")

    shape = model

    def prepare(self, text_a: str, text_b: str, s: Settings) -> None:
        self.relate(text_a, text_b, s.replace(layer=-1, head="mean", eps=1.0, half_steps=1))

    def relate(self, text_a: str, text_b: str, s: Settings):
        return self.client.relate(text_a, _b(text_b, s.mode), settings=s)

    def eps_path(self, text_a: str, text_b: str, s: Settings):
        return self.client.eps_path(text_a, _b(text_b, s.mode), model=s.model, **_view(s))

    def lattice(self, text_a: str, text_b: str, s: Settings, eps, steps, *, id: str,
                max_bytes: int) -> tuple[bytes | None, int]:
        from engine.relation.frames import header

        data = self.client.lattice(text_a, _b(text_b, s.mode), model=s.model, eps_values=eps,
                                   steps=steps, id=id, max_bytes=max_bytes, **_view(s))
        return data, header(data)["bits"] if data else 0

    def rank(self, text_a: str, candidates: str, *, model: str, eps: float):
        return self.client.rank(text_a, candidates, model=model, eps=eps)

    def align(self, pairs, methods, *, model: str, lowercase: bool,
              progress: Callable[..., None], bootstrap: int = 1000):
        """As :meth:`Embedded.align`: the links by ``POST /v1/align`` in chunks of
        :data:`SERVED_CHUNK` pairs (no values: the table needs links and scores), scored
        and ranked here (``comparison_of``)."""
        from engine.alignment.api import DEFAULT_SOURCE, comparison_of

        out, total = {}, len(pairs)
        for k, (name, method) in enumerate(methods.items()):
            progress(k / len(methods), name)
            fields = {f: v for f, v in method.to_dict().items() if f in ALIGN_FIELDS}
            out[name] = [a for start in range(0, total, SERVED_CHUNK) for a in self.client.align(
                list(pairs[start:start + SERVED_CHUNK]), model=model, values=False,
                lowercase=lowercase, **fields)]
        return comparison_of(DEFAULT_SOURCE, pairs, dict(methods), out, bootstrap=bootstrap,
                             ranked=bootstrap > 0)

    def align_pair(self, pair: tuple, method, *, model: str, lowercase: bool):
        """One pair by one method (its values included)."""
        fields = {f: v for f, v in method.to_dict().items() if f in ALIGN_FIELDS}
        return self.client.align([pair], model=model, lowercase=lowercase, **fields)[0]

    # Jobs (engine.jobs on the served engine: Ray tasks), as Embedded's.
    def start_job(self, body: dict):
        return self.client.start_job(body)

    def job(self, job_id: str):
        return self.client.job(job_id)

    def stop_job(self, job_id: str):
        return self.client.stop_job(job_id)

    def restart_job(self, job_id: str):
        return self.client.restart_job(job_id)

    def job_result(self, job_id: str):
        return self.client.job_result(job_id)

    def job_zip(self, job_id: str, name: str | None = None) -> bytes:
        return self.client.job_zip(job_id, name)

    def lab_predict(self, settings, weights: dict, size: int, pair: int = 0):
        return self.client.lab_predict(settings, weights, size, pair)

    def answers(self) -> bool:
        """Whether the engine answers its health check right now."""
        try:
            ok = self.client.health(timeout=2.0).get("status") == "ok"
        except EngineUnavailable:
            return False
        if ok:
            self._away = None
        return ok


def _view(s: Settings) -> dict[str, Any]:
    return {"layer": s.layer, "head": s.head, "mode": s.mode, "weights": s.weights,
            "pool_words": s.pool_words}


_CURRENT: dict[str, Embedded | Served] = {}
_LOCK = threading.Lock()


def current() -> Embedded | Served:
    """The process's engine, chosen once from ``SINKSCOPE_ENGINE`` ("embedded", or a
    served engine's URL)."""
    url = engine_settings.CONFIG.engine
    with _LOCK:
        if url not in _CURRENT:
            _CURRENT[url] = Embedded() if url == EMBEDDED else Served(url)
        return _CURRENT[url]


def use(engine: Embedded | Served | None) -> None:
    """Make ``engine`` the process's engine (None: choose again from the settings); for
    tests and benchmarks that bring their own."""
    with _LOCK:
        _CURRENT.clear()
        if engine is not None:
            _CURRENT[engine_settings.CONFIG.engine] = engine


__all__ = ["ALIGN_FIELDS", "EngineUnavailable", "Embedded", "Served", "current", "freeze_heap",
           "one_thread", "use"]
