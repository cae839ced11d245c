"""Unbalanced (KL-relaxed) Sinkhorn and entropic partial transport: agreement with POT,
the balanced limit, optimality conditions, batching over τ / ε / m, float32, bad input."""

import math
import os
import warnings

import numpy as np
import ot
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import SettingsError, partial, sinkhorn, softmax_attention

EXAMPLES = int(os.environ.get("SINKSCOPE_FUZZ_EXAMPLES", "500"))
FEW = max(10, EXAMPLES // 25)


def problem(n=7, m=9, seed=0, scale=2.0, zeros_a=(), zeros_b=(), total_a=1.0, total_b=1.0):
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(n, m)) * scale
    a, b = rng.random(n) + 0.1, rng.random(m) + 0.1
    a[list(zeros_a)] = 0
    b[list(zeros_b)] = 0
    return S, a / a.sum() * total_a, b / b.sum() * total_b


def on_support(solve, S, a, b):
    """A reference solved on the atoms of positive weight, zero rows and columns put back
    (POT's solvers divide by the zero marginals of zero-weight atoms)."""
    ia, ib = np.flatnonzero(a > 0), np.flatnonzero(b > 0)
    out = np.zeros_like(S)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out[np.ix_(ia, ib)] = solve(np.ascontiguousarray(S[np.ix_(ia, ib)]), a[ia], b[ib])
    return out


def pot_uot(S, a, b, eps, tau):
    """POT's unbalanced Sinkhorn on our problem: reg = ε, reg_m = τ, M = −S, with
    reg_type="entropy" (its Ω(γ) = Σ γ log γ − γ is our −H(π)). Its plain scaling
    (|S|/ε stays below ~40 here); POT 0.9.7's "sinkhorn_stabilized" returned a plan
    400 times too small on the 1 × 2 problem S = [[4.08, −5.11]], ε = 0.25, τ = 1, where
    "sinkhorn", "sinkhorn_translation_invariant" and ours agree and satisfy f = −τ log(π1/a)."""
    return on_support(lambda s, x, y: ot.unbalanced.sinkhorn_unbalanced(
        x, y, -s, eps, tau, reg_type="entropy", method="sinkhorn",
        numItermax=100_000, stopThr=1e-14), S, a, b)


def pot_partial(S, a, b, eps, mass):
    return on_support(lambda s, x, y: ot.partial.entropic_partial_wasserstein(
        x, y, -s, eps, m=mass, method="sinkhorn_log", numItermax=20_000, stopThr=1e-13),
        S, a, b)


# ---- unbalanced --------------------------------------------------------------------------

@pytest.mark.parametrize("eps, tau", [(0.5, 1.0), (1.0, 0.1), (0.2, 5.0)])
@pytest.mark.parametrize("zeros", [((), ()), ((0, 6), (3,))])
def test_unbalanced_equals_pot(eps, tau, zeros):
    S, a, b = problem(zeros_a=zeros[0], zeros_b=zeros[1], total_b=1.4)
    c = sinkhorn(S, a, b, eps, 50_000, tau=tau, tol=1e-13, early_stop=True)
    assert c.converged and c.tau == tau
    assert np.abs(c.plan - pot_uot(S, a, b, eps, tau)).max() <= 1e-8
    assert np.all(c.plan[list(zeros[0])] == 0) and np.all(c.plan[:, list(zeros[1])] == 0)


def test_unbalanced_iterates_equal_pot_iterates():
    """Row first from g = 0, like POT's generalised Sinkhorn-Knopp: after N iterations
    (2N half-steps) the plans agree, not only at convergence."""
    S, a, b = problem(seed=1)
    for iters in (1, 4, 15):
        ref = ot.unbalanced.sinkhorn_unbalanced(a, b, -S, 0.7, 0.3, reg_type="entropy",
                                                numItermax=iters, stopThr=0)
        c = sinkhorn(S, a, b, 0.7, 2 * iters, tau=0.3)
        assert np.abs(c.plan - ref).max() <= 1e-12


