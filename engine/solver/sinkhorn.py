"""Softmax attention and batched Sinkhorn couplings on score matrices.

The cost is C = −S for scores S (higher = more related). Both solvers accept numpy arrays
or torch tensors of any float dtype with leading batch dimensions (..., n, m), and return
the same kind of array they were given.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..errors import SettingsError
from ..settings import EPS_MAX, EPS_MIN, HALF_STEPS_CAP
from ..types import Coupling, History


def _as_tensor(x: Any, *, dtype: torch.dtype | None = None, device=None) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        t = x
    else:
        t = torch.as_tensor(np.asarray(x))
    if not t.is_floating_point():
        t = t.to(torch.float64)
    if dtype is not None or device is not None:
        t = t.to(dtype=dtype or t.dtype, device=device or t.device)
    return t


def check_eps(eps: float) -> float:
    """Return ε as a float, or raise SettingsError saying what to change."""
    try:
        eps = float(eps)
    except (TypeError, ValueError):
        raise SettingsError(f"ε must be a number, got {eps!r}.") from None
    if not math.isfinite(eps) or eps <= 0:
        raise SettingsError(f"ε must be a finite number > 0, got {eps}; try ε = 1.")
    if not EPS_MIN <= eps <= EPS_MAX:
        raise SettingsError(f"ε must lie in [{EPS_MIN:g}, {EPS_MAX:g}], got {eps:g}.")
    return eps


def check_half_steps(half_steps: int) -> int:
    """Return the half-step count as an int ≥ 1, or raise SettingsError."""
    if isinstance(half_steps, bool) or not isinstance(half_steps, (int, np.integer)):
        if isinstance(half_steps, float) and half_steps.is_integer():
            half_steps = int(half_steps)
        else:
            raise SettingsError(f"half_steps must be a whole number ≥ 1, got {half_steps!r}.")
    if half_steps < 1:
        raise SettingsError(f"half_steps must be ≥ 1 (1 = softmax), got {half_steps}.")
    if half_steps > HALF_STEPS_CAP:
        raise SettingsError(f"half_steps must be at most {HALF_STEPS_CAP:,}, got {half_steps:,}.")
    return int(half_steps)


def check_weights(w: torch.Tensor, name: str, size: int) -> torch.Tensor:
    """Check a weight vector (..., size): nonnegative, finite, summing to 1."""
    if w.shape[-1] != size:
        raise SettingsError(f"{name} has {w.shape[-1]} weights but the scores have {size} "
                            f"{'rows' if name == 'a' else 'columns'}; give one weight per token.")
    if not torch.isfinite(w).all():
        raise SettingsError(f"{name} holds NaN or infinite weights; give finite weights ≥ 0.")
    if (w < 0).any():
        raise SettingsError(f"{name} holds negative weights; weights must be ≥ 0.")
    total = w.sum(-1)
    tol = 1e-5 if w.dtype == torch.float32 else 1e-8
    if ((total - 1).abs() > tol * max(1, size) ** 0.5 + tol).any():
        raise SettingsError(f"{name} must sum to 1 (it sums to {float(total.flatten()[0]):.6g}); "
                            f"normalise it, e.g. {name} / {name}.sum().")
    return w


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


def sinkhorn(
    S: Any,
    a: Any,
    b: Any,
    eps: float = 1.0,
    half_steps: int = 200,
    *,
    tol: float = 1e-6,
    early_stop: bool = False,
    method: str = "auto",
    block: int = 50,
    record: Any = None,
    record_plans: bool = False,
    check_inputs: bool = True,
) -> Coupling:
    """Entropic optimal transport between a and b for cost −S, by Sinkhorn half-steps.

    π = argmin_{π ∈ Π(a, b)} ⟨−S, π⟩ − ε H(π), with π_ij = exp((f_i + g_j + S_ij)/ε).
    Half-steps alternate a row normalisation (odd) and a column normalisation (even),
    starting from g = 0, so half-step 1 is exactly diag(a)·softmax(S/ε).

    Args:
        S: (..., n, m) scores; cost is −S. numpy or torch, float32 or float64.
        a: (..., n) or (n,) weights ≥ 0 summing to 1 (zeros allowed: those rows get 0).
        b: (..., m) or (m,) weights ≥ 0 summing to 1.
        eps: entropy ε > 0. Smaller ε is closer to exact transport but needs more steps.
        half_steps: how many half-steps to run (the most, with ``early_stop``).
        tol: L1 marginal tolerance for ``converged`` (and for ``early_stop``).
        early_stop: stop once every problem in the batch is within ``tol``.
        method: "log" (log-domain logsumexp steps) or "auto" (stabilised kernel scaling
            with matrix–vector products, falling back to log steps where it would under-
            or overflow; same result, several times faster).
        block: half-steps between stability checks in "auto".
        record: half-steps t (1-based) after which to record the plan's cost ⟨−S, π_t⟩
            and entropy H(π_t) into ``Coupling.history``; None records nothing.
        record_plans: also keep the plans π_t at those half-steps in
            ``Coupling.history.plans`` (..., K, n, m), e.g. to show every frame of a
            slider without solving once per frame. Memory grows with K·n·m.
        check_inputs: validate ε, a and b (disable only in tight loops on checked data).

    Returns:
        A :class:`Coupling` with the plan, potentials and per-half-step marginal errors.
        If it did not converge (``converged`` False), run more half-steps or raise ε;
        below ε ≈ 0.05 on real model scores it can take thousands of half-steps.

    References:
        Cuturi, "Sinkhorn distances", NeurIPS 2013; Schmitzer, "Stabilized sparse scaling
        algorithms for entropy regularized transport problems", SIAM J. Sci. Comput. 2019.
    """
    if method not in ("auto", "log"):
        raise SettingsError(f"method must be 'auto' or 'log', got {method!r}.")
    St = _as_tensor(S)
    if St.dim() < 2:
        raise SettingsError(f"S must have shape (..., n, m), got {tuple(St.shape)}.")
    n, m = St.shape[-2], St.shape[-1]
    if n == 0 or m == 0:
        raise SettingsError("Both texts need at least one token to relate.")
    at = _as_tensor(a, dtype=St.dtype, device=St.device)
    bt = _as_tensor(b, dtype=St.dtype, device=St.device)
    if check_inputs:
        eps = check_eps(eps)
        half_steps = check_half_steps(half_steps)
        if not torch.isfinite(St).all():
            raise SettingsError("The scores hold NaN or infinite values.")
        check_weights(at, "a", n)
        check_weights(bt, "b", m)
    batch = St.shape[:-2]
    steps = () if record is None else tuple(sorted(
        {int(t) for t in np.asarray(record).ravel() if 1 <= int(t) <= half_steps}))
    args = (float(eps), int(half_steps), float(tol), early_stop, method, block, steps,
            record is not None, bool(record_plans))
    if at.dim() == 1 and (at == 0).any():
        # One row support for the whole batch: solve on it and put zero rows back. (Zero
        # columns stay: half-step 1 is softmax over all of B, zero weights included.)
        ia = at.nonzero().squeeze(-1)
        sub = _solve(St.index_select(-2, ia), at[ia].expand(*batch, -1).contiguous(),
                     bt.expand(*batch, m).contiguous(), *args)
        out = _scatter_rows(sub, ia, n)
    else:
        out = _solve(St, at.expand(*batch, n).contiguous(), bt.expand(*batch, m).contiguous(),
                     *args)
    return out if isinstance(S, torch.Tensor) else to_numpy(out)


def to_numpy(c: Coupling) -> Coupling:
    """The same coupling with every tensor (history included) as a numpy array."""
    def np_(v):
        return v.cpu().numpy() if isinstance(v, torch.Tensor) else v

    fields = {k: np_(v) for k, v in c.__dict__.items()}
    if c.history is not None:
        fields["history"] = History(*(np_(x) for x in (c.history.steps, c.history.cost,
                                                        c.history.entropy, c.history.plans)))
    return Coupling(**fields)


def _scatter_rows(c: Coupling, ia: torch.Tensor, n: int) -> Coupling:
    """Embed a coupling solved on the rows ia back into (..., n, m) with zero rows."""
    def rows(x: torch.Tensor) -> torch.Tensor:
        out = x.new_zeros(*x.shape[:-2], n, x.shape[-1])
        out[..., ia, :] = x
        return out

    batch = c.plan.shape[:-2]
    f = c.f.new_full((*batch, n), -math.inf)
    f[..., ia] = c.f
    history = c.history
    if history is not None and history.plans is not None:
        history = History(history.steps, history.cost, history.entropy, rows(history.plans))
    return Coupling(plan=rows(c.plan), f=f, g=c.g, row_err=c.row_err, col_err=c.col_err,
                    converged=c.converged, cost=c.cost, entropy=c.entropy, eps=c.eps,
                    half_steps_run=c.half_steps_run, tol=c.tol, history=history)


def _cost_entropy(log_plan: torch.Tensor, S: torch.Tensor,
                  keep_plan: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(⟨−S, π⟩, H(π), π or None) of plans given by their logs, (..., n, m) → (...)."""
    plan = torch.exp(log_plan)
    cost = -(plan * S).sum((-2, -1))
    entropy = -(plan * torch.where(plan > 0, log_plan, 0)).sum((-2, -1))
    return cost, entropy, (plan if keep_plan else None)


