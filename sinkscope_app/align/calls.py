"""The Align page's calls into the engine for one pair: word scores cached per pair, the
values a method's links are read from, the links at the sliders' settings, every method's
scores, and the live sliders' payload.

Word scores S come from one cached encoding per pair (``st.cache_data`` on the texts);
every slider move reuses them. With a served engine the engine aligns
(``POST /v1/align``) and nothing is encoded here. The method ``trained`` reads its values
from an operator's trained aligner (``engine.aligner``), loaded once per process.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from engine import settings
from engine.errors import TextError

from .. import align_live, compute, engines
from ..main.params import DEFAULTS as MAIN_DEFAULTS
from .params import MASS_OPTIONS, TAU_OPTIONS, THRESHOLDED, TRAINED, method_defaults, methods
from .words import UnreadText


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
        return m if m in compute.model_names() else MAIN_DEFAULTS["model"]
    except Exception:
        return MAIN_DEFAULTS["model"]


@st.cache_data(show_spinner=False, max_entries=64)
def pair_scores(text_a: str, text_b: str, lowercase: bool, model: str
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Word scores S (n, m) of a pair and which words the model read (embedded engine).

    The only step that encodes text; every slider move reuses it.
    """
    try:
        sc = engines.current().word_scores([(text_a, text_b)], model=model,
                                           lowercase=lowercase)
    except TextError as e:
        if e.code != "unread_pairs":
            raise
        raise UnreadText(e.params["pairs"][0][1]) from e
    return sc.S[0], sc.valid_a[0], sc.valid_b[0]


def method_of(name: str, threshold: float, tau: float, mass: float):
    """The engine's method ``name`` at these settings."""
    from engine.alignment.api import method_of as engine_method

    m = engine_method(name, "hidden")
    if name in THRESHOLDED:
        m = m.with_theta(float(threshold))
    over = {"tau": float(tau)} if name == "unbalanced" else {
        "mass": float(mass)} if name == "partial" else {}
    return engine_method(m, **over)


def _softmax_rows(S: np.ndarray, valid: np.ndarray, temperature: float) -> np.ndarray:
    """softmax_j(S_ij / T) over each row's valid words (0 elsewhere)."""
    X = np.where(valid, S / temperature, -np.inf)
    mx = np.max(X, axis=-1, keepdims=True)
    E = np.where(valid, np.exp(X - np.where(np.isfinite(mx), mx, 0.0)), 0.0)
    Z = E.sum(-1, keepdims=True)
    return E / np.where(Z > 0, Z, 1.0)


def _readable(text_a: str, text_b: str, lowercase: bool, model: str):
    S, va, vb = pair_scores(text_a, text_b, lowercase, model)
    for side, v in (("a", va), ("b", vb)):
        if not v.any():
            raise UnreadText(side)
    engines.one_thread()
    return S, va, vb


