"""Cached entry points into the engine.

The model lives in ``st.cache_resource`` (one per process, shared by every session and
never changed per request); encodings and results live in ``st.cache_data`` keyed by
plain strings and numbers (text, model, mode, settings), so a slider move re-runs only
:func:`relation` and never encodes text or loads a model again. ``st.cache_data`` hands
each caller its own unpickled copy, so nothing shared can be mutated by one session.
"""

from __future__ import annotations

import gc
import logging
import threading
import time

import numpy as np
import streamlit as st

from engine import Encoder, encode_texts, eps_path as _eps_path, project, relate_encodings
from engine import settings
from engine.encoder import allowed_models
from engine.settings import DEFAULT_MODEL

log = logging.getLogger("sinkscope.app")


def model_names() -> tuple[str, ...]:
    """Allow-listed model names, the packaged default first."""
    try:
        names = list(allowed_models())
    except Exception as e:  # a bad operator list should not hide the default model
        log.warning("model allow-list: %s", e)
        names = [DEFAULT_MODEL]
    names = sorted(set(names) - {DEFAULT_MODEL})
    return (DEFAULT_MODEL, *names)


def freeze_heap() -> None:
    """Move every object alive now (modules, the model) out of the garbage collector's reach.

    Python's full collections walk every tracked object: with torch, transformers, plotly
    and UMAP loaded that is ~640k objects and ~0.5 s, and building figures triggers one
    every other slider move, stalling the server mid-response. Objects loaded once per
    process never become garbage, so they are frozen; later garbage is still collected.
    """
    gc.freeze()


@st.cache_resource(show_spinner=False)
def encoder(model: str) -> Encoder:
    """The model, loaded once per process (shared, read-only)."""
    if settings.CONFIG.torch_threads > 0:
        import torch
        torch.set_num_threads(settings.CONFIG.torch_threads)
    enc = Encoder(model)
    freeze_heap()
    return enc


@st.cache_resource(show_spinner=False)
def umap_warmup() -> threading.Thread | None:
    """Compile UMAP (numba) once per process in the background, off the first user's path.

    Off when ``SINKSCOPE_WARM_UMAP=0`` (tests do this to keep cores free).
    """
    if not settings.CONFIG.warm_umap:
        return None

    def work():
        try:
            from engine.projection import warm_up_umap
            warm_up_umap()
        except Exception as e:  # warm-up is an optimisation only
            log.warning("UMAP warm-up failed: %s", e)
        freeze_heap()  # numba, UMAP and pynndescent's modules too

    t = threading.Thread(target=work, name="sinkscope-umap-warmup", daemon=True)
    t.start()
    return t


def umap_warming() -> bool:
    t = umap_warmup()
    return bool(t is not None and t.is_alive())


def _b(text_b: str, mode: str) -> str | None:
    return None if mode == "self" else text_b


@st.cache_resource(show_spinner=False, max_entries=32)
def encodings(model: str, text_a: str, text_b: str, mode: str):
    """The model's forward pass(es) for the texts: a tuple of frozen ``Encoding``.

    Held once per process, not copied per call: encodings are frozen with read-only
    arrays, so sessions can share them (a copy of a 512-token pair costs ~100 ms).
    """
    return encode_texts(encoder(model), text_a, _b(text_b, mode), mode)


@st.cache_data(show_spinner=False, max_entries=64)
def relation(model: str, text_a: str, text_b: str, mode: str, layer: int, head,
             eps: float, half_steps: int, weights: str, pool: bool):
    """One layer and head (or the head mean) at one ε and half-step count."""
    enc = encodings(model, text_a, text_b, mode)
    return relate_encodings(enc, layer=layer, head=head, eps=eps, half_steps=half_steps,
                            mode=mode, weights=weights, pool_words=pool)


