"""Sinkhorn and softmax: identities, limits, agreement with POT, robustness (hypothesis)."""

import math
import os

import numpy as np
import ot
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import SettingsError, sinkhorn, softmax_attention
from engine.solver.references import exact_plan, product

EXAMPLES = int(os.environ.get("SINKSCOPE_FUZZ_EXAMPLES", "500"))


def problem(n=7, m=9, seed=0, scale=3.0, zeros_a=(), zeros_b=()):
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(n, m)) * scale
    a, b = rng.random(n) + 0.1, rng.random(m) + 0.1
    a[list(zeros_a)] = 0
    b[list(zeros_b)] = 0
    return S, a / a.sum(), b / b.sum()


@pytest.mark.parametrize("method", ["auto", "log"])
@pytest.mark.parametrize("zeros", [((), ()), ((0, 6), (0, 8)), ((3,), ())])
def test_half_step_one_is_softmax(method, zeros):
    S, a, b = problem(zeros_a=zeros[0], zeros_b=zeros[1])
    for eps in (0.1, 0.5, 1.0, 7.0):
        c = sinkhorn(S, a, b, eps=eps, half_steps=1, method=method)
        expected = a[:, None] * softmax_attention(S, eps)
        assert np.abs(c.plan - expected).max() <= 1e-12
        assert c.half_steps_run == 1 and c.row_err.shape == (1,)


def test_softmax_rows_sum_to_one_and_match_torch():
    S, _, _ = problem()
    P = softmax_attention(S, 0.7)
    np.testing.assert_allclose(P.sum(-1), 1, atol=1e-12)
    Pt = softmax_attention(torch.tensor(S), 0.7)
    assert isinstance(Pt, torch.Tensor)
    np.testing.assert_allclose(Pt.numpy(), P, atol=1e-15)


@pytest.mark.parametrize("method", ["auto", "log"])
@pytest.mark.parametrize("eps", [0.3, 1.0, 5.0])
@pytest.mark.parametrize("zeros", [((), ()), ((0, 6), (0, 8))])
def test_converged_plan_equals_pot_sinkhorn_log(method, eps, zeros):
    S, a, b = problem(seed=1, zeros_a=zeros[0], zeros_b=zeros[1])
    c = sinkhorn(S, a, b, eps=eps, half_steps=6000, tol=1e-12, method=method)
    ref = ot.sinkhorn(a, b, -S, eps, method="sinkhorn_log", numItermax=100000, stopThr=1e-15)
    assert c.converged
    assert np.abs(c.plan - ref).max() <= 1e-8
    np.testing.assert_allclose(c.plan.sum(1), a, atol=1e-10)
    np.testing.assert_allclose(c.plan.sum(0), b, atol=1e-10)
    # the plan is exp((f + g + S)/ε) on the support
    on = (a[:, None] > 0) & (b[None, :] > 0)
    logp = (c.f[:, None] + c.g[None, :] + S) / eps
    np.testing.assert_allclose(c.plan[on], np.exp(logp[on]), rtol=1e-9)
    assert np.all(c.plan[~on] == 0)


def test_after_n_half_steps_equals_pot_batch_after_n_iterations():
    rng = np.random.default_rng(3)
    S = torch.tensor(rng.normal(size=(4, 6, 5, 5)) * 2)
    a = torch.full((5,), 0.2, dtype=torch.float64)
    for iters in (1, 3, 10):
        c = sinkhorn(S, a, a, eps=0.8, half_steps=2 * iters)
        flat = S.reshape(-1, 5, 5)
        res = ot.solve_batch(-flat, 0.8, a.expand(24, 5), a.expand(24, 5), max_iter=iters,
                             tol=0, reg_type="entropy")
        assert (c.plan.reshape(-1, 5, 5) - res.plan).abs().max() <= 1e-10


def test_batched_grid_equals_one_by_one():
    rng = np.random.default_rng(4)
    S = rng.normal(size=(2, 3, 6, 4)) * 3
    _, a, b = problem(6, 4, zeros_a=(0,), zeros_b=(3,))
    c = sinkhorn(S, a, b, eps=0.5, half_steps=40)
    assert c.plan.shape == (2, 3, 6, 4) and c.row_err.shape == (2, 3, 40)
    for l in range(2):
        for h in range(3):
            one = sinkhorn(S[l, h], a, b, eps=0.5, half_steps=40)
            assert np.abs(one.plan - c.plan[l, h]).max() <= 1e-13
            assert np.abs(one.col_err - c.col_err[l, h]).max() <= 1e-13