def _solve(S, a, b, eps, half_steps, tol, early_stop, method, block, record,
           keep_history, keep_plans) -> Coupling:
    """Run the half-steps on checked tensors; see :func:`sinkhorn`.

    S (..., n, m) is flattened to (B, n, m); a (B, n, 1) and b (B, 1, m) are kept as
    column and row vectors so every step is one batched matrix–vector product.
    """
    batch, n, m = S.shape[:-2], S.shape[-2], S.shape[-1]
    Sf = S.reshape(-1, n, m)
    Se = Sf / eps
    a, b = a.reshape(-1, n, 1), b.reshape(-1, 1, m)
    log_a, log_b = a.log(), b.log()  # −inf on zero weights
    on_a, on_b = a > 0, b > 0
    zeros = bool((~on_a).any() or (~on_b).any())
    big = torch.finfo(S.dtype).max ** 0.25
    # rows[k] / cols[k]: (T_k, B) L1 marginal errors of consecutive states; the row
    # marginal of a state is known after a row step, its column marginal one step on.
    rows: list[torch.Tensor] = []
    cols: list[torch.Tensor] = []

    # Half-step 1 in the log domain: f = ε log a − ε LSE_j(S_ij/ε); state 1 = a·softmax.
    lse = torch.logsumexp(Se, -1, keepdim=True)
    alpha = log_a - lse  # f / ε, (B, n, 1)
    beta = torch.zeros_like(b)  # g / ε, (B, 1, m)
    rows.append(_err(torch.exp(alpha + lse), a, -2)[None])
    t = 1
    # The history: (cost, entropy, plan or None) of state t for each t in ``record``.
    pending = [s for s in record if s > 1]
    recorded = [_cost_entropy(Se + alpha, Sf, keep_plans)] if record and record[0] == 1 else []
    use_kernel = method == "auto" and half_steps > 1
    K = Kt = u = v = None
    if use_kernel:
        K = torch.exp(Se + alpha)
        Kt = K.mT.contiguous()
        u, v = on_a.to(S.dtype), torch.ones_like(b)  # state 1 puts mass on all of B
    while t < half_steps:
        nb = min(block, half_steps - t)
        if pending and not use_kernel:  # stop log steps where the history records a state
            nb = min(nb, pending[0] - t)
        if use_kernel:
            res = _kernel_block(K, Kt, a, b, u, v, t, nb, zeros, big)
            if res is not None:
                u, v, r_chunk, c_chunk, ranges, us, vs = res
                rows.append(r_chunk)
                cols.append(c_chunk)
                inside = [s for s in pending if s <= t + nb]
                if inside:  # the block's recorded states, from its scalings, before absorbing
                    recorded += _block_history(Se + alpha + beta, Sf, us, vs, t, inside,
                                               keep_plans)
                    del pending[:len(inside)]
                t += nb
                if ranges[0] > big ** 0.5 or ranges[1] < big ** -0.5:
                    alpha, beta = _absorb(alpha, beta, u, v, on_a, on_b)
                    K = torch.exp(Se + alpha + beta)
                    Kt = K.mT.contiguous()
                    u, v = on_a.to(S.dtype), on_b.to(S.dtype)
            else:  # under- or overflow at this ε: log steps from here on
                alpha, beta = _absorb(alpha, beta, u, v, on_a, on_b)
                use_kernel, K = False, None
                continue
        else:
            alpha, beta, r_chunk, c_chunk = _log_block(Se, a, b, log_a, log_b, alpha, beta, t, nb)
            rows.append(r_chunk)
            cols.append(c_chunk)
            t += nb
        if pending and pending[0] == t and not use_kernel:
            pending.pop(0)
            recorded.append(_cost_entropy(Se + alpha + beta, Sf, keep_plans))
        if early_stop and t < half_steps:
            # errors of state t − 1, whose two marginals are both known now
            err = torch.maximum(torch.cat(rows)[t - 2], torch.cat(cols)[t - 2])
            if bool((err <= tol).all()):
                break
    if K is not None:
        alpha, beta = _absorb(alpha, beta, u, v, on_a, on_b)
    # Close: the marginal on the side the last half-step did not update.
    log_plan = Se + alpha + beta
    plan = torch.exp(log_plan)
    if t % 2 == 1:
        cols.append(_err(plan.sum(-2, keepdim=True), b, -1)[None])
    else:
        rows.append(_err(plan.sum(-1, keepdim=True), a, -2)[None])
    row_err = torch.cat(rows).T.reshape(*batch, t)
    col_err = torch.cat(cols).T.reshape(*batch, t)
    f = torch.where(on_a, eps * alpha, -math.inf)[..., 0].reshape(*batch, n)
    g = torch.where(on_b, eps * beta, -math.inf)[:, 0].reshape(*batch, m)
    cost, entropy, _ = _cost_entropy(log_plan, Sf)
    converged = torch.maximum(row_err[..., -1], col_err[..., -1]) <= tol
    history = None
    if keep_history:
        k = len(recorded)  # fewer than asked after an early stop
        costs = ents = Sf.new_zeros(Sf.shape[0], 0)
        plans = Sf.new_zeros(Sf.shape[0], 0, n, m) if keep_plans else None
        if k:
            costs = torch.stack([c for c, _, _ in recorded], -1)
            ents = torch.stack([e for _, e, _ in recorded], -1)
            if keep_plans:
                plans = torch.stack([p for _, _, p in recorded], 1)
        history = History(steps=torch.tensor(record[:k], dtype=torch.int64),
                          cost=costs.reshape(*batch, k), entropy=ents.reshape(*batch, k),
                          plans=None if plans is None else plans.reshape(*batch, k, n, m))
    return Coupling(plan=plan.reshape(*batch, n, m), f=f, g=g, row_err=row_err,
                    col_err=col_err, converged=converged, cost=cost.reshape(batch),
                    entropy=entropy.reshape(batch), eps=eps, half_steps_run=t, tol=tol,
                    history=history)


