"""The Align page's calls into the engine for one pair, through the engine interface
(:mod:`sinkscope_app.engines`, embedded or served alike): one pair by one method at the
sliders' settings (``align_pair``: links, unaligned words, the values the links are read
from, the scores), every method's scores for the table, and the live sliders' payload
(``align_live``). Results are cached per pair and settings (``st.cache_data``); the
engine keeps the pair's word scores, so a slider move never encodes again.

The method ``trained`` is a trained aligner, by name: the operator's
(``SINKSCOPE_ALIGNERS``, listed by the engine) or one a job of this session trained
(``FILE@JOB``, :func:`sinkscope_app.jobs.register_aligner`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from engine import settings
from engine.alignment.live import LivePayload
from engine.alignment.methods import method_of as engine_method
from engine.errors import TextError
from engine.settings import DEFAULT_MODEL

from .. import align_live, compute, engines
from .params import THRESHOLDED, TRAINED, aligners, method_defaults, methods
from .words import UnreadText

#: A method's settings as the engine's ``align_pair`` (and ``POST /v1/align``) takes them.
ALIGN_FIELDS = ("method", "threshold", "tau", "mass", "eps")
#: What the left panel shows for a method without a threshold: the values of the method
#: whose maxima it takes (the similarity S, the balanced plan), min-max scaled.
SHOWN_BY = {"softmax-argmax": "similarity-threshold", "sinkhorn-argmax": "sinkhorn-threshold"}


@dataclass(frozen=True)
class PairResult:
    """One pair aligned by one method: links, unaligned words, the plan and the scores."""

    words_a: tuple[str, ...]
    words_b: tuple[str, ...]
    links: tuple[tuple[int, int], ...]
    null_a: tuple[int, ...]
    null_b: tuple[int, ...]
    plan: np.ndarray | None
    scores: dict | None
    pharaoh: str


def served() -> bool:
    """Whether a served engine computes the alignments."""
    return engines.current().served


def model_name() -> str:
    m = st.session_state.get("model")
    try:
        return m if m in compute.model_names() else DEFAULT_MODEL
    except Exception:
        return DEFAULT_MODEL


def method_of(name: str, threshold: float, tau: float, mass: float):
    """The engine's method ``name`` at these settings (θ on V)."""
    m = engine_method(name, "hidden")
    if name in THRESHOLDED:
        m = m.with_theta(float(threshold))
    over = {"tau": float(tau)} if name == "unbalanced" else {
        "mass": float(mass)} if name == "partial" else {}
    return engine_method(m, **over)


def fields_of(name: str, threshold: float, tau: float, mass: float,
              aligner: str = "") -> tuple:
    """The engine's fields of a method at these settings (a trained aligner: its name and
    θ), as a sorted tuple of items (a cache key)."""
    if name == TRAINED:
        return tuple(sorted({"method": TRAINED, "aligner": aligner,
                             "threshold": float(threshold)}.items()))
    d = method_of(name, threshold, tau, mass).to_dict()
    return tuple(sorted((k, v) for k, v in d.items() if k in ALIGN_FIELDS))


@st.cache_data(show_spinner=False, max_entries=256)
def _align(engine: str, text_a: str, text_b: str, gold: str | None, fields: tuple,
           lowercase: bool, model: str):
    try:
        return engines.current().align_pair(text_a, text_b, gold, dict(fields), model=model,
                                            lowercase=lowercase)
    except TextError as e:
        if e.code != "unread_pairs":
            raise
        raise UnreadText(str(e.params["pairs"][0][1])) from e


def _values(al) -> np.ndarray | None:
    return None if al.values is None else np.where(al.values >= 0, al.values, np.nan)


def align_pair(text_a: str, text_b: str, gold: str | None, method: str, threshold: float,
               tau: float, mass: float, lowercase: bool, model: str,
               aligner: str = "") -> PairResult:
    """One pair aligned by one method at these settings, by the engine: links, unaligned
    words, the values the left panel shows (:data:`SHOWN_BY` for a method without a
    threshold), and the scores when gold is given.

    Raises:
        SinkscopeError: empty or too long texts, gold links that do not fit the words, an
            aligner that cannot be used.
    """
    engine = engines.current().name
    al = _align(engine, text_a, text_b, gold, fields_of(method, threshold, tau, mass, aligner),
                lowercase, model)
    plan = _values(al)
    if method in SHOWN_BY:
        plan = _values(_align(engine, text_a, text_b, gold, fields_of(
            SHOWN_BY[method], 0.5, tau, mass), lowercase, model))
    return PairResult(tuple(al.words_a), tuple(al.words_b), tuple(al.links), tuple(al.null_a),
                      tuple(al.null_b), plan, al.scores, al.pharaoh)