def test_errors_alternate_and_decrease():
    S, a, b = problem(scale=2)
    c = sinkhorn(S, a, b, eps=0.5, half_steps=30)
    # after a row step the row error is ~0, after a column step the column error is ~0
    assert np.all(c.row_err[0::2] < 1e-14) and np.all(c.col_err[1::2] < 1e-14)
    assert c.col_err[0] > 1e-3
    odd = c.col_err[0::2]
    assert np.all(np.diff(odd) <= 1e-15)


def test_early_stop_stops_within_tolerance():
    S, a, b = problem()
    c = sinkhorn(S, a, b, eps=1.0, half_steps=5000, tol=1e-9, early_stop=True)
    assert c.converged and c.half_steps_run < 500
    assert c.row_err.shape == (c.half_steps_run,)
    assert max(c.row_err[-1], c.col_err[-1]) <= 1e-9


def test_not_converged_is_reported():
    S, a, b = problem(scale=10)
    c = sinkhorn(S, a, b, eps=0.01, half_steps=10)
    assert not c.converged
    assert c.col_err[-1] < 1e-12 < c.tol < c.row_err[-1]  # last step was a column step


def test_small_eps_approaches_exact_ot():
    S, a, b = problem(seed=5)
    P = exact_plan(S, a, b)
    ref_cost = float((P * -S).sum())
    assert ref_cost == pytest.approx(ot.emd2(a, b, -S), abs=1e-9)
    gaps = []
    for eps in (0.5, 0.1, 0.02):
        c = sinkhorn(S, a, b, eps=eps, half_steps=20000, tol=1e-9, early_stop=True)
        gaps.append(float(c.cost) - ref_cost)
    assert gaps[0] > gaps[1] > gaps[2] >= -1e-9
    assert gaps[2] < 0.05


def test_large_eps_approaches_product():
    S, a, b = problem(seed=6)
    c = sinkhorn(S, a, b, eps=1e4, half_steps=200)
    assert np.abs(c.plan - product(a, b)).sum() < 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_real_like_scores_small_eps_stay_finite(dtype):
    # MiniLM logits span about −28..34; kernel scaling alone overflows below ε ≈ 0.5
    rng = np.random.default_rng(7)
    S = torch.tensor(rng.normal(size=(72, 30, 30)) * 8, dtype=dtype)
    a = torch.full((30,), 1 / 30, dtype=dtype)
    for eps in (0.05, 0.2, 1.0):
        c = sinkhorn(S, a, a, eps=eps, half_steps=300)
        ref = sinkhorn(S, a, a, eps=eps, half_steps=300, method="log")
        assert torch.isfinite(c.plan).all() and (c.plan >= 0).all()
        tol = 1e-4 if dtype == torch.float32 else 1e-10
        assert (c.plan - ref.plan).abs().max() <= tol


def test_float32_and_torch_in_torch_out():
    S, a, b = problem()
    c = sinkhorn(torch.tensor(S, dtype=torch.float32), torch.tensor(a, dtype=torch.float32),
                 torch.tensor(b, dtype=torch.float32), eps=0.5, half_steps=200)
    assert isinstance(c.plan, torch.Tensor) and c.plan.dtype == torch.float32
    c64 = sinkhorn(S, a, b, eps=0.5, half_steps=200)
    assert np.abs(c.plan.numpy() - c64.plan).max() < 1e-5


@pytest.mark.parametrize("kwargs, message", [
    (dict(eps=0), "ε must be a finite number > 0"),
    (dict(eps=-1), "ε must be a finite number > 0"),
    (dict(eps=float("nan")), "ε must be a finite number > 0"),
    (dict(eps=float("inf")), "ε must be a finite number > 0"),
    (dict(half_steps=0), "half_steps must be ≥ 1"),
    (dict(half_steps=2.5), "half_steps must be a whole number"),
    (dict(a=np.array([0.5, 0.5, 0.5])), "a must sum to 1"),
    (dict(a=np.array([1.5, -0.5, 0.0])), "negative"),
    (dict(b=np.array([0.5, 0.5])), "b has 2 weights but the scores have 4 columns"),
    (dict(b=np.array([np.nan, 0.5, 0.5, 0])), "NaN"),
])
def test_bad_input_says_what_to_change(kwargs, message):
    args = dict(S=np.zeros((3, 4)), a=np.full(3, 1 / 3), b=np.full(4, 0.25), eps=1.0,
                half_steps=10)
    args.update(kwargs)
    with pytest.raises(SettingsError, match=message):
        sinkhorn(**args)


