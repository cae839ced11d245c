"""The Learn walk-through's plans between its two clouds (:mod:`engine.lab.clouds`):
softmax, the Sinkhorn plan after t half-steps, the entropic coupling at ε and exact
transport, by the engine's own solver and POT's ``ot.emd`` (this module imports torch;
the clouds, their scores and ``received``/``sent``/``product`` do not, and are re-exported
here).
"""

from __future__ import annotations

import numpy as np

from ..solver import references
from ..solver.core import check_eps, sinkhorn, softmax_attention
from ..types import Coupling
from ..errors import SettingsError
from .clouds import (COSTS, EPS_PATH, FRAME, MAX_HALF_STEPS, PLANS, PRESETS,  # noqa: F401
                     SHIFT_MAX, SHIFT_MIN, TOL, WARM_HALF_STEPS, Clouds, ToyPlan, clouds,
                     product, received, scores, sent)


def softmax_plan(c: Clouds, eps: float = 1.0, cost: str = "distance") -> np.ndarray:
    """Softmax attention of A over B as a joint measure, (n, m).

    π⁽¹⁾ = diag(a)·softmax(S/ε): row i spreads aᵢ over B by closeness.
    """
    return c.a[:, None] * softmax_attention(scores(c, cost), eps)


def half_steps(c: Clouds, t: int, eps: float = 1.0, cost: str = "distance") -> Coupling:
    """The Sinkhorn plan after exactly ``t`` half-steps (1 = softmax), from g = 0.

    Odd half-steps rescale rows to a, even ones columns to b.
    """
    return sinkhorn(scores(c, cost), np.array(c.a), np.array(c.b), eps, t, tol=TOL)


def coupling(c: Clouds, eps: float = 1.0, cost: str = "distance", *,
             max_half_steps: int = MAX_HALF_STEPS, tol: float = TOL) -> Coupling:
    """The entropic coupling π_ε = argmin_{π ∈ Π(a, b)} ⟨C, π⟩ − ε H(π), (n, m).

    Solved by ε-scaling: first at each stop of :data:`EPS_PATH` above ``eps``,
    each start warmed by the last one's potentials, then at ``eps`` until both marginals
    are within ``tol`` (L1) or ``max_half_steps`` have run. The warm start adds f_i + g_j
    to the scores: a row term plus a column term, which leaves the coupling unchanged
    (see the module's docstring) and starts Sinkhorn next to its answer. Without it, the
    far cluster of "clusters" needs far more than 10⁴ half-steps at ε = 0.2.

    Returns:
        The :class:`Coupling` of the last solve: its plan, errors and ``converged`` are
        those of π_ε; its potentials, cost and entropy refer to the warmed scores
        (use :func:`engine.solver.references.cost` with :func:`scores` for ⟨C, π⟩).
    """
    eps = check_eps(eps)
    S = scores(c, cost)
    a, b = np.array(c.a), np.array(c.b)
    for e in [e for e in EPS_PATH if e > eps * (1 + 1e-9)]:
        warm = sinkhorn(S, a, b, e, WARM_HALF_STEPS, tol=tol, early_stop=True)
        S = S + warm.f[:, None] + warm.g[None, :]
    return sinkhorn(S, a, b, eps, max_half_steps, tol=tol, early_stop=True)


def exact(c: Clouds, cost: str = "distance") -> np.ndarray:
    """The exact optimal transport plan π* = argmin_{π ∈ Π(a, b)} ⟨C, π⟩ by ``ot.emd``, (n, m)."""
    return references.exact_plan(scores(c, cost), c.a, c.b)


def toy_plan(preset: str, shift: float = 0.0, kind: str = "softmax", *, t: int = 1,
             eps: float = 1.0, cost: str = "distance") -> ToyPlan:
    """One plan of the Learn walk-through between the preset's clouds (B moved by
    ``shift``): ``softmax`` (:func:`softmax_plan` at ε = 1), ``half_steps`` (the Sinkhorn
    plan after ``t`` half-steps at ε = 1, with its errors), ``coupling`` (:func:`coupling`
    at ``eps``, with its errors and whether it converged) or ``exact`` (:func:`exact`).

    Raises:
        SettingsError: an unknown preset, kind or cost, a shift out of range.
    """
    c = clouds(preset, shift)
    if kind == "softmax":
        return ToyPlan(c, kind, softmax_plan(c, 1.0, cost))
    if kind == "half_steps":
        k = half_steps(c, t, 1.0, cost)
        return ToyPlan(c, kind, k.plan, t=int(t), row_err=float(k.row_err[-1]),
                       col_err=float(k.col_err[-1]))
    if kind == "coupling":
        k = coupling(c, eps, cost)
        return ToyPlan(c, kind, k.plan, eps=float(eps), row_err=float(k.row_err[-1]),
                       col_err=float(k.col_err[-1]), converged=bool(k.converged))
    if kind == "exact":
        return ToyPlan(c, kind, exact(c, cost))
    raise SettingsError(f"plan must be one of {', '.join(PLANS)}; got {kind!r:.60}.")
