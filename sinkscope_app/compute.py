"""Cached entry points into the engine.

The model lives in ``st.cache_resource`` (one per process, shared by every session and
never changed per request); encodings and results live in ``st.cache_data`` keyed by
plain strings and numbers (text, model, mode, settings), so a slider move re-runs only
:func:`relation` and never encodes text or loads a model again. ``st.cache_data`` hands
each caller its own unpickled copy, so nothing shared can be mutated by one session.

One switch, ``SINKSCOPE_ENGINE``: "embedded" (the default) computes here; a URL sends
every computation to that served engine through :class:`engine.serving.client.EngineClient` (no
model is loaded here, and torch is not even imported). The projections (PCA/UMAP) run
here in both cases, from the points each relation carries.
"""

from __future__ import annotations

import atexit
import gc
import logging
import threading
import time

import numpy as np
import streamlit as st

from engine import settings
from engine.serving.client import EngineClient, EngineUnavailable, ModelInfo
from engine.errors import ModelError
from engine.relation.projection import project
from engine.settings import DEFAULT_MODEL, EMBEDDED

log = logging.getLogger("sinkscope.app")


def served() -> bool:
    """True when ``SINKSCOPE_ENGINE`` names a served engine rather than "embedded"."""
    return settings.CONFIG.engine != EMBEDDED


@st.cache_resource(show_spinner=False)
def client(url: str) -> EngineClient:
    """One client per served engine, shared by every session (it keeps its connections)."""
    return EngineClient(url)


# A served engine that did not answer is not asked again for this long: the page's other
# calls in the same run fail at once (its notice comes after one call's retries, not
# after each call's), and the outage probe clears it as soon as the engine answers.
AWAY_S = 1.0
_away: dict[str, tuple[float, EngineUnavailable]] = {}


def served_models(url: str) -> tuple[ModelInfo, ...]:
    """What the served engine serves, asked again every five minutes (failures are not
    kept; one is raised again at once for :data:`AWAY_S`)."""
    seen = _away.get(url)
    if seen is not None and time.monotonic() - seen[0] < AWAY_S:
        raise seen[1]
    try:
        return _served_models(url)
    except EngineUnavailable as e:
        _away[url] = (time.monotonic(), e)
        raise


@st.cache_resource(show_spinner=False, ttl=300)
def _served_models(url: str) -> tuple[ModelInfo, ...]:
    models = tuple(client(url).models())
    freeze_heap()
    return models


def engine_answers() -> bool:
    """Whether the served engine answers its health check right now."""
    try:
        ok = client(settings.CONFIG.engine).health(timeout=2.0).get("status") == "ok"
    except EngineUnavailable:
        return False
    if ok:
        _away.pop(settings.CONFIG.engine, None)
    return ok


def engine_label(model) -> str:
    """Which engine computes, and where: for the sidebar."""
    if served():
        return f"served by {settings.CONFIG.engine}, on {model.device} ({model.dtype})"
    return f"embedded, on {model.device}"


def model_names() -> tuple[str, ...]:
    """Allow-listed model names, the packaged default first."""
    if served():
        try:
            return tuple(m.name for m in served_models(settings.CONFIG.engine))
        except EngineUnavailable:
            return (DEFAULT_MODEL,)
    from engine.models.registry import allowed_models

    try:
        names = list(allowed_models())
    except Exception as e:  # a bad operator list should not hide the default model
        log.warning("model allow-list: %s", e)
        names = [DEFAULT_MODEL]
    names = sorted(set(names) - {DEFAULT_MODEL})
    return (DEFAULT_MODEL, *names)


@st.cache_data(show_spinner=False, max_entries=64)
def model_label(name: str) -> str:
    """The picker's line for a model: its name, architecture, layers × heads and token
    limit, read from its configuration (only the chosen model's weights load)."""
    if served():
        for m in served_models(settings.CONFIG.engine):
            if m.name == name:
                return (f"{name} · {m.n_layers} layers × {m.n_heads} heads · "
                        f"{m.max_tokens} tokens")
        return name
    from engine.models.registry import describe

    try:
        return describe(name).label
    except Exception as e:  # a broken entry still shows; choosing it says what is wrong
        log.warning("model %s: %s", name, e)
        return f"{name} (cannot read its configuration)"


def freeze_heap() -> None:
    """Move every object alive now (modules, the model) out of the garbage collector's reach.

    Python's full collections walk every tracked object: with torch, transformers, plotly
    and UMAP loaded that is ~640k objects and ~0.5 s, and building figures triggers one
    every other slider move, stalling the server mid-response. Objects loaded once per
    process never become garbage, so they are frozen; later garbage is still collected.
    """
    gc.freeze()


