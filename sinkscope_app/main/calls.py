"""The main page's calls into the engine that only it makes (cached per engine, texts
and settings), and what it notices about a visitor's link and texts.

Shared calls (the relation, the heads grid, projections) are :mod:`sinkscope_app.compute`'s.
"""

from __future__ import annotations

import logging
import re
import threading
import time

import numpy as np
import streamlit as st

from engine import settings
from engine.settings import Settings
from engine.types import Notice

from .. import compute, engines

log = logging.getLogger("sinkscope.app")


@st.cache_data(show_spinner=False, max_entries=32)
def _ranking(engine: str, text_a: str, candidates: str, model: str, eps: float):
    return engines.current().rank(text_a, candidates, model=model, eps=eps)


def ranking(model: str, text_a: str, candidates: str, eps: float):
    """The Sentences view's :class:`~engine.types.Ranking` at one ε (no model call once
    the texts are encoded)."""
    return _ranking(engines.current().name, text_a, candidates, model, float(eps))


def lattice(text_a: str, text_b: str, s: Settings, eps_stops: tuple, step_stops: tuple):
    """Every slider frame of one layer and head, packed for the browser (a ``scrub.Payload``).

    One batched solver call over the lattice's ε values (engine.relation.lattice); a
    payload over ``CONFIG.live_max_bytes`` comes back without data (the page says why).
    """
    return _lattice(engines.current().name, text_a, text_b, compute.geometry(s),
                    tuple(eps_stops), tuple(step_stops))


def lattice_grid(eps_stops: tuple, step_stops: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The (ε (E,), half-steps (T,)) a lattice of these stops holds (``frames.grid`` under
    ``CONFIG.live_max_half_steps``)."""
    from engine.relation.frames import grid

    return grid(eps_stops, step_stops, max_half_steps=settings.CONFIG.live_max_half_steps)


@st.cache_data(show_spinner=False, max_entries=16)
def _lattice(engine: str, text_a: str, text_b: str, s: Settings, eps_stops, step_stops):
    from .. import scrub

    cfg = settings.CONFIG
    eps, steps = lattice_grid(eps_stops, step_stops)
    id_ = lattice_id(text_a, text_b, s)
    payload = scrub.build(lambda: engines.current().lattice(
        text_a, text_b, s, eps, steps, id=id_, max_bytes=cfg.live_max_bytes), id_,
        max_bytes=cfg.live_max_bytes)
    log.info("lattice %s: %d × %d frames in %.2f s, %s bytes", id_, len(eps), len(steps),
             payload.seconds, len(payload.data) if payload.data else "no")
    return payload


def frame_texts(payload, lang: str) -> bytes | None:
    """The texts of a lattice's frames in ``lang`` for the browser (``scrub.texts_payload``,
    written once per lattice and language); None for a payload without data."""
    return _frame_texts(payload.id, lang, payload) if payload.data is not None else None


@st.cache_data(show_spinner=False, max_entries=16)
def _frame_texts(id_: str, lang: str, _payload) -> bytes:
    from .. import scrub

    return scrub.texts_payload(_payload, lang)


def lattice_id(text_a: str, text_b: str, s: Settings) -> str:
    """The id of a view's lattice of frames (its geometry: what decides its frames)."""
    from .. import scrub

    return scrub.lattice_id(s.model, text_a, text_b, s.mode, s.layer, s.head, s.weights,
                            s.pool_words)


def eps_path(text_a: str, text_b: str, s: Settings):
    """(ε values (K,), plans (K, n, m), exact plan (n, m)) from large ε to small."""
    return _path(engines.current().name, text_a, text_b, compute.geometry(s))


@st.cache_data(show_spinner=False, max_entries=64)
def _path(engine: str, text_a: str, text_b: str, s: Settings):
    r = compute.relation(text_a, text_b, s)
    eps, plans = engines.current().eps_path(text_a, text_b, s)
    return np.asarray(eps), np.asarray(plans), np.asarray(r.exact_plan)


# --------------------------------------------------------------------------- dropped links
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


# --------------------------------------------------------------------------- vocabulary
PIECES_PER_WORD_MAX = 1.6  # English prose reads as ~1.0–1.3 pieces per word here
UNK_SHARE_MAX = 0.1


def vocabulary_notice(tokenizer, text: str, name: str, model: str) -> Notice | None:
    """A notice (code "vocabulary") when ``text`` is mostly outside the model's
    vocabulary, else None.

    Measured on the model's own tokenizer: word pieces per word (words: runs of letters
    or digits) and the share of pieces that are ``[UNK]``. A text in a language the model
    did not learn falls apart into pieces that carry little meaning (Spanish "después" as
    "des ##pu ##es", Hebrew letter by letter, emoji as [UNK]), and each word's partner in
    the plans is then mostly chance.

    Args:
        tokenizer: a Hugging Face tokenizer (``Encoder.tokenizer``); None skips the check.
        text: the text; name: its name as a code ("text_b"); model: the model's name.
    """
    if tokenizer is None or not text.strip():
        return None
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
    params = {"name": name, "model": model, "per_word": float(per_word),
              "unk": int(round(100 * unk_share)) if n_unk else 0,
              "sample": " ".join([p for p in content if p != unk][:4])}
    from .. import locale

    english = Notice("vocabulary", "warning", "", code="vocabulary", params=params)
    return Notice("vocabulary", "warning", locale.notice(english, "en"), code="vocabulary",
                  params=params)
