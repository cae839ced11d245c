"""Links from a trained aligner, θ tuned on dev, scores with paired intervals.

Extraction is the Align methods' (:mod:`engine.alignment.extract`): a link wherever the
value V exceeds θ, θ on the grid k/100 chosen on dev by macro total F1 (OTAlign's). Here V
is the plan's word-to-word block itself, πᵢⱼ ∈ [0, 1] (each word's row and column total 1
with its dustbin), not min-max scaled: a pair whose words all go to the dustbins keeps no
link.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

from ..alignment import extract
from ..alignment.score import CorpusScore, Paired, macro_from_metrics, metrics_from_counts, \
    paired_bootstrap, score
from .data import Corpus, batch, length_batches, prepare

CHUNK = 128  # pairs per θ-grid count (bounds the padded (N, n, m) work)


@torch.no_grad()
def plans(aligner, corpus: Corpus, *, size: int = 64) -> list[np.ndarray]:
    """V per pair: the plan's word-to-word block (n_k, m_k) float64, −1 where a word is not
    valid. Pairs are run in length-sorted batches of ``size``; the aligner in eval mode."""
    was = aligner.training
    aligner.eval()
    out: list[np.ndarray | None] = [None] * len(corpus)
    try:
        for idx in length_batches(corpus, size):
            b = batch(corpus, idx, gold=False)
            P = aligner.plan(b).double().cpu().numpy()
            for r, k in enumerate(idx):
                n, m = corpus.shape(k)
                va, vb = corpus.texts[2 * k].valid, corpus.texts[2 * k + 1].valid
                out[k] = np.where(np.outer(va, vb), P[r, :n, :m], -1.0)
    finally:
        aligner.train(was)
    return out  # type: ignore[return-value]


def grid_f1(V: Sequence[np.ndarray], corpus: Corpus) -> np.ndarray:
    """Macro total F1 (G,) of the links V > θ_k for every θ_k = k/G (G = 100) on the
    corpus's gold, counted for all thresholds at once (:func:`extract.grid_counts`)."""
    counts = []
    order = sorted(range(len(V)), key=lambda k: V[k].size)
    for s in range(0, len(order), CHUNK):
        idx = order[s:s + CHUNK]
        b = extract.make_batch([V[k] for k in idx],
                               [corpus.texts[2 * k].valid for k in idx],
                               [corpus.texts[2 * k + 1].valid for k in idx],
                               [(corpus.pairs[k].sure, corpus.pairs[k].possible) for k in idx])
        Vt = torch.where(b.valid, b.S, -1.0)[None]
        counts.append(extract.grid_counts(Vt, b)[0].numpy())  # (N, G, 7)
    per = metrics_from_counts(np.concatenate(counts))
    return macro_from_metrics(per, axis=0)["total_f1"]


def tune_theta(V: Sequence[np.ndarray], corpus: Corpus) -> tuple[float, float]:
    """(θ, macro total F1) with the best total F1 on the corpus (the smallest θ on ties)."""
    f1 = grid_f1(V, corpus)
    k = int(np.argmax(f1))
    return k / extract.GRID, float(f1[k])


def links_at(V: Sequence[np.ndarray], theta: float) -> list[tuple[tuple[int, int], ...]]:
    """Sorted links (i, j) with V > θ of every pair."""
    out = []
    for v in V:
        ii, jj = np.nonzero(v > theta)
        out.append(tuple((int(i), int(j)) for i, j in zip(ii, jj)))
    return out


def align(aligner, pairs: Sequence, *, theta: float | None = None, corpus: Corpus | None = None,
          progress: Callable[[int, int], None] | None = None) -> list:
    """Align pairs with a trained aligner: one :class:`~engine.alignment.api.Alignment`
    per pair, in input order (scored when the pair has gold).

    Args:
        aligner: a trained :class:`~engine.aligner.model.Aligner`.
        pairs: :class:`Pair` s, dicts or tuples (see :func:`engine.alignment.api.as_pairs`).
        theta: the link threshold (default: the aligner's own, tuned on its dev pairs).
        corpus: the pairs already prepared (:func:`~engine.aligner.data.prepare`).
        progress: called with (texts done, total) while the texts are read.
    """
    from ..alignment.api import Alignment, as_pairs
    from ..alignment.score import METRICS, pair_counts

    pairs = as_pairs(pairs)
    corpus = corpus or prepare(pairs, aligner, progress=progress)
    theta = float(aligner.theta) if theta is None else float(theta)
    V = plans(aligner, corpus)
    method = method_dict(aligner, theta)
    source = {"source": "aligner", "model": aligner.settings.model,
              "layer": aligner.settings.layer, "top": aligner.settings.top}
    out = []
    for p, v, lk in zip(corpus.pairs, V, links_at(V, theta)):
        la, lb = {i for i, _ in lk}, {j for _, j in lk}
        n, m = v.shape
        sc = None
        if p.has_gold:
            per = metrics_from_counts(pair_counts(lk, p))
            sc = {k: float(per[k]) for k in METRICS}
        out.append(Alignment(tuple(p.words_a), tuple(p.words_b), lk,
                             tuple(i for i in range(n) if i not in la),
                             tuple(j for j in range(m) if j not in lb),
                             method, source, v, sc))
    return out


def method_dict(aligner, theta: float) -> dict:
    """The ``method`` entry of a trained aligner's alignments and scores."""
    return {"method": "trained", "threshold": float(theta), "final": aligner.settings.final,
            "name": getattr(aligner, "name", "")}


def evaluate(aligner, pairs: Sequence, *, against: dict[str, CorpusScore] | None = None,
             theta: float | None = None, bootstrap: int = 1000,
             seed: int = 0) -> tuple[CorpusScore, dict[str, Paired]]:
    """Score an aligner on pairs with gold, and compare it with other methods' scores on
    the same pairs by a paired bootstrap of macro total F1.

    Args:
        against: name → :class:`CorpusScore` of another method on the same pairs, in the
            same order (e.g. ``engine.alignment.api.score`` of an untrained method).
        theta: the link threshold (default: the aligner's own).
        bootstrap, seed: resamples for the 95 % intervals and their seed.

    Returns:
        (the aligner's scores, name → :class:`~engine.alignment.score.Paired`: the trained
        aligner minus that method, with its 95 % interval).
    """
    from ..alignment.api import as_pairs

    pairs = as_pairs(pairs)
    sc = score(align(aligner, pairs, theta=theta), pairs, bootstrap=bootstrap, seed=seed)
    paired = {name: paired_bootstrap(sc.counts, other.counts, method="trained", vs=name,
                                     bootstrap=bootstrap, seed=seed)
              for name, other in (against or {}).items()}
    return sc, paired
