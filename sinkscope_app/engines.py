"""One engine interface for every page, with two implementations, chosen once: the
pages' one door to computation.

:class:`Embedded` computes in this process (the default); :class:`Served` sends every
computation to the served engine that ``SINKSCOPE_ENGINE`` names, through
:class:`engine.client.EngineClient` (no model is loaded here, torch is not even
imported). :func:`current` picks one per process from ``SINKSCOPE_ENGINE``; pages ask it,
never which kind it is. Both answer the same calls with the engine's own dataclasses:

- relations: ``relate``, ``eps_path``, ``lattice``, ``rank``, ``project`` (PCA/UMAP of
  a relation's points), ``toy`` (Learn's clouds and one plan between them);
- alignment: ``align_pair`` (one pair by one method, or by a trained aligner),
  ``align_live`` (the Align page's θ/τ/m payload, bytes), ``aligners`` (the operator's
  trained aligners), ``register_aligner`` (a job's trained aligner, by name);
- long work as engine jobs (``engine.jobs``: threads here, Ray tasks there, the same
  ``JobStatus`` and results, ``engine.jobs.results``): ``start_job``, ``job``,
  ``stop_job``, ``restart_job``, ``job_result``, ``job_zip``; ``lab_predict`` is the
  Lab's held-out view.

Methods take the engine's :class:`~engine.settings.Settings` (or keywords) and raise the
engine's errors (``SinkscopeError``) or, from a served engine, ``EngineUnavailable``.
Embedded imports the engine's computing modules (torch) only inside its methods, so a
front end on a served engine never loads them.

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
from typing import Any

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

    def project(self, text_a: str, text_b: str, s: Settings, *, space: str, method: str,
                dim: int):
        """Joint PCA/UMAP of both texts' points (``engine.relation.projection.project``):
        a :class:`~engine.types.Projection`, independent of ε and half-steps."""
        from engine.relation.projection import project

        return project(self.relate(text_a, text_b, s.replace(eps=1.0, half_steps=1)),
                       space=space, method=method, dim=dim)

    def warm_up(self) -> None:
        """Compile UMAP (numba) once, so the first projection is quick
        (``engine.relation.projection.warm_up_umap``)."""
        from engine.relation.projection import warm_up_umap

        warm_up_umap()

    @functools.lru_cache(maxsize=512)
    def toy(self, preset: str, shift: float = 0.0, plan: str = "softmax", *, t: int = 1,
            eps: float = 1.0, cost: str = "distance"):
        """One plan between the Learn page's clouds (``engine.lab.toy.toy_plan``): a
        :class:`~engine.lab.clouds.ToyPlan` (shared read-only)."""
        from engine.lab.toy import toy_plan

        one_thread()
        return toy_plan(preset, float(shift), plan, t=int(t), eps=float(eps), cost=cost)

    # ------------------------------------------------------------------ alignment
    @functools.lru_cache(maxsize=64)
    def _scored(self, model: str, text_a: str, text_b: str, gold: str | None,
                lowercase: bool):
        """One pair's word scores (``engine.alignment.api.score_corpus``), kept: a slider
        move never encodes again."""
        from engine.alignment.api import score_corpus

        one_thread()
        return score_corpus([(text_a, text_b, gold)], encoder=self.model(model),
                            lowercase=lowercase)

    def align_pair(self, text_a: str, text_b: str, gold: str | None, method: dict, *,
                   model: str, lowercase: bool):
        """One pair by one method (``method``: its settings, ``Method.to_dict``'s fields, or
        ``{"method": "trained", "aligner": NAME, "threshold"?: θ}``): an
        ``engine.alignment.methods.Alignment`` with its values V and, with gold, its
        scores; what ``POST /v1/align`` answers for the same pair.

        Raises:
            SinkscopeError: texts the model reads nothing of, gold that does not fit the
                words, an unknown aligner (``AlignerError``).
        """
        from engine.alignment.api import extract_methods, method_of

        fields = dict(method)
        if fields.get("method") == "trained":
            return self._trained([(text_a, text_b, gold)], fields, model=model,
                                 lowercase=lowercase)[0]
        m = method_of(fields.pop("method"), **fields)
        scored = self._scored(model, text_a, text_b, gold or None, lowercase)
        one_thread()
        return extract_methods(scored, {m.name: m})[m.name].alignments[0]

    def _trained(self, pairs, fields: dict, *, model: str, lowercase: bool) -> list:
        from engine.aligner.extract import align
        from engine.alignment.api import as_pairs

        aligner = self.aligner(fields["aligner"], model)
        given = as_pairs(pairs)
        one_thread()
        return align(aligner, tuple(p.lower() for p in given) if lowercase else given,
                     theta=fields.get("threshold"))

    def aligner(self, name: str, model: str):
        """The trained aligner ``name`` (``engine.aligner.registry.lookup``: the operator's
        list, or a job's ``FILE@JOB``), on this process's copy of ``model`` when it is its
        base model."""
        from engine.aligner.registry import add_source, lookup

        add_source(self._job_file)
        one_thread()
        return lookup(name, encoders={model: self.model(model)})

    def _job_file(self, job_id: str, file: str) -> bytes | None:
        try:
            return self.jobs.outcome(job_id)[1].get(file)
        except Exception:  # no such job, or no result yet
            return None

    def aligners(self) -> list:
        """The operator's trained aligners (``SINKSCOPE_ALIGNERS``; a broken entry left
        out): ``engine.aligner.registry.Info`` s (name, base_model, final, theta, …)."""
        from engine.aligner.registry import infos

        try:
            return [a for a in infos()[0] if not a.registered]
        except ValueError:  # a malformed list: none (the engine's command says why)
            return []

    def register_aligner(self, job_id: str, file: str) -> str:
        """The name under which the aligner ``file`` of the ended job ``job_id`` is used
        (method ``trained``): ``FILE@JOB``, checked by loading it here.

        Raises:
            AlignerError: the job holds no such aligner (any more).
        """
        from engine.aligner.registry import job_name

        name = job_name(job_id, file)
        self.aligner(name, self.models()[0])
        return name

    def align_live(self, text_a: str, text_b: str, gold: str | None, *, method: str,
                   lowercase: bool, model: str, aligner: str | None = None,
                   max_bytes: int) -> tuple[bytes | None, str]:
        """The Align page's live θ/τ/m payload of one pair and method
        (``engine.alignment.live.pair_payload``'s bytes), or (None, why: a code of
        ``engine.alignment.live``) over ``SINKSCOPE_LIVE_MAX_CELLS`` word pairs or
        ``max_bytes``; the bytes ``POST /v1/align/live`` answers."""
        return self._live(text_a, text_b, gold or None, method, bool(lowercase), model,
                          aligner or "", int(max_bytes),
                          int(engine_settings.CONFIG.live_max_cells))

    @functools.lru_cache(maxsize=16)
    def _live(self, text_a, text_b, gold, method, lowercase, model, aligner, max_bytes,
              max_cells):
        from engine.alignment.live import (MASS_STOPS, TAU_STOPS, grid_of, pair_payload,
                                           too_large)

        lower = (lambda t: t.lower()) if lowercase else (lambda t: t)
        n, m = len(lower(text_a).split()), len(lower(text_b).split())
        why = too_large(n, m, len(grid_of(method, TAU_STOPS, MASS_STOPS)[1]),
                        max_cells=max_cells, max_bytes=max_bytes)
        if why:
            return None, why
        trained = self.aligner(aligner, model) if method == "trained" else None
        one_thread()
        p = pair_payload(text_a, text_b, gold, method, lowercase=lowercase, model=model,
                         encoder=self.model(model), aligner=trained, aligner_name=aligner)
        return p.encode(), ""

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

    def project(self, text_a: str, text_b: str, s: Settings, *, space: str, method: str,
                dim: int):
        return self.client.project(text_a, _b(text_b, s.mode), settings=s, space=space,
                                   method=method, dim=dim)

    def warm_up(self) -> None:
        """Nothing to warm here: projections run on the engine."""

    def toy(self, preset: str, shift: float = 0.0, plan: str = "softmax", *, t: int = 1,
            eps: float = 1.0, cost: str = "distance"):
        return self.client.toy(preset, float(shift), plan, t=int(t), eps=float(eps),
                               cost=cost)

    def align_pair(self, text_a: str, text_b: str, gold: str | None, method: dict, *,
                   model: str, lowercase: bool):
        """As :meth:`Embedded.align_pair`: ``POST /v1/align`` for one pair (its values
        included)."""
        pair = {"text_a": text_a, "text_b": text_b, "gold": gold or None}
        return self.client.align([pair], model=model, lowercase=lowercase, **method)[0]

    def aligners(self) -> list:
        """The engine's trained aligners (``GET /v1/aligners``; ``ServedAligner`` s)."""
        return [a for a in self.client.aligners() if not a.registered]

    def register_aligner(self, job_id: str, file: str) -> str:
        """As :meth:`Embedded.register_aligner`: ``FILE@JOB``, which every replica finds
        on the engine's board (the job must hold the file)."""
        from engine.errors import AlignerError
        from engine.aligner.registry import job_name

        name = job_name(job_id, file)
        if file not in self.client.job(job_id).files:
            raise AlignerError.of("job_aligner", name=name)
        return name

    def align_live(self, text_a: str, text_b: str, gold: str | None, *, method: str,
                   lowercase: bool, model: str, aligner: str | None = None,
                   max_bytes: int) -> tuple[bytes | None, str]:
        return self.client.align_live(text_a, text_b, gold or None, method=method,
                                      lowercase=lowercase, model=model,
                                      aligner=aligner or None, max_bytes=max_bytes)

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


__all__ = ["EngineUnavailable", "Embedded", "Served", "current", "freeze_heap",
           "one_thread", "use"]