def test_unbalanced_is_pots_kl_problem_with_shifted_cost():
    """POT's default reg_type="kl" penalises KL(γ ‖ a ⊗ b): the same problem as ours for the
    cost −S + ε(log a_i + log b_j)."""
    S, a, b = problem(seed=2)
    eps, tau = 0.5, 2.0
    M = -S + eps * (np.log(a)[:, None] + np.log(b)[None, :])
    ref = ot.unbalanced.sinkhorn_unbalanced(a, b, M, eps, tau, reg_type="kl",
                                            numItermax=100_000, stopThr=1e-15)
    c = sinkhorn(S, a, b, eps, 50_000, tau=tau, tol=1e-13, early_stop=True)
    assert np.abs(c.plan - ref).max() <= 1e-8


def test_unbalanced_optimality_conditions():
    """At the optimum f = −τ log(π1 / a) and g = −τ log(πᵀ1 / b) (first-order conditions
    of the relaxed problem), and the residuals are 0 after every update on their side."""
    S, a, b = problem(seed=3, zeros_a=(2,), total_a=0.7)
    eps, tau = 0.4, 0.8
    c = sinkhorn(S, a, b, eps, 50_000, tau=tau, tol=1e-13, early_stop=True)
    on = a > 0
    np.testing.assert_allclose(c.f[on], -tau * np.log(c.plan.sum(1)[on] / a[on]), atol=1e-9)
    np.testing.assert_allclose(c.g, -tau * np.log(c.plan.sum(0) / b), atol=1e-9)
    assert c.f[2] == -np.inf
    assert np.all(c.row_err[0::2] <= 1e-15) and np.all(c.col_err[1::2] <= 1e-15)
    # the marginals are not a and b: the relaxation lets mass go
    assert np.abs(c.plan.sum(1) - a).sum() > 1e-3


def test_infinite_tau_is_balanced_exactly():
    S, a, b = problem(seed=4, zeros_a=(0,), zeros_b=(8,))
    for method in ("auto", "log"):
        ref = sinkhorn(S, a, b, 0.3, 60, method=method, record=[1, 7, 60])
        for tau in (None, math.inf, np.inf, float("inf")):
            c = sinkhorn(S, a, b, 0.3, 60, method=method, record=[1, 7, 60], tau=tau)
            for k in ("plan", "f", "g", "row_err", "col_err", "cost", "entropy"):
                assert np.array_equal(getattr(c, k), getattr(ref, k)), k
            assert np.array_equal(c.history.cost, ref.history.cost)
            assert c.tau == math.inf and c.mass is None
    # half-step 1 is still softmax
    c = sinkhorn(S, a, b, 0.3, 1, tau=math.inf)
    assert np.abs(c.plan - a[:, None] * softmax_attention(S, 0.3)).max() <= 1e-12
    # an array of τ that are all infinite takes the relaxed path with ρ = 1: same plan
    c = sinkhorn(S, a, b, 0.3, 60, tau=np.full(1, np.inf))
    assert np.abs(c.plan - ref.plan).max() <= 1e-13


@pytest.mark.parametrize("eps", [0.01, 0.3, 2.0])
def test_unbalanced_kernel_path_equals_log_steps(eps):
    """method="auto" (kernel scaling, falling back to log steps at small ε on wide scores)
    gives the log-domain iterates, residuals and history, τ per problem, zero weights."""
    rng = np.random.default_rng(11)
    S = rng.normal(size=(2, 7, 8)) * 6
    _, a, b = problem(7, 8, zeros_a=(0,), zeros_b=(7,), total_a=0.6)
    tau = np.array([0.05, 1.0, 30.0, np.inf])[:, None]
    auto = sinkhorn(S, a, b, eps, 130, tau=tau, record=[1, 64, 130])
    log = sinkhorn(S, a, b, eps, 130, tau=tau, record=[1, 64, 130], method="log")
    scale = np.abs(log.plan).max()
    assert np.abs(auto.plan - log.plan).max() <= 1e-12 * scale
    for k in ("row_err", "col_err"):
        assert np.abs(getattr(auto, k) - getattr(log, k)).max() <= 1e-12 * max(1, scale)
    np.testing.assert_allclose(auto.history.cost, log.history.cost, rtol=1e-10, atol=1e-12)
    assert np.all(auto.plan[..., 0, :] == 0) and np.all(auto.plan[..., 7] == 0)


