"""Scores of predicted word alignments against sure/possible gold.

With predicted links A, sure gold S and possible gold P (S ⊆ P):

- precision |A∩P| / |A|, recall |A∩S| / |S|, F1 their harmonic mean;
- AER = 1 − (|A∩S| + |A∩P|) / (|A| + |S|) (Och & Ney, 2003);
- null alignment (OTAlign, Arase et al., ACL 2023): the words of A and of B that have no
  link. Gold null words are those without a sure link (``null_gold="sure"``, the
  convention of the gold sets' null ratios) or without any link (``"possible"``); null
  precision and recall compare the predicted null words with the gold null words;
- total (OTAlign): links and null words counted together, precision
  (|A∩P| + |N̂∩N|) / (|A| + |N̂|), recall (|A∩S| + |N̂∩N|) / (|S| + |N|).

A ratio whose denominator is 0 counts 1 when both sets are empty and 0 otherwise.

Corpus scores come two ways: **macro** (OTAlign: precision and recall averaged over pairs,
then F1 of the averages; AER averaged over pairs) and **micro** (the AER literature: counts
summed over the corpus first). Bootstrap 95 % intervals resample pairs; two methods on the
same pairs are compared by a paired bootstrap (:func:`paired_bootstrap`): both are scored on
the same resampled pairs, so what the pairs share cancels out of their difference.

Every 95 % interval is read off the B resampled values by one rule (:func:`interval95`):
the ⌈B/40⌉-th smallest and the ⌈B/40⌉-th largest. A paired comparison's p comes from the
same resampled differences δ*₁…δ*_B (:func:`p_value`): p = min(1, 2·min(k₋, k₊)/B) with
k₋ = #{δ* ≤ 0}, k₊ = #{δ* ≥ 0}; so p < 0.05 exactly when the interval leaves out 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from ..errors import SettingsError

#: Columns of a counts array: |A|, |A∩S|, |A∩P|, |S|, |N̂|, |N|, |N̂∩N|.
COUNTS = ("pred", "pred_sure", "pred_possible", "sure", "null_pred", "null_gold", "null_hit")
METRICS = ("precision", "recall", "f1", "aer", "null_precision", "null_recall", "null_f1",
           "total_precision", "total_recall", "total_f1")
NULL_GOLD = ("sure", "possible")


def _ratio(num, den, other):
    """num / den; where den == 0: 1 if ``other`` (the compared set's size) is 0 too, else 0."""
    num, den, other = (np.asarray(x, dtype=np.float64) for x in (num, den, other))
    safe = np.where(den > 0, den, 1.0)
    return np.where(den > 0, num / safe, np.where(other == 0, 1.0, 0.0))


def _f1(p, r):
    p, r = np.asarray(p, np.float64), np.asarray(r, np.float64)
    s = p + r
    return np.where(s > 0, 2 * p * r / np.where(s > 0, s, 1.0), 0.0)


def metrics_from_counts(c: np.ndarray) -> dict[str, np.ndarray]:
    """Per-row metrics from counts (..., 7) in the order of :data:`COUNTS`."""
    c = np.asarray(c, dtype=np.float64)
    A, AS, AP, S, Np, Ng, Nh = (c[..., k] for k in range(7))
    p, r = _ratio(AP, A, S), _ratio(AS, S, A)
    den = A + S
    aer = np.where(den > 0, 1 - (AS + AP) / np.where(den > 0, den, 1.0), 0.0)
    npr, nre = _ratio(Nh, Np, Ng), _ratio(Nh, Ng, Np)
    tp, tr = _ratio(AP + Nh, A + Np, S + Ng), _ratio(AS + Nh, S + Ng, A + Np)
    return {"precision": p, "recall": r, "f1": _f1(p, r), "aer": aer,
            "null_precision": npr, "null_recall": nre, "null_f1": _f1(npr, nre),
            "total_precision": tp, "total_recall": tr, "total_f1": _f1(tp, tr)}


def macro_from_metrics(m: dict[str, np.ndarray], axis: int = -1) -> dict[str, np.ndarray]:
    """OTAlign's averaging: precision, recall (and AER) averaged over pairs, F1 from the
    averaged precision and recall."""
    out = {k: np.mean(v, axis=axis) for k, v in m.items()}
    for pre in ("", "null_", "total_"):
        out[pre + "f1"] = _f1(out[pre + "precision"], out[pre + "recall"])
    return out


def mask_counts(pred: np.ndarray, sure: np.ndarray, possible: np.ndarray,
                null_gold: str = "sure") -> np.ndarray:
    """Counts of predicted link masks against gold masks, for many predictions at once.

    Args:
        pred: (..., n, m) bool predicted links (e.g. one mask per threshold).
        sure, possible: (n, m) bool gold masks (possible ⊇ sure).
        null_gold: which gold links make a word aligned ("sure" or "possible").

    Returns:
        (..., 7) counts in the order of :data:`COUNTS`.
    """
    pred = np.asarray(pred, dtype=bool)
    gold = sure if null_gold == "sure" else possible
    ga, gb = ~gold.any(-1), ~gold.any(-2)
    pa, pb = ~pred.any(-1), ~pred.any(-2)
    out = np.stack([
        pred.sum((-1, -2)), (pred & sure).sum((-1, -2)), (pred & possible).sum((-1, -2)),
        np.broadcast_to(sure.sum(), pred.shape[:-2]),
        pa.sum(-1) + pb.sum(-1),
        np.broadcast_to(ga.sum() + gb.sum(), pred.shape[:-2]),
        (pa & ga).sum(-1) + (pb & gb).sum(-1)], -1)
    return out.astype(np.int64)


def gold_masks(sure: Iterable, possible: Iterable, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, m) bool masks of the sure and possible links (possible includes sure)."""
    S = np.zeros((n, m), dtype=bool)
    P = np.zeros((n, m), dtype=bool)
    for i, j in sure:
        S[i, j] = True
    for i, j in possible:
        P[i, j] = True
    return S, P | S


def links_mask(links: Iterable, n: int, m: int) -> np.ndarray:
    M = np.zeros((n, m), dtype=bool)
    for i, j in links:
        if not (0 <= i < n and 0 <= j < m):
            raise SettingsError(f"link {i}-{j} is outside a {n} × {m} pair; links are "
                                "0-based word indices.")
        M[i, j] = True
    return M


def pair_counts(links, pair, null_gold: str = "sure") -> np.ndarray:
    """(7,) counts of one pair's predicted links against its gold."""
    n, m = pair.shape
    S, P = gold_masks(pair.sure, pair.possible, n, m)
    return mask_counts(links_mask(links, n, m), S, P, null_gold)


@dataclass(frozen=True)
class CorpusScore:
    """Scores of one method on a corpus.

    Attributes:
        n_pairs: pairs scored.
        macro: metric → value, OTAlign's per-pair averaging (see the module docstring).
        micro: metric → value from counts summed over the corpus.
        macro_ci, micro_ci: metric → (low, high) bootstrap 95 % interval (empty when
            ``bootstrap=0``).
        per_pair: metric → (N,) per-pair values.
        counts: (N, 7) per-pair counts (:data:`COUNTS`).
    """

    n_pairs: int
    macro: dict
    micro: dict
    macro_ci: dict = field(default_factory=dict)
    micro_ci: dict = field(default_factory=dict)
    per_pair: dict = field(default_factory=dict, repr=False)
    counts: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        return {"n_pairs": self.n_pairs, "macro": self.macro, "micro": self.micro,
                "macro_ci": {k: list(v) for k, v in self.macro_ci.items()},
                "micro_ci": {k: list(v) for k, v in self.micro_ci.items()}}


def _check_bootstrap(bootstrap) -> None:
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, (int, np.integer)) \
            or bootstrap < 0:
        raise SettingsError(f"bootstrap must be a whole number ≥ 0, got {bootstrap!r}.")