def encoder(model: str):
    """The model (an ``Encoder``), loaded once per process (shared, read-only); with a
    served engine, what it says about the model (a ``ModelInfo`` with the same
    n_layers, n_heads, max_tokens and device)."""
    if served():
        infos = served_models(settings.CONFIG.engine)
        for m in infos:
            if m.name == model:
                return m
        raise ModelError(f"The engine at {settings.CONFIG.engine} does not serve {model!r}; "
                         f"it serves {', '.join(m.name for m in infos)}.")
    return _encoder(model)


def model_shape(model: str):
    """Without waiting for the model: the loaded model (or the served engine's
    ``ModelInfo``) when it is ready, else its layers and heads read from its configuration
    file (:func:`sinkscope_app.launch.config_shape`): the page's controls need no more.

    Raises:
        ModelError: the name is not allow-listed or its folder is not a model.
    """
    if served() or model in _LOADED:
        return encoder(model)
    from sinkscope_app.launch import PRELOAD, config_shape

    return encoder(model) if PRELOAD.ready(model) else config_shape(model)


_LOADED: dict[str, object] = {}  # models this process has loaded (model_shape reads it)


@st.cache_resource(show_spinner=False)
def _encoder(model: str):
    """The model, loaded once per process (shared, read-only): the one the launcher
    preloaded at server start (``python -m sinkscope_app.launch``; waiting for it while it
    loads), else loaded here."""
    from sinkscope_app.launch import PRELOAD

    enc = PRELOAD.get(model)
    if enc is None:
        from engine import Encoder

        if settings.CONFIG.torch_threads > 0:
            import torch
            torch.set_num_threads(settings.CONFIG.torch_threads)
        enc = Encoder(model)  # allow-listed names only (never a folder from a visitor)
    _LOADED[model] = enc
    freeze_heap()
    return enc


@st.cache_resource(show_spinner=False)
def umap_warmup() -> threading.Thread | None:
    """Compile UMAP (numba) once per process in the background, off the first user's path.

    Off when ``SINKSCOPE_WARM_UP=0`` (tests do this to keep cores free).
    """
    if not settings.CONFIG.warm_up:
        return None

    def work():
        try:
            from engine.relation.projection import warm_up_umap
            warm_up_umap()
        except Exception as e:  # warm-up is an optimisation only
            log.warning("UMAP warm-up failed: %s", e)
        freeze_heap()  # numba, UMAP and pynndescent's modules too

    return background("sinkscope-umap-warmup", work)


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
    from engine import encode_texts

    return encode_texts(encoder(model), text_a, _b(text_b, mode), mode)


def prepare(model: str, text_a: str, text_b: str, mode: str) -> None:
    """Encode the texts once, before the sliders run: here, or on the served engine (which
    keeps them). Raises the engine's error for a text it cannot relate."""
    if served():
        relation(model, text_a, text_b, mode, -1, "mean", 1.0, 1, "content", False)
    else:
        encodings(model, text_a, text_b, mode)


def relation(model: str, text_a: str, text_b: str, mode: str, layer: int, head,
             eps: float, half_steps: int, weights: str, pool: bool):
    """One layer and head (or the head mean) at one ε and half-step count."""
    return _relation(settings.CONFIG.engine, model, text_a, text_b, mode, layer, head, eps,
                     half_steps, weights, pool)


@st.cache_data(show_spinner=False, max_entries=64)
def _relation(engine: str, model, text_a, text_b, mode, layer, head, eps, half_steps,
              weights, pool):
    return _relate(engine, model, text_a, text_b, mode, layer, head, eps, half_steps,
                   weights, pool)


def _relate(engine: str, model, text_a, text_b, mode, layer, head, eps, half_steps,
            weights, pool):
    """A relation from the engine ``engine`` names (uncached)."""
    if engine != EMBEDDED:
        return client(engine).relate(text_a, _b(text_b, mode), model=model, layer=layer,
                                     head=head, eps=eps, half_steps=half_steps, mode=mode,
                                     weights=weights, pool_words=pool)
    from engine import relate_encodings

    enc = encodings(model, text_a, text_b, mode)
    return relate_encodings(enc, layer=layer, head=head, eps=eps, half_steps=half_steps,
                            mode=mode, weights=weights, pool_words=pool)


def grid(model: str, text_a: str, text_b: str, mode: str, eps: float, half_steps: int,
         weights: str, pool: bool):
    """Every layer and head at once: plans (L, H, n, m) and (L, H) summaries.

    The caller checks n·m ≤ ``CONFIG.grid_max_cells`` first (SINKSCOPE_GRID_MAX_CELLS): at 512
    tokens a side the grid's arrays alone would take about a gigabyte.
    """
    return _relation_grid(settings.CONFIG.engine, model, text_a, text_b, mode, eps,
                          half_steps, weights, pool)


