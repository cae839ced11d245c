"""The lab's engine: measure encoders, the Sinkhorn layer, targets, training, CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.io import cli as engine_cli
from engine.lab import cli as lab_cli
from engine.lab.errors import LabError, TargetError
from engine.lab.measures import Family, draw_pairs
from engine.lab.nets import CouplingModel, MeasureEncoder, round_to_coupling, sinkhorn_log_plan
from engine.lab.targets import NAMES, TARGETS, custom_target, round_to_marginals, sq_cost
from engine.lab.training import LabSettings, load, predict, save, train

# Test-sized runs: small sets, few steps, so the whole file stays well under 30 s.
TINY = dict(points=5, train_pairs=96, heldout_pairs=16, batch=32, eval_every=5, half_steps=40,
            width=8, depth=1)


def _encoder(width: int, depth: int, heads: int, seed: int) -> MeasureEncoder:
    torch.manual_seed(seed)
    return MeasureEncoder(width, depth, heads).double().eval()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 7), width=st.sampled_from([1, 4, 6]), depth=st.integers(0, 2),
       heads=st.integers(1, 3), seed=st.integers(0, 10**6))
def test_measure_encoder_is_permutation_equivariant(n, width, depth, heads, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, n, 2, generator=g, dtype=torch.float64)
    a = torch.rand(2, n, generator=g, dtype=torch.float64) + 0.1
    a = a / a.sum(-1, keepdim=True)
    enc = _encoder(width, depth, heads, seed)
    perm = torch.randperm(n, generator=g)
    with torch.no_grad():
        out, out_p = enc(x, a), enc(x[:, perm], a[:, perm])
    assert out.shape == (2, n, width)
    torch.testing.assert_close(out_p, out[:, perm], rtol=1e-10, atol=1e-10)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 6), j=st.integers(0, 5), depth=st.integers(1, 2),
       seed=st.integers(0, 10**6))
def test_duplicating_an_atom_with_half_its_weight_changes_nothing(n, j, depth, seed):
    j = j % n
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, n, 2, generator=g, dtype=torch.float64)
    a = torch.rand(1, n, generator=g, dtype=torch.float64) + 0.1
    a = a / a.sum(-1, keepdim=True)
    x2 = torch.cat([x, x[:, j:j + 1]], 1)
    a2 = torch.cat([a, a[:, j:j + 1] / 2], 1)
    a2[:, j] = a[:, j] / 2
    enc = _encoder(6, depth, 2, seed)
    with torch.no_grad():
        out, out2 = enc(x, a), enc(x2, a2)
    torch.testing.assert_close(out2[:, :n], out, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(out2[:, n], out[:, j], rtol=1e-10, atol=1e-10)
    # A plain (unweighted) attention would see the copy: the weights are what make it hold.
    with torch.no_grad():
        uniform = enc(x2, torch.full_like(a2, 1 / (n + 1)))
    assert not torch.allclose(uniform[:, :n], out, atol=1e-6)


def test_zero_mass_atoms_drop_out_of_the_encoder_and_the_plan():
    enc = _encoder(4, 2, 2, 0)
    x = torch.randn(1, 4, 2, dtype=torch.float64)
    a = torch.tensor([[0.5, 0.5, 0.0, 0.0]], dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(enc(x, a)[:, :2], enc(x[:, :2], a[:, :2] * 1.0))
        P = sinkhorn_log_plan(torch.randn(1, 4, 3, dtype=torch.float64), a,
                              torch.full((1, 3), 1 / 3, dtype=torch.float64), 0.5, 30).exp()
    assert torch.isfinite(P).all() and float(P[0, 2:].abs().max()) == 0.0


def test_sinkhorn_layer_gradients_match_finite_differences():
    g = torch.Generator().manual_seed(1)
    S = torch.randn(2, 3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    a = torch.softmax(torch.randn(2, 3, generator=g, dtype=torch.float64), -1)
    b = torch.softmax(torch.randn(2, 4, generator=g, dtype=torch.float64), -1)
    for half_steps in (1, 2, 7):
        assert torch.autograd.gradcheck(
            lambda s: sinkhorn_log_plan(s, a, b, 0.7, half_steps).exp(), (S,),
            eps=1e-6, atol=1e-7)


def test_sinkhorn_layer_is_the_engine_solver_and_one_half_step_is_softmax():
    from engine.solver.core import sinkhorn

    g = torch.Generator().manual_seed(2)
    S = torch.randn(3, 5, 4, generator=g, dtype=torch.float64)
    a = torch.softmax(torch.randn(3, 5, generator=g, dtype=torch.float64), -1)
    b = torch.full((3, 4), 0.25, dtype=torch.float64)
    P = sinkhorn_log_plan(S, a, b, 0.5, 40).exp()
    ref = sinkhorn(S, a, b, eps=0.5, half_steps=40, method="log").plan
    torch.testing.assert_close(P, ref, rtol=1e-9, atol=1e-12)
    P1 = sinkhorn_log_plan(S, a, b, 0.5, 1).exp()
    torch.testing.assert_close(P1, a[..., None] * torch.softmax(S / 0.5, -1))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("weights", ["uniform", "random"])
def test_every_target_is_a_coupling_with_exact_marginals(name, weights):
    pairs = draw_pairs(Family(points=5, weights=weights), 12, seed=3, points_b=6)
    P = TARGETS[name](pairs)
    assert P.shape == (12, 5, 6)
    assert P.min() >= 0
    np.testing.assert_allclose(P.sum(-1), pairs.a, atol=1e-14)
    np.testing.assert_allclose(P.sum(-2), pairs.b, atol=1e-14)


def test_targets_are_what_they_say():
    import ot

    pairs = draw_pairs(Family(points=6), 6, seed=4)
    C = sq_cost(pairs.x, pairs.y)
    exact = TARGETS["exact"](pairs)
    for k in range(len(pairs)):
        assert np.isclose((C[k] * exact[k]).sum(), ot.emd2(pairs.a[k], pairs.b[k], C[k]))
        ref = ot.sinkhorn(pairs.a[k], pairs.b[k], C[k], 0.1, numItermax=20000, stopThr=1e-10,
                          method="sinkhorn_log")
        np.testing.assert_allclose(TARGETS["sq-euclid"](pairs.take([k]))[0], ref, atol=1e-5)
    # The whitened target ignores where a cloud is and how large it is; sq-euclid does not.
    moved = type(pairs)(3.0 * pairs.x + 5.0, pairs.a, pairs.y, pairs.b)
    np.testing.assert_allclose(TARGETS["whitened"](moved), TARGETS["whitened"](pairs), atol=1e-5)
    assert np.abs(TARGETS["sq-euclid"](moved) - TARGETS["sq-euclid"](pairs)).sum() > 0.5
    # The quantile coupling is monotone along the axes: with uniform weights and n = m, a
    # permutation matrix.
    Q = TARGETS["quantile"](pairs)
    np.testing.assert_allclose(np.sort(Q.reshape(6, -1), -1)[:, -6:], 1 / 6, atol=1e-12)


def test_a_users_target_is_checked_for_its_marginals():
    pairs = draw_pairs(Family(points=4, weights="random"), 3, seed=5)
    good = custom_target(lambda x, a, y, b: np.outer(a, b), "product")
    np.testing.assert_allclose(good(pairs), pairs.a[:, :, None] * pairs.b[:, None, :])
    with pytest.raises(TargetError, match="column sums miss b"):
        custom_target(lambda x, a, y, b: np.outer(a, np.full(len(b), 1 / len(b))))(pairs)
    with pytest.raises(TargetError, match=r"shape \(n, m\) = \(4, 4\)"):
        custom_target(lambda x, a, y, b: np.ones(3))(pairs)
    with pytest.raises(TargetError, match="NaN"):
        custom_target(lambda x, a, y, b: np.full((4, 4), np.nan))(pairs)
    with pytest.raises(TargetError, match="ZeroDivisionError"):
        custom_target(lambda x, a, y, b: 1 / 0)(pairs)
    # Rounding puts any near-coupling onto Π(a, b) exactly.
    R = round_to_marginals(np.outer(pairs.a[0], pairs.b[0])[None] * 1.01, pairs.a[:1],
                           pairs.b[:1])
    np.testing.assert_allclose(R.sum(-1), pairs.a[:1], atol=1e-15)
    np.testing.assert_allclose(R.sum(-2), pairs.b[:1], atol=1e-15)


@pytest.mark.parametrize("bad, message", [
    (dict(width=0), "width must be a whole number from 1"),
    (dict(steps=10**6), "steps must be a whole number from 1 to 20000"),
    (dict(points=0), "at least 2 points"),
    (dict(eps=0.0), "ε must be between"),
    (dict(model="mlp"), "model must be one of sinkhorn, softmax, context-free, got 'mlp'"),
    (dict(weights="heavy"), "weights must be one of uniform, random"),
])
def test_bad_settings_say_what_to_change(bad, message):
    with pytest.raises(LabError, match=message):
        LabSettings(**bad)


@pytest.mark.parametrize("bad, message", [
    (dict(eps=0.0), r"ε must be between 0.001 and 100, got 0.0: try 0.1"),
    (dict(eps="0.5"), r"ε must be between 0.001 and 100, got '0.5'"),
    (dict(eps=True), r"ε must be between"),
    (dict(half_steps=0), "half_steps must be a whole number from 1 to 2000, got 0"),
    (dict(half_steps=2001), "half_steps must be a whole number from 1 to 2000"),
    (dict(half_steps=True), "half_steps must be a whole number"),
    (dict(width=2.0), "width must be a whole number"),
    (dict(steps=0), "steps must be a whole number from 1 to 20000, got 0"),
])
def test_both_lab_settings_check_shared_fields_with_one_message(bad, message):
    """LabSettings and TextSettings validate through the same checks (engine.lab.errors)."""
    from engine.lab.text import TextSettings

    for cls in (LabSettings, TextSettings):
        with pytest.raises(LabError, match=message):
            cls(**bad)
    assert LabSettings(half_steps=np.int64(7)).half_steps == 7  # numpy integers are whole
    assert TextSettings(eps=np.float64(0.2)).eps == 0.2
    with pytest.raises(LabError, match="lr must be in"):
        LabSettings(lr=0.0)
    with pytest.raises(LabError, match="depth must be a whole number from 0 to 8"):
        LabSettings(depth=-1)


def test_unknown_target_names_the_choices():
    with pytest.raises(LabError, match="choose one of sq-euclid, exact, whitened, quantile"):
        train(LabSettings(target="nope", steps=1, **TINY))


def test_a_seeded_run_reproduces_its_numbers_and_reports_progress():
    s = LabSettings(target="quantile", steps=15, seed=7, **TINY)
    seen = []
    r1 = train(s, callback=seen.append)
    r2 = train(s)
    assert [p.step for p in seen] == [5, 10, 15]
    assert all(math.isfinite(p.train_loss) and p.heldout_l1 >= 0 for p in seen)
    assert r1.history == r2.history or [
        (p.step, p.train_loss, p.heldout_l1) for p in r1.history] == [
        (p.step, p.train_loss, p.heldout_l1) for p in r2.history]
    for k in ("heldout_l1", "heldout_l1_double", "row_err", "col_err"):
        assert r1.summary()[k] == r2.summary()[k]
    assert r1.heldout_l1 == min(p.heldout_l1 for p in seen)  # the best weights are kept
    r3 = train(LabSettings(target="quantile", steps=15, seed=8, **TINY))
    assert r3.heldout_l1 != r1.heldout_l1


def test_training_on_a_users_own_coupling_system():
    def product(x, a, y, b):  # the independent coupling a ⊗ b: learnable with Q = 0
        return np.outer(a, b)

    r = train(LabSettings(steps=10, lr=1e-2, **TINY), target=custom_target(product))
    assert math.isfinite(r.heldout_l1) and r.heldout_l1 < r.history[0].heldout_l1 + 1e-9
    with pytest.raises(TargetError, match="not a coupling"):
        train(LabSettings(steps=1, **TINY),
              target=custom_target(lambda x, a, y, b: 2 * np.outer(a, b)))


def test_a_stop_request_and_early_stop_end_the_run():
    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 7

    r = train(LabSettings(target="quantile", steps=500, **TINY), should_stop=stop)
    assert r.stopped == "requested" and r.steps_done == 7
    assert r.history[-1].step == 7 and math.isfinite(r.heldout_l1)
    e = train(LabSettings(target="quantile", steps=2000, lr=1e-7, patience=2,
                          **{**TINY, "eval_every": 1}))
    assert e.stopped == "early" and e.steps_done < 20


def test_save_and_load_give_the_same_plans(tmp_path):
    s = LabSettings(target="quantile", steps=3, **TINY)
    r = train(s)
    path = tmp_path / "model.safetensors"
    save(r.model, path, s)
    model, s2 = load(path)
    assert s2 == s and isinstance(model, CouplingModel)
    pairs = draw_pairs(Family(points=5), 4, seed=9)
    np.testing.assert_array_equal(predict(model, pairs), predict(r.model, pairs))
    (tmp_path / "other.safetensors").write_bytes(path.read_bytes()[:10])
    with pytest.raises(LabError, match="could not be read as a lab model"):
        load(tmp_path / "other.safetensors")
    with pytest.raises(LabError, match="could not be read"):
        load(tmp_path / "missing.safetensors")
    from safetensors.torch import save_file
    state = {k: v.contiguous() for k, v in r.model.state_dict().items()}
    save_file(state, tmp_path / "wrong.safetensors", metadata={"config": '{"width": 0}'})
    with pytest.raises(LabError):
        load(tmp_path / "wrong.safetensors")


@pytest.mark.slow
def test_on_sq_euclid_sinkhorn_beats_softmax_by_a_wide_margin():
    base = dict(TINY, target="sq-euclid", steps=60, lr=1e-2)
    sk = train(LabSettings(model="sinkhorn", **base))
    sm = train(LabSettings(model="softmax", **base))
    assert sk.heldout_l1 < 0.5 * sm.heldout_l1
    assert sm.col_err > 0.1 and sk.col_err + sk.row_err <= 1e-6


@pytest.mark.parametrize("model", ["sinkhorn", "context-free"])
def test_the_sinkhorn_models_output_couplings_after_any_half_steps(model):
    """Rounded onto Π(a, b): both marginals within 1e-6 (L1, float32) after 1, 3 or 40
    half-steps, untrained and trained, on random weights; the softmax model's are not."""
    pairs = draw_pairs(Family(points=6, weights="random"), 16, seed=4, points_b=7)
    for half_steps in (1, 3, 40):
        r = train(LabSettings(model=model, target="quantile", steps=5,
                              **{**TINY, "half_steps": half_steps}))
        assert r.row_err <= 1e-6 and r.col_err <= 1e-6
        P = predict(r.model, pairs)
        assert (P >= 0).all()
        np.testing.assert_allclose(P.sum(-1), pairs.a, atol=1e-6)
        np.testing.assert_allclose(P.sum(-2), pairs.b, atol=1e-6)
    soft = train(LabSettings(model="softmax", target="quantile", steps=5, **TINY))
    assert soft.col_err > 1e-2


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 6), m=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_rounding_lands_on_the_couplings_and_keeps_them(n, m, seed):
    rng = np.random.default_rng(seed)
    a = torch.tensor(rng.dirichlet(np.ones(n)))
    b = torch.tensor(rng.dirichlet(np.ones(m)))
    P = torch.tensor(rng.random((n, m))) * torch.outer(a, b) * 2
    R = round_to_coupling(P, a, b)
    assert (R >= 0).all()
    torch.testing.assert_close(R.sum(-1), a, rtol=0, atol=1e-14)
    torch.testing.assert_close(R.sum(-2), b, rtol=0, atol=1e-14)
    torch.testing.assert_close(round_to_coupling(R, a, b), R, rtol=0, atol=1e-14)


