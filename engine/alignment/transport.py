"""Plans for word alignment from the engine's solver, many pairs per call.

Pairs of different sizes are padded to one (B, n, m) batch with zero weights (padded words
get no mass); a grid of τ (or m) values is one more batch dimension, so a grid over a
corpus is a few batched solves. The transport runs on a nonnegative cost per pair,
C = (max S − S) / (max S − min S) ∈ [0, 1] (the pair's scores min-max scaled, so one ε
suits both sources and every pair; for cosine similarity this is 1 − cos rescaled).

Every plan comes from the engine's one solver: ``engine.solver.core`` (balanced, and
unbalanced with ``tau=``) and ``engine.solver.partial``; exact plans from POT's ``ot.emd``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..errors import SettingsError
from .methods import ALIGN_EPS  # noqa: F401  (one value, torch-free)

ALIGN_HALF_STEPS = 200
#: Precision of the transport solves. Links are read at a resolution of 0.01 on plans
#: min-max scaled to [0, 1], far coarser than float32's; on this CPU float32 solves ran
#: about 5× faster than float64 (tests pass ``dtype=torch.float64`` for exact comparisons).
DTYPE = torch.float32


def pad(mats: Sequence[np.ndarray], valid_a: Sequence[np.ndarray], valid_b: Sequence[np.ndarray],
        *, dtype=torch.float64, device=None):
    """Stack per-pair cost matrices into a padded batch.

    Args:
        mats: N cost matrices (n_k, m_k). valid_a, valid_b: (n_k,), (m_k,) bool, words
            that take part (a word with no tokens gets weight 0).

    Returns:
        C (N, n, m), a (N, n), b (N, m): uniform weights over the valid words, 0 elsewhere.
    """
    N = len(mats)
    n = max(m.shape[0] for m in mats)
    m_ = max(m.shape[1] for m in mats)
    C = torch.zeros((N, n, m_), dtype=dtype)
    a = torch.zeros((N, n), dtype=dtype)
    b = torch.zeros((N, m_), dtype=dtype)
    for k, (M, va, vb) in enumerate(zip(mats, valid_a, valid_b)):
        C[k, :M.shape[0], :M.shape[1]] = torch.from_numpy(np.asarray(M, dtype=np.float64))
        wa = np.asarray(va, dtype=np.float64)
        wb = np.asarray(vb, dtype=np.float64)
        a[k, :len(wa)] = torch.from_numpy(wa / max(wa.sum(), 1.0))
        b[k, :len(wb)] = torch.from_numpy(wb / max(wb.sum(), 1.0))
    if device is not None:
        C, a, b = C.to(device), a.to(device), b.to(device)
    return C, a, b


def cost_of(S: np.ndarray, valid_a: np.ndarray, valid_b: np.ndarray) -> np.ndarray:
    """C = (max S − S)/(max S − min S) over the valid block, (n, m) in [0, 1]; invalid
    rows and columns get 1."""
    S = np.asarray(S, dtype=np.float64)
    block = S[np.ix_(valid_a, valid_b)]
    C = np.ones_like(S)
    if block.size:
        lo, hi = block.min(), block.max()
        span = hi - lo if hi > lo else 1.0
        C[np.ix_(valid_a, valid_b)] = (hi - block) / span
    return C


def costs(S: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """:func:`cost_of` of a batch at once: S (N, n, m) scores, valid (N, n, m) the pairs of
    words that take part → C (N, n, m), (max S − S)/(max S − min S) over each valid block,
    1 elsewhere."""
    big = torch.finfo(S.dtype).max
    lo = torch.where(valid, S, big).amin((-2, -1), keepdim=True)
    hi = torch.where(valid, S, -big).amax((-2, -1), keepdim=True)
    span = torch.where(hi > lo, hi - lo, 1.0)
    return torch.where(valid, (hi - S) / span, 1.0)


def _solver():
    """The engine's solver functions (``sinkhorn``, ``partial``), imported on first use."""
    from .. import solver

    return solver


def balanced(C: torch.Tensor, a: torch.Tensor, b: torch.Tensor, eps: float = ALIGN_EPS,
             half_steps: int = ALIGN_HALF_STEPS) -> torch.Tensor:
    """Balanced Sinkhorn plans (..., n, m) of cost C by the engine's solver."""
    return _solver().sinkhorn(-C, a, b, eps, half_steps).plan


def unbalanced(C: torch.Tensor, a: torch.Tensor, b: torch.Tensor, taus: Sequence[float],
               eps: float = ALIGN_EPS, half_steps: int = ALIGN_HALF_STEPS) -> torch.Tensor:
    """KL-relaxed unbalanced plans for every τ at once: (T, N, n, m).

    π = argmin ⟨C, π⟩ − ε H(π) + τ KL(π1 ‖ a) + τ KL(πᵀ1 ‖ b).
    """
    tau = torch.as_tensor(np.asarray(taus, dtype=np.float64), dtype=C.dtype, device=C.device)
    if (tau <= 0).any() or not torch.isfinite(tau).all():
        raise SettingsError("τ must be finite and > 0 (large τ approaches balanced transport).")
    T = len(tau)
    Cb, ab, bb = (x.unsqueeze(0).expand(T, *x.shape) for x in (C, a, b))
    tb = tau.reshape(T, *([1] * (C.dim() - 2)))
    return _solver().sinkhorn(-Cb, ab, bb, eps, half_steps, tau=tb).plan


def partial(C: torch.Tensor, a: torch.Tensor, b: torch.Tensor, masses: Sequence[float],
            eps: float = ALIGN_EPS, half_steps: int = ALIGN_HALF_STEPS) -> torch.Tensor:
    """Entropic partial transport plans moving a share m of the mass, every m: (T, N, n, m)."""
    mass = np.asarray(masses, dtype=np.float64)
    if (mass <= 0).any() or (mass > 1).any():
        raise SettingsError("the transported mass m must lie in (0, 1].")
    T = len(mass)
    Cb, ab, bb = (x.unsqueeze(0).expand(T, *x.shape) for x in (C, a, b))
    mb = torch.as_tensor(mass, dtype=C.dtype, device=C.device).reshape(
        T, *([1] * (C.dim() - 2)))
    return _solver().partial(-Cb, ab, bb, eps, mb, half_steps=half_steps).plan


def exact(C: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact OT plan (POT ``ot.emd``) of one pair, (n, m); zero-weight words get 0."""
    import ot

    ia, ib = np.flatnonzero(a > 0), np.flatnonzero(b > 0)
    out = np.zeros(C.shape)
    if len(ia) and len(ib):
        aa, bb = a[ia] / a[ia].sum(), b[ib] / b[ib].sum()
        out[np.ix_(ia, ib)] = ot.emd(aa, bb, np.ascontiguousarray(C[np.ix_(ia, ib)]),
                                     numItermax=1_000_000)
    return out
