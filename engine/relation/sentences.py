"""What pooling forgets: rank candidate texts against text A by the model's sentence
similarity and by the transport cost between the texts' measures.

A sentence-transformers embedding with mean pooling is the mean of the text's last hidden
states, the barycenter of the measure μ = (1/n) Σᵢ δ_{xᵢ}. Two texts can share a barycenter
and still be different measures. The debiased Sinkhorn divergence

    S_ε(α, β) = OT_ε(α, β) − ½ OT_ε(α, α) − ½ OT_ε(β, β),
    OT_ε(α, β) = min_{π ∈ Π(α, β)} ⟨C, π⟩ + ε KL(π ‖ α ⊗ β),   C_ij = 1 − cos(x_i, y_j),

compares the whole measures: it is 0 only for equal measures (the kernel exp(−C/ε) is
positive definite), tends to the optimal transport cost as ε → 0 and to a kernel
(MMD-like) distance as ε grows. ``rank`` computes both rankings from encodings;
``rank_texts`` encodes first.

References:
    Genevay, Peyré, Cuturi, "Learning generative models with Sinkhorn divergences",
    AISTATS 2018; Feydy et al., "Interpolating between optimal transport and MMD using
    Sinkhorn divergences", AISTATS 2019.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..models.encoder import Encoder, clean_text, pooled_mean, unit
from ..errors import TextError
from ..solver.core import check_eps, sinkhorn
from ..settings import MAX_CANDIDATES
from ..types import Encoding, Notice, Ranking
from .notices import notice
HALF_STEPS = 10_000  # the most half-steps per solve (they stop early at TOL)
TOL = 1e-5  # L1 marginal error; the values are then within ~1e-6
BATCH = 16  # texts per forward pass


@dataclass(frozen=True)
class Measure:
    """A text as the measure μ = (1/n) Σᵢ δ_{xᵢ} of its last hidden states, with the
    model's sentence embedding.

    Attributes:
        text: the text as the model read it. tokens: its n tokens.
        points: (n, d) last hidden states x_i (read-only). embedding: (d',) the model's
            sentence embedding. mean: (d,) Σᵢ xᵢ / n, the barycenter.
        n_dropped: tokens cut by the model's limit. chars_cut: cut to max_chars first.
        model: the model's name.
    """

    text: str
    tokens: tuple[str, ...]
    points: np.ndarray
    embedding: np.ndarray
    mean: np.ndarray
    n_dropped: int = 0
    chars_cut: bool = False
    model: str = ""

    @classmethod
    def of(cls, e: Encoding) -> "Measure":
        """The measure of one encoded text (``Encoder.encode_many``)."""
        points = np.array(e.hidden[-1])  # a copy: the encoding's other layers are freed
        points.setflags(write=False)
        return cls(e.texts[0], e.tokens, points, e.embedding, pooled_mean(e), e.n_dropped,
                   e.chars_cut, e.model)


def parse_candidates(text: str) -> tuple[list[str], int]:
    """Candidate texts from a box with one per line: (non-blank lines, stripped, at most
    :data:`MAX_CANDIDATES`; how many more lines were dropped). Lines of nothing but
    spaces or control characters are skipped.

    Raises:
        TextError: no line holds any text.
    """
    lines = [line.strip() for line in str(text or "").splitlines()]
    lines = [line for line in lines if line and not _blank(line)]
    if not lines:
        raise TextError.of("no_candidates")
    return lines[:MAX_CANDIDATES], max(0, len(lines) - MAX_CANDIDATES)


def _blank(line: str) -> bool:
    """True for a line with nothing left once control characters are removed."""
    try:
        clean_text(line)
    except TextError:
        return True
    return False


def cosine_cost(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C = 1 − cos(x_i, y_j) for points x (..., n, d), y (..., m, d) → (..., n, m) in [0, 2]."""
    return 1.0 - unit(x) @ np.swapaxes(unit(y), -1, -2)


def entropic_ot(C: np.ndarray, a: np.ndarray, b: np.ndarray, eps: float, *,
                half_steps: int = HALF_STEPS, tol: float = TOL):
    """OT_ε = ⟨C, π⟩ + ε KL(π ‖ a ⊗ b) at the Sinkhorn plan π, batched.

    Args:
        C: (..., n, m) costs. a: (..., n), b: (..., m) weights (zeros pad shorter texts).
        eps: ε > 0. half_steps, tol: the solver's budget and L1 marginal tolerance.

    Returns:
        (value (...), plan (..., n, m), converged (...) bool). When not converged, raise
        ε or the half-steps: at ε = 0.01 on cosine costs it may take thousands.
    """
    St = torch.from_numpy(-np.ascontiguousarray(C, dtype=np.float64))
    at, bt = torch.from_numpy(np.asarray(a, np.float64)), torch.from_numpy(np.asarray(b, np.float64))
    c = sinkhorn(St, at, bt, eps, half_steps, tol=tol, early_stop=True)
    plan = c.plan
    rows, cols = plan.sum(-1), plan.sum(-2)
    log_a = torch.where(at > 0, at.log(), torch.zeros_like(at))
    log_b = torch.where(bt > 0, bt.log(), torch.zeros_like(bt))
    # KL(π ‖ a⊗b) = Σ π log π − Σᵢ (π1)ᵢ log aᵢ − Σⱼ (πᵀ1)ⱼ log bⱼ  (π = 0 where a or b is 0)
    kl = -c.entropy - (rows * log_a).sum(-1) - (cols * log_b).sum(-1)
    value = c.cost + eps * kl
    return value.numpy(), plan.numpy(), np.asarray(c.converged.numpy(), dtype=bool)


def _pad(points: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Stack clouds of different sizes: points (K, m_max, d) and uniform weights (K, m_max)
    with zeros on the padding."""
    m = max(len(p) for p in points)
    X = np.zeros((len(points), m, points[0].shape[-1]))
    w = np.zeros((len(points), m))
    for k, p in enumerate(points):
        X[k, :len(p)] = p
        w[k, :len(p)] = 1.0 / len(p)
    return X, w


def sinkhorn_divergence(x: np.ndarray, ys: Sequence[np.ndarray], eps: float, *,
                        half_steps: int = HALF_STEPS, tol: float = TOL):
    """S_ε(μ_x, μ_y) for one cloud x (n, d) against K clouds y_k (m_k, d), uniform weights,
    cost 1 − cos: three batched Sinkhorn solves.

    Returns:
        (divergence (K,), plans: K arrays (n, m_k) coupling x with each y_k, converged (K,)).
    """
    eps = check_eps(eps)
    x = np.asarray(x, np.float64)
    Y, b = _pad([np.asarray(y, np.float64) for y in ys])
    a = np.full(len(x), 1.0 / len(x))
    xy, plans, ok_xy = entropic_ot(cosine_cost(x[None], Y), a, b, eps,
                                   half_steps=half_steps, tol=tol)
    yy, _, ok_yy = entropic_ot(cosine_cost(Y, Y), b, b, eps, half_steps=half_steps, tol=tol)
    xx, _, ok_xx = entropic_ot(cosine_cost(x, x), a, a, eps, half_steps=half_steps, tol=tol)
    div = xy - 0.5 * xx - 0.5 * yy
    sizes = [len(y) for y in ys]
    return div, [plans[k, :, :m] for k, m in enumerate(sizes)], ok_xy & ok_yy & bool(ok_xx)


def rank(measures: Sequence[Measure], *, eps: float, pooling: str = "mean",
         mean_pooled: bool = True, dropped: int = 0, half_steps: int = HALF_STEPS,
         tol: float = TOL) -> Ranking:
    """Rank candidates against text A by sentence similarity and by Sinkhorn divergence.

    Args:
        measures: text A then the K candidates (:func:`measures`).
        eps: ε of the divergence. pooling, mean_pooled: the model's pooling (for the
            barycenter check and the notices). dropped: candidate lines dropped earlier.
        half_steps, tol: each Sinkhorn solve's budget and L1 marginal tolerance.

    Returns:
        A :class:`Ranking`: similarity cos(e_A, e_k), divergence S_ε(μ_A, μ_k), both orders.
    """
    eps = check_eps(eps)
    ma, cands = measures[0], list(measures[1:])
    if not cands:
        raise TextError.of("no_candidates")
    e_unit = unit(np.stack([np.asarray(m.embedding, np.float64) for m in measures]))
    similarity = e_unit[1:] @ e_unit[0]
    div, plans, converged = sinkhorn_divergence(
        ma.points, [m.points for m in cands], eps, half_steps=half_steps, tol=tol)
    gap = None
    if mean_pooled:
        gap = float(np.abs(unit(np.stack([m.mean for m in measures])) - e_unit).max())
    by_sim = np.argsort(-similarity, kind="stable")
    by_div = np.argsort(div, kind="stable")
    from scipy.stats import spearmanr

    rho = float(spearmanr(similarity, -div).statistic) if len(cands) > 2 else float("nan")
    return Ranking(
        text_a=ma.text, candidates=tuple(m.text for m in cands), tokens_a=ma.tokens,
        tokens=tuple(m.tokens for m in cands), similarity=similarity, divergence=div,
        plans=tuple(plans), by_similarity=by_sim, by_divergence=by_div,
        spearman=rho if np.isfinite(rho) else float("nan"), eps=eps, converged=converged,
        barycenter_gap=gap, pooling=pooling, model=ma.model,
        notices=tuple(_notices(measures, converged, dropped, pooling, mean_pooled, eps)))


def measures(encoder: Encoder, text_a: str, candidates: str | Sequence[str]
             ) -> tuple[tuple[Measure, ...], int]:
    """Text A and the candidates (a box's text, one per line, or a list) as measures, in
    padded forward passes of up to :data:`BATCH` texts: (measures, candidate lines dropped
    beyond :data:`MAX_CANDIDATES`)."""
    a = clean_text(text_a, name="text_a")
    if isinstance(candidates, str):
        lines, dropped = parse_candidates(candidates)
    else:
        lines, dropped = parse_candidates("\n".join(str(c).replace("\n", " ")
                                                    for c in candidates))
    texts = [a, *(clean_text(c, name="candidate", k=i + 1) for i, c in enumerate(lines))]
    out = []
    for i in range(0, len(texts), BATCH):
        out += [Measure.of(e) for e in encoder.encode_many(texts[i:i + BATCH], attentions=False)]
    return tuple(out), dropped


def rank_texts(encoder: Encoder, text_a: str, candidates: str | Sequence[str], *,
               eps: float = 1.0) -> Ranking:
    """:func:`rank` on texts: encode text A and the candidates, then rank.

    Example:
        >>> r = rank_texts(Encoder.default(), "A cat sleeps.", ["A kitten naps.", "Stocks fell."])
        >>> [r.candidates[k] for k in r.by_divergence]
    """
    ms, dropped = measures(encoder, text_a, candidates)
    return rank(ms, eps=eps, pooling=encoder.pooling, mean_pooled=encoder.mean_pooled,
                dropped=dropped)


def _notices(measures, converged, dropped, pooling, mean_pooled, eps) -> list[Notice]:
    from .relate import truncation_notices

    out = []
    for i, e in enumerate(measures):
        out += truncation_notices("text_a" if i == 0 else "candidate", e.chars_cut,
                                  len(e.tokens), e.n_dropped, k=None if i == 0 else i)
    if dropped:
        out.append(notice("candidates_cut", max=MAX_CANDIDATES, more=int(dropped)))
    if not mean_pooled:
        out.append(notice("not_mean_pooled", pooling=pooling or ""))
    if not np.all(converged):
        out.append(notice("not_converged_candidates", bad=int((~np.asarray(converged)).sum()),
                          all=len(converged), eps=float(eps), steps=HALF_STEPS))
    return out