@st.cache_data(show_spinner=False, max_entries=8)
def _relation_grid(engine: str, model, text_a, text_b, mode, eps, half_steps, weights, pool):
    return _relate(engine, model, text_a, text_b, mode, "all", "all", eps, half_steps,
                   weights, pool)


@st.cache_resource(show_spinner=False, max_entries=16)
def sentence_measures(model: str, text_a: str, candidates: str):
    """Text A and the candidates (one per line) as measures of their last hidden states,
    with the model's sentence embeddings: (measures, lines dropped). Shared read-only."""
    from engine.relation.sentences import measures

    return measures(encoder(model), text_a, candidates)


@st.cache_data(show_spinner=False, max_entries=32)
def ranking(model: str, text_a: str, candidates: str, eps: float):
    """The Sentences view's :class:`~engine.types.Ranking` at one ε (no model call once
    the texts are encoded), here or on the served engine."""
    if served():
        return client(settings.CONFIG.engine).rank(text_a, candidates, model=model, eps=eps)
    from engine.relation.sentences import rank

    ms, dropped = sentence_measures(model, text_a, candidates)
    enc = encoder(model)
    return rank(ms, eps=eps, pooling=enc.pooling, mean_pooled=enc.mean_pooled,
                dropped=dropped)


def _geometry(model, text_a, text_b, mode, layer, head, weights, pool):
    """A relation whose points, weights and scores are right (ε and steps do not matter)."""
    return relation(model, text_a, text_b, mode, layer, head, 1.0, 1, weights, pool)


@st.cache_data(show_spinner=False, max_entries=64)
def projection(model: str, text_a: str, text_b: str, mode: str, layer: int, head,
               weights: str, pool: bool, space: str, method: str, dim: int):
    """Joint PCA/UMAP of both texts' points; independent of ε and half-steps."""
    r = _geometry(model, text_a, text_b, mode, layer, head, weights, pool)
    return project(r, space=space, method=method, dim=dim)


def lattice(model: str, text_a: str, text_b: str, mode: str, layer: int, head,
            weights: str, pool: bool, eps_stops: tuple, step_stops: tuple):
    """Every slider frame of one layer and head, packed for the browser (a ``scrub.Payload``).

    One batched solver call over the lattice's ε values (engine.relation.lattice), here or on the
    served engine; a payload over ``CONFIG.live_max_bytes`` comes back without data and
    with a note saying why.
    """
    return _lattice(settings.CONFIG.engine, model, text_a, text_b, mode, layer, head,
                    weights, pool, tuple(eps_stops), tuple(step_stops))


@st.cache_data(show_spinner=False, max_entries=16)
def _lattice(engine: str, model, text_a, text_b, mode, layer, head, weights, pool,
             eps_stops, step_stops):
    from engine.relation.frames import grid, header

    from . import scrub

    cfg = settings.CONFIG
    eps, steps = grid(eps_stops, step_stops, max_half_steps=cfg.live_max_half_steps)
    id_ = scrub.lattice_id(model, text_a, text_b, mode, layer, head, weights, pool)
    if engine != EMBEDDED:
        def pack():
            data = client(engine).lattice(
                text_a, _b(text_b, mode), model=model, eps_values=eps, steps=steps, id=id_,
                max_bytes=cfg.live_max_bytes, layer=layer, head=head, mode=mode,
                weights=weights, pool_words=pool)
            return data, header(data)["bits"] if data else 0
    else:
        from engine.relation.lattice import relation_lattice

        r = _geometry(model, text_a, text_b, mode, layer, head, weights, pool)

        def pack():
            return scrub.encode(relation_lattice(r, eps, steps), id_,
                                max_bytes=cfg.live_max_bytes)
    payload = scrub.build(pack, id_, max_bytes=cfg.live_max_bytes)
    log.info("lattice %s: %d × %d frames in %.2f s, %s bytes", id_, len(eps), len(steps),
             payload.seconds, len(payload.data) if payload.data else "no")
    return payload


def eps_path(model: str, text_a: str, text_b: str, mode: str, layer: int, head,
             weights: str, pool: bool):
    """(ε values (K,), plans (K, n, m), exact plan (n, m)) from large ε to small."""
    return _path(settings.CONFIG.engine, model, text_a, text_b, mode, layer, head, weights,
                 pool)


@st.cache_data(show_spinner=False, max_entries=64)
def _path(engine: str, model, text_a, text_b, mode, layer, head, weights, pool):
    r = _geometry(model, text_a, text_b, mode, layer, head, weights, pool)
    if engine != EMBEDDED:
        eps, plans = client(engine).eps_path(text_a, _b(text_b, mode), model=model,
                                             layer=layer, head=head, mode=mode,
                                             weights=weights, pool_words=pool)
    else:
        from engine import eps_path as solve_path

        eps, plans = solve_path(r)
    return np.asarray(eps), np.asarray(plans), np.asarray(r.exact_plan)