def _block_history(log_K: torch.Tensor, S: torch.Tensor, us: list, vs: list, t: int,
                   steps: list[int], keep_plans: bool) -> list:
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
                                             S, keep_plans)
        for j in range(cost.shape[0]):
            out.append((cost[j], entropy[j], None if plans is None else plans[j]))
    return out


def _log_block(Se, a, b, log_a, log_b, alpha, beta, t, nb):
    """Half-steps t+1..t+nb in the log domain.

    Returns (alpha, beta, row errors (k, B), column errors (k', B)).
    """
    rows, cols = [], []
    for s in range(t + 1, t + nb + 1):
        if s % 2 == 0:  # column step: g = ε log b − ε LSE_i((S_ij + f_i)/ε)
            lse = torch.logsumexp(Se + alpha, -2, keepdim=True)
            cols.append(_err(torch.exp(beta + lse), b, -1))  # state s − 1
            beta = log_b - lse
            cols.append(_err(torch.exp(beta + lse), b, -1))
        else:
            lse = torch.logsumexp(Se + beta, -1, keepdim=True)
            rows.append(_err(torch.exp(alpha + lse), a, -2))
            alpha = log_a - lse
            rows.append(_err(torch.exp(alpha + lse), a, -2))
    empty = alpha.new_empty(0, alpha.shape[0])
    return alpha, beta, torch.stack(rows) if rows else empty, torch.stack(cols) if cols else empty