weights_st = st.lists(st.floats(0, 1), min_size=1, max_size=8).filter(lambda w: sum(w) > 1e-3)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), eps=st.floats(1e-4, 1e4), dtype=st.sampled_from(["float32", "float64"]),
       method=st.sampled_from(["auto", "log"]), scale=st.sampled_from([0.1, 1.0, 10.0, 40.0]))
def test_hypothesis_plans_finite_nonnegative_marginals_when_converged(data, eps, dtype, method,
                                                                     scale):
    a = np.array(data.draw(weights_st), dtype=np.float64)
    b = np.array(data.draw(weights_st), dtype=np.float64)
    a, b = a / a.sum(), b / b.sum()
    seed = data.draw(st.integers(0, 2**31 - 1))
    S = np.random.default_rng(seed).normal(size=(len(a), len(b))) * scale
    half = data.draw(st.integers(1, 300))
    c = sinkhorn(S.astype(dtype), a.astype(dtype), b.astype(dtype), eps=eps,
                 half_steps=half, method=method, tol=1e-4)
    for x in (c.plan, c.row_err, c.col_err, c.cost, c.entropy):
        assert np.all(np.isfinite(x))
    assert np.all(c.plan >= 0)
    # the reported final errors are the plan's own marginal errors, computed here afresh
    # (float32 rounds exponents of size |S|/ε: the plan it writes out carries that error)
    atol = (1e-4 + 4e-7 * np.abs(S).max() / eps) if dtype == "float32" else 1e-9
    plan = c.plan.astype(np.float64)
    assert abs(c.row_err[-1] - np.abs(plan.sum(1) - a).sum()) <= atol
    assert abs(c.col_err[-1] - np.abs(plan.sum(0) - b).sum()) <= atol
    if c.converged:
        assert np.abs(plan.sum(1) - a).sum() <= 1e-4 + atol
        assert np.abs(plan.sum(0) - b).sum() <= 1e-4 + atol