def test_padded_batch_stays_on_the_kernel_path(monkeypatch):
    """Pairs padded to one size (zero weights differing per problem), alignment-like costs
    in [0, 1]: "auto" scales in the kernel domain throughout (no hand-over to log steps)
    and gives the log-domain plan."""
    import engine.solver.core as solver

    rng = np.random.default_rng(12)
    P, n, m = 6, 7, 5
    S = -rng.random((P, n, m))
    a, b = rng.random((P, n)) + 0.1, rng.random((P, m)) + 0.1
    for p in range(P):
        a[p, n - p % 3:] = 0
        b[p, m - p % 2:] = 0
    a, b = a / a.sum(-1, keepdims=True), b / b.sum(-1, keepdims=True)
    tau = np.array([0.1, 1.0])[:, None]
    log = sinkhorn(S, a, b, 0.05, 300, tau=tau, method="log")
    monkeypatch.setattr(solver, "_log_steps", None)  # a hand-over would fail here
    auto = sinkhorn(S, a, b, 0.05, 300, tau=tau)
    assert np.abs(auto.plan - log.plan).max() <= 1e-12
    assert np.all(auto.plan[1, 1, :, -1] == 0) and np.all(auto.plan[0, 2, -2:] == 0)


def test_large_tau_approaches_balanced():
    """‖π_τ − π‖₁ falls like 1/τ (a large τ converges slowly: its damping is near 1)."""
    S, a, b = problem(seed=5)
    ref = sinkhorn(S, a, b, 1.0, 20_000, tol=1e-12, early_stop=True).plan
    taus = (0.5, 5.0, 50.0, 500.0)
    gaps = [np.abs(sinkhorn(S, a, b, 1.0, 40_000, tau=tau, tol=1e-10, early_stop=True).plan
                   - ref).sum() for tau in taus]
    assert all(x > 5 * y for x, y in zip(gaps, gaps[1:]))
    assert gaps[-1] < 0.05 * gaps[0] and gaps[-1] < 1e-2


def test_tau_grid_is_one_batched_call_equal_to_one_by_one():
    """τ (T, 1) over a batch of P problems gives a (T, P) batch; ε per problem too."""
    rng = np.random.default_rng(6)
    P, n, m = 5, 6, 4
    S = rng.normal(size=(P, n, m)) * 2
    a = rng.random((P, n)) + 0.1
    a[1, -2:] = 0  # padded words of a shorter pair
    a /= a.sum(-1, keepdims=True)
    b = np.full(m, 1 / m)
    taus = np.array([0.1, 1.0, 10.0, np.inf])[:, None]
    eps = np.linspace(0.3, 1.5, P)
    c = sinkhorn(S, a, b, eps, 80, tau=taus)
    assert c.plan.shape == (4, P, n, m) and c.row_err.shape == (4, P, 80)
    assert c.tau.shape == (4, P) and c.eps.shape == (4, P)
    for t in range(4):
        for p in range(P):
            one = sinkhorn(S[p], a[p], b, float(eps[p]), 80, tau=float(taus[t, 0]))
            mass = max(1.0, one.plan.sum())  # residuals are differences of marginals
            np.testing.assert_allclose(c.plan[t, p], one.plan, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(c.col_err[t, p], one.col_err, rtol=0, atol=1e-13 * mass)
            sel = c.select((t, p))
            assert np.array_equal(sel.plan, c.plan[t, p]) and float(sel.tau) == taus[t, 0]


def test_unbalanced_and_partial_float32_finite_at_small_eps():
    """Log-domain steps stay finite in float32 at ε = 0.01, on MiniLM-like logits (std 8)
    and on alignment costs in [0, 1], where they agree with float64 to 1e-4."""
    rng = np.random.default_rng(7)
    wide = torch.tensor(rng.normal(size=(4, 16, 16)) * 8, dtype=torch.float32)
    unit = -torch.tensor(rng.random((4, 16, 16)), dtype=torch.float32)
    a = torch.full((16,), 1 / 16, dtype=torch.float32)
    for eps in (0.01, 0.05):
        for solve in (lambda S, a: sinkhorn(S, a, a, eps, 200, tau=0.5),
                      lambda S, a: partial(S, a, a, eps, 0.6, half_steps=200)):
            for S in (wide, unit):
                c = solve(S, a)
                assert c.plan.dtype == torch.float32
                for x in (c.plan, c.row_err, c.col_err, c.cost, c.entropy):
                    assert torch.isfinite(x).all()
                assert (c.plan >= 0).all()
            ref = solve(unit.double(), a.double())
            assert (c.plan.double() - ref.plan).abs().max() <= 1e-4


@settings(max_examples=FEW, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), eps=st.floats(0.2, 5.0), tau=st.floats(0.05, 50.0))
def test_hypothesis_unbalanced_equals_pot(data, eps, tau):
    """(Scores scaled to at most 2τ: the relaxed plan's mass grows like e^{S/τ}, and for
    larger S/τ the residuals of plans of mass 10⁴ and more hit rounding above 1e-13.)"""
    n, m = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    S = rng.normal(size=(n, m)) * min(data.draw(st.sampled_from([0.5, 2.0])), 2 * tau)
    a, b = rng.random(n) * rng.integers(0, 2, n), rng.random(m) + 0.05
    a[0] += 0.1  # at least one row of weight; others may be 0
    c = sinkhorn(S, a, b, eps, 100_000, tau=tau, tol=1e-13, early_stop=True)
    assert c.converged
    assert np.abs(c.plan - pot_uot(S, a, b, eps, tau)).max() <= 1e-8


