"""Softmax attention and batched entropic transport on score matrices.

The cost is C = −S for scores S (higher = more related). Every solver here accepts numpy
arrays or torch tensors of any float dtype with leading batch dimensions (..., n, m), and
returns the same kind of array it was given.

The solver has OTT-JAX's shape: a checked :class:`Problem` (S, a, b, ε and the marginal
update that says which transport problem it is), an initial :class:`State`, one half-step
(:func:`half_step`: a row update or a column update), and the output read off the state
(:func:`output`). The three problems differ only in the marginal update, one small
function each (in units of the potentials over ε, α = f/ε, with lse_i = LSE_j(S_ij/ε + β_j)):

- balanced (:func:`sinkhorn`):     α ← log a − lse                       (π1 = a)
- KL-relaxed (``tau``):            α ← τ/(τ+ε) · (log a − lse)           (Chizat et al. 2018)
- partial (:func:`partial`):       α ← min(0, log a − lse − κ), κ so that Σπ = m (π1 ≤ a)

Balanced problems also have a kernel-domain fast path (matrix–vector scaling, stabilised
by absorbing large scalings into the potentials) that gives the same iterates; so do
KL-relaxed ones, with the scalings raised to the power ρ.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any, Callable

import numpy as np
import torch

from ..errors import SettingsError
from ..settings import EPS_MAX, EPS_MIN, HALF_STEPS_CAP, check_eps, check_half_steps  # noqa: F401
from ..types import Coupling, History
from . import references
from .cancel import poll, scope
from .checks import (_as_tensor, _broadcast, _check_eps_values, _check_tau_values, _parameter,
                     check_weights)
from .kernel import _absorb, _kernel_block


def softmax_attention(S: Any, eps: float = 1.0, *, check_inputs: bool = True) -> Any:
    """Row-stochastic softmax attention at temperature ε.

    P_ij = exp(S_ij / ε) / Σ_k exp(S_ik / ε).

    Args:
        S: (..., n, m) scores, numpy or torch.
        eps: temperature ε > 0; ε = 1 is the model's own attention for S = QKᵀ/√d.
        check_inputs: validate ε and the shape (disable only on checked data).

    Returns:
        (..., n, m) rows summing to 1, the same kind of array as S.
    """
    t = _as_tensor(S)
    if check_inputs:
        eps = check_eps(eps)
        if t.shape[-1] == 0:
            raise SettingsError("The scores have no columns: text B has no tokens.")
    P = torch.softmax(t / eps, dim=-1)
    return P if isinstance(S, torch.Tensor) else P.cpu().numpy()


# ---- the public solvers ----------------------------------------------------------------

def sinkhorn(
    S: Any,
    a: Any,
    b: Any,
    eps: Any = 1.0,
    half_steps: int = 200,
    *,
    tau: Any = None,
    tol: float = 1e-6,
    early_stop: bool = False,
    method: str = "auto",
    block: int = 50,
    record: Any = None,
    record_plans: bool = False,
    g_init: Any = None,
    anneal: Any = None,
    anneal_half_steps: int = 10,
    check_inputs: bool = True,
    cancel: Any = None,
) -> Coupling:
    """Entropic optimal transport between a and b for cost −S, by Sinkhorn half-steps.

    π = argmin_{π ∈ Π(a, b)} ⟨−S, π⟩ − ε H(π), with π_ij = exp((f_i + g_j + S_ij)/ε).
    Half-steps alternate a row normalisation (odd) and a column normalisation (even),
    starting from g = 0, so half-step 1 is exactly diag(a)·softmax(S/ε).

    With a finite ``tau`` the marginals are relaxed (unbalanced transport):
    π = argmin_{π ≥ 0} ⟨−S, π⟩ − ε H(π) + τ KL(π1 ‖ a) + τ KL(πᵀ1 ‖ b), with the generalised
    KL(p ‖ q) = Σ p log(p/q) − p + q and H(π) = −Σ π (log π − 1) (the entropy the output
    then reports; balanced, it reports −Σ π log π: the two differ by the mass Σ π); each
    update is the balanced one damped by τ/(τ + ε) (Chizat et al. 2018). τ → ∞ is the
    balanced plan.

    Args:
        S: (..., n, m) scores; cost is −S. numpy or torch, float32 or float64.
        a: (..., n) or (n,) weights ≥ 0 summing to 1 (zeros allowed: those rows get 0);
            with a finite ``tau`` any total > 0.
        b: (..., m) or (m,) weights ≥ 0 summing to 1 (any total > 0 with ``tau``).
        eps: entropy ε > 0, one value or an array broadcastable to the batch dimensions
            (one ε per problem). Smaller ε is closer to exact transport but needs more steps.
        half_steps: how many half-steps to run (the most, with ``early_stop``).
        tau: KL strength τ of the marginal relaxation: None or math.inf for balanced
            transport; a float > 0, or an array broadcastable to the batch dimensions (e.g.
            (T, 1) for T values over a batch of problems, giving a (T, ...) batch).
        tol: tolerance on the final residuals for ``converged`` (and for ``early_stop``).
        early_stop: stop once every problem in the batch is within ``tol`` (balanced:
            judged on the state before the last; relaxed: on the last state itself).
        method: "log" (log-domain logsumexp steps) or "auto" (stabilised kernel scaling
            with matrix–vector products, u ← a / K v, relaxed u ← (a / K v)^ρ e^{(ρ−1)α},
            falling back to log steps where it would under- or overflow; the same
            iterates to rounding, several times faster).
        block: half-steps between stability checks in "auto".
        record: half-steps t (1-based) after which to record the plan's cost ⟨−S, π_t⟩
            and entropy H(π_t) into ``Coupling.history``; None records nothing.
        record_plans: also keep the plans π_t at those half-steps in
            ``Coupling.history.plans`` (..., K, n, m), e.g. to show every frame of a
            slider without solving once per frame. Memory grows with K·n·m.
        g_init: (..., m) initial column potential g (score units; −inf allowed where
            b = 0), e.g. a previous coupling's ``g`` to warm-start a nearby problem; half-
            step 1 is then diag(a)·softmax((S + g)/ε), no longer softmax. None: g = 0.
        anneal: ε-annealing (ε-scaling, as in GeomLoss): larger ε values, largest first
            (e.g. :func:`anneal_schedule`), each run for ``anneal_half_steps`` half-steps
            from the potentials of the one before; the run at ``eps`` then starts from
            the last g (warm start) instead of g = 0. The plan is the same (to ``tol``);
            how many half-steps it saves depends on the problem (the late, linear phase
            of small ε is not shortened). The residuals, history and ``half_steps_run``
            are those of the run at ``eps`` (half-step 1 is then no longer softmax).
            None: no annealing.
        anneal_half_steps: half-steps at each annealing ε (even: each ends on the columns).
        check_inputs: validate ε, τ, a and b (disable only in tight loops on checked data).
        cancel: a :class:`engine.solver.cancel.Token` polled between blocks of half-steps
            (its deadline or a cancel stops the solve with an exception); None: the token
            of the caller's ``cancel.scope``, if any.

    Returns:
        A :class:`Coupling` with the plan, potentials and per-half-step residuals. Balanced,
        ``row_err``/``col_err`` are the L1 marginal errors ‖π1 − a‖₁, ‖πᵀ1 − b‖₁; relaxed,
        they are fixed-point residuals ‖π1 − ã‖₁, where ã = a^ρ (Σ_j e^{(g_j+S_ij)/ε})^{1−ρ},
        ρ = τ/(τ+ε), is the row marginal one more row update would give (0 at the optimum).
        If it did not converge (``converged`` False), run more half-steps or raise ε;
        below ε ≈ 0.05 on real model scores it can take thousands of half-steps. A small
        τ converges faster than a large one (the damping ρ is further from 1).

    References:
        Cuturi, "Sinkhorn distances", NeurIPS 2013; Schmitzer, "Stabilized sparse scaling
        algorithms for entropy regularized transport problems", SIAM J. Sci. Comput. 2019;
        Chizat, Peyré, Schmitzer, Vialard, "Scaling algorithms for unbalanced optimal
        transport problems", Math. Comp. 2018.
    """
    if method not in ("auto", "log"):
        raise SettingsError(f"method must be 'auto' or 'log', got {method!r}.")
    with _polling(cancel):
        return _solve(S, a, b, eps, half_steps, tau=tau, mass=None, tol=tol,
                      early_stop=early_stop, method=method, block=block, record=record,
                      record_plans=record_plans, check_inputs=check_inputs, g_init=g_init,
                      anneal=anneal, anneal_half_steps=anneal_half_steps)


def anneal_schedule(scale: float, eps: float, *, factor: float = 0.5) -> tuple[float, ...]:
    """The ε values an annealed solve runs before ``eps``: scale, scale·factor, … > eps.

    ε_k = scale · factor^k for every k with ε_k > eps (empty when scale ≤ eps); the
    scale of the scores, e.g. max |S|, is a good first value. Pass the result as
    ``sinkhorn(..., anneal=...)``.
    """
    if not (0 < factor < 1):
        raise SettingsError(f"factor must lie in (0, 1), got {factor!r}; try 0.5.")
    eps, e, out = check_eps(eps), float(scale), []
    while e > eps:
        out.append(e)
        e *= factor
    return tuple(out)


def log_plan(S: torch.Tensor, a: torch.Tensor, b: torch.Tensor, eps: float, half_steps: int,
             *, start: str = "zero") -> torch.Tensor:
    """log π after ``half_steps`` balanced log-domain half-steps, differentiable.

    log π_ij = S_ij/ε + α_i + β_j after the same half-steps as :func:`sinkhorn` (one
    :func:`step` each), unrolled with no in-place operation and no ``no_grad``, so
    autograd differentiates through every half-step (as a trained Sinkhorn layer needs).

    Args:
        S: (..., n, m) float scores (cost −S); a: (..., n), b: (..., m) weights ≥ 0
            (zeros allowed: those rows and columns get log π = −∞). Not checked: the
            caller's data is.
        eps: ε > 0 (a float). half_steps: ≥ 1.
        start: "zero" starts from g = 0, so half-step 1 is diag(a)·softmax(S/ε) (the
            engine's identity); "b" from g = ε log b, so half-step 1 is
            diag(a)·softmax_j(S/ε + log b), attention over the measure ν. Both converge
            to the same plan of Π(a, b).

    Returns:
        (..., n, m) log-plan tensor. If the rows are far from a, give more half-steps or
        a larger ε.
    """
    if start not in ("zero", "b"):
        raise SettingsError(f"start must be 'zero' or 'b', got {start!r}.")
    half_steps = check_half_steps(half_steps)
    St = _as_tensor(S)
    at = _as_tensor(a, dtype=St.dtype, device=St.device)
    bt = _as_tensor(b, dtype=St.dtype, device=St.device)
    n, m = St.shape[-2:]
    batch = torch.broadcast_shapes(St.shape[:-2], at.shape[:-1], bt.shape[:-1])
    P = _problem(St, at, bt, check_eps(eps), math.inf, None, batch, False)
    st = init_state(P, P.log_b if start == "b" else None)
    for _ in range(half_steps):
        st = step(P, st)
    return st.log_plan(P).reshape(*batch, n, m)


def partial(
    S: Any,
    a: Any,
    b: Any,
    eps: Any = 1.0,
    mass: Any = None,
    *,
    half_steps: int = 1000,
    tol: float = 1e-6,
    early_stop: bool = False,
    record: Any = None,
    record_plans: bool = False,
    check_inputs: bool = True,
    cancel: Any = None,
) -> Coupling:
    """Entropic partial transport: move only mass m between a and b for cost −S.

    π = argmin ⟨−S, π⟩ − ε H(π) over π ≥ 0 with π1 ≤ a, πᵀ1 ≤ b, Σ_ij π_ij = m, solved
    by block coordinate ascent on its dual in the log domain: π_ij = exp(S_ij/ε + α_i +
    β_j + κ) with α, β ≤ 0 the multipliers of π1 ≤ a, πᵀ1 ≤ b (α_i < 0 only where row i
    is saturated, π1_i = a_i) and κ the one of Σπ = m; here H(π) = −Σ π (log π − 1), the
    entropy the output reports (H(π) + m against −Σ π log π). A row half-step maximises the dual
    over (α, κ) together: with lse_i = LSE_j(S_ij/ε + β_j), κ is the level where
    Σ_i min(a_i, e^{κ + lse_i}) = m (water-filling, by sorting) and α = min(0, log a −
    lse − κ); a column half-step likewise. Its fixed point is the plan of Benamou et al.'s
    Bregman–Dykstra projections (POT's ``entropic_partial_wasserstein``). The reported f
    is ε(α + κ), g is ε β.

    Args:
        S: (..., n, m) scores; cost is −S. numpy or torch, float32 or float64.
        a: (..., n) or (n,) weights ≥ 0 (any total > 0; zeros allowed: those rows get 0).
        b: (..., m) or (m,) weights ≥ 0.
        eps: entropy ε > 0, one value or an array broadcastable to the batch dimensions.
        mass: the mass m to move, 0 < m ≤ min(Σa, Σb): one value or an array
            broadcastable to the batch dimensions. None moves min(Σa, Σb) (balanced when
            both totals are equal).
        half_steps: how many half-steps to run (the most, with ``early_stop``).
        tol: tolerance on the final residuals for ``converged`` (and ``early_stop``).
        early_stop: stop once every problem in the batch is within ``tol``.
        record, record_plans, check_inputs, cancel: as for :func:`sinkhorn`.

    Returns:
        A :class:`Coupling` (``mass`` set) whose plan has total mass m after every
        half-step; ``row_err``/``col_err`` are the fixed-point residuals ‖π1 − r‖₁ with
        r the row marginal one more row half-step would give (0 right after a row
        half-step and at the optimum). If it did not converge, run more half-steps or
        raise ε; it converges about as fast as balanced Sinkhorn at the same ε.

    References:
        Benamou, Carlier, Cuturi, Nenna, Peyré, "Iterative Bregman projections for
        regularized transportation problems", SIAM J. Sci. Comput. 2015; Chapel, Alaya,
        Gasso, "Partial optimal transport with applications on positive-unlabeled
        learning", NeurIPS 2020.
    """
    with _polling(cancel):
        return _solve(S, a, b, eps, half_steps, tau=None, mass=mass, tol=tol,
                      early_stop=early_stop, method="log", block=50, record=record,
                      record_plans=record_plans, check_inputs=check_inputs, partial=True)


def _polling(cancel: Any):
    """The cancel scope of one solve: ``cancel`` when given, else the caller's own."""
    return scope(cancel) if cancel is not None else contextlib.nullcontext()


def _solve(S, a, b, eps, half_steps, *, tau, mass, tol, early_stop, method, block, record,
           record_plans, check_inputs, partial=False, g_init=None, anneal=None,
           anneal_half_steps=10) -> Coupling:
    """Check and flatten the problem, solve it on the rows with weight (when a is one
    vector with zeros) and give back the kind of array S was."""
    St = _as_tensor(S)
    if St.dim() < 2:
        raise SettingsError(f"S must have shape (..., n, m), got {tuple(St.shape)}.")
    n, m = St.shape[-2], St.shape[-1]
    if n == 0 or m == 0:
        raise SettingsError("Both texts need at least one token to relate.")
    dtype, device = St.dtype, St.device
    at = _as_tensor(a, dtype=dtype, device=device)
    bt = _as_tensor(b, dtype=dtype, device=device)
    eps_v = _parameter(eps, "ε", dtype, device)
    tau_v = math.inf if tau is None else _parameter(tau, "tau", dtype, device)
    mass_v = None if mass is None else _parameter(mass, "mass", dtype, device)
    balanced_w = not partial and isinstance(tau_v, float) and tau_v == math.inf
    if check_inputs:
        eps_v = _check_eps_values(eps_v)
        tau_v = _check_tau_values(tau_v)
        half_steps = check_half_steps(half_steps)
        if not torch.isfinite(St).all():
            raise SettingsError("The scores hold NaN or infinite values.")
        check_weights(at, "a", n, normalised=balanced_w)
        check_weights(bt, "b", m, normalised=balanced_w)
    base = (St.shape[:-2], at.shape[:-1], bt.shape[:-1])
    batch = torch.broadcast_shapes(*base)
    for name, v in (("ε", eps_v), ("tau", tau_v), ("mass", mass_v)):
        if isinstance(v, torch.Tensor):
            batch = _broadcast(name, v.shape, batch)
    if partial:
        top = torch.minimum(at.sum(-1), bt.sum(-1))
        mass_v = _check_mass(mass_v, top, batch) if check_inputs or mass_v is None else mass_v
    steps = () if record is None else tuple(sorted(
        {int(t) for t in np.asarray(record).ravel() if 1 <= int(t) <= half_steps}))
    args = (int(half_steps), float(tol), early_stop, method, block, steps, record is not None,
            bool(record_plans), _out(tau_v, batch), _out(mass_v, batch))
    schedule = ()
    if anneal is not None:
        schedule = [_parameter(e, "anneal ε", dtype, device) for e in np.ravel(anneal)] \
            if not isinstance(anneal, torch.Tensor) else list(anneal.to(dtype).unbind(0))
        if check_inputs:
            schedule = [_check_eps_values(e) for e in schedule]
            anneal_half_steps = check_half_steps(anneal_half_steps)

    g0 = None
    if g_init is not None:
        gt = _as_tensor(g_init, dtype=dtype, device=device)
        if gt.dim() == 0 or gt.shape[-1] != m:
            raise SettingsError(f"g_init must have one potential per column of the scores "
                                f"(..., {m}), got shape {tuple(gt.shape)}.")
        if torch.isnan(gt).any() or (gt == math.inf).any():
            raise SettingsError("g_init holds NaN or +inf; give finite potentials (−inf only "
                                "where b = 0), e.g. a previous coupling's g.")
        try:
            g0 = gt.expand(*batch, m).reshape(-1, 1, m)
        except RuntimeError:
            raise SettingsError(f"g_init has shape {tuple(gt.shape)}, which does not broadcast "
                                f"to the problems' {(*batch, m)}; give (m,) or (..., m).") from None

    def solve(St, at) -> Coupling:
        """Anneal (if asked) from g_init (or 0), then solve at ε from the last g."""
        g = g0  # (B, 1, m) in score units, or None for g = 0
        for e in schedule:  # ε-annealing: each ε's g warm-starts the next
            Pe = _problem(St, at, bt, e, tau_v, mass_v, batch, partial)
            st = init_state(Pe, None if g is None else g / Pe.eps)
            for _ in range(int(anneal_half_steps)):
                st = step(Pe, st)
            g = st.beta * Pe.eps
        P = _problem(St, at, bt, eps_v, tau_v, mass_v, batch, partial)
        return _run(P, *args, beta=None if g is None else g / P.eps)

    if at.dim() == 1 and (at == 0).any():
        # One row support for the whole batch: solve on it and put zero rows back. (Zero
        # columns stay: half-step 1 is softmax over all of B, zero weights included.)
        ia = at.nonzero().squeeze(-1)
        out = _scatter_rows(solve(St.index_select(-2, ia), at[ia]), ia, n)
    else:
        out = solve(St, at)
    return out if isinstance(S, torch.Tensor) else to_numpy(out)


def _check_mass(mass, top: torch.Tensor, batch) -> float | torch.Tensor:
    """The mass m to move, 0 < m ≤ min(Σa, Σb) for every problem; None → min(Σa, Σb)."""
    if mass is None:
        return top if top.dim() else float(top)
    mt = torch.as_tensor(mass, dtype=top.dtype, device=top.device)
    if torch.isnan(mt).any() or (mt <= 0).any():
        raise SettingsError("mass (the share of mass to move) must be > 0, e.g. mass=0.8.")
    slack = 1e-5 if top.dtype == torch.float32 else 1e-10
    if (mt > top * (1 + slack)).any():
        raise SettingsError(f"mass must be at most min(Σa, Σb) = {float(top.min()):.6g} (the "
                            f"smaller total weight); lower it, e.g. mass=0.8 × that.")
    return mass


def _out(v, batch) -> Any:
    """A setting as it goes into the Coupling: a float, or a (...) tensor over the batch."""
    if isinstance(v, torch.Tensor):
        return v.expand(batch).clone()
    return v


def _flat(v, batch) -> Any:
    """A setting as a float, or as (B, 1, 1) over the flattened batch."""
    if isinstance(v, torch.Tensor):
        return v.expand(batch).reshape(-1, 1, 1)
    return v


def _problem(St, at, bt, eps, tau, mass, batch, partial) -> Problem:
    """The flattened Problem: S (B, n, m), a (B, n, 1), b (B, 1, m), settings (B, 1, 1)."""
    n, m = St.shape[-2:]
    Sf = St.expand(*batch, n, m).reshape(-1, n, m)
    a = at.expand(*batch, n).reshape(-1, n, 1)
    b = bt.expand(*batch, m).reshape(-1, 1, m)
    eps = _flat(eps, batch)
    if partial:
        update, rho = capped, 1.0
        log_m = torch.log(torch.as_tensor(_flat(mass, batch), dtype=St.dtype,
                                          device=St.device)).expand(Sf.shape[0], 1, 1)
    else:
        log_m = None
        tau = _flat(tau, batch)
        if isinstance(tau, torch.Tensor):
            rho = torch.where(torch.isinf(tau), 1.0, tau / (tau + eps))
            update = relaxed
        elif tau < math.inf:
            rho = tau / (tau + eps)
            update = relaxed
        else:
            rho, update = 1.0, balanced
    return Problem(S=Sf, Se=Sf / eps, eps=eps, a=a, log_a=a.log(), b=b, log_b=b.log(),
                   update=update, rho=rho, log_m=log_m, batch=torch.Size(batch))


def to_numpy(c: Coupling) -> Coupling:
    """The same coupling with every tensor (history included) as a numpy array."""
    return c.apply(lambda v: v.cpu().numpy() if isinstance(v, torch.Tensor) else v)


def _scatter_rows(c: Coupling, ia: torch.Tensor, n: int) -> Coupling:
    """Embed a coupling solved on the rows ia back into (..., n, m) with zero rows."""
    def rows(x: torch.Tensor) -> torch.Tensor:
        out = x.new_zeros(*x.shape[:-2], n, x.shape[-1])
        out[..., ia, :] = x
        return out

    f = c.f.new_full((*c.plan.shape[:-2], n), -math.inf)
    f[..., ia] = c.f
    history = c.history
    if history is not None and history.plans is not None:
        history = dataclasses.replace(history, plans=rows(history.plans))
    return dataclasses.replace(c, plan=rows(c.plan), f=f, history=history)


def _cost_entropy(log_plan: torch.Tensor, S: torch.Tensor, keep_plan: bool = False,
                  relaxed: Any = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(⟨−S, π⟩, entropy, π or None) of plans given by their logs, (..., n, m) → (...);
    the entropy is :func:`references.entropy`'s, H₁ for the problems ``relaxed`` marks."""
    plan = torch.exp(log_plan)
    cost = -(plan * S).sum((-2, -1))
    return cost, references.entropy(plan, log_plan, relaxed=relaxed), (plan if keep_plan else None)


def _relaxed(P: Problem) -> Any:
    """Which problems have a relaxed objective (entropy H₁): False (balanced), True
    (partial, or one finite τ), or (B,) booleans for an array of τ (inf: balanced)."""
    if P.update is balanced:
        return False
    if P.update is capped or not isinstance(P.rho, torch.Tensor):
        return True
    return (P.rho < 1).reshape(-1)


# ---- the marginal update: the one function that tells the three problems apart --------
#
# update(P, log_w, w, lse) → (x, kappa): the new potential x (over ε) of one side from the
# log-sum-exp lse over the other side's potential, lse_i = LSE_j(S_ij/ε + β_j) for rows;
# kappa is the new log-mass scaling of partial transport (None for the others). The
# side's marginal afterwards is exp(x + lse (+ kappa)).

def balanced(P: Problem, log_w: torch.Tensor, w: torch.Tensor, lse: torch.Tensor):
    """Balanced update, π1 = a: α = log a − lse."""
    return log_w - lse, None


def relaxed(P: Problem, log_w: torch.Tensor, w: torch.Tensor, lse: torch.Tensor):
    """KL-relaxed update of strength τ: α = ρ (log a − lse), ρ = τ/(τ + ε)."""
    return P.rho * (log_w - lse), None


def capped(P: Problem, log_w: torch.Tensor, w: torch.Tensor, lse: torch.Tensor):
    """Partial-transport update, π1 ≤ a and Σπ = m, exact over (α ≤ 0, κ) together:
    α = min(0, log a − lse − κ) with κ the level where Σ_i min(a_i, e^{κ + lse_i}) = m."""
    kappa = _mass_level(log_w, w, lse, P.log_m)
    return torch.clamp(log_w - lse - kappa, max=0.0), kappa


def _mass_level(log_w: torch.Tensor, w: torch.Tensor, lse: torch.Tensor,
                log_m: torch.Tensor) -> torch.Tensor:
    """κ = log s with Σ_i min(w_i, s e^{lse_i}) = m (water-filling), (B, 1, 1).

    F(s) = Σ_i min(w_i, s e^{lse_i}) is continuous and nondecreasing; rows saturate
    (s e^{lse_i} ≥ w_i) in the order of their thresholds t_i = w_i e^{−lse_i}. With the
    thresholds sorted, F(t_(k)) = Σ_{i<k} w_(i) + t_(k) Σ_{i≥k} e^{lse_(i)}; the first k*
    thresholds have F ≤ m, and on [t_(k*−1), t_(k*)] F is linear, which gives s.
    """
    B = lse.shape[0]
    lt = (log_w - lse).reshape(B, -1)  # log thresholds; −inf for zero weights
    lt, order = torch.sort(lt, -1)
    ws = w.reshape(B, -1).gather(-1, order)
    ls = lse.reshape(B, -1).gather(-1, order)
    before = torch.cumsum(ws, -1) - ws  # Σ_{i<k} w_(i)
    tail = torch.logcumsumexp(ls.flip(-1), -1).flip(-1)  # log Σ_{i≥k} e^{lse_(i)}
    m = torch.exp(log_m.reshape(B, 1))
    F = before + torch.exp(lt + tail)
    k = (F <= m).sum(-1, keepdim=True)  # (B, 1) saturated rows
    n = lt.shape[-1]
    inner = k.clamp(max=n - 1)
    level = torch.log(torch.clamp(m - before.gather(-1, inner), min=0)) - tail.gather(-1, inner)
    lo = torch.where(k > 0, lt.gather(-1, (k - 1).clamp(min=0)), -math.inf)
    hi = torch.where(k < n, lt.gather(-1, inner), math.inf)
    level = torch.where(k < n, torch.minimum(torch.maximum(level, lo), hi), lo)
    return level.reshape(B, 1, 1)


@dataclasses.dataclass(frozen=True)
class Problem:
    """A checked problem, its batch flattened to B: scores, weights, ε and the update.

    Attributes:
        S: (B, n, m) scores; Se: (B, n, m) S/ε.
        eps: ε, a float or (B, 1, 1).
        a, log_a: (B, n, 1) row weights and their logs (−inf on zero weights);
        b, log_b: (B, 1, m) column weights and their logs.
        update: the marginal update (:func:`balanced`, :func:`relaxed` or :func:`capped`).
        rho: τ/(τ + ε) for :func:`relaxed` (float or (B, 1, 1)); 1 otherwise.
        log_m: (B, 1, 1) log of the mass to move for partial transport, else None.
        batch: the leading batch dimensions B stands for.
    """

    S: torch.Tensor
    Se: torch.Tensor
    eps: Any
    a: torch.Tensor
    log_a: torch.Tensor
    b: torch.Tensor
    log_b: torch.Tensor
    update: Callable
    rho: Any
    log_m: torch.Tensor | None
    batch: torch.Size

    @property
    def is_balanced(self) -> bool:
        return self.update is balanced


@dataclasses.dataclass(frozen=True)
class State:
    """The solver's state after t half-steps: π = exp(S/ε + α + β + κ).

    Attributes:
        alpha: (B, n, 1) f/ε; beta: (B, 1, m) g/ε.
        kappa: (B, 1, 1) log-mass scaling of partial transport, else None.
        t: half-steps done.
    """

    alpha: torch.Tensor
    beta: torch.Tensor
    kappa: torch.Tensor | None
    t: int
    from_zero: bool = True

    def log_plan(self, P: Problem) -> torch.Tensor:
        out = P.Se + self.alpha + self.beta
        return out if self.kappa is None else out + self.kappa


def init_state(P: Problem, beta: torch.Tensor | None = None) -> State:
    """The state before half-step 1: f = 0 and g = ε β.

    With ``beta`` None, g = 0, so half-step 1 is a·softmax(S/ε) (the engine's identity);
    otherwise half-step 1 is a·softmax(S/ε + β), e.g. β = log b (attention over the
    measure ν) or the potentials of a larger ε (a warm start). beta: (B, 1, m) g/ε.
    """
    B, n, m = P.Se.shape
    zeros = P.Se.new_zeros
    return State(alpha=zeros(B, n, 1), beta=zeros(B, 1, m) if beta is None else beta,
                 kappa=None if P.log_m is None else zeros(B, 1, 1), t=0,
                 from_zero=beta is None)


def _update(P: Problem, st: State, row: bool):
    """The marginal update of one side from state st: (lse, new potential, new κ), with
    lse_i = LSE_j(S_ij/ε + β_j) (B, n, 1) for rows, LSE_i(S_ij/ε + α_i) (B, 1, m) for
    columns. Pure (no in-place operation), so autograd differentiates through it."""
    other = st.beta if row else st.alpha
    log_w, w = (P.log_a, P.a) if row else (P.log_b, P.b)
    start = st.t == 0 and st.from_zero  # g = 0: half-step 1 needs no sum with it
    lse = torch.logsumexp(P.Se if start else P.Se + other, -1 if row else -2, keepdim=True)
    x, kappa = P.update(P, log_w, w, lse)
    return lse, x, kappa


def step(P: Problem, st: State) -> State:
    """Half-step t+1 alone, without residuals: a row update when t+1 is odd, else a
    column update (α ← update(log a, LSE_j(S_ij/ε + β_j)), likewise β).

    The one half-step :func:`half_step` and the unrolled, differentiable
    :func:`log_plan` share; it has no in-place operation and no ``no_grad``.
    """
    row = st.t % 2 == 0
    _, x, kappa = _update(P, st, row)
    kappa = st.kappa if kappa is None else kappa
    alpha, beta = (x, st.beta) if row else (st.alpha, x)
    return State(alpha, beta, kappa, st.t + 1, st.from_zero)


def _side(P: Problem, st: State, row: bool):
    """One side's update from state st: (old log marginal, new potential, new κ, new log
    marginal, target marginal), the marginals (B, n, 1) for rows or (B, 1, m) for columns.
    The target is what one update gives: a (or b) itself when balanced."""
    x_old = st.alpha if row else st.beta
    w = P.a if row else P.b
    lse, x, kappa = _update(P, st, row)
    start = st.t == 0 and st.from_zero
    log_old = None if start else x_old + lse if st.kappa is None else x_old + lse + st.kappa
    log_new = x + lse if kappa is None else x + lse + kappa
    target = w if P.is_balanced else torch.exp(log_new)
    return log_old, x, kappa, log_new, target


def half_step(P: Problem, st: State) -> tuple[State, torch.Tensor, torch.Tensor]:
    """Half-step t+1 in the log domain: a row update when t+1 is odd, else a column update.

    Row update: lse_i = LSE_j(S_ij/ε + β_j); (α, κ) ← update(log a, lse).

    Returns:
        (new state, residual of the old state, residual of the new state) on the updated
        side, each (B,): ‖π1 − target‖₁ where target is the marginal one update on that
        side gives (a itself when balanced; for the others the new state's own marginal,
        so its residual is 0). From the initial state (t = 0, no plan yet) the old
        residual is None.
    """
    row = st.t % 2 == 0
    log_old, x, kappa, log_new, target = _side(P, st, row)
    dim = -2 if row else -1
    before = None if st.t == 0 else _err(torch.exp(log_old), target, dim)
    after = _err(torch.exp(log_new), target, dim)
    kappa = st.kappa if kappa is None else kappa
    alpha, beta = (x, st.beta) if row else (st.alpha, x)
    return State(alpha, beta, kappa, st.t + 1, st.from_zero), before, after


def residual(P: Problem, st: State, row: bool, plan: torch.Tensor) -> torch.Tensor:
    """(B,) the state's residual ‖π1 − target‖₁ (row) or ‖πᵀ1 − target‖₁ (column), its
    marginal summed from its plan (B, n, m); see :func:`half_step`."""
    marginal = plan.sum(-1 if row else -2, keepdim=True)
    target = (P.a if row else P.b) if P.is_balanced else _side(P, st, row)[4]
    return _err(marginal, target, -2 if row else -1)


@dataclasses.dataclass
class _Trace:
    """What a run collects besides its state: per-state residuals and the history.

    rows[k] / cols[k]: (T_k, B) residual chunks of consecutive states; the row residual
    of a state is known after a row step, its column residual one step on.
    recorded: (cost, entropy, plan or None) of the states asked for; pending: steps left.
    """

    rows: list
    cols: list
    recorded: list
    pending: list


def _run(P: Problem, half_steps: int, tol: float, early_stop: bool, method: str, block: int,
         record: tuple, keep_history: bool, keep_plans: bool, tau: Any = math.inf,
         mass: Any = None, beta: torch.Tensor | None = None) -> Coupling:
    """Initial state (g = ε β, 0 by default) → half-steps (kernel blocks or log steps) →
    output; see :func:`sinkhorn`."""
    st, before, after = half_step(P, init_state(P, beta))
    tr = _Trace(rows=[after[None]], cols=[], recorded=[], pending=[s for s in record if s > 1])
    if record and record[0] == 1:
        tr.recorded.append(_cost_entropy(st.log_plan(P), P.S, keep_plans, _relaxed(P)))
    kernel = method == "auto" and half_steps > 1 and P.update is not capped
    st = (_kernel_steps if kernel else _log_steps)(P, st, tr, half_steps, tol, early_stop,
                                                  block, keep_plans)
    return output(P, st, tr, tol, keep_history, keep_plans, record, tau, mass)


def _early_stop(tr: _Trace, t: int, tol: float) -> bool:
    """True when state t − 1, whose two residuals are both known now, is within tol."""
    err = torch.maximum(torch.cat(tr.rows)[t - 2], torch.cat(tr.cols)[t - 2])
    return bool((err <= tol).all())


def _within(P: Problem, st: State, tr: _Trace, tol: float) -> bool:
    """True when state t itself is within tol on both sides (relaxed and partial problems,
    whose residuals need not shrink at every half-step: the output reports state t)."""
    row = st.t % 2 == 1  # the side the last half-step updated
    last = (tr.rows if row else tr.cols)[-1][-1]
    other = residual(P, st, not row, torch.exp(st.log_plan(P)))
    return bool((torch.maximum(last, other) <= tol).all())


def _log_steps(P, st, tr, half_steps, tol, early_stop, block, keep_plans) -> State:
    """Log-domain half-steps until ``half_steps`` (or an early stop); stops exactly at the
    states the history records."""
    while st.t < half_steps:
        nb = min(block, half_steps - st.t)
        if tr.pending:
            nb = min(nb, tr.pending[0] - st.t)
        for _ in range(nb):
            poll()  # a log step of a large batch can take a while: poll each one
            row = st.t % 2 == 0
            st, before, after = half_step(P, st)
            (tr.rows if row else tr.cols).append(torch.stack([before, after]))
        if tr.pending and tr.pending[0] == st.t:
            tr.pending.pop(0)
            tr.recorded.append(_cost_entropy(st.log_plan(P), P.S, keep_plans, _relaxed(P)))
        if early_stop and st.t < half_steps and _early_stop(tr, st.t, tol) and (
                P.is_balanced or _within(P, st, tr, tol)):
            break
    return st


def _kernel_steps(P, st, tr, half_steps, tol, early_stop, block, keep_plans) -> State:
    """Half-steps by stabilised kernel scaling in blocks, u ← a / K v, v ← b / Kᵀ u with
    K = exp(S/ε + α + β) (relaxed: u ← (a / K v)^ρ e^{(ρ−1)α}, likewise v); large scalings
    are absorbed into (α, β) between blocks, and a block that would under- or overflow
    hands over to log steps."""
    on_a, on_b = P.a > 0, P.b > 0
    zeros = bool((~on_a).any() or (~on_b).any())
    big = torch.finfo(P.S.dtype).max ** 0.25
    K = torch.exp(P.Se + st.alpha if st.from_zero else P.Se + st.alpha + st.beta)
    Kt = K.mT.contiguous()
    u, v = on_a.to(P.S.dtype), torch.ones_like(P.b)  # state 1 puts mass on all of B
    alpha, beta, t = st.alpha, st.beta, st.t
    relax = None if P.is_balanced else _relaxation(P, alpha, beta)
    while t < half_steps:
        poll()  # between blocks: a cancelled or late request stops here
        nb = min(block, half_steps - t)
        res = _kernel_block(K, Kt, P.a, P.b, u, v, t, nb, zeros, big, relax)
        if res is None:  # under- or overflow at this ε: log steps from here on
            alpha, beta = _absorb(alpha, beta, u, v)
            return _log_steps(P, State(alpha, beta, None, t), tr, half_steps, tol,
                              early_stop, block, keep_plans)
        u, v, r_chunk, c_chunk, ranges, us, vs = res
        tr.rows.append(r_chunk)
        tr.cols.append(c_chunk)
        inside = [s for s in tr.pending if s <= t + nb]
        if inside:  # the block's recorded states, from its scalings, before absorbing
            tr.recorded += _block_history(P.Se + alpha + beta, P.S, us, vs, t, inside,
                                          keep_plans, _relaxed(P))
            del tr.pending[:len(inside)]
        t += nb
        if ranges[0] > big ** 0.5 or ranges[1] < big ** -0.5:
            alpha, beta = _absorb(alpha, beta, u, v)
            K = torch.exp(P.Se + alpha + beta)
            Kt = K.mT.contiguous()
            u, v = on_a.to(P.S.dtype), on_b.to(P.S.dtype)
            relax = None if P.is_balanced else _relaxation(P, alpha, beta)
        if early_stop and t < half_steps and _early_stop(tr, t, tol) and (
                P.is_balanced or _within(P, State(*_absorb(alpha, beta, u, v), None, t), tr, tol)):
            break
    alpha, beta = _absorb(alpha, beta, u, v)
    return State(alpha, beta, None, t)


def _relaxation(P: Problem, alpha: torch.Tensor, beta: torch.Tensor) -> tuple:
    """What a relaxed kernel block needs besides K: (ρ, log a (B, 1, n), log b (B, 1, m),
    (ρ − 1) α₀ (B, 1, n), (ρ − 1) β₀ (B, 1, m)) for the potentials α₀, β₀ inside K (0 on
    zero weights, whose scalings are 0 anyway)."""
    rho = P.rho
    ca = torch.where(P.a > 0, (rho - 1) * alpha, 0.0).mT
    cb = torch.where(P.b > 0, (rho - 1) * beta, 0.0)
    return rho, P.log_a.mT, P.log_b, ca, cb


def output(P: Problem, st: State, tr: _Trace, tol: float, keep_history: bool,
           keep_plans: bool, record: tuple, tau: Any, mass: Any) -> Coupling:
    """The Coupling of a state: plan, potentials, residuals (closing the side the last
    half-step did not update), cost, entropy, convergence and the history."""
    batch, (n, m), t = P.batch, P.S.shape[-2:], st.t
    log_plan = st.log_plan(P)
    plan = torch.exp(log_plan)
    if t % 2 == 1:
        tr.cols.append(residual(P, st, False, plan)[None])
    else:
        tr.rows.append(residual(P, st, True, plan)[None])
    row_err = torch.cat(tr.rows).T.reshape(*batch, t)
    col_err = torch.cat(tr.cols).T.reshape(*batch, t)
    alpha = st.alpha if st.kappa is None else st.alpha + st.kappa
    f = torch.where(P.a > 0, P.eps * alpha, -math.inf)[..., 0].reshape(*batch, n)
    g = torch.where(P.b > 0, P.eps * st.beta, -math.inf)[:, 0].reshape(*batch, m)
    cost, entropy, _ = _cost_entropy(log_plan, P.S, relaxed=_relaxed(P))
    converged = torch.maximum(row_err[..., -1], col_err[..., -1]) <= tol
    history = None
    if keep_history:
        k = len(tr.recorded)  # fewer than asked after an early stop
        costs = ents = P.S.new_zeros(P.S.shape[0], 0)
        plans = P.S.new_zeros(P.S.shape[0], 0, n, m) if keep_plans else None
        if k:
            costs = torch.stack([c for c, _, _ in tr.recorded], -1)
            ents = torch.stack([e for _, e, _ in tr.recorded], -1)
            if keep_plans:
                plans = torch.stack([p for _, _, p in tr.recorded], 1)
        history = History(steps=torch.tensor(record[:k], dtype=torch.int64),
                          cost=costs.reshape(*batch, k), entropy=ents.reshape(*batch, k),
                          plans=None if plans is None else plans.reshape(*batch, k, n, m))
    eps = P.eps if not isinstance(P.eps, torch.Tensor) else P.eps.reshape(batch)
    return Coupling(plan=plan.reshape(*batch, n, m), f=f, g=g, row_err=row_err,
                    col_err=col_err, converged=converged, cost=cost.reshape(batch),
                    entropy=entropy.reshape(batch), eps=eps, half_steps_run=t, tol=tol,
                    history=history, tau=tau, mass=mass)


# ---- the kernel-domain fast path (balanced) and shared helpers ----------------------

def _block_history(log_K: torch.Tensor, S: torch.Tensor, us: list, vs: list, t: int,
                   steps: list[int], keep_plans: bool, relaxed: Any = False) -> list:
    """(cost, entropy, plan or None) of the states after half-steps ``steps`` (within
    t+1..t+nb) of a kernel block, all at once: state s is diag(u_s) K diag(v_s), with
    log K (B, n, m) the block's kernel, ``us`` its row scalings (B, 1, n) before and after
    each row step and ``vs`` its column scalings (B, 1, m) likewise."""
    U = torch.stack([us[(s + 1) // 2 - (t + 1) // 2] for s in steps]).mT  # (k, B, n, 1)
    V = torch.stack([vs[s // 2 - t // 2] for s in steps])  # (k, B, 1, m)
    out = []
    chunk = max(1, int(4e6 // max(1, log_K.numel())))  # bound the (k, B, n, m) work
    for i in range(0, len(steps), chunk):
        cost, entropy, plans = _cost_entropy(log_K + U[i:i + chunk].log() + V[i:i + chunk].log(),
                                             S, keep_plans, relaxed)
        for j in range(cost.shape[0]):
            out.append((cost[j], entropy[j], None if plans is None else plans[j]))
    return out


def _err(marginal: torch.Tensor, target: torch.Tensor, dim: int) -> torch.Tensor:
    """L1 distance along ``dim`` of marginals (..., B, n, 1) or (..., B, 1, m) → (..., B)."""
    return (marginal - target).abs().sum(dim).squeeze(-1)
