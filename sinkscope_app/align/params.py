"""The Align page's state and its address:
``/align?text_a=...&text_b=...&gold=0-0+1-1&method=unbalanced&tau=4.94``.

Every control's session key (``align_*``), default and name in the address, declared in
:data:`SCHEMA` and read by the frame; the method's slider stops (θ, τ, m). The Pair view
opens at the engine's tuned settings (``engine.alignment.api.opening``). A change of the
view, the pair or the method is a browser history entry; the sliders change the entry
they are in (``sinkscope_app.history``). The corpus file is never in the address.
"""

from __future__ import annotations

import functools
import time
from typing import Any, Mapping

import numpy as np

from engine import settings
from engine.alignment.live import MASS_STOPS, TAU_STOPS
from engine.alignment.methods import DEFAULTS as ENGINE_DEFAULTS, opening

from .. import engines, jobs, locale
from ..inputs import Param, Refused, Schema, choice, parse_bool, quote, text, to_float
from ..links import compare_link  # noqa: F401  (the Pair view's link to Compare)

METHODS = ("softmax-argmax", "softmax-both", "similarity-threshold", "sinkhorn-argmax",
           "sinkhorn-threshold", "exact", "partial", "unbalanced")
THRESHOLDED = ("softmax-both", "similarity-threshold", "sinkhorn-threshold", "exact",
               "partial", "unbalanced")
SOFTMAX_METHOD, TRANSPORT_METHOD = "softmax-argmax", "unbalanced"
#: A trained aligner of the operator's list (``SINKSCOPE_ALIGNERS``), when there is one.
TRAINED = "trained"
OPENING = opening()  # the method and settings the Pair view opens at
#: The τ slider's stops: 41 on a log scale from 0.01 to 100, and the tuned τ (4.94), so
#: the Pair view opens exactly at the engine's settings; the m slider's: every other m of
#: the engine's grid (k/51, k = 2, 4, …, 50: 0.04 … 0.98, with the default m = 0.98). The
#: live payload's own stops (``engine.alignment.live``).
TAU_OPTIONS, MASS_OPTIONS = TAU_STOPS, MASS_STOPS
#: The session's own trained aligners (a job's, chosen for Align): name → θ.
SESSION_ALIGNERS = jobs.SESSION_ALIGNERS
VIEWS = ("pair", "corpus")
LANGS = tuple(locale.LANGS)

DEFAULTS: dict[str, Any] = {
    "align_view": "pair",
    "align_a": "the cat sat on the mat",
    "align_b": "a cat was sitting on the mat",
    "align_gold": "0p0 1-1 2-2 2-3 3-4 4-5 5-6",
    "align_method": OPENING["method"],
    "align_threshold": OPENING["theta"],
    "align_tau": float(OPENING["tau"]),
    "align_mass": 0.98,  # the engine's default m of partial
    "align_lower": False,
}


def nearest(options: tuple[float, ...], x: float) -> float:
    return min(options, key=lambda o: abs(np.log(o) - np.log(max(x, 1e-12))))


def nearest_mass(x: float) -> float:
    """The m stop nearest ``x`` (``x`` clamped to the slider's ends first)."""
    x = min(max(float(x), MASS_OPTIONS[0]), MASS_OPTIONS[-1])
    return min(MASS_OPTIONS, key=lambda o: abs(o - x))


def aligners() -> dict[str, float]:
    """The trained aligners the page offers: the engine's (the operator's
    ``SINKSCOPE_ALIGNERS``, read where the engine runs), then those a job of this session
    trained and the person chose to use (``FILE@JOB``, :data:`SESSION_ALIGNERS`): name →
    its θ, tuned on its dev pairs."""
    try:
        listed = _listed(engines.current().name)
    except Exception:  # a served engine away, a malformed list: none offered
        listed = {}
    try:
        import streamlit as st

        own = dict(st.session_state.get(SESSION_ALIGNERS) or {})
    except Exception:  # no session (a test of the address alone)
        own = {}
    return {**listed, **own}


@functools.lru_cache(maxsize=4)
def _cached_listed(engine: str, minute: int) -> dict[str, float]:
    return {a.name: float(a.theta) for a in engines.current().aligners()}


