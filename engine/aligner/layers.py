"""The aligner's final layers: scores of two texts' words → a plan with a null for each word.

``sinkhorn`` (the dustbin layer of SuperGlue, Sarlin et al., CVPR 2020, on the engine's own
log-domain half-steps): the (n, m) scores S are bordered by a dustbin column (scores zᴬᵢ of
"word i of A has no partner") and a dustbin row (zᴮⱼ for B's words), with the corner c,

    Z = [[S, zᴬ], [zᴮᵀ, c]] ∈ ℝ^{(n+1)×(m+1)},  a = (1, …, 1, m),  b = (1, …, 1, n),

and the plan is the Sinkhorn coupling of Z at ε (1 in training, softer when aligning; both
totals are n + m), unrolled for a fixed number of half-steps by
:func:`engine.solver.core.log_plan` and differentiated by autograd. πᵢⱼ is the chance that
word i of A goes with word j of B, π_{i,m} that it goes with nothing; each real word's row
(column) sums to 1, so a word can stay unaligned.

``softmax`` (the baseline): each row of [S, zᴬ] is a softmax over B's words and the null
column. Rows sum to 1; nothing constrains B's words, which have no null of their own.

Batches are padded: masks (B, n), (B, m) say which words are real; padded words get weight
0 (log π = −∞) and change nothing for the real ones.
"""

from __future__ import annotations

import math

import torch

from ..solver.core import log_plan

FINALS = ("sinkhorn", "softmax")


def bordered(S: torch.Tensor, za: torch.Tensor, zb: torch.Tensor,
             corner: torch.Tensor) -> torch.Tensor:
    """Z (B, n+1, m+1): S (B, n, m) bordered by the dustbin column za (B, n), the dustbin
    row zb (B, m) and the corner (B,) or a scalar tensor."""
    B = S.shape[0]
    c = corner.reshape(-1).expand(B)[:, None]
    top = torch.cat([S, za[..., None]], -1)
    bottom = torch.cat([zb, c], -1)[:, None]
    return torch.cat([top, bottom], -2)


def dustbin_weights(mask_a: torch.Tensor, mask_b: torch.Tensor,
                    dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """a (B, n+1) = (1 on real words, 0 on padding, m), b (B, m+1) = (1, 0, n)."""
    ma, mb = mask_a.to(dtype), mask_b.to(dtype)
    a = torch.cat([ma, mb.sum(-1, keepdim=True)], -1)
    b = torch.cat([mb, ma.sum(-1, keepdim=True)], -1)
    return a, b


def sinkhorn_layer(S: torch.Tensor, za: torch.Tensor, zb: torch.Tensor,
                   corner: torch.Tensor, mask_a: torch.Tensor, mask_b: torch.Tensor,
                   half_steps: int, eps: float = 1.0) -> torch.Tensor:
    """log π (B, n+1, m+1) of the dustbin coupling after ``half_steps`` half-steps.

    log πᵢⱼ = Zᵢⱼ/ε + αᵢ + βⱼ with a = (1, …, 1, m), b = (1, …, 1, n), started from
    β = log b (so padded columns never take mass); an odd count ends on the rows (each
    real word of A sums to 1 exactly), an even one on the columns.

    Args:
        S: (B, n, m) scores. za: (B, n), zb: (B, m) dustbin scores. corner: (B,) or ().
        mask_a, mask_b: (B, n), (B, m) bool, the real words (each pair needs one on
            each side). half_steps: ≥ 1.

    Returns:
        (B, n+1, m+1) log-plan, −∞ on padding. If the marginals are far off after
        training, give more half-steps.
    """
    Z = bordered(S, za, zb, corner)
    a, b = dustbin_weights(mask_a, mask_b, S.dtype)
    return log_plan(Z, a, b, eps, half_steps, start="b")


def softmax_layer(S: torch.Tensor, za: torch.Tensor, mask_b: torch.Tensor) -> torch.Tensor:
    """log π (B, n, m+1): each row of [S, zᴬ] a softmax over B's real words and the null.

    πᵢⱼ = exp(Sᵢⱼ) / (Σₖ exp(Sᵢₖ) + exp(zᴬᵢ)); the last column is word i's null.
    """
    Z = torch.cat([S, za[..., None]], -1)
    keep = torch.cat([mask_b, mask_b.new_ones(mask_b.shape[0], 1)], -1)[:, None, :]
    return torch.log_softmax(Z.masked_fill(~keep, -math.inf), -1)


def gold_loss(logp: torch.Tensor, gold: torch.Tensor, mask_a: torch.Tensor,
              mask_b: torch.Tensor, final: str) -> torch.Tensor:
    """Negative log-likelihood of the gold links and of the gold nulls, per term.

    −(Σ_{(i,j) ∈ gold} log πᵢⱼ + Σ_{i null} log π_{i,∅} + Σ_{j null} log π_{∅,j}) / #terms,
    with B's nulls counted only for ``sinkhorn`` (the softmax layer has no null for B).

    Args:
        logp: (B, n+1, m+1) (sinkhorn) or (B, n, m+1) (softmax) log-plans.
        gold: (B, n, m) bool gold links. mask_a, mask_b: the real words.
    """
    n, m = gold.shape[-2:]
    zero = logp.new_zeros(())
    links = torch.where(gold, logp[:, :n, :m], zero).sum()
    null_a = mask_a & ~gold.any(-1)
    total = links + torch.where(null_a, logp[:, :n, m], zero).sum()
    count = gold.sum() + null_a.sum()
    if final == "sinkhorn":
        null_b = mask_b & ~gold.any(-2)
        total = total + torch.where(null_b, logp[:, n, :m], zero).sum()
        count = count + null_b.sum()
    return -total / count.clamp_min(1)
