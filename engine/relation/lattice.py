"""Every frame of the ε and half-step sliders at once: a lattice of Sinkhorn plans.

For one relation (texts, model view, layer and head fixed) the frame at (ε, t) is the plan
after t half-steps started from g = 0, ``sinkhorn(S, a, b, ε, t).plan`` — exactly what the
sliders mean. The lattice solves all ε values as one batch of the one solver (solving at
ε on S is solving at 1 on S/ε) for the largest t and records the plans at every t of the
grid on the way (``sinkhorn(..., record=steps, record_plans=True)``), so no frame is
solved twice and none is solved on its own.

No warm start is used, on purpose: starting ε's problem from the potentials of a
neighbouring ε would converge in fewer half-steps, but then "t half-steps" would no longer
mean t half-steps from softmax, and frame (ε, 1) would no longer be softmax.
"""

from __future__ import annotations

import numpy as np
import torch

from ..solver import references
from ..errors import SettingsError
from .frames import grid  # noqa: F401  (re-exported: the frames a lattice holds)
from .relate import summarise
from ..settings import DEFAULT_TOL
from ..solver.checks import check_weights
from ..solver.core import check_eps, check_half_steps, sinkhorn, softmax_attention
from ..types import Lattice, Relation


def lattice(S, a, b, eps, steps, *, tol: float = DEFAULT_TOL,
            exact: np.ndarray | None = None) -> Lattice:
    """Solve every (ε, t) frame of one score matrix in one batched solver call.

    π_{ε,t} = the plan after t Sinkhorn half-steps on exp((f ⊕ g + S)/ε) from g = 0.

    Args:
        S: (n, m) scores (cost −S), float64. a: (n,), b: (m,) weights summing to 1.
        eps: (E,) ε values > 0. steps: (T,) half-step counts ≥ 1; 1 is added if missing.
        tol: L1 marginal tolerance for ``summary.converged``.
        exact: (n, m) the exact OT plan if known (else POT's ``ot.emd`` is run, cached).

    Returns:
        A :class:`Lattice`; frame (i, k) equals ``sinkhorn(S, a, b, eps[i], steps[k])``
        up to rounding (the batch may run in the log domain where a single ε would use
        kernel scaling; they agree to ~1e-12 in float64).

    Raises:
        SettingsError: bad ε, half-steps or weights, or S not a single (n, m) matrix.
        Memory grows as E·T·n·m·8 bytes (41 × 28 × 64² ≈ 38 MB): callers cap n·m.
    """
    S = np.ascontiguousarray(S, dtype=np.float64)
    if S.ndim != 2:
        raise SettingsError(f"A lattice is for one layer and head: S must be (n, m), got {S.shape}.")
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    check_weights(torch.from_numpy(a), "a", S.shape[0])
    check_weights(torch.from_numpy(b), "b", S.shape[1])
    eps = np.array(sorted({check_eps(e) for e in np.asarray(eps, dtype=np.float64).ravel()}))
    steps = np.array(sorted({1} | {check_half_steps(int(t)) for t in np.asarray(steps).ravel()}),
                     dtype=np.int64)
    if eps.size == 0:
        raise SettingsError("A lattice needs at least one ε value.")
    St = torch.from_numpy(S)
    c = sinkhorn(St[None] / torch.from_numpy(eps)[:, None, None], torch.from_numpy(a),
                 torch.from_numpy(b), 1.0, int(steps[-1]), tol=tol, record=steps,
                 record_plans=True, check_inputs=False)
    plans = c.history.plans.numpy()  # (E, T, n, m)
    idx = torch.from_numpy(steps - 1)
    row_err = c.row_err.index_select(-1, idx).numpy()
    col_err = c.col_err.index_select(-1, idx).numpy()
    exact = (references.exact_plan_cached(S, a, b) if exact is None
             else np.asarray(exact, dtype=np.float64))
    summary = summarise(S, a, b, plans[:, :1], plans, row_err=row_err, col_err=col_err,
                        cost=references.cost(plans, S), entropy=c.history.entropy.numpy(),
                        converged=np.maximum(row_err, col_err) <= tol, exact=exact)
    attention = softmax_attention(St[None] / torch.from_numpy(eps)[:, None, None], 1.0,
                                  check_inputs=False).numpy()
    return Lattice(eps=eps, steps=steps, plans=plans, attention=attention, row_err=row_err,
                   col_err=col_err, summary=summary, a=a, b=b, tol=float(tol))


def relation_lattice(r: Relation, eps, steps) -> Lattice:
    """:func:`lattice` of a single-head relation's scores, weights and exact plan."""
    if r.scores.ndim != 2:
        raise SettingsError("A lattice is for one layer and head; choose a head first.")
    return lattice(r.scores, r.a, r.b, eps, steps, exact=r.exact_plan)