def _session_id() -> str | None:
    """The id of the session whose message or run is being handled on this thread: the
    script run's, or the AppSession whose browser message is being read (Streamlit reads
    a rerun request's query string there, before any script runs)."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
        ctx = get_script_run_ctx(suppress_warning=True)
        if ctx is not None:
            return str(ctx.session_id)
        import sys

        from streamlit.runtime.app_session import AppSession
        frame = sys._getframe(1)
        while frame is not None:
            owner = frame.f_locals.get("self")
            if isinstance(owner, AppSession):
                return str(owner.id)
            frame = frame.f_back
    except Exception:  # another Streamlit: no session to name
        pass
    return None


class _DroppedLinks(logging.Handler):
    """Notices Streamlit ignoring a link's whole query string (over 512 Ki characters),
    per session.

    Streamlit drops such a query string before the app runs and only logs it; this
    handler notes which session's link it was, so that visitor (and only that one) is told
    why the default view is shown.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.sessions: dict[str, float] = {}
        self.guard = threading.Lock()  # not `lock`: logging.Handler holds that one

    def emit(self, record: logging.LogRecord) -> None:
        if "Ignoring query string" not in record.getMessage():
            return
        sid = _session_id()
        if sid is not None:
            now = time.monotonic()
            with self.guard:  # forget old entries: the dict stays small
                self.sessions = {k: t for k, t in self.sessions.items() if now - t < 60}
                self.sessions[sid] = now


# Installed when this module is first imported (the first page of the process), so it
# catches over-long links from every later visitor onwards.
_DROPPED = _DroppedLinks()
logging.getLogger("streamlit.runtime.state.query_params").addHandler(_DROPPED)


def link_was_dropped(within_s: float = 30.0) -> bool:
    """True when Streamlit ignored this session's over-long link in the last ``within_s``
    seconds (another visitor's never counts)."""
    sid = _session_id()
    with _DROPPED.guard:
        last = _DROPPED.sessions.pop(sid, None) if sid is not None else None
    return last is not None and time.monotonic() - last < within_s


PIECES_PER_WORD_MAX = 1.6  # English prose reads as ~1.0–1.3 pieces per word here
UNK_SHARE_MAX = 0.1


def vocabulary_notice(tokenizer, text: str, name: str, model: str) -> str | None:
    """A notice when ``text`` is mostly outside the model's vocabulary, else None.

    Measured on the model's own tokenizer: word pieces per word (words: runs of letters
    or digits) and the share of pieces that are ``[UNK]``. A text in a language the model
    did not learn falls apart into pieces that carry little meaning (Spanish "después" as
    "des ##pu ##es", Hebrew letter by letter, emoji as [UNK]), and each word's partner in
    the plans is then mostly chance.

    Args:
        tokenizer: a Hugging Face tokenizer (``Encoder.tokenizer``); None skips the check.
        text: the text; name: how the page names it ("Text B"); model: the model's name.
    """
    if tokenizer is None or not text.strip():
        return None
    import re

    try:
        pieces = tokenizer.tokenize(text[:4000])
    except Exception:  # a tokenizer that cannot say: no notice rather than a failure
        return None
    unk = getattr(tokenizer, "unk_token", None)
    content = [p for p in pieces if re.search(r"\w", p)]
    n_unk = sum(p == unk for p in pieces) if unk else 0
    words = re.findall(r"\w+", text[:4000])
    if len(pieces) < 3:
        return None
    per_word = (len(content) - n_unk) / max(len(words), 1)
    unk_share = n_unk / len(pieces)
    if unk_share < UNK_SHARE_MAX and (len(words) < 4 or per_word < PIECES_PER_WORD_MAX):
        return None
    shown = [p for p in content if p != unk][:4]
    how = (f"{per_word:.1f} word pieces per word (English prose: about 1.1)"
           + (f", and {unk_share:.0%} of its pieces are [UNK] (unknown)" if n_unk else ""))
    sample = f", as in “{' '.join(shown)} …”" if shown else ""
    return (f"{name} is mostly outside the vocabulary of {model}: {how}{sample}. Such "
            "pieces carry little of a word's meaning, so the partners the plans give its "
            "words are mostly chance. If the text is not in English, choose a multilingual "
            "model (docs/models.md: paraphrase-multilingual-MiniLM-L12-v2 or "
            "paraphrase-xlm-r-multilingual-v1, which an operator adds with SINKSCOPE_MODELS).")
