"""The Align page's live θ/τ/m payload, built by the engine: every value the live sliders
can show for one pair and method, packed for the browser (``SKA1``).

For the chosen method the engine computes, once per pair and method, the values V the
links are read from (:func:`engine.alignment.extract.values`: the plan min-max scaled per
pair, as OTAlign; the similarity min-max scaled; for ``softmax-both`` the mapped minimum
of both softmax directions) at **every** value of the method's second slider:

- ``unbalanced``: the plans at every τ of :data:`TAU_STOPS`, one batched solve (τ is a
  batch dimension of the solver);
- ``partial``: the plans at every m of :data:`MASS_STOPS`, one batched solve too (every
  other m of the engine's grid k/51: 25 stops, 0.04 … 0.98; all 50 would double the
  payload for steps a slider cannot tell apart);
- ``softmax-both``, ``similarity-threshold``, ``sinkhorn-threshold``, ``exact``: the one V
  they threshold; ``trained``: a trained aligner's plan (θ on the plan itself).

:meth:`LivePayload.encode` packs them into one compressed binary payload (``SKA1``: a JSON
header with the words, the gold links, the thresholds and each cell's kind by its gold
(:func:`kind_table`), then V as float32 and this pair's scores at every setting
(:func:`state_scores`, :mod:`engine.alignment.score`'s own). float32 is exact enough by
construction: each value is rounded to the float32 on the same side of every threshold
stop as the float64 value (:func:`side_safe_float32`), so the links at each of the 100
stops θ = 0.00 … 0.99 are Python's, bit for bit. The browser code (sinkscope_app/js/
align.js) reads it; :func:`decode` is its Python twin.

:func:`pair_payload` builds one pair's payload from texts (the encoder's word scores, or
a trained aligner); the served engine answers it at ``POST /v1/align/live``, the same
bytes as embedded. Torch is imported only to solve (:func:`build`, :func:`pair_payload`).
"""

from __future__ import annotations

import hashlib
import html
import time
import zlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..relation import frames

MAGIC = b"SKA1"
#: The scores the live scores line shows, in its order (of ``engine.alignment.score.METRICS``).
SHOWN = ("precision", "recall", "f1", "aer", "null_f1", "total_f1")
#: The θ slider's stops (as Streamlit's slider had them: 0.00 … 0.99 in steps of 0.01).
THETA_STOPS = tuple(round(k / 100, 2) for k in range(100))
#: Which second slider a method has, and the URL name of its value.
GRID_KEYS = {"unbalanced": "tau", "partial": "mass"}

#: The τ and m stops of the live sliders (the Align page's own): 41 τ log-spaced from
#: 0.01 to 100 (3 significant digits, the default 4.94 among them), every other m of k/51.
TAU_STOPS = tuple(sorted({float(f"{x:.3g}") for x in np.logspace(-2, 2, 41)} | {4.94}))
MASS_STOPS = tuple(round(k / 51, 2) for k in range(2, 51, 2))
#: Methods with a live payload: those read off V by a threshold, and a trained aligner.
LIVE_METHODS = ("softmax-both", "similarity-threshold", "sinkhorn-threshold", "exact",
                "partial", "unbalanced", "trained")
#: Why a pair has no payload: more word pairs than SINKSCOPE_LIVE_MAX_CELLS, or values
#: over the byte budget (SINKSCOPE_LIVE_MAX_BYTES).
TOO_MANY_CELLS, TOO_MANY_BYTES = "live_off_cells", "live_off_bytes"