def _listed(engine: str) -> dict[str, float]:
    """The engine's aligners (asked again at most once a minute)."""
    return dict(_cached_listed(engine, int(time.monotonic() // 60)))


def methods() -> tuple[str, ...]:
    """The methods the page offers: :data:`METHODS`, and ``trained`` when an aligner is
    listed (:func:`aligners`)."""
    return METHODS + ((TRAINED,) if aligners() else ())


def method_defaults(name: str, aligner: str | None = None) -> dict[str, float]:
    """The threshold θ (on V), τ and m a method starts from (engine.alignment's defaults;
    a trained aligner's own θ)."""
    if name == TRAINED:
        found = aligners()
        theta = found.get(aligner, next(iter(found.values()), 0.5))
        return {"align_threshold": round(float(theta), 2)}
    m = ENGINE_DEFAULTS["hidden"][name]
    return {"align_threshold": round(m.theta, 2), "align_tau": nearest(TAU_OPTIONS, m.tau),
            "align_mass": nearest_mass(m.mass)}


# --------------------------------------------------------------------------- readers
def _text(name: str):
    """A reader of a text, cut to ``SINKSCOPE_MAX_CHARS`` characters with a notice."""
    return text(lambda ctx: settings.CONFIG.max_chars, name=name)


def _number(name: str, lo: float, hi: float, snap):
    """A reader of a number: outside ``lo``–``hi`` it is clamped, with a notice; then
    ``snap`` puts it on the slider's nearest stop."""
    def read(raw: str, ctx: Any) -> float:
        x = to_float(raw)
        if x is None:
            raise Refused("not_number", name=name, value=quote(raw, 20))
        if not lo <= x <= hi:
            used = snap(min(max(x, lo), hi))
            raise Refused("out_of_range", use=used, name=name, value=x, lo=lo, hi=hi,
                          used=used)
        return snap(x)
    return read


def _lower(raw: str, ctx: Any) -> bool:
    return bool(parse_bool(raw))


def _resolve(v: dict, p: Mapping[str, str], ctx: Any, warn) -> None:
    """A method given without a threshold starts from its own θ, τ and m. Read on Back or
    Forward (``ctx`` true), a parameter the address lacks is its default."""
    if ctx:
        v.setdefault("align_method", DEFAULTS["align_method"])
    if "align_method" in v and "align_threshold" not in v:
        for k, value in method_defaults(v["align_method"], v.get("align_aligner")).items():
            v.setdefault(k, value)
    if ctx:
        for k, value in DEFAULTS.items():
            v.setdefault(k, value)


def _only(method_of_value: tuple[str, ...]):
    """Written only while the method is one of ``method_of_value``."""
    def write(value, state) -> str | None:
        if state.get("align_method") not in method_of_value:
            return None
        return f"{value:g}" if isinstance(value, float) else str(value)
    return write


def _job(value, state) -> str | None:
    return str(value) if value else None


# A change of nav is a history entry; a parameter missing from the address is its default.
SCHEMA = Schema("align", (
    Param("align_view", "view", choice(VIEWS, "unknown_view"), default="pair",
          doc="pair (one pair of texts) or corpus (a file of pairs)", nav="pair"),
    Param("align_a", "text_a", _text("text_a"), default=DEFAULTS["align_a"],
          doc="the texts of the Pair view", nav=DEFAULTS["align_a"]),
    Param("align_b", "text_b", _text("text_b"), default=DEFAULTS["align_b"],
          nav=DEFAULTS["align_b"]),
    Param("align_gold", "gold", _text("gold"), default=DEFAULTS["align_gold"],
          doc="gold links, Pharaoh, 0-based (i-j sure, ipj possible)",
          nav=DEFAULTS["align_gold"]),
    Param("align_method", "method", choice(lambda ctx: methods(), "unknown_method",
                                           default=DEFAULTS["align_method"]),
          default=DEFAULTS["align_method"], nav=DEFAULTS["align_method"],
          doc="the extraction method (trained: an aligner of SINKSCOPE_ALIGNERS)"),
    Param("align_aligner", "aligner", choice(lambda ctx: tuple(aligners()), "unknown_aligner"),
          write=_only((TRAINED,)), nav=None,
          doc="the trained aligner (method trained), by its name in SINKSCOPE_ALIGNERS"),
    Param("align_threshold", "threshold",
          _number("threshold", 0.0, 0.99, lambda x: float(min(max(round(x, 2), 0.0), 0.99))),
          default=DEFAULTS["align_threshold"], write=_only(THRESHOLDED + (TRAINED,)),
          doc="θ on the method's min-max scaled values, 0–0.99"),
    Param("align_tau", "tau",
          _number("tau", TAU_OPTIONS[0], TAU_OPTIONS[-1], lambda x: nearest(TAU_OPTIONS, x)),
          default=DEFAULTS["align_tau"], write=_only(("unbalanced",)),
          doc="τ, the KL strength of the marginals (unbalanced only)"),
    Param("align_mass", "mass",
          _number("mass", MASS_OPTIONS[0], MASS_OPTIONS[-1], nearest_mass),
          default=DEFAULTS["align_mass"], write=_only(("partial",)),
          doc="m, the share of the mass moved (partial only)"),
    Param("align_lower", "lower", _lower, default=False,
          doc="lower-case and split on whitespace, as the gold sets do"),
    Param("lang", "lang", choice(LANGS, "unknown_lang"),
          doc="en or es: the page's words, and the language its links carry"),
    Param("align_corpus_job", "corpus_job", jobs.read_id, write=_job,
          doc="the engine's job aligning the uploaded file (the Corpus view finds it again)"),
    Param("align_aligner_job", "aligner_job", jobs.read_id, write=_job,
          doc="the engine's job training an aligner on the uploaded file"),
), _resolve)


def parse_query(params: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Page state from the URL's (untrusted) values, and warnings for the ones refused, in
    the link's language (``lang``; English by default)."""
    raw = SCHEMA.given(params).get("lang")
    out = SCHEMA.parse(params, lang=raw if raw in LANGS else locale.DEFAULT_LANG)
    return out.values, out.warnings


def to_query(state: Mapping[str, Any]) -> dict[str, str]:
    """The URL for the current state (the corpus file is never in it)."""
    return SCHEMA.to_query({**DEFAULTS, "lang": locale.DEFAULT_LANG, **state})