@settings(max_examples=max(20, EXAMPLES // 10), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), eps=st.floats(0.02, 50), method=st.sampled_from(["auto", "log"]))
def test_hypothesis_history_is_each_states_own_cost_and_entropy(data, eps, method):
    """What the solver records after half-step t is the cost and entropy of the plan that
    t half-steps give, computed here from that plan (log-domain run, float64)."""
    a = np.array(data.draw(weights_st)); b = np.array(data.draw(weights_st))
    a, b = a / a.sum(), b / b.sum()
    S = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1))).normal(
        size=(len(a), len(b))) * data.draw(st.sampled_from([1.0, 10.0]))
    T = data.draw(st.integers(1, 120))
    steps = sorted(data.draw(st.sets(st.integers(1, T), min_size=1, max_size=6)))
    c = sinkhorn(S, a, b, eps=eps, half_steps=T, method=method, record=steps + [T + 5, 0])
    h = c.history
    assert h.steps.tolist() == steps  # steps outside 1..T are not recorded
    for t, cost, ent in zip(steps, h.cost, h.entropy):
        p = sinkhorn(S, a, b, eps=eps, half_steps=t, method="log").plan
        assert cost == pytest.approx(-(p * S).sum(), rel=1e-9, abs=1e-9)
        assert ent == pytest.approx(-(p[p > 0] * np.log(p[p > 0])).sum(), rel=1e-9, abs=1e-9)
    if steps[-1] == T:
        assert h.cost[-1] == pytest.approx(float(c.cost), rel=1e-12, abs=1e-15)
        assert h.entropy[-1] == pytest.approx(float(c.entropy), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("eps", [0.01, 0.05, 1.0])
def test_auto_equals_log_with_zero_weights_including_error_history(eps):
    # small ε on wide scores forces the fallback from kernel scaling to log steps
    S, a, b = problem(9, 11, seed=8, scale=15, zeros_a=(0, 8), zeros_b=(0, 10))
    auto = sinkhorn(S, a, b, eps=eps, half_steps=40)
    log = sinkhorn(S, a, b, eps=eps, half_steps=40, method="log")
    assert np.abs(auto.plan - log.plan).max() <= 1e-12
    assert np.abs(auto.row_err - log.row_err).max() <= 1e-12
    assert np.abs(auto.col_err - log.col_err).max() <= 1e-12
    assert auto.col_err[0] > 0.5  # state 1 (softmax) puts mass on zero-weight columns


@pytest.mark.parametrize("method", ["auto", "log"])
def test_eps_per_problem_equals_one_by_one(method):
    """ε may be an array over the batch: one call for a row of ε values (kernel path too)."""
    rng = np.random.default_rng(9)
    S = rng.normal(size=(3, 6, 5)) * 3
    _, a, b = problem(6, 5, zeros_a=(0,), zeros_b=(4,))
    eps = np.array([[0.05], [0.5], [5.0]])  # (3, 1) over 3 heads: a (3, 3) batch
    c = sinkhorn(S, a, b, eps, 60, method=method, record=[1, 30])
    assert c.plan.shape == (3, 3, 6, 5) and c.eps.shape == (3, 3)
    for i in range(3):
        for h in range(3):
            one = sinkhorn(S[h], a, b, float(eps[i, 0]), 60, method=method, record=[1, 30])
            assert np.abs(one.plan - c.plan[i, h]).max() <= 1e-12
            on = np.isfinite(one.f)
            assert np.abs(one.f[on] - c.f[i, h][on]).max() <= 1e-10
            assert np.abs(one.row_err - c.row_err[i, h]).max() <= 1e-12
            assert np.abs(one.history.cost - c.history.cost[i, h]).max() <= 1e-10


def test_coupling_apply_and_select():
    rng = np.random.default_rng(10)
    S = torch.tensor(rng.normal(size=(2, 3, 4, 5)))
    a, b = torch.full((4,), 0.25, dtype=torch.float64), torch.full((5,), 0.2, dtype=torch.float64)
    c = sinkhorn(S, a, b, 0.5, 20, record=[1, 20], record_plans=True)
    n = c.apply(lambda t: t.numpy())
    assert isinstance(n.plan, np.ndarray) and isinstance(n.history.plans, np.ndarray)
    assert n.eps == 0.5 and n.tau == math.inf and n.mass is None
    one = n.select((1, 2))
    ref = sinkhorn(S[1, 2].numpy(), a.numpy(), b.numpy(), 0.5, 20, record=[1, 20],
                   record_plans=True)
    assert one.plan.shape == (4, 5) and one.cost.shape == () and one.converged.shape == ()
    assert one.history.plans.shape == (2, 4, 5) and one.history.steps.tolist() == [1, 20]
    for k in ("plan", "f", "g", "row_err", "col_err", "cost", "entropy"):
        np.testing.assert_allclose(getattr(one, k), getattr(ref, k), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(one.history.plans, ref.history.plans, atol=1e-15)
    assert n.select(0).plan.shape == (3, 4, 5)


def test_solver_package_exports_callables_whatever_was_imported_first():
    import subprocess
    import sys
    code = ("import sys; import engine.solver.references;"
            "assert 'torch' not in sys.modules, 'torch imported';"
            "import engine.solver.core as module;"
            "from engine.solver import sinkhorn, partial, softmax_attention;"
            "import numpy as np;"
            "c = sinkhorn(np.zeros((2, 3)), np.full(2, .5), np.full(3, 1 / 3), 1.0, 3);"
            "assert abs(c.plan - 1 / 6).max() < 1e-15;"
            "import inspect; assert all(inspect.isfunction(f) for f in (sinkhorn, partial, softmax_attention));"
            "assert module.check_eps(2) == 2.0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


# ---- the solver pieces the Lab shares: step, log_plan, g_init, ε-annealing -------------

def test_log_plan_is_the_solvers_own_half_steps_and_differentiable():
    from engine.solver.core import log_plan

    g = torch.Generator().manual_seed(5)
    S = torch.randn(4, 5, 6, generator=g, dtype=torch.float64, requires_grad=True)
    a = torch.softmax(torch.randn(4, 5, generator=g, dtype=torch.float64), -1)
    b = torch.softmax(torch.randn(4, 6, generator=g, dtype=torch.float64), -1)
    for t in (1, 2, 9):
        L = log_plan(S, a, b, 0.6, t)
        ref = sinkhorn(S.detach(), a, b, 0.6, t, method="log").plan
        assert torch.equal(L.detach().exp(), ref)  # the same half-steps, to the bit
    # start="b": half-step 1 is attention over the measure ν, a·softmax(S/ε + log b)
    L1 = log_plan(S, a, b, 0.6, 1, start="b")
    torch.testing.assert_close(L1.exp(), a[..., None] * torch.softmax(S / 0.6 + b.log()[:, None], -1))
    # both starts converge to the one plan of Π(a, b)
    torch.testing.assert_close(log_plan(S, a, b, 0.6, 400, start="b").exp(),
                               log_plan(S, a, b, 0.6, 400).exp(), rtol=0, atol=1e-10)
    L.exp().sum().backward()  # no in-place operation on the autograd path
    assert S.grad is not None and torch.isfinite(S.grad).all()
    with pytest.raises(SettingsError, match="start"):
        log_plan(S, a, b, 0.6, 2, start="a")


def test_lab_sinkhorn_layer_is_log_plan_from_log_b():
    from engine.lab.nets import sinkhorn_log_plan
    from engine.solver.core import log_plan

    g = torch.Generator().manual_seed(6)
    S = torch.randn(3, 4, 5, generator=g)
    a = torch.full((3, 4), 0.25)
    b = torch.tensor([[0.5, 0.5, 0, 0, 0], [0.2] * 5, [0.1, 0.2, 0.3, 0.4, 0.0]])
    for t in (1, 4, 40):
        assert torch.equal(sinkhorn_log_plan(S, a, b, 0.5, t), log_plan(S, a, b, 0.5, t, start="b"))


def test_g_init_warm_start_and_none_is_the_default():
    S, a, b = problem(seed=4)
    c = sinkhorn(S, a, b, 0.2, 4000, tol=1e-12, early_stop=True)
    assert c.converged
    same = sinkhorn(S, a, b, 0.2, 30, g_init=None)
    assert np.array_equal(same.plan, sinkhorn(S, a, b, 0.2, 30).plan)
    for method in ("auto", "log"):
        warm = sinkhorn(S, a, b, 0.2, 2, g_init=c.g, method=method)
        assert np.abs(warm.plan - c.plan).max() <= 1e-10  # one iteration from the optimum
        assert bool(warm.converged) or warm.row_err[-1] <= 1e-9
    _, az, bz = problem(seed=4, zeros_a=(1,), zeros_b=(2, 5))
    cz = sinkhorn(S, az, bz, 0.3, 3000, tol=1e-12, early_stop=True)
    wz = sinkhorn(S, az, bz, 0.3, 2, g_init=cz.g)  # −inf where b = 0 is allowed
    assert np.abs(wz.plan - cz.plan).max() <= 1e-10 and np.isfinite(wz.plan).all()
    for bad, msg in (([0.0] * 3, "one potential per column"), ([np.nan] * 9, "NaN"),
                     ([np.inf] * 9, "NaN or \\+inf")):
        with pytest.raises(SettingsError, match=msg):
            sinkhorn(S, a, b, 0.2, 2, g_init=np.array(bad))


def test_anneal_schedule_is_a_pure_halving_schedule():
    from engine.solver import anneal_schedule, log_plan
    from engine.solver import core

    assert anneal_schedule is core.anneal_schedule and log_plan is core.log_plan

    assert anneal_schedule(8.0, 1.0) == (8.0, 4.0, 2.0)
    assert anneal_schedule(8.0, 0.9) == (8.0, 4.0, 2.0, 1.0)
    assert anneal_schedule(0.5, 1.0) == ()
    assert anneal_schedule(9.0, 1.0, factor=1 / 3) == (9.0, 3.0)
    with pytest.raises(SettingsError, match="factor"):
        anneal_schedule(8.0, 1.0, factor=1.5)
    with pytest.raises(SettingsError, match="ε"):
        anneal_schedule(8.0, -1.0)


@pytest.mark.parametrize("method", ["auto", "log"])
def test_annealing_reaches_the_same_plan(method):
    from engine.solver.core import anneal_schedule

    S, a, b = problem(seed=7, n=12, m=10)
    cold = sinkhorn(S, a, b, 0.05, 20000, tol=1e-9, early_stop=True, method=method)
    warm = sinkhorn(S, a, b, 0.05, 20000, tol=1e-9, early_stop=True, method=method,
                    anneal=anneal_schedule(np.abs(S).max(), 0.05))
    assert cold.converged and warm.converged
    assert warm.half_steps_run != cold.half_steps_run  # the warm start changed the path
    assert np.abs(warm.plan - cold.plan).max() <= 1e-7
    assert np.array_equal(sinkhorn(S, a, b, 0.05, 40, anneal=()).plan,
                          sinkhorn(S, a, b, 0.05, 40).plan)  # no ε: no annealing
    with pytest.raises(SettingsError, match="ε"):
        sinkhorn(S, a, b, 0.05, 40, anneal=[1.0, -2.0])


def test_annealing_applies_to_relaxed_problems():
    S, a, b = problem(seed=8)
    cold = sinkhorn(S, a, b, 0.1, 20000, tau=2.0, tol=1e-10, early_stop=True)
    warm = sinkhorn(S, a, b, 0.1, 20000, tau=2.0, tol=1e-10, early_stop=True,
                    anneal=(4.0, 2.0, 1.0, 0.5, 0.25))
    assert cold.converged and warm.converged
    assert warm.half_steps_run <= cold.half_steps_run
    assert np.abs(warm.plan - cold.plan).max() <= 1e-8
