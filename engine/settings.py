"""Every setting in one place: the choices, the limits, the defaults and the environment.

:class:`Settings` is one relation's settings (layer, head, ε, half-steps, mode, weights,
word pooling, tolerance, model) with their defaults, limits and checks; :class:`Config` is
the operator's environment.

The engine, the command line, the app's URL parser, its help texts and the service import
these names instead of repeating them. The operator's environment variables are read once,
into :data:`CONFIG`; code reads ``settings.CONFIG`` at call time, so a test can swap it.

| variable | default | meaning |
|---|---|---|
| ``SINKSCOPE_MODELS`` | — | extra allowed sentence-transformers folders, ``name=/path;name2=/path2`` |
| ``SINKSCOPE_MODELS_FILE`` | — | a JSON file ``{"name": "/path"}`` with more models |
| ``SINKSCOPE_ALIGNERS`` | — | allowed trained aligners, ``name=/dir;name2=/dir2`` |
| ``SINKSCOPE_DEVICE`` | auto | ``cpu``, ``cuda``, ``cuda:1``, ``mps`` |
| ``SINKSCOPE_MAX_CHARS`` | 20000 | characters kept per text |
| ``SINKSCOPE_MAX_HALF_STEPS`` | 1000 | end of the half-step slider |
| ``SINKSCOPE_EPS_MIN`` / ``_MAX`` | 0.01 / 100 | range of the ε slider |
| ``SINKSCOPE_GRID_MAX_CELLS`` | 25600 | most token pairs n·m for the all-heads grid |
| ``SINKSCOPE_LIVE_MAX_CELLS`` | 4096 | most token pairs n·m whose slider frames are precomputed |
| ``SINKSCOPE_LIVE_MAX_BYTES`` | 3000000 | most bytes of frames sent to the browser |
| ``SINKSCOPE_LIVE_MAX_HALF_STEPS`` | 1000 | largest half-step count precomputed |
| ``SINKSCOPE_TORCH_THREADS`` | 1 | torch threads in the app |
| ``SINKSCOPE_WARM_UP`` | 1 | compile UMAP and prepare the Learn steps in the background (0: skip) |
| ``SINKSCOPE_ENGINE`` | embedded | ``embedded``, or the URL of a served engine |
| ``SINKSCOPE_MAX_BODY`` | 1000000 | largest request body the served engine reads, bytes |
| ``SINKSCOPE_CACHE_MB`` | 512 | encodings a served engine's replica keeps (LRU), MB |
| ``SINKSCOPE_SERVE_DEADLINE_S`` | 60 | seconds a served request may compute (then 408) |
| ``SINKSCOPE_SERVE_WORK_*`` | see :data:`SERVE_WORK` | each served route's work budget (then 413) |
| ``SINKSCOPE_SERVE_BATCH_BYTES`` | 16777216 | most bytes of problems a served request solves at once (413) |
| ``SINKSCOPE_HEAVY_JOBS`` | 1 | jobs (``/v1/jobs``) running at once per engine; the others wait in line |
| ``SINKSCOPE_JOB_*`` | see :data:`JOB_DEFAULTS` | the engine's jobs: resources, deadline, line, budgets |
| ``SINKSCOPE_SERVE_MAX_ANSWER`` | 33554432 | most bytes of a served answer, priced before computing (413) |
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

# Choices, each with the words the app shows.
MODES = {"separate": "Separate texts (the paper's view)",
         "joint": "Joint pair (one forward pass)",
         "self": "Self (text A with itself)"}
WEIGHTS = {"content": "Content tokens (special tokens weigh 0)",
           "uniform": "All tokens equally",
           "norm": "Embedding norm"}

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_EPS = 1.0
DEFAULT_HALF_STEPS = 100
DEFAULT_TOL = 1e-6  # L1 marginal tolerance for "converged"

# What the engine accepts, whatever the app's sliders offer.
EPS_MIN, EPS_MAX = 1e-6, 1e6
HALF_STEPS_CAP = 100_000
MAX_CANDIDATES = 50  # candidate texts the Sentences view ranks at once

EMBEDDED = "embedded"

# The served engine's work budget per route (Config.serve_work_<route>): what one request
# may ask for, priced from its shape before anything is computed (engine.serving.limits).
# Each default is the largest request the app itself sends, rounded up (docs/serving.md).
SERVE_WORK = {
    "relate": 2_000_000_000,      # token pairs × half-steps × heads (app: 160² × 1000 × 72)
    "eps_path": 3_200_000_000,    # token pairs × half-steps × ε values (app: 256² × 4000 × 12)
    "lattice": 48 * 2**20,        # frames × token pairs × 8 bytes (app: 41 × 28 × 64² × 8)
    "rank": 100_000_000_000,      # Σ token pairs of 3 solves × 10,000 half-steps (app: 50 × 256²)
    "align": 41_000_000,          # Σ word pairs (app: 256 pairs of 400 words)
}

# The engine's jobs (engine.jobs: /v1/jobs, and the embedded engine's threads): what each
# job asks Ray for, how long it may run, how many may wait, what is kept, and the work
# budgets a job is priced against on submission (413 above). ``job_gpus``: "auto" (1 GPU
# where the cluster has one, else 0), "cpu" (none) or a number. Each budget is the Lab page's (or a 2,000-pair
# file's) largest job, rounded up (docs/serving.md).
JOB_DEFAULTS = {
    "job_cpus": 1.0,             # SINKSCOPE_JOB_CPUS: Ray's num_cpus per job
    "job_gpus": "auto",          # SINKSCOPE_JOB_GPUS: Ray's num_gpus per job (auto, cpu, N)
    "job_deadline_s": 3600.0,    # SINKSCOPE_JOB_DEADLINE_S: then the job stops (its partial kept)
    "job_queue": 64,             # SINKSCOPE_JOB_QUEUE: jobs waiting per engine (then 503)
    "job_keep_mb": 512,          # SINKSCOPE_JOB_KEEP_MB: ended jobs' results kept, oldest dropped
    "job_max_body": 8_000_000,   # SINKSCOPE_JOB_MAX_BODY: largest /v1/jobs body, bytes
    "job_work_lab": 200_000_000_000,  # SINKSCOPE_JOB_WORK_LAB: atom operations (lab kinds)
    "job_work_text": 8_000_000_000,   # SINKSCOPE_JOB_WORK_TEXT: word pairs × passes (text kinds)
}

# What the libraries underneath read: no network, no telemetry, no progress bars, and a
# numba threading layer that survives UMAP fits from several threads.
LIBRARY_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
               "TOKENIZERS_PARALLELISM": "false", "NUMBA_THREADING_LAYER": "omp"}


def quiet_libraries() -> None:
    """Set :data:`LIBRARY_ENV` (where the operator has not) before a library reads it.

    Called by the code that imports those libraries (model loading, UMAP), never at import.
    """
    for k, v in LIBRARY_ENV.items():
        os.environ.setdefault(k, v)


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    try:
        v = float(env.get(name, default))
    except ValueError:
        return default
    return v if math.isfinite(v) and v > 0 else default


def _int(env: Mapping[str, str], name: str, default: int, *, lowest: int = 1) -> int:
    try:
        v = int(env.get(name, default))
    except ValueError:
        return default
    return v if v >= lowest else default


@dataclass(frozen=True)
class Config:
    """The operator's settings (environment variables), read once per process.

    Attributes:
        models: ``SINKSCOPE_MODELS``, ``name=path`` pairs separated by ``;`` (unparsed);
            each path a local sentence-transformers folder (``modules.json``).
        models_file: ``SINKSCOPE_MODELS_FILE``, a JSON object of name → path, or "".
        aligners: ``SINKSCOPE_ALIGNERS``, ``name=dir`` pairs separated by ``;`` (unparsed);
            each dir a trained aligner (``python -m engine train-aligner``).
        device: ``SINKSCOPE_DEVICE``, or "" for auto (CUDA, then MPS, then CPU).
        max_chars: characters kept per text; longer text is cut with a notice.
        max_half_steps: the half-step slider's end (at most :data:`HALF_STEPS_CAP`).
        eps_min, eps_max: the ε slider's range.
        grid_max_cells: most token pairs n·m for the all-heads grid.
        live_max_cells: most token pairs n·m for which every slider frame (ε × half-steps)
            is precomputed and scrubbed in the browser; above it the sliders recompute on
            the server when released.
        live_max_bytes: most bytes of precomputed frames sent to one browser.
        live_max_half_steps: the largest half-step count precomputed (stops above it are
            computed on the server when a slider is released there).
        torch_threads: torch threads in the app (0 leaves torch's default).
        warm_up: compile UMAP and prepare the Learn page's later steps in background
            threads at start (tests turn it off to keep both cores).
        heavy_jobs: how many heavy jobs (a corpus, a Lab run, a sweep) the app runs at
            once on this machine; others wait in line (``SINKSCOPE_HEAVY_JOBS``).
        engine: "embedded", or the URL of a served engine (``python -m engine serve``).
        max_body: the served engine answers 413 to a request body larger than this (bytes).
        cache_mb: megabytes of encodings each replica of the served engine keeps (LRU).
        serve_deadline_s: seconds one served request may compute; then it is stopped and
            answered 408 (the solver polls it between blocks of half-steps).
        serve_work_relate, serve_work_eps_path, serve_work_lattice, serve_work_rank,
            serve_work_align: each served route's work budget (:data:`SERVE_WORK`); a
            request priced above it is answered 413 before any computation.
        serve_batch_bytes: most bytes of float64 scores a served request solves at once
            (the solver holds several arrays of that size); 413 above it.
        job_cpus, job_gpus: the CPUs and GPUs a served job asks Ray for (``job_gpus``
            "auto": one where the cluster has a GPU, else none; "cpu": none; or a number).
        job_deadline_s: seconds a job may run; then it stops, keeping its partial result.
        job_queue: jobs that may wait per engine; more are answered 503.
        job_keep_mb: megabytes of ended jobs' results kept (oldest dropped first).
        job_max_body: the largest ``POST /v1/jobs`` or ``/v1/lab/predict`` body, bytes.
        job_work_lab, job_work_text: the work budgets of the Lab's jobs and of the text
            jobs (:data:`JOB_DEFAULTS`); a job priced above is refused (413).
        serve_max_answer: most bytes of one served answer (JSON or NPZ), bounded from the
            request's shape before computing; 413 above it.
    """

    models: str = ""
    models_file: str = ""
    aligners: str = ""
    device: str = ""
    max_chars: int = 20000
    max_half_steps: int = 1000
    eps_min: float = 0.01
    eps_max: float = 100.0
    grid_max_cells: int = 160 * 160
    live_max_cells: int = 64 * 64
    live_max_bytes: int = 3_000_000
    live_max_half_steps: int = 1000
    torch_threads: int = 1
    warm_up: bool = True
    heavy_jobs: int = 1
    engine: str = EMBEDDED
    max_body: int = 1_000_000
    cache_mb: int = 512
    serve_deadline_s: float = 60.0
    serve_work_relate: int = SERVE_WORK["relate"]
    serve_work_eps_path: int = SERVE_WORK["eps_path"]
    serve_work_lattice: int = SERVE_WORK["lattice"]
    serve_work_rank: int = SERVE_WORK["rank"]
    serve_work_align: int = SERVE_WORK["align"]
    serve_batch_bytes: int = 16 * 2**20
    job_cpus: float = JOB_DEFAULTS["job_cpus"]
    job_gpus: str = JOB_DEFAULTS["job_gpus"]
    job_deadline_s: float = JOB_DEFAULTS["job_deadline_s"]
    job_queue: int = JOB_DEFAULTS["job_queue"]
    job_keep_mb: int = JOB_DEFAULTS["job_keep_mb"]
    job_max_body: int = JOB_DEFAULTS["job_max_body"]
    job_work_lab: int = JOB_DEFAULTS["job_work_lab"]
    job_work_text: int = JOB_DEFAULTS["job_work_text"]
    serve_max_answer: int = 32 * 2**20

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Config":
        """Read every ``SINKSCOPE_*`` variable; a bad value falls back to its default."""
        env = os.environ if env is None else env
        lo = min(max(_float(env, "SINKSCOPE_EPS_MIN", 0.01), EPS_MIN), EPS_MAX)
        hi = min(max(_float(env, "SINKSCOPE_EPS_MAX", 100.0), EPS_MIN), EPS_MAX)
        if lo >= hi:
            lo, hi = 0.01, 100.0
        return cls(
            models=env.get("SINKSCOPE_MODELS", ""),
            models_file=env.get("SINKSCOPE_MODELS_FILE", ""),
            aligners=env.get("SINKSCOPE_ALIGNERS", ""),
            device=env.get("SINKSCOPE_DEVICE", "").strip(),
            max_chars=_int(env, "SINKSCOPE_MAX_CHARS", 20000),
            max_half_steps=min(_int(env, "SINKSCOPE_MAX_HALF_STEPS", 1000), HALF_STEPS_CAP),
            eps_min=lo, eps_max=hi,
            grid_max_cells=_int(env, "SINKSCOPE_GRID_MAX_CELLS", 160 * 160),
            live_max_cells=_int(env, "SINKSCOPE_LIVE_MAX_CELLS", 64 * 64, lowest=0),
            live_max_bytes=_int(env, "SINKSCOPE_LIVE_MAX_BYTES", 3_000_000),
            live_max_half_steps=min(_int(env, "SINKSCOPE_LIVE_MAX_HALF_STEPS", 1000),
                                    HALF_STEPS_CAP),
            torch_threads=_int(env, "SINKSCOPE_TORCH_THREADS", 1, lowest=0),
            warm_up=env.get("SINKSCOPE_WARM_UP", "1").strip() != "0",
            heavy_jobs=_int(env, "SINKSCOPE_HEAVY_JOBS", 1),
            engine=env.get("SINKSCOPE_ENGINE", "").strip() or EMBEDDED,
            max_body=_int(env, "SINKSCOPE_MAX_BODY", 1_000_000),
            cache_mb=_int(env, "SINKSCOPE_CACHE_MB", 512, lowest=0),
            serve_deadline_s=_float(env, "SINKSCOPE_SERVE_DEADLINE_S", 60.0),
            **{f"serve_work_{k}": _int(env, f"SINKSCOPE_SERVE_WORK_{k.upper()}", v)
               for k, v in SERVE_WORK.items()},
            serve_batch_bytes=_int(env, "SINKSCOPE_SERVE_BATCH_BYTES", 16 * 2**20),
            **_jobs(env),
            serve_max_answer=_int(env, "SINKSCOPE_SERVE_MAX_ANSWER", 32 * 2**20),
        )


def _jobs(env: Mapping[str, str]) -> dict:
    """The ``SINKSCOPE_JOB_*`` variables (:data:`JOB_DEFAULTS`); a bad value keeps its
    default."""
    d = JOB_DEFAULTS
    gpus = env.get("SINKSCOPE_JOB_GPUS", "auto").strip().lower()
    if gpus not in ("auto", "cpu") and job_gpus(gpus) is None:
        gpus = "auto"
    try:
        cpus = float(env.get("SINKSCOPE_JOB_CPUS", d["job_cpus"]))
    except ValueError:
        cpus = d["job_cpus"]
    return {"job_cpus": cpus if math.isfinite(cpus) and cpus >= 0 else d["job_cpus"],
            "job_gpus": gpus,
            "job_deadline_s": _float(env, "SINKSCOPE_JOB_DEADLINE_S", d["job_deadline_s"]),
            **{k: _int(env, "SINKSCOPE_" + k.upper(), d[k]) for k in
               ("job_queue", "job_keep_mb", "job_max_body", "job_work_lab", "job_work_text")}}


def job_gpus(value: str) -> float | None:
    """GPUs per job from ``SINKSCOPE_JOB_GPUS``: "cpu" 0, a number ≥ 0 itself, "auto" (or
    anything else) None: decided by the cluster."""
    if value == "cpu":
        return 0.0
    try:
        v = float(value)
    except ValueError:
        return None
    return v if math.isfinite(v) and v >= 0 else None


CONFIG = Config.from_env()


# --------------------------------------------------------------------------- one relation
def _setting(default, doc: str, **limits):
    """A :class:`Settings` field: its default, what it means, and its limits (``ge``,
    ``le``, ``gt``: numbers; ``choices``: the words it may be), which the HTTP schemas
    (``engine.serving.schemas``) and the checks below both read."""
    from dataclasses import field

    return field(default=default, metadata={"doc": doc, **limits})


@dataclass(frozen=True)
class Settings:
    """The settings of one relation: which scores, which measures, which solve.

    ``relate(text_a, text_b, settings=...)`` (or the same names as keyword arguments), the
    ``Relation`` it returns (``Relation.settings``), the HTTP API's request bodies, the
    command line's flags and the app's URL read these fields; their defaults and limits
    are defined here once.

    Attributes:
        layer: layer index (negative counts from the end) or "all" (with head "all").
        head: head index, "mean" (scores averaged over heads) or "all".
        eps: entropy ε > 0 of the Sinkhorn problem and the softmax temperature.
        half_steps: Sinkhorn half-steps t ≥ 1; t = 1 is diag(a)·softmax(S/ε).
        mode: "separate", "joint" or "self" (:data:`MODES`).
        weights: the atoms' weights a and b: "content", "uniform" or "norm" (:data:`WEIGHTS`).
        pool_words: merge subwords into words.
        tol: L1 marginal tolerance for "converged".
        model: the allow-listed model's name.
    """

    layer: int | str = _setting(-1, "Layer index (negative from the end) or \"all\".",
                                choices=("all",))
    head: int | str = _setting("mean", "Head index, \"mean\" or \"all\" (with layer \"all\": "
                               "the heads grid).", choices=("mean", "all"))
    eps: float = _setting(DEFAULT_EPS, "Entropy ε > 0 (1 = the model's softmax).",
                          ge=EPS_MIN, le=EPS_MAX)
    half_steps: int = _setting(DEFAULT_HALF_STEPS, "Sinkhorn half-steps (1 = softmax).",
                               ge=1, le=HALF_STEPS_CAP)
    mode: str = _setting("separate", "separate, joint or self.", choices=tuple(MODES))
    weights: str = _setting("content", "content, uniform or norm.", choices=tuple(WEIGHTS))
    pool_words: bool = _setting(False, "Merge subwords into words.")
    tol: float = _setting(DEFAULT_TOL, "L1 marginal tolerance for \"converged\".", gt=0)
    model: str = _setting(DEFAULT_MODEL, "An allow-listed model (GET /v1/models).")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The fields' names, in order."""
        from dataclasses import fields

        return tuple(f.name for f in fields(cls))

    @classmethod
    def of(cls, settings: "Settings | Mapping | None" = None, **overrides) -> "Settings":
        """``settings`` (a Settings, a mapping of fields, or None for the defaults) with
        ``overrides``; a SettingsError names an unknown field (nothing is checked else)."""
        base = settings if isinstance(settings, Settings) else cls.from_dict(settings or {})
        if not overrides:
            return base
        cls._known(overrides)
        from dataclasses import replace

        return replace(base, **overrides)

    @classmethod
    def from_dict(cls, d: Mapping) -> "Settings":
        """The Settings a :meth:`to_dict` mapping describes; missing fields take their
        defaults, an unknown one is a SettingsError. Values are taken as they are
        (:meth:`check` says whether they are allowed). Torch-free."""
        if not isinstance(d, Mapping):
            raise _settings_error(f"Settings must be a mapping of {', '.join(cls.names())}; "
                                  f"got {type(d).__name__}.")
        cls._known(d)
        return cls(**dict(d))

    def to_dict(self) -> dict:
        """The fields as a plain dict (JSON-safe: numbers, words, booleans)."""
        return {k: getattr(self, k) for k in self.names()}

    def replace(self, **changes) -> "Settings":
        """A copy with ``changes`` (unknown fields: SettingsError)."""
        return Settings.of(self, **changes)

    def check(self) -> "Settings":
        """The settings checked and normalised (ε a float, half-steps an int, layer and
        head ints or words), or a SettingsError saying what to change. Layer and head are
        checked against a model's shape where the model is known
        (:func:`engine.relation.scores.check_layer_head`)."""
        return Settings(**{k: check_setting(k, getattr(self, k)) for k in self.names()})

    @classmethod
    def _known(cls, d: Mapping) -> None:
        unknown = [k for k in d if k not in cls.names()]
        if unknown:
            raise _settings_error(f"Unknown setting {', '.join(map(repr, unknown[:5]))}: the "
                                  f"settings are {', '.join(cls.names())}.")


def _settings_error(message: str) -> Exception:
    from .errors import SettingsError

    return SettingsError(message)


def _short(v, n: int = 60) -> str:
    s = repr(v)
    return s if len(s) <= n else s[:n] + "…"


def check_eps(eps) -> float:
    """ε as a float in [EPS_MIN, EPS_MAX], or a SettingsError saying what to change."""
    try:
        eps = float(eps)
    except (TypeError, ValueError):
        raise _settings_error(f"ε must be a number, got {_short(eps)}.") from None
    if not math.isfinite(eps) or eps <= 0:
        raise _settings_error(f"ε must be a finite number > 0, got {eps}; try ε = 1.")
    if not EPS_MIN <= eps <= EPS_MAX:
        raise _settings_error(f"ε must lie in [{EPS_MIN:g}, {EPS_MAX:g}], got {eps:g}.")
    return eps


def check_half_steps(half_steps) -> int:
    """The half-step count as an int in [1, HALF_STEPS_CAP], or a SettingsError."""
    import numbers

    if isinstance(half_steps, bool) or not isinstance(half_steps, numbers.Integral):
        if isinstance(half_steps, float) and half_steps.is_integer():
            half_steps = int(half_steps)
        else:
            raise _settings_error(f"half_steps must be a whole number ≥ 1, got "
                                  f"{_short(half_steps)}.")
    if half_steps < 1:
        raise _settings_error(f"half_steps must be ≥ 1 (1 = softmax), got {half_steps}.")
    if half_steps > HALF_STEPS_CAP:
        raise _settings_error(f"half_steps must be at most {HALF_STEPS_CAP:,}, got "
                              f"{half_steps:,}.")
    return int(half_steps)


def _check_index(name: str, words: tuple[str, ...]):
    def check(v):
        if isinstance(v, str) and v in words:
            return v
        try:
            i = int(v)
        except (TypeError, ValueError, OverflowError):  # OverflowError: ±inf
            i = None
        if i is None or (isinstance(v, float) and not v.is_integer()):
            shown = " or ".join(f'"{w}"' for w in words)
            raise _settings_error(f"{name} must be a whole number (negative counts from the "
                                  f"end) or {shown}, got {_short(v)}.")
        return i
    return check


def _check_choice(name: str, choices) -> object:
    def check(v):
        if not isinstance(v, str) or v not in choices:
            raise _settings_error(f"{name} must be one of {', '.join(choices)}; got {_short(v)}.")
        return v
    return check


def _check_bool(v) -> bool:
    if not isinstance(v, bool):
        raise _settings_error(f"pool_words must be true or false, got {_short(v)}.")
    return v


def _check_tol(v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
        raise _settings_error(f"tol must be a number > 0, got {_short(v)}.")
    return float(v)


def _check_model(v) -> str:
    if not isinstance(v, str) or not v.strip():
        raise _settings_error(f"model must be a model's name (GET /v1/models), got {_short(v)}.")
    return v


_CHECKS = {"layer": _check_index("layer", ("all",)),
           "head": _check_index("head", ("mean", "all")), "eps": check_eps,
           "half_steps": check_half_steps, "mode": _check_choice("mode", tuple(MODES)),
           "weights": _check_choice("weights", tuple(WEIGHTS)), "pool_words": _check_bool,
           "tol": _check_tol, "model": _check_model}


def check_setting(name: str, value):
    """One field of :class:`Settings` checked and normalised, or a SettingsError whose
    message says what to change (the same message the engine, the command line and the
    HTTP API give)."""
    if name not in _CHECKS:
        raise _settings_error(f"Unknown setting {name!r}: the settings are "
                              f"{', '.join(Settings.names())}.")
    return _CHECKS[name](value)


# --------------------------------------------------------------------- trained aligners
# A trained aligner's settings (``python -m engine train-aligner``, :mod:`engine.aligner`):
# name → (default, lowest, highest). The command line, ``AlignerSettings`` and a page read
# these; the defaults are ``python -m benchmarks.aligner``'s choices on MTRef.
ALIGNER_FINALS = ("sinkhorn", "softmax")
ALIGNER_WHOLE = {
    "layer": (3, 1, 64),  # the hidden state read (index 0 … L; the untrained methods read 3)
    "top": (2, 0, 64),  # layers fine-tuned: the last ``top`` of the ``layer`` read
    "epochs": (3, 1, 50),
    "batch": (16, 1, 512),  # pairs per step
    "half_steps": (21, 1, 1000),  # of the dustbin Sinkhorn layer
    "patience": (1, 0, 50),  # epochs without a better dev total F1 before stopping
    "seed": (0, 0, 2**31 - 1),
}
ALIGNER_RATES = {"lr": (6e-5, 1e-7, 1e-2), "head_lr": (1e-3, 1e-6, 1.0),
                 "eps": (1.4, 0.05, 20.0)}  # the Sinkhorn layer's ε when aligning (trained at 1)
ALIGNER_MAX_PAIRS = 20_000  # training or dev pairs one run reads