def _kernel_block(K, Kt, a, b, u, v, t, nb, zeros, big):
    """Half-steps t+1..t+nb by scaling: u ← a / K v, v ← b / Kᵀ u.

    K (B, n, m) and Kt = Kᵀ (B, m, n), both contiguous; u, a (B, n, 1); v, b (B, 1, m).
    Both products run as row vector × matrix (vᵀKᵀ, uᵀK), much faster than matrix ×
    column vector for small batched matrices. Returns (u, v, row errors (k, B), column
    errors (k', B), (largest, smallest) scaling on the supports, the row scalings (B, 1, n)
    before and after each row step, the column scalings (B, 1, m) likewise), or None when a
    scaling left the safe range.
    """
    a_row = a.mT
    u = u.mT  # (B, 1, n)
    us, rs, vs, cs = [u], [], [v], []
    for s in range(t + 1, t + nb + 1):
        if s % 2 == 0:
            c = torch.bmm(u, K)  # (Kᵀ u)ᵀ: (B, 1, m)
            v = b / c
            if zeros:
                v = torch.where(b > 0, v, 0)
            cs.append(c)
            vs.append(v)
        else:
            r = torch.bmm(v, Kt)  # (K v)ᵀ: (B, 1, n)
            u = a_row / r
            if zeros:
                u = torch.where(a_row > 0, u, 0)
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
    rows = _interleaved_err(us, rs, a) if rs else empty
    cols = _interleaved_err(vs, cs, b) if cs else empty
    return u.mT, v, rows, cols, (hi, lo), us, vs