def test_rounding_gradients_match_finite_differences():
    g = torch.Generator().manual_seed(5)
    a = torch.softmax(torch.randn(2, 3, generator=g, dtype=torch.float64), -1)
    b = torch.softmax(torch.randn(2, 4, generator=g, dtype=torch.float64), -1)
    P = (torch.rand(2, 3, 4, generator=g, dtype=torch.float64) * 0.2).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda p: round_to_coupling(p, a, b), (P,))


def test_cli_prints_the_documented_json(capsys):
    rc = engine_cli.main(["lab", "--target", "quantile", "--model", "context-free",
                          "--points", "4", "--steps", "2", "--width", "4", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"heldout_l1", "heldout_l1_double", "row_err", "col_err", "seconds"}
    assert all(isinstance(v, float) and v >= 0 for v in out.values())


@pytest.mark.parametrize("args, message", [
    (["--width", "0"], "width must be a whole number from 1"),
    (["--steps", "1000000"], "steps must be a whole number from 1 to 20000"),
    (["--points", "0"], "at least 2 points"),
])
def test_cli_bad_settings_exit_2_with_the_fix(capsys, args, message):
    assert engine_cli.main(["lab", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_every_command_reports_errors_through_one_handler(tmp_path, capsys):
    """engine.io.cli.main turns engine errors and OSError into 'error: …' and status 2,
    for lab, align and relate alike (the sub-commands hold no handler of their own)."""
    import inspect

    from engine.alignment import cli as align_cli

    tiny = ["--target", "quantile", "--model", "context-free", "--points", "4", "--steps",
            "1", "--width", "4"]
    missing = tmp_path / "no" / "such" / "dir" / "m.safetensors"
    assert engine_cli.main(["lab", *tiny, "--save", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: could not write {missing}: ") and "Traceback" not in err
    assert engine_cli.main(["align", "--pairs", str(tmp_path / "none.tsv"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "none.tsv" in err and "Traceback" not in err
    assert engine_cli.main(["relate", "a b", "c d", "--eps", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "ε" in err and "Traceback" not in err
    for module in (lab_cli, align_cli):
        assert "except SinkscopeError" not in inspect.getsource(module)


def test_cli_defaults_are_the_page_defaults():
    s = LabSettings()
    for k, v in lab_cli.DEFAULTS.items():
        assert getattr(s, k) == v, k
    assert lab_cli.TARGET_NAMES == NAMES
    from engine.lab.nets import MODELS

    assert lab_cli.MODEL_NAMES == MODELS


def test_a_text_head_learns_gold_links_on_frozen_states_sinkhorn_and_softmax():
    """Word states built so that word i of A matches word π(i) of B through a hidden
    linear map: the trained heads recover the links; a settings error says what to fix."""
    from engine.alignment.readers import Pair
    from engine.lab.text import TextSettings, WordStates, text_plans, train_text, \
        tune_theta

    rng = np.random.default_rng(0)
    M = rng.normal(size=(6, 6)).astype(np.float32)
    ha, hb, sure, pairs = [], [], [], []
    for _ in range(40):
        n = int(rng.integers(3, 6))
        x = rng.normal(size=(n, 6)).astype(np.float32)
        perm = rng.permutation(n)
        ha.append(x)
        hb.append((x @ M)[np.argsort(perm)])  # B's word perm[i] is A's word i, mapped by M
        G = np.zeros((n, n), bool)
        G[np.arange(n), perm] = True
        sure.append(G)
        links = frozenset((int(i), int(perm[i])) for i in range(n))
        pairs.append(Pair(" ".join("a" * n), " ".join("b" * n), links, links, True))
    states = WordStates(tuple(ha), tuple(hb), tuple(sure))
    f1 = {}
    for final in ("sinkhorn", "softmax"):
        r = train_text(states.take(range(30)), TextSettings(final=final, width=6, steps=150,
                                                             lr=3e-2, batch=16))
        assert r.losses[-1] < 0.5 * r.losses[0]
        plans = text_plans(r.model, states.take(range(30, 40)))
        np.testing.assert_allclose([P.sum() for P in plans], 1.0, atol=1e-4)
        f1[final] = tune_theta(plans, pairs[30:])[1]
    assert f1["sinkhorn"] > 0.9 and f1["softmax"] > 0.6
    with pytest.raises(LabError, match="final must be one of sinkhorn, softmax"):
        TextSettings(final="argmax")
