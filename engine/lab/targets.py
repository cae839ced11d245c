"""Coupling systems to learn: functions (μ, ν) ↦ π ∈ Π(μ, ν), each with exact marginals.

- ``sq-euclid``: entropic optimal transport for the cost ½‖x − y‖² at ε = ``TARGET_EPS``.
- ``exact``: unregularised optimal transport for the same cost (POT's ``ot.emd``).
- ``whitened``: entropic OT between the clouds after each is centred at its mean and
  divided by its own spread, x̃ = (x − m_μ)/s_μ with s_μ² = Σᵢ aᵢ‖xᵢ − m_μ‖². Which atoms
  pair up depends on the whole of each cloud: a per-atom encoder cannot know m_μ or s_μ.
- ``quantile``: the monotone (quantile) coupling of the clouds' projections on their own
  principal axes; it is not optimal for any cost of the form c(x − y).
- a user's own: :func:`custom_target` wraps any Python function returning a coupling and
  checks its marginals.

Every plan is finished by the rounding of Altschuler, Weed and Rigollet (NeurIPS 2017) onto
Π(a, b), so both marginals hold to rounding error (≈ 1e-16), not to a solver's tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .errors import LabError, TargetError
from .measures import Pairs

TARGET_EPS = 0.1  # ε of the entropic targets
MARGINAL_TOL = 1e-6  # L1 tolerance for a user's coupling before rounding
NAMES = ("sq-euclid", "exact", "whitened", "quantile")
DEFAULT_TARGET = "whitened"


@dataclass(frozen=True)
class Target:
    """A coupling system F(μ, ν) ∈ Π(μ, ν) evaluated on batches of pairs.

    Attributes:
        name: a short name ("sq-euclid", ... or a user's).
        plans: a function of :class:`Pairs` returning (B, n, m) couplings.
        description: one line on what it is.
    """

    name: str
    plans: Callable[[Pairs], np.ndarray]
    description: str = ""

    def __call__(self, pairs: Pairs) -> np.ndarray:
        return self.plans(pairs)


def sq_cost(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C_ij = ½‖xᵢ − yⱼ‖² for x (..., n, 2), y (..., m, 2): (..., n, m)."""
    return 0.5 * ((x[..., :, None, :] - y[..., None, :, :]) ** 2).sum(-1)


def round_to_marginals(P: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Round nonnegative plans onto Π(a, b) in float64 (Altschuler–Weed–Rigollet,
    Algorithm 2; :func:`engine.lab.nets.round_to_coupling`).

    Args:
        P: (B, n, m) plans ≥ 0, already close to Π(a, b). a: (B, n). b: (B, m).

    Returns:
        (B, n, m) couplings with both marginals exact.
    """
    import torch

    from .nets import round_to_coupling

    t = [torch.as_tensor(np.asarray(x, dtype=np.float64)) for x in (P, a, b)]
    return round_to_coupling(*t).numpy()


def entropic_plans(C: np.ndarray, a: np.ndarray, b: np.ndarray, eps: float, *,
                   tol: float = 1e-6, max_iter: int = 3000) -> np.ndarray:
    """Entropic OT plans by the engine's Sinkhorn in float64, ε-annealed, then rounded.

    π = argmin_{π ∈ Π(a, b)} ⟨C, π⟩ − ε H(π). C: (B, n, m); a: (B, n); b: (B, m) > 0.
    ε is annealed from the costs' scale down to ``eps`` (:func:`engine.solver.core.
    anneal_schedule`, five iterations per value, warm-started potentials), then the problems
    not yet within ``tol`` (L1 marginal error) iterate on, warm-started from their own g. If
    ``max_iter`` iterations are reached (tiny ε for the costs) the rounding still gives
    exact marginals; raise ε or ``max_iter`` for the exact entropic plan.
    """
    import torch

    from ..solver.core import anneal_schedule, sinkhorn

    C, a, b = (torch.as_tensor(np.asarray(x, dtype=np.float64)) for x in (C, a, b))
    scale = float(C.amax()) if C.numel() else eps
    c = sinkhorn(-C, a, b, eps, 20, tol=tol, anneal=anneal_schedule(scale, eps))
    plan, g = c.plan.clone(), c.g.clone()
    active = (~c.converged).nonzero().squeeze(-1)
    for _ in range(10, max_iter, 10):  # the problems not yet within tol, 10 iterations a round
        if active.numel() == 0:
            break
        c = sinkhorn(-C[active], a[active], b[active], eps, 20, tol=tol, g_init=g[active],
                     check_inputs=False)
        plan[active], g[active] = c.plan, c.g
        active = active[~c.converged]
    return round_to_marginals(plan.numpy(), a.numpy(), b.numpy())


def whiten(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """(x − m)/s per cloud, m = Σ aᵢxᵢ, s² = Σ aᵢ‖xᵢ − m‖². x: (B, n, 2), a: (B, n)."""
    m = (a[..., None] * x).sum(-2, keepdims=True)
    s = np.sqrt((a * ((x - m) ** 2).sum(-1)).sum(-1))[..., None, None]
    return (x - m) / np.maximum(s, 1e-12)


def _principal(x: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m = (a[..., None] * x).sum(-2, keepdims=True)
    d = x - m
    cov = np.einsum("bn,bni,bnj->bij", a, d, d)
    _, vecs = np.linalg.eigh(cov)
    return d, vecs[..., :, -1]  # (B, n, 2), (B, 2)


def quantile_plans(pairs: Pairs) -> np.ndarray:
    """The monotone coupling of ⟨xᵢ − m_μ, v_μ⟩ and ⟨yⱼ − m_ν, v_ν⟩ (north-west corner).

    v_μ is μ's principal axis, turned to point right (v₁ ≥ 0); v_ν is turned to agree
    with v_μ (⟨v_μ, v_ν⟩ ≥ 0). The plan sends the lowest quantiles of μ's projection to
    the lowest of ν's: the quantile coupling, F_μ⁻¹ and F_ν⁻¹ on a common u ∈ [0, 1].
    """
    dx, vx = _principal(pairs.x, pairs.a)
    dy, vy = _principal(pairs.y, pairs.b)
    vx = vx * np.where(vx[:, :1] >= 0, 1.0, -1.0)
    vy = vy * np.where((vx * vy).sum(-1, keepdims=True) >= 0, 1.0, -1.0)
    tx = np.einsum("bni,bi->bn", dx, vx)
    ty = np.einsum("bmi,bi->bm", dy, vy)
    B, n, m = len(pairs), pairs.x.shape[1], pairs.y.shape[1]
    P = np.zeros((B, n, m))
    for k in range(B):
        ix, iy = np.argsort(tx[k], kind="stable"), np.argsort(ty[k], kind="stable")
        ca = np.concatenate([[0.0], np.cumsum(pairs.a[k][ix])])
        cb = np.concatenate([[0.0], np.cumsum(pairs.b[k][iy])])
        ca[-1] = cb[-1] = 1.0
        for i in range(n):
            lo = np.maximum(ca[i], cb[:-1])
            hi = np.minimum(ca[i + 1], cb[1:])
            P[k, ix[i], iy] = np.maximum(hi - lo, 0.0)
    return round_to_marginals(P, pairs.a, pairs.b)


def _sq_euclid(pairs: Pairs) -> np.ndarray:
    return entropic_plans(sq_cost(pairs.x, pairs.y), pairs.a, pairs.b, TARGET_EPS)


def _exact(pairs: Pairs) -> np.ndarray:
    import ot

    C = sq_cost(pairs.x, pairs.y)
    P = np.stack([ot.emd(pairs.a[k], pairs.b[k], C[k]) for k in range(len(pairs))])
    return round_to_marginals(P, pairs.a, pairs.b)


def _whitened(pairs: Pairs) -> np.ndarray:
    C = sq_cost(whiten(pairs.x, pairs.a), whiten(pairs.y, pairs.b))
    return entropic_plans(C, pairs.a, pairs.b, TARGET_EPS)


TARGETS: dict[str, Target] = {
    "sq-euclid": Target("sq-euclid", _sq_euclid,
                        f"entropic OT for ½‖x − y‖² at ε = {TARGET_EPS:g}"),
    "exact": Target("exact", _exact, "exact OT for ½‖x − y‖² (ot.emd)"),
    "whitened": Target("whitened", _whitened,
                       "entropic OT of the clouds, each centred and scaled by its own spread"),
    "quantile": Target("quantile", quantile_plans,
                       "quantile coupling along each cloud's principal axis"),
}


def get_target(target: "str | Target") -> Target:
    """A target by name, or the :class:`Target` given; unknown names say the choices."""
    if isinstance(target, Target):
        return target
    if target not in TARGETS:
        raise LabError(f"Unknown target {target!r}: choose one of {', '.join(NAMES)}, "
                       "or wrap your own function with custom_target.")
    return TARGETS[target]


def check_plans(P, pairs: Pairs, *, tol: float = MARGINAL_TOL, name: str = "target") -> np.ndarray:
    """Check that P (B, n, m) holds couplings of the pairs' weights; return them rounded.

    Raises:
        TargetError: wrong shape, NaN or negative entries, or an L1 marginal error above
            ``tol`` (the message names the pair and both errors).
    """
    B, n, m = len(pairs), pairs.x.shape[1], pairs.y.shape[1]
    P = np.asarray(P, dtype=np.float64)
    if P.shape != (B, n, m):
        raise TargetError(f"{name} must return plans of shape (n, m) = ({n}, {m}) for each "
                          f"pair, got {P.shape[1:] if P.ndim == 3 else P.shape}.")
    if not np.isfinite(P).all():
        raise TargetError(f"{name} returned NaN or infinite mass: return finite plans.")
    if (P < -tol).any():
        raise TargetError(f"{name} returned negative mass ({P.min():.3g}): a coupling is ≥ 0.")
    row = np.abs(P.sum(-1) - pairs.a).sum(-1)
    col = np.abs(P.sum(-2) - pairs.b).sum(-1)
    k = int(np.argmax(np.maximum(row, col)))
    if max(row[k], col[k]) > tol:
        raise TargetError(
            f"{name} is not a coupling of the two clouds: on pair {k} its row sums miss a by "
            f"{row[k]:.3g} and its column sums miss b by {col[k]:.3g} (L1; at most {tol:g} "
            "allowed). Return π with π·1 = a and πᵀ·1 = b, e.g. by finishing with "
            "round_to_marginals.")
    return round_to_marginals(P, pairs.a, pairs.b)


def custom_target(fn: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray],
                  name: str = "custom", *, tol: float = MARGINAL_TOL) -> Target:
    """A user's coupling system: ``fn(x, a, y, b) -> plan`` for one pair, checked.

    Args:
        fn: takes x (n, 2), a (n,), y (m, 2), b (m,) and returns an (n, m) coupling of a
            and b (π ≥ 0, π·1 = a, πᵀ·1 = b to within ``tol`` in L1).
        name: a name to show. tol: marginal tolerance before the plan is rounded.

    Returns:
        A :class:`Target` whose plans raise :class:`TargetError` if ``fn`` does not return
        couplings.
    """
    if not callable(fn):
        raise TargetError(f"custom_target needs a function fn(x, a, y, b) -> plan, got {fn!r}.")

    def plans(pairs: Pairs) -> np.ndarray:
        try:
            P = np.stack([np.asarray(fn(pairs.x[k], pairs.a[k], pairs.y[k], pairs.b[k]),
                                     dtype=np.float64) for k in range(len(pairs))])
        except TargetError:
            raise
        except Exception as e:  # the user's code: say where it failed
            raise TargetError(f"{name} failed on a pair: {type(e).__name__}: {e}") from e
        return check_plans(P, pairs, tol=tol, name=name)

    return Target(name, plans, "a user's coupling system")