def _interleaved_err(xs: list[torch.Tensor], ss: list[torch.Tensor],
                     target: torch.Tensor) -> torch.Tensor:
    """Errors ‖x·s − target‖₁ of [x0·s1, x1·s1, x1·s2, x2·s2, ...] → (2k, B).

    xs: k+1 scalings and ss: k sums, each (B, n, 1) or (B, 1, m); the marginal of the state
    before an update is x_old·s and after it x_new·s.
    """
    X = torch.stack(xs).flatten(-2)  # (k+1, B, n)
    Sm = torch.stack(ss).flatten(-2)  # (k, B, n)
    t = target.flatten(-2)
    before = (X[:-1] * Sm - t).abs().sum(-1)
    after = (X[1:] * Sm - t).abs().sum(-1)
    return torch.stack([before, after], 1).flatten(0, 1)


def _err(marginal: torch.Tensor, target: torch.Tensor, dim: int) -> torch.Tensor:
    """L1 distance along ``dim`` of marginals (..., B, n, 1) or (..., B, 1, m) → (..., B)."""
    return (marginal - target).abs().sum(dim).squeeze(-1)


def _absorb(alpha, beta, u, v, on_a, on_b):
    """Move scalings into log potentials: α ← α + log u, β ← β + log v.

    A zero scaling (a zero-weight row or column once normalised) becomes −inf; a column
    of zero weight that no column step has touched yet keeps its mass (state 1).
    """
    alpha = torch.where(u > 0, alpha + torch.log(torch.where(u > 0, u, 1.0)), -math.inf)
    beta = torch.where(v > 0, beta + torch.log(torch.where(v > 0, v, 1.0)), -math.inf)
    return alpha, beta
