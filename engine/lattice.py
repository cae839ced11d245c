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

from dataclasses import dataclass

import numpy as np
import torch

from . import references
from .errors import SettingsError
from .relate import _exact_cached, summary_of
from .settings import DEFAULT_TOL
from .sinkhorn import check_eps, check_half_steps, check_weights, sinkhorn, softmax_attention
from .types import Relation, Summary


@dataclass(frozen=True)
class Lattice:
    """Sinkhorn plans of one score matrix over a grid of ε values × half-step counts.

    Attributes:
        eps: (E,) ε values, increasing.
        steps: (T,) half-step counts t, increasing, ``steps[0] == 1`` (softmax).
        plans: (E, T, n, m) π after ``steps[k]`` half-steps at ``eps[i]``, started from
            g = 0; ``plans[:, 0]`` is diag(a)·softmax(S/ε).
        attention: (E, n, m) softmax(S/ε), rows summing to 1 (rows of weight 0 included).
        row_err, col_err: (E, T) ‖π1 − a‖₁ and ‖πᵀ1 − b‖₁ of each frame.
        summary: the metrics strip's numbers, each an (E, T) array (``converged`` too).
        a: (n,) and b: (m,) the weights; tol: the tolerance ``converged`` was judged by.
    """

    eps: np.ndarray
    steps: np.ndarray
    plans: np.ndarray
    attention: np.ndarray
    row_err: np.ndarray
    col_err: np.ndarray
    summary: Summary
    a: np.ndarray
    b: np.ndarray
    tol: float

    @property
    def shape(self) -> tuple[int, int]:
        """(E, T): how many ε values and half-step counts the lattice holds."""
        return len(self.eps), len(self.steps)

    def index(self, eps: float, half_steps: int) -> tuple[int, int] | None:
        """(i, k) of the frame at exactly (ε, t), or None when the lattice does not hold it."""
        i = np.flatnonzero(np.isclose(self.eps, float(eps), rtol=1e-9, atol=0))
        k = np.flatnonzero(self.steps == int(half_steps))
        return (int(i[0]), int(k[0])) if i.size and k.size else None


def grid(eps_stops, step_stops, *, max_half_steps: int, max_eps_values: int = 61
         ) -> tuple[np.ndarray, np.ndarray]:
    """The (ε, t) values a lattice holds for sliders with these stops.

    Every half-step stop up to ``max_half_steps`` (the solver's cost grows with the
    largest), and every ε stop, thinned evenly to at most ``max_eps_values`` (the end
    points kept). Stops left out are computed on the server when a slider stops there.

    Returns:
        (eps (E,), steps (T,)), increasing; steps always starts at 1.
    """
    eps = np.unique(np.asarray(eps_stops, dtype=np.float64))
    if eps.size > max_eps_values:
        eps = eps[np.unique(np.linspace(0, eps.size - 1, max_eps_values).round().astype(int))]
    steps = np.unique(np.asarray(step_stops, dtype=np.int64))
    steps = np.union1d([1], steps[(steps >= 1) & (steps <= max(1, max_half_steps))])
    return eps, steps.astype(np.int64)


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
    exact = _exact_cached(S, a, b) if exact is None else np.asarray(exact, dtype=np.float64)
    summary = summary_of(S, a, b, plans[:, :1], plans, row_err=row_err, col_err=col_err,
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