@st.cache_data(show_spinner=False, max_entries=256)
def method_values(text_a: str, text_b: str, method: str, tau: float, mass: float,
                  lowercase: bool, model: str, aligner: str = ""
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(V, shown) for a pair and a method: V (n, m) the values links are read from
    (V > θ; −1 where a word takes no part) and the matrix the left panel shows;
    ``aligner``: the trained aligner's name (method ``trained``).

    One solve per method and τ (or m); a threshold move reuses it. Transport methods show
    their plan min-max scaled (what θ is compared with); argmax methods the matrix whose
    maxima they take.
    """
    from engine.alignment import extract

    if method == TRAINED:
        V = trained_values(text_a, text_b, lowercase, aligner)
        return V, np.where(V >= 0, V, np.nan)
    S, va, vb = _readable(text_a, text_b, lowercase, model)
    m = method_of(method, 0.5, tau, mass)
    batch = extract.make_batch([S], [va], [vb])
    V = extract.values(m, batch)[0, 0].numpy().astype(np.float64)
    valid = np.outer(va, vb)
    if method == "softmax-argmax":
        shown = _softmax_rows(S, valid, m.temperature)
    elif method == "sinkhorn-argmax":
        shown = extract.plans(m, batch)[0, 0].numpy().astype(np.float64)
    else:
        shown = V
    return V, np.where(valid, shown, np.nan)


# --------------------------------------------------------------------------- trained
def aligner_of(method: str) -> str:
    """The trained aligner's name for ``method`` ``trained`` ("" for the others)."""
    return aligner_name() if method == TRAINED else ""


def aligner_name() -> str:
    """The trained aligner the page uses: the one chosen, else the first listed."""
    from .params import aligners

    names = list(aligners())
    chosen = st.session_state.get("align_aligner")
    return chosen if chosen in names else (names[0] if names else "")


@st.cache_resource(show_spinner=False, max_entries=4)
def load_aligner(name: str, model: str):
    """The allowed trained aligner ``name``, loaded once per process (on the page's loaded
    model ``model`` when it was trained on it; shared read-only)."""
    from engine.aligner.checkpoint import allowed_aligners, load_allowed, read_config

    base = read_config(allowed_aligners()[name])["settings"].get("model")
    engine = engines.current()
    engines.one_thread()
    return load_allowed(name, encoder=engine.model(model) if base == model else None)


@st.cache_data(show_spinner=False, max_entries=64)
def trained_values(text_a: str, text_b: str, lowercase: bool, name: str) -> np.ndarray:
    """V (n, m) of a pair by the trained aligner ``name``: its plan's word block (−1 where
    a word takes no part); links where V > θ."""
    from engine.aligner.extract import align

    pair = _pair(text_a, text_b, None, lowercase)
    engines.one_thread()
    return align(load_aligner(name, model_name()), [pair])[0].values


def _pair(text_a: str, text_b: str, gold: str | None, lowercase: bool):
    from engine.alignment.readers import make_pair

    pair = make_pair(text_a, text_b, gold)
    return pair.lower() if lowercase else pair


def result_of(pair, links, plan, scores) -> PairResult:
    """The pair's result for ``links`` (its unaligned words follow)."""
    from engine.alignment.readers import links_text

    n, m = pair.shape
    la, lb = {i for i, _ in links}, {j for _, j in links}
    return PairResult(tuple(pair.words_a), tuple(pair.words_b), tuple(links),
                      tuple(i for i in range(n) if i not in la),
                      tuple(j for j in range(m) if j not in lb), plan, scores,
                      links_text(links))


@st.cache_data(show_spinner=False, max_entries=256)
def align_pair(text_a: str, text_b: str, gold: str | None, method: str, threshold: float,
               tau: float, mass: float, lowercase: bool, model: str,
               aligner: str = "") -> PairResult:
    """One pair aligned by one method at these settings: links V > θ on the cached values
    (:func:`method_values`), unaligned words, and the scores when gold is given.

    Raises:
        SinkscopeError: empty or too long texts, gold links that do not fit the words.
    """
    from engine.alignment.score import METRICS, metrics_from_counts, pair_counts

    engine = engines.current()
    if engine.served:
        m = method_of(method, threshold, tau, mass)
        al = engine.align_pair((text_a, text_b, gold), m, model=model, lowercase=lowercase)
        return PairResult(tuple(al.words_a), tuple(al.words_b), tuple(al.links),
                          tuple(al.null_a), tuple(al.null_b), None if al.values is None
                          else np.where(al.values >= 0, al.values, np.nan), al.scores,
                          al.pharaoh)
    pair = _pair(text_a, text_b, gold, lowercase)
    V, shown = method_values(text_a, text_b, method, float(tau), float(mass), lowercase, model,
                             aligner)
    theta = float(threshold) if method == TRAINED else method_of(method, threshold, tau,
                                                                    mass).theta
    ii, jj = np.nonzero(V > theta)  # a trained aligner's θ is on its plan itself
    links = tuple((int(i), int(j)) for i, j in zip(ii, jj))
    scores = None
    if pair.has_gold:
        per = metrics_from_counts(pair_counts(links, pair))
        scores = {name: float(per[name]) for name in METRICS}
    return result_of(pair, links, shown, scores)


def method_table(text_a: str, text_b: str, gold: str, chosen: str, threshold: float,
                 tau: float, mass: float, lowercase: bool, model: str) -> list[dict]:
    """Every method's scores for this pair (the chosen one at the sliders' settings)."""
    from engine.aligner.config import AlignerError

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
def _payload(text_a: str, text_b: str, gold: str | None, method: str, lowercase: bool,
             model: str):
    """(payload, its bytes) of a pair and a method: V at every slider stop, one solve."""
    from engine.alignment.api import method_of as engine_method

    pair = _pair(text_a, text_b, gold, lowercase)
    if method == TRAINED:
        name = aligner_name()
        V = trained_values(text_a, text_b, lowercase, name)
        p = align_live.from_values(V[None], align_live.THETA_STOPS, pair, TRAINED, id_=(
            align_live.payload_id(model, text_a, text_b, gold, name, lowercase)))
        return p, p.encode()
    S, va_, vb_ = _readable(text_a, text_b, lowercase, model)
    key, grid = align_live.grid_of(method, TAU_OPTIONS, MASS_OPTIONS)
    p = align_live.build(S, va_, vb_, engine_method(method, "hidden"), pair, grid_key=key,
                         grid=grid, id_=align_live.payload_id(model, text_a, text_b, gold,
                                                              method, lowercase))
    return p, p.encode()


def live_payload(text_a: str, text_b: str, gold: str | None, method: str, lowercase: bool,
                 model: str, words: dict, *, lang: str = "en") -> tuple:
    """(payload, bytes, "") when the sliders can be live, else (None, None, why), its
    numbers as ``lang`` writes them."""
    cfg = settings.CONFIG
    if method not in THRESHOLDED + (TRAINED,):
        return None, None, ""
    if served():
        return None, None, words["live_off_served"]
    key, grid = align_live.grid_of(method, TAU_OPTIONS, MASS_OPTIONS)
    n, m = (len((x.lower() if lowercase else x).split()) for x in (text_a, text_b))
    note = align_live.too_large(n, m, len(grid), max_cells=cfg.live_max_cells,
                                max_bytes=cfg.live_max_bytes, words=words, lang=lang)
    if note:
        return None, None, note
    p, data = _payload(text_a, text_b, gold, method, lowercase, model)
    return p, data, ""


def live_result(p, g: int, k: int, text_a: str, text_b: str, gold: str | None,
                lowercase: bool) -> PairResult:
    """The pair at grid stop g and θ stop k, read from the payload (what the browser shows)."""
    pair = _pair(text_a, text_b, gold, lowercase)
    links = p.links(g, k)
    return result_of(pair, links, p.plan(g), align_live.scores(links, pair))


def live_row(row: dict, r: PairResult) -> dict:
    """The table's row of the chosen method with the live result's numbers."""
    return {**row_of(row["method"], r), "method": row["method"]}
