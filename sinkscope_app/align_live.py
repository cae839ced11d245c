"""Live θ, τ and m sliders of the Align page's Pair view: links redrawn in the browser.

For the chosen method the server computes, once per pair and method, the values V the
links are read from (:func:`engine.alignment.extract.values`: the plan min-max scaled per
pair, as OTAlign; the similarity min-max scaled; for ``softmax-both`` the mapped minimum
of both softmax directions) at **every** value of the method's second slider:

- ``unbalanced``: the plans at every τ of ``TAU_OPTIONS``, one batched solve (τ is a batch
  dimension of the solver);
- ``partial``: the plans at every m of ``MASS_OPTIONS``, one batched solve too (the partial
  solver takes the mass as a batch dimension as well). Those are every other m of the
  engine's grid k/51 (25 stops, 0.04 … 0.98, the default m = 0.98 among them): all 50
  would double the payload (64 × 64 words: ~0.34 MB sent, ~80 ms to solve and pack, against
  ~0.69 MB and ~180 ms) for steps of 0.02 that a slider cannot tell apart;
- ``softmax-both``, ``similarity-threshold``, ``sinkhorn-threshold``, ``exact``: the one V
  they threshold.

:meth:`LivePayload.encode` packs them into one compressed binary payload (``SKA1``: a JSON
header with the words, the gold links, the thresholds and each cell's kind by its gold
(:func:`kind_table`), then V as float32 and this pair's scores at every setting
(:func:`state_scores`, :mod:`engine.alignment.score`'s own), sent to the browser once per
pair and method. ``js/align.js`` then redraws the link matrix, the bipartite graph, the
links line and the scores line on every input of a slider: it reads the links (V > θ, the
rule of :mod:`engine.alignment.extract`) and looks the rest up (tested against Python on
fixtures, ``tests/test_align_js.py``). On release the values go to the server, which writes
the URL and redraws the table of every method's scores from the same payload.

float32 is exact enough by construction: each value is rounded to the float32 on the same
side of every threshold stop as the float64 value (:func:`side_safe_float32`), so the links
at each of the 100 stops θ = 0.00 … 0.99 are Python's, bit for bit.

Above a size budget (``SINKSCOPE_LIVE_MAX_CELLS`` word pairs, or values over
``SINKSCOPE_LIVE_MAX_BYTES``), or with a served engine, there is no payload: the page keeps
Streamlit's sliders, which recompute on release, with a note that says why.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
import zlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from engine.relation import frames

MAGIC = b"SKA1"
#: The scores the live scores line shows, in its order (of ``engine.alignment.score.METRICS``).
SHOWN = ("precision", "recall", "f1", "aer", "null_f1", "total_f1")
#: The θ slider's stops (as Streamlit's slider had them: 0.00 … 0.99 in steps of 0.01).
THETA_STOPS = tuple(round(k / 100, 2) for k in range(100))
#: Which second slider a method has, and the URL name of its value.
GRID_KEYS = {"unbalanced": "tau", "partial": "mass"}

# The words the live sliders show, in English: the page passes its own (``t``) over these.
WORDS = {
    "threshold": "threshold θ on the method's values",
    "threshold_help": "A link where the value exceeds θ. Plans are min-max scaled per pair "
                      "(OTAlign), so one θ means the same for pairs of any length.",
    "tau": "τ (KL strength of the marginals; large τ is balanced)",
    "mass": "m (share of the shorter text's words moved)",
    "mass_help": "Partial transport moves the share m of the shorter text's words (each word "
                 "carries at most its own mass), so m < 1 leaves its worst-matched words "
                 "unaligned. The stops are the engine's grid k/51, every other one.",
    "pair_scores_live": "{method}: precision {precision}, recall {recall}, F1 {f1}, "
                        "AER {aer}, null F1 {null_f1}, total F1 {total_f1}",
    "decimal": ".",  # the decimal mark of the scores line
    "links_count": "{count} links",
    "link_count": "1 link",
    "links_line": "Links (Pharaoh, 0-based): {links}",
    "about": "About {label}",
    "live_off_cells": "Live sliders are off for these texts: {n} × {m} words is more than "
                      "the {cap} word pairs whose plans are precomputed, so each slider "
                      "release recomputes on the server.",
    "live_off_bytes": "Live sliders are off for these texts: the plans at every slider "
                      "value would take more than {mb} MB, so each slider release "
                      "recomputes on the server.",
    "live_off_served": "Live sliders are off: a served engine aligns these texts, so each "
                       "slider release recomputes there.",
}


def words_of(t: dict) -> dict[str, str]:
    """The sliders' words: the page's (``t``) where it has them, else :data:`WORDS`."""
    return {k: t.get(k, v) for k, v in WORDS.items()}


def grid_of(method: str, tau_options: Sequence[float], mass_options: Sequence[float]
            ) -> tuple[str | None, tuple[float, ...]]:
    """The second slider of ``method``: ("tau", τ stops), ("mass", m stops) or (None, ())."""
    key = GRID_KEYS.get(method)
    if key is None:
        return None, ()
    return key, tuple(float(x) for x in (tau_options if key == "tau" else mass_options))


def thetas_of(method) -> tuple[float, ...]:
    """The thresholds on V, one per stop of the θ slider, exactly as extraction compares
    them: ``method.with_theta(θ).theta`` (for ``softmax-both`` the round trip through the
    probability threshold t = 10^(4θ − 4) moves some of them by an ulp)."""
    return tuple(float(method.with_theta(float(x)).theta) for x in THETA_STOPS)


def side_safe_float32(V: np.ndarray, thetas: Sequence[float]) -> np.ndarray:
    """V as float32, each value on the same side of every threshold as in float64.

    Rounding to float32 moves a value by at most half an ulp (~3e-8); where that crosses a
    threshold θ_k (so (v > θ_k) would change), the value is moved one float32 step back.

    Returns:
        float32 array of V's shape with (f > θ_k) == (V > θ_k) for every θ_k.
    """
    V = np.asarray(V, dtype=np.float64)
    th = np.unique(np.asarray(thetas, dtype=np.float64))
    want = np.searchsorted(th, V, side="left")  # how many θ lie below v (v > θ)
    f = V.astype(np.float32)
    for _ in range(4):
        got = np.searchsorted(th, f.astype(np.float64), side="left")
        if np.array_equal(got, want):
            return f
        f = np.where(got < want, np.nextafter(f, np.float32(np.inf)),
                     np.where(got > want, np.nextafter(f, np.float32(-np.inf)), f))
    raise AssertionError("float32 values could not be kept on the thresholds' sides")


@dataclass(frozen=True)
class LivePayload:
    """Every value the live sliders can show for one pair and method.

    Attributes:
        id: names the pair, the method and the grid (a short hash).
        method: the method's name (a thresholded one, :data:`engine.alignment.extract.THRESHOLDED`).
        grid_key: "tau", "mass" or None (no second slider). grid: its stops.
        thetas: (100,) the thresholds on V of the θ stops (:func:`thetas_of`).
        V: (G, n, m) float32 values (G = len(grid), or 1), NaN where a word takes no part;
            links at (g, k) are V[g] > thetas[k].
        words_a, words_b: the whitespace words. sure, possible: gold links (possible ⊇
            sure) or None without gold.
        seconds: time to solve and pack.
        scores: (G, 100, 6) the scores line's :data:`SHOWN` scores at every (g, k), each
            as ``f"{x:.3f}"`` without its point (0.857 → 857; :func:`state_scores`), or
            None without gold.
    """

    id: str
    method: str
    grid_key: str | None
    grid: tuple[float, ...]
    thetas: tuple[float, ...]
    V: np.ndarray
    words_a: tuple[str, ...]
    words_b: tuple[str, ...]
    sure: tuple[tuple[int, int], ...] | None
    possible: tuple[tuple[int, int], ...] | None
    seconds: float = 0.0
    scores: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.V.shape[1]), int(self.V.shape[2])

    def grid_index(self, value: float | None) -> int:
        """The stop of the grid nearest ``value`` (log scale for τ); 0 without a grid."""
        if not self.grid or value is None:
            return 0
        g = np.asarray(self.grid, dtype=np.float64)
        if self.grid_key == "tau":
            return int(np.argmin(np.abs(np.log(g) - np.log(max(float(value), 1e-12)))))
        return int(np.argmin(np.abs(g - float(value))))

    @staticmethod
    def theta_index(theta: float) -> int:
        """The θ stop nearest ``theta``."""
        return int(np.argmin(np.abs(np.asarray(THETA_STOPS) - float(theta))))

    def links(self, g: int, k: int) -> tuple[tuple[int, int], ...]:
        """Links (i, j) with V[g] > θ_k, sorted (extraction's rule)."""
        ii, jj = np.nonzero(self.V[g].astype(np.float64) > self.thetas[k])
        return tuple((int(i), int(j)) for i, j in zip(ii, jj))

    def plan(self, g: int) -> np.ndarray:
        """(n, m) what the left panel shows: V[g], NaN where a word takes no part."""
        return self.V[g].astype(np.float64)

    def header(self) -> dict:
        from viz import theme as th

        n, m = self.shape
        return {"id": self.id, "method": self.method, "n": n, "m": m,
                "labels_a": th.escape_all(self.words_a), "labels_b": th.escape_all(self.words_b),
                "grid_key": self.grid_key, "grid": list(self.grid),
                "thetas": list(self.thetas), "words_a": list(self.words_a),
                "words_b": list(self.words_b),
                "sure": None if self.sure is None else [list(x) for x in self.sure],
                "possible": None if self.possible is None else [list(x) for x in self.possible],
                "kind_of": kind_table(self.sure is not None),
                "scores": None if self.scores is None else list(SHOWN)}

    def encode(self) -> bytes:
        """``SKA1``, the header's length (uint32, little-endian), the header (UTF-8 JSON),
        then V (G·n·m float32) and the scores (G·100·6 uint16, when there is gold), both
        little-endian, compressed with zlib (the browser's ``DecompressionStream("deflate")``)."""
        raw = np.ascontiguousarray(self.V, dtype="<f4").tobytes()
        if self.scores is not None:
            raw += np.ascontiguousarray(self.scores, dtype="<u2").tobytes()
        return frames.framed(MAGIC, self.header(), zlib.compress(raw, 6))


def decode(data: bytes) -> tuple[dict, np.ndarray, np.ndarray | None]:
    """(header, V (G, n, m) float32, scores (G, 100, 6) or None) from
    :meth:`LivePayload.encode`'s bytes."""
    h, body = frames.unframed(data, MAGIC)
    raw = zlib.decompress(body)
    shape = (max(len(h["grid"]), 1), h["n"], h["m"])
    V = np.frombuffer(raw, dtype="<f4", count=int(np.prod(shape))).reshape(shape)
    if h["scores"] is None:
        return h, V, None
    scores = np.frombuffer(raw, dtype="<u2", offset=V.nbytes).reshape(shape[0], -1, len(SHOWN))
    return h, V, scores


def kind_table(gold: bool) -> dict[str, list[str | None]]:
    """The kind ``viz.align.classify`` gives one cell, linked and not, by the cell's gold:
    [no gold link, sure, possible only] (without gold only the first applies). The browser
    reads every cell's kind from it (js/align.js, cellsAt)."""
    from viz.align import classify

    cells = [(0, 0), (0, 1), (0, 2)]
    kw = {"sure": [(0, 1)], "possible": [(0, 2)]} if gold else {}
    out = {}
    for name, links in (("linked", cells), ("unlinked", [])):
        kinds: list[str | None] = [None] * len(cells)
        for kind, found in classify(links, 1, len(cells), **kw).items():
            for _, j in found:
                kinds[j] = kind
        out[name] = kinds
    return out


def setting_counts(V: np.ndarray, thetas: Sequence[float], sure: np.ndarray,
                   possible: np.ndarray) -> np.ndarray:
    """(G, K, 7) ``engine.alignment.score.mask_counts`` of the links V[g] > θ_k at every g
    and k, in one pass over V: cell c is a link at the stops k < cut[c], the number of
    thresholds below V[c] (none for NaN), and a word is unaligned at the stops k at or
    above the largest cut of its row or column.

    Args:
        V: (G, n, m) values, NaN where a word takes no part. thetas: (K,) increasing.
        sure, possible: (n, m) bool gold masks (possible ⊇ sure; null gold "sure").
    """
    th = np.asarray(thetas, dtype=np.float64)
    if np.any(np.diff(th) < 0):
        raise ValueError("the thresholds of the θ stops must increase")
    G, n, m = V.shape
    K = th.size
    cut = np.where(np.isnan(V), 0, np.searchsorted(th, V.astype(np.float64), side="left"))

    def above(c: np.ndarray) -> np.ndarray:  # (G, L) cuts → (G, K): how many exceed k
        hist = np.bincount((c + (K + 1) * np.arange(G)[:, None]).ravel(),
                           minlength=G * (K + 1)).reshape(G, K + 1)
        return hist[:, ::-1].cumsum(1)[:, ::-1][:, 1:]

    flat = cut.reshape(G, n * m)
    rows, cols = cut.max(2), cut.max(1)
    ga, gb = ~sure.any(1), ~sure.any(0)
    const = np.ones((G, K), dtype=np.int64)
    return np.stack([above(flat), above(flat[:, sure.ravel()]),
                     above(flat[:, possible.ravel()]), const * int(sure.sum()),
                     (n - above(rows)) + (m - above(cols)), const * int(ga.sum() + gb.sum()),
                     (int(ga.sum()) - above(rows[:, ga])) + (int(gb.sum()) - above(cols[:, gb]))],
                    -1)


def state_scores(V: np.ndarray, thetas: Sequence[float], pair) -> np.ndarray | None:
    """The scores line's numbers at every setting: (G, K, 6) the :data:`SHOWN` scores of
    ``engine.alignment.score`` for the links V[g] > θ_k, each ``f"{x:.3f}"`` without its
    point (0.857 → 857, as uint16); None without gold.

    Args:
        V: (G, n, m) values (NaN where a word takes no part). thetas: (K,) thresholds.
        pair: the :class:`engine.alignment.readers.Pair` (its gold).
    """
    from engine.alignment.score import gold_masks, metrics_from_counts

    if not pair.has_gold:
        return None
    S, P = gold_masks(pair.sure, pair.possible, *V.shape[1:])
    per = metrics_from_counts(setting_counts(V, thetas, S, P))
    return thousandths(np.stack([per[k] for k in SHOWN], -1))


def thousandths(x: np.ndarray) -> np.ndarray:
    """Scores in [0, 1] as ``f"{x:.3f}"`` writes them, without the point (0.857 → 857) as
    uint16: rounded by ``fixed3`` itself where x·1000 lies within 1e-6 of a half, where
    the product's rounding could decide."""
    scaled = np.asarray(x, dtype=np.float64) * 1000
    q = np.rint(scaled)
    near = np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6
    q[near] = [int(fixed3(v).replace(".", "")) for v in np.asarray(x, dtype=np.float64)[near]]
    return q.astype(np.uint16)


def payload_id(*parts: object) -> str:
    return hashlib.sha1(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def build(S: np.ndarray, valid_a: np.ndarray, valid_b: np.ndarray, method, pair, *,
          grid_key: str | None, grid: Sequence[float], id_: str) -> LivePayload:
    """The payload of one pair: V at every grid value in one batched call.

    Args:
        S: (n, m) word scores; valid_a, valid_b: (n,), (m,) words the model read.
        method: an :class:`engine.alignment.extract.Method` (its θ is not used).
        pair: the :class:`engine.alignment.readers.Pair` (words, gold).
        grid_key, grid: the second slider (:func:`grid_of`).

    Returns:
        A :class:`LivePayload`; links at (g, k): V[g] > θ_k, as extraction reads them.
    """
    from engine.alignment import extract

    t0 = time.perf_counter()
    batch = extract.make_batch([S], [valid_a], [valid_b])
    if grid_key:
        V = extract.values(method, batch, grid=list(grid))[:, 0]  # (G, n, m), one solve
    else:
        V = extract.values(method, batch)[:, 0]
    return from_values(V.numpy(), thetas_of(method), pair, method.name, grid_key=grid_key,
                       grid=grid, id_=id_, t0=t0)


def from_values(V: np.ndarray, thetas: Sequence[float], pair, method: str, *,
                grid_key: str | None = None, grid: Sequence[float] = (), id_: str,
                t0: float | None = None) -> LivePayload:
    """The payload of values already computed: V (G, n, m), −1 (or NaN) where a word takes
    no part, links V[g] > θ_k (a trained aligner's plan: θ_k the θ stops themselves)."""
    t0 = time.perf_counter() if t0 is None else t0
    V = np.asarray(V, dtype=np.float64)
    thetas = tuple(float(x) for x in thetas)
    V32 = side_safe_float32(np.where(V >= 0, V, np.nan), thetas)
    gold = pair.has_gold
    return LivePayload(id_, method, grid_key, tuple(grid) if grid_key else (), thetas,
                       V32, tuple(pair.words_a), tuple(pair.words_b),
                       tuple(sorted(pair.sure)) if gold else None,
                       tuple(sorted(set(pair.possible) | set(pair.sure))) if gold else None,
                       time.perf_counter() - t0, state_scores(V32, thetas, pair))


def scores(links, pair) -> dict | None:
    """This pair's scores of ``links`` (engine.alignment.score), None without gold."""
    from engine.alignment.score import METRICS, metrics_from_counts, pair_counts

    if not pair.has_gold:
        return None
    per = metrics_from_counts(pair_counts(links, pair))
    return {name: float(per[name]) for name in METRICS}


def count_text(n: int, lang: str = "en") -> str:
    """A whole number as ``lang`` writes it: "12,345" in English; in Spanish grouped by a
    no-break space from five digits on ("4096", "12 345")."""
    from engine.relation.summary import numbers

    num = numbers(lang)
    if num.group == ",":
        return f"{int(n):,}"
    return f"{int(n):,}".replace(",", num.group) if abs(int(n)) >= 10_000 else str(int(n))


def decimal_text(x: float, lang: str = "en", digits: int = 1) -> str:
    """``x`` with ``digits`` decimals and ``lang``'s decimal mark ("2.5", "2,5")."""
    from engine.relation.summary import numbers

    return f"{float(x):.{digits}f}".replace(".", numbers(lang).decimal)


def too_large(n: int, m: int, G: int, *, max_cells: int, max_bytes: int,
              words: dict[str, str], lang: str = "en") -> str:
    """Why there is no payload for n × m words and G grid values ("" when there is one),
    its numbers written as ``lang`` writes them."""
    if n * m > max_cells:
        return words["live_off_cells"].format(n=n, m=m, cap=count_text(max_cells, lang))
    if 4 * max(G, 1) * n * m > max_bytes:
        return words["live_off_bytes"].format(mb=decimal_text(max_bytes / 1e6, lang))
    return ""


# --------------------------------------------------------------------------- components
_JS_FILES = ("state", "format", "slider", "align")


def _component():
    """The component of ``js/align.js``: its own bundle (one slider is slider.js's)."""
    import streamlit as st

    from .live import bundle

    return st.components.v2.component("sinkscope_align", js=bundle(_JS_FILES),
                                      isolate_styles=False)


def payload_element(payload: LivePayload, data: bytes, *, key: str = "align_payload") -> None:
    """Send the payload's bytes (an invisible element). The same bytes on every rerun for
    the same pair and method, so a slider release sends only the small controls."""
    _component()(key=key, data=data)


def controls(*, key: str, payload: LivePayload, theta: float, grid_value: float | None,
             words: dict[str, str], style: dict, note: str, lines: dict[str, str],
             on_change) -> dict | None:
    """The θ slider (and τ or m), the links line and the scores line, in the browser.

    Args:
        key: the component's fixed key.
        payload: the pair's :class:`LivePayload` (sent by :func:`payload_element`).
        theta, grid_value: the values the server holds (the URL's).
        words: :func:`words_of` the page's words, plus "method".
        style: how the figures draw links (:func:`style_of`).
        note: a sentence under the sliders ("" for none).
        lines: {"scores", "links"}: the two lines as the server wrote them (shown until
            the payload is decoded; :func:`scores_line`, :func:`links_line`).
        on_change: called (before the rerun) when a slider is released on a new value.

    Returns:
        The component's state: {"choice": {"theta": θ, "grid": value}} once released.
    """
    from .inputs import written
    from .live import sent

    g = payload.grid_index(grid_value)
    mark = words.get("decimal", ".")  # the sliders' values with the page's decimal mark
    data = {"role": "align", "payload": payload.id, "theta_stops": list(THETA_STOPS),
            "theta_labels": [f"{x:.2f}".replace(".", mark) for x in THETA_STOPS],
            "theta": payload.theta_index(theta), "grid_key": payload.grid_key,
            "grid_stops": list(payload.grid),
            "grid_labels": [f"{x:g}".replace(".", mark) for x in payload.grid], "grid": g,
            "words": words, "style": style, "note": note, "lines": lines,
            "url": {"theta": "threshold", "tau": "tau", "mass": "mass"},
            # each stop's value as the address writes it (the labels carry the decimal mark)
            "url_values": {"theta": [written(x) for x in THETA_STOPS],
                           "grid": [written(float(x)) for x in payload.grid]}}
    return _component()(key=key, data=sent(data), on_choice_change=on_change)


def parse_choice(state, grid: Sequence[float]) -> tuple[float, float | None] | None:
    """(θ, grid value) from the component's state, snapped to the stops; None when it holds
    nothing usable (the browser's data is untrusted)."""
    try:
        v = state.get("choice") if hasattr(state, "get") else getattr(state, "choice", None)
        theta = float(v["theta"])
        value = v.get("grid")
        value = None if value is None else float(value)
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    if not np.isfinite(theta) or (value is not None and not np.isfinite(value)):
        return None
    th = THETA_STOPS[LivePayload.theta_index(theta)]
    if not grid or value is None:
        return th, None
    g = np.asarray(grid, dtype=np.float64)
    return th, float(g[int(np.argmin(np.abs(g - value)))])


def style_of(n: int, m: int, theme: str, words: dict | None = None, lang: str = "en") -> dict:
    """How ``viz.align`` draws links for n × m words on ``theme``: what the browser needs to
    rebuild the figures' link and node traces as viz does (sizes, symbols, colours, the
    graph's node heights, every word the traces carry, from ``words`` over
    ``viz.align.WORDS``, so the browser writes no word of its own, and ``lang``'s number
    format for the plan's values, ``engine.relation.summary.numbers``)."""
    from engine.relation.summary import numbers
    import viz.align as va
    from viz import theme as th

    w = va.words_of(words)
    span = max(n, m)
    ya = np.linspace(0, span - 1, n) if n > 1 else np.array([(span - 1) / 2])
    yb = np.linspace(0, span - 1, m) if m > 1 else np.array([(span - 1) / 2])
    return {"size": max(6, min(16, int(360 / max(n, m)))), "kinds": list(va.KINDS),
            "symbols": va.SYMBOLS, "colors": va.COLORS, "names": w["names"], "dash": va.DASH,
            "null_symbols": va.NULL_SYMBOLS, "null_names": w["null_names"],
            "node_names": w["nodes"], "unaligned": w["unaligned"],
            "text_colors": {s: th.text_color(s, theme) for s in ("a", "b")},
            "ya": [float(y) for y in ya], "yb": [float(y) for y in yb],
            "numbers": dataclasses.asdict(numbers(lang))}


def fixed3(x) -> str:
    """A score as the page writes it (``f"{x:.3f}"``; the browser gets its digits,
    :func:`state_scores`)."""
    return f"{float(x):.3f}"


def scores_line(words: dict[str, str], method: str, scores: dict | None) -> str:
    """The scores line for ``scores`` ("" without gold); js/align.js, scoresText."""
    if not scores:
        return ""
    mark = words.get("decimal", ".")
    return words["pair_scores_live"].format(method=method, **{
        k: fixed3(scores[k]).replace(".", mark) for k in SHOWN})


def links_line(words: dict[str, str], links) -> str:
    """The links line: their count and Pharaoh text; js/align.js, linksText."""
    text = " ".join(f"{i}-{j}" for i, j in sorted(links))
    count = words.get("link_count", "") if len(links) == 1 else ""  # one: no plural
    return ((count or words["links_count"].format(count=len(links))) + " · "
            + words["links_line"].format(links=text or "∅"))