# ---- partial -----------------------------------------------------------------------------

@pytest.mark.parametrize("eps, share", [(0.5, 0.5), (1.0, 0.9), (0.2, 0.3)])
@pytest.mark.parametrize("zeros", [((), ()), ((0, 6), (3, 8))])
def test_partial_equals_pot(eps, share, zeros):
    S, a, b = problem(seed=8, zeros_a=zeros[0], zeros_b=zeros[1], total_b=0.8)
    mass = share * 0.8
    c = partial(S, a, b, eps, mass, half_steps=50_000, tol=1e-13, early_stop=True)
    assert c.converged and c.mass == mass and c.tau == math.inf
    assert np.abs(c.plan - pot_partial(S, a, b, eps, mass)).max() <= 1e-8
    # feasible: moves m, within both marginals
    assert c.plan.sum() == pytest.approx(mass, abs=1e-12)
    assert np.all(c.plan.sum(1) <= a + 1e-12) and np.all(c.plan.sum(0) <= b + 1e-12)
    assert np.all(c.plan[list(zeros[0])] == 0) and np.all(c.plan[:, list(zeros[1])] == 0)


def test_partial_moves_mass_m_after_every_half_step_and_full_mass_is_balanced():
    S, a, b = problem(seed=9, zeros_a=(1,))
    for T in (1, 2, 7):
        assert partial(S, a, b, 0.5, 0.4, half_steps=T).plan.sum() == pytest.approx(0.4, abs=1e-14)
    full = partial(S, a, b, 0.5, None, half_steps=20_000, tol=1e-12, early_stop=True)
    bal = sinkhorn(S, a, b, 0.5, 20_000, tol=1e-12, early_stop=True)
    assert full.mass == pytest.approx(1.0)
    assert np.abs(full.plan - bal.plan).max() <= 1e-9
    np.testing.assert_allclose(full.plan.sum(1), a, atol=1e-10)  # every row saturated


def test_partial_batched_masses_equal_one_by_one():
    rng = np.random.default_rng(10)
    S = rng.normal(size=(3, 5, 6)) * 2
    a, b = np.full(5, 0.2), np.full(6, 1 / 6)
    masses = np.array([0.2, 0.5, 1.0])[:, None]  # (T, 1) over 3 heads: a (T, 3) batch
    c = partial(S, a, b, 0.5, masses, half_steps=60)
    assert c.plan.shape == (3, 3, 5, 6) and c.mass.shape == (3, 3)
    for t in range(3):
        for h in range(3):
            one = partial(S[h], a, b, 0.5, float(masses[t, 0]), half_steps=60)
            assert np.abs(one.plan - c.plan[t, h]).max() <= 1e-13
            assert np.abs(one.row_err - c.row_err[t, h]).max() <= 1e-13


def random_partial(data):
    n, m = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    S = rng.normal(size=(n, m)) * data.draw(st.sampled_from([0.5, 2.0]))
    a, b = rng.random(n) * rng.integers(0, 2, n), rng.random(m) * rng.integers(0, 2, m)
    a[0] += 0.1
    b[-1] += 0.1
    return S, a, b


