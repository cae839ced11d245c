"""Reference plans: exact optimal transport (ε → 0) and the product measure (ε → ∞)."""

from __future__ import annotations

import functools
import hashlib

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


def exact_plan_cached(S: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`exact_plan`, remembered for the last 64 distinct (S, a, b).

    π* = argmin_{π ∈ Π(a, b)} ⟨−S, π⟩ depends on neither ε nor the half-steps, so a
    slider move (or a lattice of frames over them) reuses it instead of re-running
    ``ot.emd``. Keyed by the float64 bytes and shapes of S, a and b.

    Returns:
        (..., n, m) float64 plan, read-only (it is shared between callers: copy it to
        change it).
    """
    S, a, b = (np.ascontiguousarray(x, dtype=np.float64) for x in (S, a, b))
    h = hashlib.sha1()
    for x in (S, a, b):
        h.update(x.tobytes())
        h.update(str(x.shape).encode())
    return _exact_by_key(h.hexdigest(), S.tobytes(), S.shape, a.tobytes(), b.tobytes())


@functools.lru_cache(maxsize=64)
def _exact_by_key(key: str, S_bytes: bytes, shape: tuple, a_bytes: bytes, b_bytes: bytes):
    S = np.frombuffer(S_bytes).reshape(shape)
    out = exact_plan(S, np.frombuffer(a_bytes), np.frombuffer(b_bytes))
    out.setflags(write=False)
    return out


def product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The independent coupling a ⊗ b, (n, m): the ε → ∞ limit of Sinkhorn."""
    return np.outer(a, b)


def cost(plan: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Transport cost ⟨−S, π⟩ over the last two axes: (...)."""
    return -(plan * S).sum((-2, -1))


def entropy(plan, log_plan=None, *, relaxed=False):
    """The entropy of plans over their last two axes, with 0 log 0 = 0: (...).

    H(π) = −Σ π log π (balanced transport, π ∈ Π(a, b)), or, with ``relaxed``,
    H₁(π) = −Σ π (log π − 1) = H(π) + Σ π, the entropy of the unbalanced and partial
    objectives (whose plans' mass Σ π is free or set to m). The two differ by the mass
    exactly, so by 1 on a plan of mass 1, and have the same maximiser on Π(a, b).

    Args:
        plan: (..., n, m) plans ≥ 0, numpy or torch (the result is of the same kind).
        log_plan: log π where it is known (the solver's potentials give it exactly);
            computed from ``plan`` when None.
        relaxed: False; True; or (...) booleans, one per plan (a batch mixing both).
    """
    if type(plan).__module__.partition(".")[0] == "torch":
        import torch as lib
    else:
        lib = np
    pos = plan > 0
    if log_plan is None:
        log_plan = lib.log(lib.where(pos, plan, 1.0))
    h = -(plan * lib.where(pos, log_plan, 0.0)).sum((-2, -1))
    if relaxed is False:
        return h
    mass = plan.sum((-2, -1))
    return h + (mass if relaxed is True else lib.where(relaxed, mass, 0.0))


def l1(p: np.ndarray, q: np.ndarray, axes: int | tuple[int, ...] = (-2, -1)) -> np.ndarray:
    """‖p − q‖₁ over ``axes`` (the last two by default, one for marginals)."""
    return np.abs(p - q).sum(axes)


def kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL(p ‖ q) = Σ p log(p / q) over the last two axes, with 0 log 0 = 0: (...).

    +inf where p puts mass on a cell where q has none (p is not absolutely continuous
    with respect to q).
    """
    pos = p > 0
    off = (pos & (q <= 0)).any((-2, -1))
    ratio = np.where(pos, p, 1.0) / np.where(pos & (q > 0), q, 1.0)
    out = np.maximum(np.where(pos, p * np.log(ratio), 0.0).sum((-2, -1)), 0.0)  # ≥ 0; no −1e-16
    return np.where(off, np.inf, out)


def mutual_information(p: np.ndarray) -> np.ndarray:
    """KL(π ‖ π1 ⊗ πᵀ1): how far a plan is from independence over its own marginals: (...).

    Equals KL(π ‖ a ⊗ b) for π ∈ Π(a, b), and stays finite for plans that are not
    couplings yet (softmax puts mass on tokens whose weight is 0).
    """
    return kl(p, p.sum(-1)[..., :, None] * p.sum(-2)[..., None, :])


def zero_weight_mass(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mass of a plan (..., n, m) on rows with a_i = 0 or columns with b_j = 0: (...)."""
    off = (a <= 0)[:, None] | (b <= 0)[None, :]
    return np.where(off, p, 0.0).sum((-2, -1))
