"""Reference plans: exact optimal transport (ε → 0) and the product measure (ε → ∞)."""

from __future__ import annotations

import numpy as np


def exact_plan(S: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact optimal transport plan for cost −S by POT's network simplex (``ot.emd``).

    π* = argmin_{π ∈ Π(a, b)} ⟨−S, π⟩.

    Args:
        S: (..., n, m) scores; a: (n,) and b: (m,) weights summing to 1.

    Returns:
        (..., n, m) float64 plan; every problem in the batch is solved on its own.
    """
    import ot

    S = np.asarray(S, dtype=np.float64)
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    flat = S.reshape(-1, *S.shape[-2:])
    # ot.emd needs exactly equal totals; zero-weight atoms are dropped and put back as 0.
    ia, ib = np.flatnonzero(a > 0), np.flatnonzero(b > 0)
    aa, bb = a[ia] / a[ia].sum(), b[ib] / b[ib].sum()
    out = np.zeros_like(flat)
    for k, s in enumerate(flat):
        M = np.ascontiguousarray(-s[np.ix_(ia, ib)])
        out[k][np.ix_(ia, ib)] = ot.emd(aa, bb, M - M.min(), numItermax=1_000_000)
    return out.reshape(S.shape)


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The independent coupling a ⊗ b, (n, m): the ε → ∞ limit of Sinkhorn."""
    return np.outer(a, b)


def l1(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """‖p − q‖₁ over the last two axes: (...)."""
    return np.abs(p - q).sum((-2, -1))


def kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL(p ‖ q) = Σ p log(p / q) over the last two axes, with 0 log 0 = 0: (...).

    q must be positive wherever p is.
    """
    pos = p > 0
    ratio = np.where(pos, p, 1.0) / np.where(pos, q, 1.0)
    return np.where(pos, p * np.log(ratio), 0.0).sum((-2, -1))


def mutual_information(p: np.ndarray) -> np.ndarray:
    """KL(π ‖ π1 ⊗ πᵀ1): how far a plan is from independence, over its own marginals: (...).

    Equals KL(π ‖ a ⊗ b) for π ∈ Π(a, b), and stays finite for plans that are not
    couplings yet (softmax puts mass on tokens whose weight is 0).
    """
    return kl(p, p.sum(-1)[..., :, None] * p.sum(-2)[..., None, :])