@st.cache_data(show_spinner=False, max_entries=8)
def grid(model: str, text_a: str, text_b: str, mode: str, eps: float, half_steps: int,
         weights: str, pool: bool):
    """Every layer and head at once: plans (L, H, n, m) and (L, H) summaries.

    The caller checks n·m ≤ ``CONFIG.grid_max_cells`` first (SINKSCOPE_GRID_MAX_CELLS): at 512
    tokens a side the grid's arrays alone would take about a gigabyte.
    """
    enc = encodings(model, text_a, text_b, mode)
    return relate_encodings(enc, layer="all", head="all", eps=eps, half_steps=half_steps,
                            mode=mode, weights=weights, pool_words=pool)


def _geometry(model, text_a, text_b, mode, layer, head, weights, pool):
    """A relation whose points, weights and scores are right (ε and steps do not matter)."""
    return relation(model, text_a, text_b, mode, layer, head, 1.0, 1, weights, pool)


@st.cache_data(show_spinner=False, max_entries=64)
def projection(model: str, text_a: str, text_b: str, mode: str, layer: int, head,
               weights: str, pool: bool, space: str, method: str, dim: int):
    """Joint PCA/UMAP of both texts' points; independent of ε and half-steps."""
    r = _geometry(model, text_a, text_b, mode, layer, head, weights, pool)
    return project(r, space=space, method=method, dim=dim)


@st.cache_data(show_spinner=False, max_entries=16)
def lattice(model: str, text_a: str, text_b: str, mode: str, layer: int, head,
            weights: str, pool: bool, eps_stops: tuple, step_stops: tuple):
    """Every slider frame of one layer and head, packed for the browser (a ``scrub.Payload``).

    One batched solver call over the lattice's ε values (engine.lattice); a payload over
    ``CONFIG.live_max_bytes`` comes back without data and with a note saying why.
    """
    from engine.lattice import grid, relation_lattice

    from . import scrub

    r = _geometry(model, text_a, text_b, mode, layer, head, weights, pool)
    cfg = settings.CONFIG
    eps, steps = grid(eps_stops, step_stops, max_half_steps=cfg.live_max_half_steps)
    id_ = scrub.lattice_id(model, text_a, text_b, mode, layer, head, weights, pool)
    payload = scrub.build(lambda: relation_lattice(r, eps, steps), id_,
                          max_bytes=cfg.live_max_bytes)
    log.info("lattice %s: %d × %d frames of %d × %d in %.2f s, %s bytes", id_, len(eps),
             len(steps), *r.scores.shape, payload.seconds,
             len(payload.data) if payload.data else "no")
    return payload


@st.cache_data(show_spinner=False, max_entries=64)
def eps_path(model: str, text_a: str, text_b: str, mode: str, layer: int, head,
             weights: str, pool: bool):
    """(ε values (K,), plans (K, n, m), exact plan (n, m)) from large ε to small."""
    r = _geometry(model, text_a, text_b, mode, layer, head, weights, pool)
    eps, plans = _eps_path(r)
    return np.asarray(eps), np.asarray(plans), np.asarray(r.exact_plan)


class _DroppedLinks(logging.Handler):
    """Notices Streamlit ignoring a link's whole query string (over 512 Ki characters).

    Streamlit drops such a query string before the app runs and only logs it; the app
    reads this handler's time stamp to tell the visitor why the default view is shown.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.last = float("-inf")

    def emit(self, record: logging.LogRecord) -> None:
        if "Ignoring query string" in record.getMessage():
            self.last = time.monotonic()


# Installed when this module is first imported (the first page of the process), so it
# catches over-long links from every later visitor onwards.
_DROPPED = _DroppedLinks()
logging.getLogger("streamlit.runtime.state.query_params").addHandler(_DROPPED)


def link_was_dropped(within_s: float = 5.0) -> bool:
    """True when Streamlit ignored an over-long link in the last ``within_s`` seconds."""
    return time.monotonic() - _DROPPED.last < within_s
