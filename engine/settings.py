"""Every setting in one place: the choices, the limits, the defaults and the environment.

The engine, the command line, the app's URL parser, its help texts and the service import
these names instead of repeating them. The operator's environment variables are read once,
into :data:`CONFIG`; code reads ``settings.CONFIG`` at call time, so a test can swap it.

| variable | default | meaning |
|---|---|---|
| ``SINKSCOPE_MODELS`` | — | extra allowed sentence-transformers folders, ``name=/path;name2=/path2`` |
| ``SINKSCOPE_MODELS_FILE`` | — | a JSON file ``{"name": "/path"}`` with more models |
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
        engine: "embedded", or the URL of a served engine (``python -m engine serve``).
        max_body: the served engine answers 413 to a request body larger than this (bytes).
        cache_mb: megabytes of encodings each replica of the served engine keeps (LRU).
    """

    models: str = ""
    models_file: str = ""
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
    engine: str = EMBEDDED
    max_body: int = 1_000_000
    cache_mb: int = 512

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
            engine=env.get("SINKSCOPE_ENGINE", "").strip() or EMBEDDED,
            max_body=_int(env, "SINKSCOPE_MAX_BODY", 1_000_000),
            cache_mb=_int(env, "SINKSCOPE_CACHE_MB", 512, lowest=0),
        )


CONFIG = Config.from_env()