#: Resample draws per block (B × N indices at a time), so a large corpus never holds all.
DRAWS_PER_BLOCK = 2**22


def resample_sums(X: np.ndarray, bootstrap: int, seed: int = 0) -> np.ndarray:
    """Column sums of X (N, K) over ``bootstrap`` resamples of its N rows with replacement:
    (B, K), Σ_i w_bi X_i with w_bi how often resample b drew row i.

    Resample b draws N row indices uniformly (``default_rng(seed).integers(0, N, (B, N))``),
    so every corpus metric of a seed and N sees the same resamples: what two methods share
    cancels out of their difference. One matrix product per block of resamples, over the
    distinct columns only: equal columns get the very same sums (bit for bit, whatever the
    CPU's matrix kernels do with a column's place), so a method against itself differs by
    exactly 0.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 2 and X.shape[1] > 1:
        U, inverse = np.unique(X, axis=1, return_inverse=True)
        if U.shape[1] < X.shape[1]:
            return resample_sums(U, bootstrap, seed)[:, np.ravel(inverse)]
    N = len(X)
    rng = np.random.default_rng(seed)
    rows = max(1, DRAWS_PER_BLOCK // max(N, 1))
    out = []
    for start in range(0, int(bootstrap), rows):
        b = min(rows, int(bootstrap) - start)
        idx = rng.integers(0, N, size=(b, N))
        W = np.bincount((np.arange(b)[:, None] * N + idx).ravel(), minlength=b * N)
        out.append(W.reshape(b, N).astype(np.float64) @ X)
    return np.concatenate(out) if out else np.zeros((0, X.shape[1]))


def macro_of_means(means: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`macro_from_metrics` from per-pair metrics already averaged, (..., 10) in the
    order of :data:`METRICS`: F1s from the averaged precision and recall."""
    out = {k: means[..., i] for i, k in enumerate(METRICS)}
    for pre in ("", "null_", "total_"):
        out[pre + "f1"] = _f1(out[pre + "precision"], out[pre + "recall"])
    return out


