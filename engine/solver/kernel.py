"""The kernel-domain fast path of :mod:`engine.solver.core`: blocks of half-steps by
scaling (u ← a / K v, v ← b / Kᵀ u, relaxed when the problem is), the residuals of every
state of a block, and moving scalings into log potentials. Pure tensor functions."""

from __future__ import annotations

import math

import torch


def _kernel_block(K, Kt, a, b, u, v, t, nb, zeros, big, relax=None):
    """Half-steps t+1..t+nb by scaling: u ← a / K v, v ← b / Kᵀ u; relaxed (``relax`` from
    :func:`_relaxation`): u ← exp(ρ (log a − log K v) + (ρ − 1) α₀), likewise v.

    K (B, n, m) and Kt = Kᵀ (B, m, n), both contiguous; u, a (B, n, 1); v, b (B, 1, m).
    Both products run as row vector × matrix (vᵀKᵀ, uᵀK), much faster than matrix ×
    column vector for small batched matrices. Returns (u, v, row residuals (k, B), column
    residuals (k', B), (largest, smallest) scaling on the supports, the row scalings
    (B, 1, n) before and after each row step, the column scalings (B, 1, m) likewise), or
    None when a scaling left the safe range.
    """
    a_row = a.mT
    u = u.mT  # (B, 1, n)
    us, rs, vs, cs = [u], [], [v], []
    for s in range(t + 1, t + nb + 1):
        if s % 2 == 0:
            c = torch.bmm(u, K)  # (Kᵀ u)ᵀ: (B, 1, m)
            v = _scaling(b, c, zeros, relax, 2)
            cs.append(c)
            vs.append(v)
        else:
            r = torch.bmm(v, Kt)  # (K v)ᵀ: (B, 1, n)
            u = _scaling(a_row, r, zeros, relax, 1)
            rs.append(r)
            us.append(u)
    a = a_row
    # Scalings on the supports must be finite and within (1/big, big); NaN fails too.
    lo_u, hi_u = torch.aminmax(torch.where(a > 0, u, 1.0))
    lo_v, hi_v = torch.aminmax(torch.where(b > 0, v, 1.0))
    lo, hi = min(lo_u.item(), lo_v.item()), max(hi_u.item(), hi_v.item())
    if not (1 / big < lo and hi < big):
        return None
    # Marginals of each state: before and after each update on the side it updates.
    empty = u.new_empty(0, u.shape[0])
    rows = _interleaved_err(us, rs, a if relax is None else None) if rs else empty
    cols = _interleaved_err(vs, cs, b if relax is None else None) if cs else empty
    return u.mT, v, rows, cols, (hi, lo), us, vs


def _scaling(w: torch.Tensor, sums: torch.Tensor, zeros: bool, relax, side: int) -> torch.Tensor:
    """One side's new scaling from its sums over the other side, (B, 1, n) or (B, 1, m):
    w / sums (balanced), or exp(ρ (log w − log sums) + (ρ − 1) x₀) (relaxed, ``relax``
    from :func:`_relaxation`; ``side`` 1 for rows, 2 for columns); 0 on zero weights
    (whose sum may be 0 too: 0/0, log 0 − log 0)."""
    if relax is None:
        x = w / sums
    else:
        x = torch.exp(relax[0] * (relax[side] - torch.log(sums)) + relax[side + 2])
    return torch.where(w > 0, x, 0) if zeros else x


def _interleaved_err(xs: list[torch.Tensor], ss: list[torch.Tensor],
                     target: torch.Tensor | None) -> torch.Tensor:
    """Errors ‖x·s − target‖₁ of [x0·s1, x1·s1, x1·s2, x2·s2, ...] → (2k, B).

    xs: k+1 scalings and ss: k sums, each (B, n, 1) or (B, 1, m); the marginal of the state
    before an update is x_old·s and after it x_new·s. Target None (relaxed): each
    update's own new marginal x_new·s.
    """
    X = torch.stack(xs).flatten(-2)  # (k+1, B, n)
    Sm = torch.stack(ss).flatten(-2)  # (k, B, n)
    t = X[1:] * Sm if target is None else target.flatten(-2)
    before = (X[:-1] * Sm - t).abs().sum(-1)
    after = (X[1:] * Sm - t).abs().sum(-1)
    return torch.stack([before, after], 1).flatten(0, 1)


def _absorb(alpha, beta, u, v):
    """Move scalings into log potentials: α ← α + log u, β ← β + log v.

    A zero scaling (a zero-weight row or column once normalised) becomes −inf; a column
    of zero weight that no column step has touched yet keeps its mass (state 1).
    """
    alpha = torch.where(u > 0, alpha + torch.log(torch.where(u > 0, u, 1.0)), -math.inf)
    beta = torch.where(v > 0, beta + torch.log(torch.where(v > 0, v, 1.0)), -math.inf)
    return alpha, beta