@settings(max_examples=FEW, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), eps=st.floats(0.2, 5.0), share=st.floats(0.05, 0.95))
def test_hypothesis_partial_equals_pot(data, eps, share):
    """(Shares near 1 are left to the next test: POT's Dykstra iteration is slow there
    and stops on its step size long before it is within 1e-8.)"""
    S, a, b = random_partial(data)
    mass = share * min(a.sum(), b.sum())
    c = partial(S, a, b, eps, mass, half_steps=100_000, tol=1e-13, early_stop=True)
    assert c.converged
    assert np.abs(c.plan - pot_partial(S, a, b, eps, mass)).max() <= 1e-8


@settings(max_examples=2 * FEW, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), eps=st.floats(0.05, 5.0),
       share=st.one_of(st.floats(0.01, 1.0), st.sampled_from([0.99999, 1.0])))
def test_hypothesis_partial_optimality_conditions(data, eps, share):
    """The KKT conditions of the partial problem, POT-free: π = exp((f + g + S)/ε) with
    g ≤ 0; π1 ≤ a, πᵀ1 ≤ b, Σπ = m; a column with g_j < 0 is saturated, and every row
    below the largest f (f_i = ε(α_i + κ), α_i ≤ 0) is saturated unless all are."""
    S, a, b = random_partial(data)
    mass = share * min(a.sum(), b.sum())
    c = partial(S, a, b, eps, mass, half_steps=100_000, tol=1e-13, early_stop=True)
    assert c.converged
    r, col = c.plan.sum(1), c.plan.sum(0)
    ia, ib = a > 0, b > 0
    assert c.plan.sum() == pytest.approx(mass, abs=1e-12)
    assert np.all(r <= a + 1e-12) and np.all(col <= b + 1e-12)
    on = ia[:, None] & ib[None, :]
    np.testing.assert_allclose(c.plan[on], np.exp((c.f[:, None] + c.g[None, :] + S)[on] / eps),
                               rtol=1e-9)
    assert np.all(c.plan[~on] == 0)
    u, v = c.f[ia] / eps, c.g[ib] / eps
    assert np.all(v <= 1e-12)
    assert np.all(np.abs(col[ib] - b[ib])[v < -1e-6] <= 1e-9)
    saturated = np.abs(r[ia] - a[ia]) <= 1e-9
    if not saturated.all():
        assert np.all(saturated[u < u.max() - 1e-6])


# ---- real scores -------------------------------------------------------------------------

@pytest.mark.model
def test_real_minilm_scores_unbalanced_and_partial_equal_pot():
    from engine import relate

    r = relate("The bank of the river was muddy.", "A muddy river bank in spring.",
               layer=3, head=5)
    S, a, b = r.scores, r.a, r.b
    assert (a == 0).any() and (b == 0).any()  # [CLS] and [SEP] have weight 0
    eps = 2.0
    c = sinkhorn(S, a, b, eps, 100_000, tau=0.5, tol=1e-12, early_stop=True)
    assert c.converged and np.abs(c.plan - pot_uot(S, a, b, eps, 0.5)).max() <= 1e-8
    c = partial(S, a, b, eps, 0.6, half_steps=100_000, tol=1e-12, early_stop=True)
    assert c.converged and np.abs(c.plan - pot_partial(S, a, b, eps, 0.6)).max() <= 1e-8