def per_pair_matrix(per: dict[str, np.ndarray]) -> np.ndarray:
    """Per-pair metrics as one (N, 10) matrix, columns in the order of :data:`METRICS`."""
    return np.stack([np.asarray(per[k], dtype=np.float64) for k in METRICS], -1)


def corpus_score(counts: np.ndarray, *, bootstrap: int = 1000, seed: int = 0) -> CorpusScore:
    """Corpus scores from per-pair counts (N, 7), with bootstrap 95 % intervals.

    Raises:
        SettingsError: no pairs, or a negative number of bootstrap samples.
    """
    counts = np.asarray(counts, dtype=np.int64).reshape(-1, 7)
    N = len(counts)
    if N == 0:
        raise SettingsError("There are no pairs to score; give at least one pair with gold.")
    _check_bootstrap(bootstrap)
    per = metrics_from_counts(counts)
    macro = {k: float(v) for k, v in macro_from_metrics(per).items()}
    micro = {k: float(v) for k, v in metrics_from_counts(counts.sum(0)).items()}
    macro_ci, micro_ci = {}, {}
    if bootstrap:
        sums = resample_sums(np.concatenate([per_pair_matrix(per), counts], -1), bootstrap,
                             seed)
        bm = macro_of_means(sums[:, :len(METRICS)] / N)
        bu = metrics_from_counts(sums[:, len(METRICS):])
        for k in METRICS:
            macro_ci[k] = interval95(bm[k])
            micro_ci[k] = interval95(bu[k])
    return CorpusScore(N, macro, micro, macro_ci, micro_ci, per, counts)


def score(links: Sequence[Iterable], pairs: Sequence, *, null_gold: str = "sure",
          bootstrap: int = 1000, seed: int = 0) -> CorpusScore:
    """Score predicted links of every pair against the pairs' gold.

    Args:
        links: one collection of (i, j) 0-based word links per pair (or an
            :class:`~engine.alignment.api.Alignment` with ``.links``).
        pairs: the :class:`~engine.alignment.readers.Pair` s with gold, in the same order.
        null_gold: "sure" (a word is gold-aligned when it has a sure link) or "possible".
        bootstrap: resamples for the 95 % intervals (0: none). seed: their random seed.

    Returns:
        A :class:`CorpusScore`. AER = 1 − (|A∩S| + |A∩P|)/(|A| + |S|).

    Raises:
        SettingsError: different numbers of predictions and pairs, pairs without gold, a
            link outside its pair.
    """
    if null_gold not in NULL_GOLD:
        raise SettingsError(f"null_gold must be 'sure' or 'possible', got {null_gold!r}.")
    links = [getattr(x, "links", x) for x in links]
    if len(links) != len(pairs):
        raise SettingsError(f"{len(links)} predictions for {len(pairs)} pairs; give one "
                            "set of links per pair.")
    if not all(p.has_gold for p in pairs):
        k = next(i for i, p in enumerate(pairs) if not p.has_gold)
        raise SettingsError(f"pair {k + 1} has no gold alignment; scoring needs gold for "
                            "every pair.")
    counts = np.stack([pair_counts(l, p, null_gold) for l, p in zip(links, pairs)]) \
        if pairs else np.zeros((0, 7), np.int64)
    return corpus_score(counts, bootstrap=bootstrap, seed=seed)