def escape(token: object) -> str:
    """A word as the page's figures show it (viz.theme.escape: ``<``, ``>`` and ``&`` as
    entities, newlines and tabs as visible escapes)."""
    text = html.escape(str(token), quote=False)
    return text.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


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
        n, m = self.shape
        return {"id": self.id, "method": self.method, "n": n, "m": m,
                "labels_a": [escape(w) for w in self.words_a],
                "labels_b": [escape(w) for w in self.words_b],
                "grid_key": self.grid_key, "grid": list(self.grid),
                "thetas": list(self.thetas), "words_a": list(self.words_a),
                "words_b": list(self.words_b),
                "sure": None if self.sure is None else [list(x) for x in self.sure],
                "possible": None if self.possible is None else [list(x) for x in self.possible],
                "kind_of": kind_table(self.sure is not None),
                "scores": None if self.scores is None else list(SHOWN)}

    @classmethod
    def from_bytes(cls, data: bytes) -> "LivePayload":
        """The payload :meth:`encode` packed (what a client gets from a served engine):
        the same values, thresholds, words, gold and scores."""
        h, V, scores = decode(data)
        gold = h["sure"] is not None
        return cls(h["id"], h["method"], h["grid_key"], tuple(float(x) for x in h["grid"]),
                   tuple(float(x) for x in h["thetas"]), V, tuple(h["words_a"]),
                   tuple(h["words_b"]),
                   tuple((int(i), int(j)) for i, j in h["sure"]) if gold else None,
                   tuple((int(i), int(j)) for i, j in h["possible"]) if gold else None,
                   0.0, scores)

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
    """The kind of one cell, linked and not, by the cell's gold: [no gold link, sure,
    possible only] (without gold only the first applies), as ``viz.align.classify`` names
    them (tests/test_align_js.py checks it). The browser reads every cell's kind from it
    (js/align.js, cellsAt)."""
    if not gold:
        return {"linked": ["link", "link", "link"], "unlinked": [None, None, None]}
    return {"linked": ["false", "hit", "hit_possible"],
            "unlinked": [None, "miss", "miss_possible"]}


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
    from .score import gold_masks, metrics_from_counts

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
    from . import extract

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


def fixed3(x) -> str:
    """A score as the page writes it (``f"{x:.3f}"``; the browser gets its digits,
    :func:`state_scores`)."""
    return f"{float(x):.3f}"



def too_large(n: int, m: int, G: int, *, max_cells: int, max_bytes: int) -> str:
    """Why n × m words with G grid values get no payload: :data:`TOO_MANY_CELLS`,
    :data:`TOO_MANY_BYTES`, or "" when they get one."""
    if n * m > max_cells:
        return TOO_MANY_CELLS
    if 4 * max(G, 1) * n * m > max_bytes:
        return TOO_MANY_BYTES
    return ""


def pair_payload(text_a: str, text_b: str, gold: str | None, method: str, *,
                 lowercase: bool = False, model: str, encoder=None, aligner=None,
                 aligner_name: str = "") -> LivePayload:
    """The live payload of one pair and method, as the Align page's Pair view shows it.

    Args:
        text_a, text_b, gold: the pair (gold as 0-based Pharaoh text, or None).
        method: one of :data:`LIVE_METHODS`.
        lowercase: lower-case the texts first. model: the model's name (in the id).
        encoder: the model (word scores on hidden states, the default source).
        aligner: the trained aligner (method "trained"); aligner_name: its name (in the id).

    Raises:
        SinkscopeError: a method without a payload, texts the model reads nothing of, gold
            links that do not fit the words.
    """
    from ..errors import SettingsError
    from .api import method_of, score_corpus
    from .readers import make_pair

    if method not in LIVE_METHODS:
        raise SettingsError(f"method must be one of {', '.join(LIVE_METHODS)} for live "
                            f"sliders; got {method!r:.60}.", code="live_method",
                            params={"method": str(method)[:60]})
    pair = make_pair(text_a, text_b, gold)
    pair = pair.lower() if lowercase else pair
    if method == "trained":
        from ..aligner.extract import align

        bare = make_pair(text_a, text_b, None)
        V = align(aligner, [bare.lower() if lowercase else bare])[0].values
        return from_values(V[None], THETA_STOPS, pair, "trained", id_=payload_id(
            model, text_a, text_b, gold, aligner_name, lowercase))
    sc = score_corpus([(text_a, text_b)], encoder=encoder, lowercase=lowercase)
    key, grid = grid_of(method, TAU_STOPS, MASS_STOPS)
    return build(sc.S[0], sc.valid_a[0], sc.valid_b[0], method_of(method, "hidden"), pair,
                 grid_key=key, grid=grid, id_=payload_id(model, text_a, text_b, gold, method,
                                                         lowercase))