# ---- bad input ---------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda S, a, b: sinkhorn(S, a, b, tau=0), "tau .* must be > 0"),
    (lambda S, a, b: sinkhorn(S, a, b, tau=-1.0), "tau .* must be > 0"),
    (lambda S, a, b: sinkhorn(S, a, b, tau=float("nan")), "tau .* must be > 0"),
    (lambda S, a, b: sinkhorn(S, a, b, tau="big"), "tau must be a number"),
    (lambda S, a, b: sinkhorn(np.stack([S, S]), a, b, tau=np.ones(5)), "tau has shape \\(5,\\)"),
    (lambda S, a, b: sinkhorn(S, a, b, eps=np.array([1.0, 0.0])), "ε must be a finite number > 0"),
    (lambda S, a, b: sinkhorn(S, a, b, eps=np.array([1.0, 1e9])), "ε must lie in"),
    (lambda S, a, b: sinkhorn(S, a * 2, b), "a must sum to 1"),
    (lambda S, a, b: sinkhorn(S, a * 0, b, tau=1.0), "a has no mass"),
    (lambda S, a, b: partial(S, a, b, 1.0, 0.0), "mass .* must be > 0"),
    (lambda S, a, b: partial(S, a, b * 0.5, 1.0, 0.7), "mass must be at most min\\(Σa, Σb\\) = 0.5"),
    (lambda S, a, b: partial(S, a, b, 1.0, np.array([0.5, 2.0])), "mass must be at most"),
    (lambda S, a, b: partial(S, a, -b, 1.0, 0.5), "negative"),
])
def test_bad_input_says_what_to_change(call, message):
    S, a, b = np.zeros((3, 4)), np.full(3, 1 / 3), np.full(4, 0.25)
    with pytest.raises(SettingsError, match=message):
        call(S, a, b)


def test_one_entropy_function_relaxed_form_differs_by_exactly_the_mass():
    """references.entropy is the one definition: H(π) = −Σ π log π, and its relaxed form
    H₁(π) = −Σ π (log π − 1) = H(π) + Σ π, for numpy and torch alike."""
    from engine.solver.references import entropy

    rng = np.random.default_rng(11)
    P = rng.random((3, 4, 5))
    P[0, 1] = 0.0  # 0 log 0 = 0
    unit = P / P.sum((-2, -1), keepdims=True)  # plans of mass 1
    for plans in (unit, 0.37 * unit, P):
        h, h1 = entropy(plans), entropy(plans, relaxed=True)
        np.testing.assert_allclose(h1 - h, plans.sum((-2, -1)), rtol=0, atol=1e-13)
        mixed = entropy(plans, relaxed=np.array([True, False, True]))
        np.testing.assert_array_equal(mixed, np.where([True, False, True], h1, h))
        t = entropy(torch.from_numpy(plans), relaxed=True)
        assert isinstance(t, torch.Tensor)
        np.testing.assert_allclose(t.numpy(), h1, rtol=0, atol=1e-13)
    np.testing.assert_allclose(entropy(unit, relaxed=True) - entropy(unit), 1.0, atol=1e-13)
    assert np.isfinite(entropy(P)).all()


def test_each_solver_reports_the_entropy_of_its_own_objective():
    from engine.solver.references import entropy

    S, a, b = problem(seed=12, zeros_a=(1,))
    bal = sinkhorn(S, a, b, 0.5, 80, record=[3, 80])
    np.testing.assert_allclose(bal.entropy, entropy(bal.plan), rtol=0, atol=1e-12)
    for method in ("auto", "log"):
        unb = sinkhorn(S, a, b, 0.5, 80, tau=0.7, method=method, record=[3, 80],
                       record_plans=True)
        mass = unb.plan.sum()
        assert abs(mass - 1) > 1e-3  # a relaxed plan's mass is not 1 ...
        np.testing.assert_allclose(unb.entropy - entropy(unb.plan), mass, rtol=0, atol=1e-12)
        np.testing.assert_allclose(unb.history.entropy, entropy(unb.history.plans, relaxed=True),
                                   rtol=0, atol=1e-12)
    par = partial(S, a, b, 0.5, 0.6, half_steps=80)
    np.testing.assert_allclose(par.entropy - entropy(par.plan), 0.6, rtol=0, atol=1e-9)
    # ... and τ = ∞ is balanced: the balanced entropy, to the bit
    inf = sinkhorn(S, a, b, 0.5, 80, tau=math.inf, record=[3, 80])
    assert np.array_equal(inf.entropy, bal.entropy)
    assert np.array_equal(inf.history.entropy, bal.history.entropy)
    # an array of τ mixes both, problem by problem
    mix = sinkhorn(S, a, b, 0.5, 80, tau=np.array([math.inf, 0.7]))
    assert mix.entropy[0] == pytest.approx(float(entropy(mix.plan[0])), abs=1e-12)
    assert mix.entropy[1] == pytest.approx(float(entropy(mix.plan[1], relaxed=True)), abs=1e-12)