@dataclass(frozen=True)
class Paired:
    """A paired comparison of two methods scored on the same pairs.

    Attributes:
        method, vs: the two methods' names; ``delta`` is method − vs.
        metric: the corpus metric compared (macro, e.g. "total_f1").
        delta: the metric's difference on the corpus.
        ci95: (low, high) paired-bootstrap 95 % interval of the difference
            (:func:`interval95` of the resampled differences δ*); (δ, δ) without resamples.
        p: two-sided bootstrap p of "no difference" from the same δ* (:func:`p_value`):
            p < 0.05 exactly when ``ci95`` leaves out 0; 1.0 without resamples.
    """

    method: str
    vs: str
    metric: str
    delta: float
    ci95: tuple
    p: float

    def to_dict(self) -> dict:
        return {"method": self.method, "vs": self.vs,
                f"delta_{self.metric}": self.delta, "ci95": list(self.ci95), "p": self.p}


def paired_bootstrap(counts_x: np.ndarray, counts_y: np.ndarray, *, method: str = "x",
                     vs: str = "y", metric: str = "total_f1", bootstrap: int = 1000,
                     seed: int = 0) -> Paired:
    """Difference of a macro metric between two methods on the same pairs, resampled paired.

    δ = M(x) − M(y), M the macro metric (:func:`macro_from_metrics`); each of ``bootstrap``
    resamples draws N pair indices once and scores both methods on them.

    Args:
        counts_x, counts_y: (N, 7) per-pair counts of the two methods, same pairs, same order.
        method, vs: names carried into the result. metric: one of :data:`METRICS`.
        bootstrap: resamples (0: no interval, p = 1). seed: their random seed.

    Returns:
        A :class:`Paired` with δ, its 95 % interval and a two-sided p-value.

    Raises:
        SettingsError: different pair counts, no pairs, an unknown metric, a bad resample
            count.
    """
    x = np.asarray(counts_x, dtype=np.int64).reshape(-1, 7)
    y = np.asarray(counts_y, dtype=np.int64).reshape(-1, 7)
    if len(x) != len(y) or len(x) == 0:
        raise SettingsError(f"a paired comparison needs the same pairs on both sides, got "
                            f"{len(x)} and {len(y)}.")
    if metric not in METRICS:
        raise SettingsError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}.")
    _check_bootstrap(bootstrap)
    px, py = metrics_from_counts(x), metrics_from_counts(y)
    delta = float(macro_from_metrics(px)[metric] - macro_from_metrics(py)[metric])
    if not bootstrap:
        return Paired(method, vs, metric, delta, (delta, delta), 1.0)
    k = len(METRICS)
    sums = resample_sums(np.concatenate([per_pair_matrix(px), per_pair_matrix(py)], -1),
                         bootstrap, seed) / len(x)
    d = macro_of_means(sums[:, :k])[metric] - macro_of_means(sums[:, k:])[metric]
    return _paired(method, vs, metric, delta, d)


def interval95(values: np.ndarray) -> tuple[float, float]:
    """The 95 % interval of B ≥ 1 resampled values: (v₍ⱼ₎, v₍B₊₁₋ⱼ₎), the j-th smallest and
    the j-th largest with j = ⌈B/40⌉ (B = 1000: the 25th and the 976th of 1000).

    With :func:`p_value` of the same values, 0 lies outside this interval exactly when
    p < 0.05: v₍ⱼ₎ > 0 when fewer than j values are ≤ 0, v₍B₊₁₋ⱼ₎ < 0 when fewer than j are
    ≥ 0, and for a whole number k, k < ⌈B/40⌉ ⟺ 2k/B < 0.05.
    """
    v = np.sort(np.asarray(values, dtype=np.float64).ravel())
    j = -(-len(v) // 40)
    return float(v[j - 1]), float(v[len(v) - j])


def p_value(values: np.ndarray) -> float:
    """Two-sided bootstrap p of "no difference" from B ≥ 1 resampled differences δ*:
    min(1, 2·min(k₋, k₊)/B) with k₋ = #{δ* ≤ 0} and k₊ = #{δ* ≥ 0} (0 when no resample
    reaches 0: p < 2/B). See :func:`interval95` for why the two always agree."""
    d = np.asarray(values, dtype=np.float64).ravel()
    k = min(np.count_nonzero(d <= 0), np.count_nonzero(d >= 0))
    return min(1.0, 2 * int(k) / len(d))


def _paired(method: str, vs: str, metric: str, delta: float, d: np.ndarray) -> Paired:
    """A :class:`Paired` from the corpus difference δ and its resampled differences d (B,):
    the interval and p from the same d (:func:`interval95`, :func:`p_value`)."""
    return Paired(method, vs, metric, delta, interval95(d), p_value(d))
