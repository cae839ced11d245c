"""Cached entry points into the engine that several pages share.

Every call goes to the process's one engine (:func:`sinkscope_app.engines.current`:
embedded, or served when ``SINKSCOPE_ENGINE`` names a URL) with the engine's
:class:`~engine.settings.Settings`. Models and encodings are held by the engine (one per
process, shared by every session, never changed per request); results live in
``st.cache_data`` keyed by the engine's name, the texts and the settings, so a slider move
re-runs only :func:`relation` and never encodes text or loads a model again.
``st.cache_data`` hands each caller its own unpickled copy, so nothing shared can be
mutated by one session. The projections (PCA/UMAP) run where the engine runs.
"""

from __future__ import annotations

import atexit
import logging
import threading

import streamlit as st

from engine import settings
from engine.settings import Settings

from . import engines
from .engines import freeze_heap  # noqa: F401  (the launcher and pages call it from here)

log = logging.getLogger("sinkscope.app")


def served() -> bool:
    """Whether a served engine computes (``SINKSCOPE_ENGINE`` names a URL)."""
    return engines.current().served


def model_names() -> tuple[str, ...]:
    """Allow-listed model names, the packaged default first."""
    return engines.current().models()


@st.cache_data(show_spinner=False, max_entries=64)
def model_label(name: str) -> str:
    """The picker's line for a model: its name, architecture, layers × heads and token
    limit, read from its configuration (only the chosen model's weights load)."""
    return engines.current().model_label(name)


def encoder(model: str):
    """The model, loaded once per process (an ``Encoder``; with a served engine what it
    says about the model, a ``ServedModel`` with the same n_layers, n_heads, max_tokens
    and device)."""
    return engines.current().model(model)


def model_shape(model: str):
    """Without waiting for the model: the model when it is ready, else its layers and
    heads read from its configuration file: the page's controls need no more.

    Raises:
        ModelError: the name is not allow-listed or its folder is not a model.
    """
    return engines.current().shape(model)


def prepare(text_a: str, text_b: str, s: Settings) -> None:
    """Encode the texts once, before the sliders run: here, or on the served engine (which
    keeps them). Raises the engine's error for a text it cannot relate."""
    engines.current().prepare(text_a, text_b, s)


def relation(text_a: str, text_b: str, s: Settings):
    """The relation of the texts at ``s``: one layer and head (or the head mean) at one
    ε and half-step count."""
    return _relation(engines.current().name, text_a, text_b, s)


@st.cache_data(show_spinner=False, max_entries=64)
def _relation(engine: str, text_a: str, text_b: str, s: Settings):
    return engines.current().relate(text_a, text_b, s)


def grid(text_a: str, text_b: str, s: Settings):
    """Every layer and head at once: plans (L, H, n, m) and (L, H) summaries.

    The caller checks n·m ≤ ``CONFIG.grid_max_cells`` first (SINKSCOPE_GRID_MAX_CELLS): at 512
    tokens a side the grid's arrays alone would take about a gigabyte.
    """
    return _grid(engines.current().name, text_a, text_b, s.replace(layer="all", head="all"))


@st.cache_data(show_spinner=False, max_entries=8)
def _grid(engine: str, text_a: str, text_b: str, s: Settings):
    return engines.current().relate(text_a, text_b, s)


def geometry(s: Settings) -> Settings:
    """``s`` at ε = 1 and one half-step: a relation whose points, weights and scores are
    those of ``s`` (ε and steps do not matter to them), cached once per view."""
    return s.replace(eps=1.0, half_steps=1)


def projection(text_a: str, text_b: str, s: Settings, space: str, method: str, dim: int):
    """Joint PCA/UMAP of both texts' points (a :class:`~engine.types.Projection`), by the
    engine; independent of ε and half-steps."""
    return _projection(engines.current().name, text_a, text_b, geometry(s), space, method,
                       dim)


@st.cache_data(show_spinner=False, max_entries=64)
def _projection(engine: str, text_a: str, text_b: str, s: Settings, space: str, method: str,
                dim: int):
    return engines.current().project(text_a, text_b, s, space=space, method=method,
                                     dim=int(dim))


_BACKGROUND: list[threading.Thread] = []


def background(name: str, work) -> threading.Thread:
    """Run ``work()`` in a daemon thread that the process waits for when it exits (up to a
    minute): a thread still inside torch, numba or POT when the interpreter tears down
    aborts the process ("terminate called without an active exception")."""
    t = threading.Thread(target=work, name=name, daemon=True)
    if not _BACKGROUND:
        atexit.register(_join_background)
    _BACKGROUND.append(t)
    t.start()
    return t


def _join_background() -> None:
    for t in _BACKGROUND:
        t.join(timeout=60)


@st.cache_resource(show_spinner=False)
def umap_warmup() -> threading.Thread | None:
    """Compile UMAP (numba) once per process in the background, off the first user's path.

    Off when ``SINKSCOPE_WARM_UP=0`` (tests do this to keep cores free), and with a served
    engine (the projections run there).
    """
    if not settings.CONFIG.warm_up or engines.current().served:  # (UMAP runs there)
        return None

    def work():
        try:
            engines.current().warm_up()
        except Exception as e:  # warm-up is an optimisation only
            log.warning("UMAP warm-up failed: %s", e)
        freeze_heap()  # numba, UMAP and pynndescent's modules too

    return background("sinkscope-umap-warmup", work)


def umap_warming() -> bool:
    t = umap_warmup()
    return bool(t is not None and t.is_alive())