def aligner_of(method: str) -> str:
    """The trained aligner's name for ``method`` ``trained`` ("" for the others)."""
    return aligner_name() if method == TRAINED else ""


def aligner_name() -> str:
    """The trained aligner the page uses: the one chosen, else the first offered."""
    names = list(aligners())
    chosen = st.session_state.get("align_aligner")
    return chosen if chosen in names else (names[0] if names else "")


def method_table(text_a: str, text_b: str, gold: str, chosen: str, threshold: float,
                 tau: float, mass: float, lowercase: bool, model: str) -> list[dict]:
    """Every method's scores for this pair (the chosen one at the sliders' settings)."""
    from engine.errors import AlignerError

    rows = []
    for name in methods():
        d = {"align_tau": tau, "align_mass": mass, **method_defaults(name, aligner_name())}
        if name == chosen:
            d = {"align_threshold": threshold, "align_tau": tau, "align_mass": mass}
        try:
            r = align_pair(text_a, text_b, gold, name, d["align_threshold"], d["align_tau"],
                           d["align_mass"], lowercase, model, aligner_of(name))
        except AlignerError:  # an aligner that does not load: its view says why
            continue
        rows.append(row_of(name + (" ◀" if name == chosen else ""), r))
    return rows


def row_of(method: str, r: PairResult) -> dict:
    """One row of the table of every method's scores."""
    s = r.scores or {}
    return {"method": method, "links": len(r.links), "precision": s.get("precision"),
            "recall": s.get("recall"), "F1": s.get("f1"), "AER": s.get("aer"),
            "null F1": s.get("null_f1"), "total F1": s.get("total_f1")}


# --------------------------------------------------------------------------- live sliders
@st.cache_data(show_spinner=False, max_entries=16)
def _payload(engine: str, text_a: str, text_b: str, gold: str | None, method: str,
             lowercase: bool, model: str, aligner: str, max_bytes: int, max_cells: int
             ) -> tuple[bytes | None, str]:
    """(the payload's bytes or None, why there is none) of a pair and a method, by the
    engine: V at every slider stop, one solve (the budget in the key: a changed budget
    asks again)."""
    try:
        return engines.current().align_live(text_a, text_b, gold, method=method,
                                            lowercase=lowercase, model=model,
                                            aligner=aligner or None, max_bytes=max_bytes)
    except TextError as e:
        if e.code != "unread_pairs":
            raise
        raise UnreadText(str(e.params["pairs"][0][1])) from e


def live_payload(text_a: str, text_b: str, gold: str | None, method: str, lowercase: bool,
                 model: str, words: dict, *, lang: str = "en") -> tuple:
    """(payload, bytes, "") when the sliders can be live, else (None, None, why), its
    numbers as ``lang`` writes them: the engine builds the payload (embedded or served),
    within ``SINKSCOPE_LIVE_MAX_CELLS`` word pairs and ``SINKSCOPE_LIVE_MAX_BYTES``."""
    cfg = settings.CONFIG
    if method not in THRESHOLDED + (TRAINED,):
        return None, None, ""
    data, why = _payload(engines.current().name, text_a, text_b, gold, method, lowercase,
                         model, aligner_of(method), int(cfg.live_max_bytes),
                         int(cfg.live_max_cells))
    if data is None:
        n, m = (len((x.lower() if lowercase else x).split()) for x in (text_a, text_b))
        return None, None, words.get(why, why).format(
            n=n, m=m, cap=align_live.count_text(cfg.live_max_cells, lang),
            mb=align_live.decimal_text(cfg.live_max_bytes / 1e6, lang))
    return LivePayload.from_bytes(data), data, ""


def live_result(p, g: int, k: int, text_a: str, text_b: str, gold: str | None,
                lowercase: bool) -> PairResult:
    """The pair at grid stop g and θ stop k, read from the payload (what the browser shows)."""
    from engine.alignment.readers import links_text, make_pair

    pair = make_pair(text_a, text_b, gold)
    pair = pair.lower() if lowercase else pair
    links = p.links(g, k)
    n, m = pair.shape
    la, lb = {i for i, _ in links}, {j for _, j in links}
    return PairResult(tuple(pair.words_a), tuple(pair.words_b), tuple(links),
                      tuple(i for i in range(n) if i not in la),
                      tuple(j for j in range(m) if j not in lb), p.plan(g),
                      align_live.scores(links, pair), links_text(links))


def live_row(row: dict, r: PairResult) -> dict:
    """The table's row of the chosen method with the live result's numbers."""
    return {**row_of(row["method"], r), "method": row["method"]}
