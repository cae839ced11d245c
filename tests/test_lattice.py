"""The live sliders' lattice: every (ε, half-step) frame in one batched solver call, its
display payload, its budgets and the fallback to the server path."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings as hsettings
from hypothesis import strategies as st

from engine import SettingsError, settings, sinkhorn, softmax_attention
from engine.relation.lattice import Lattice, grid, lattice, relation_lattice
from engine.relation.relate import summarise
from engine.solver.references import exact_plan
from engine.relation.summary import rows
from engine.relation import frames
from sinkscope_app import scrub
from sinkscope_app.main.params import EPS_OPTIONS, HALF_STEP_OPTIONS

EXAMPLES = int(os.environ.get("SINKSCOPE_FUZZ_EXAMPLES", "40"))
STEPS = (1, 2, 3, 5, 8, 20, 60)
EPS = (0.05, 0.2, 1.0, 4.0, 30.0)


def problem(n=9, m=7, seed=0, scale=2.4, zeros=True):
    """Scores with the spread of MiniLM's logits; special tokens (first, last) weigh 0."""
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(n, m)) * scale
    S[:, 0] += 3 * scale  # a [CLS]-like column that softmax piles mass onto
    a, b = np.ones(n), np.ones(m)
    if zeros:
        a[[0, -1]] = 0
        b[[0, -1]] = 0
    return S, a / a.sum(), b / b.sum()


@pytest.fixture(scope="module")
def lat() -> tuple[Lattice, np.ndarray]:
    S, a, b = problem()
    return lattice(S, a, b, EPS, STEPS), S


def test_every_frame_is_sinkhorn_from_g_zero(lat):
    L, S = lat
    assert L.plans.shape == (len(EPS), len(STEPS), *S.shape)
    for i, eps in enumerate(L.eps):
        for k, t in enumerate(L.steps):
            c = sinkhorn(S, L.a, L.b, eps, int(t))
            assert np.abs(L.plans[i, k] - c.plan).max() <= 1e-7 * max(1.0, c.plan.max()), (eps, t)
            assert L.row_err[i, k] == pytest.approx(c.row_err[-1], abs=1e-9)
            assert L.col_err[i, k] == pytest.approx(c.col_err[-1], abs=1e-9)
            assert L.summary.entropy[i, k] == pytest.approx(float(c.entropy), rel=1e-9)
            assert L.summary.cost[i, k] == pytest.approx(float(c.cost), rel=1e-9, abs=1e-12)


def test_half_step_one_is_softmax(lat):
    L, S = lat
    for i, eps in enumerate(L.eps):
        softmax = softmax_attention(S, eps)
        assert np.abs(L.plans[i, 0] - L.a[:, None] * softmax).max() <= 1e-12
        assert np.abs(L.attention[i] - softmax).max() <= 1e-12
    s = L.summary  # the softmax column error is the Sinkhorn column error at t = 1
    np.testing.assert_allclose(s.softmax_col_err[:, 0], s.sinkhorn_col_err[:, 0], atol=1e-12)


def test_frame_summaries_equal_the_server_relation(lat):
    L, S = lat
    exact = exact_plan(S, L.a, L.b)
    for i, k in ((0, 0), (1, 3), (2, 6), (4, 2)):
        c = sinkhorn(S, L.a, L.b, L.eps[i], int(L.steps[k]))
        want = summarise(S, L.a, L.b, L.plans[i, 0], c.plan, row_err=c.row_err[-1],
                         col_err=c.col_err[-1], cost=c.cost, entropy=c.entropy,
                         converged=c.converged, exact=exact)
        for field in want.__dataclass_fields__:
            got = getattr(L.summary, field)[i, k]
            assert float(got) == pytest.approx(float(getattr(want, field)), rel=1e-7, abs=1e-10), field


def test_plans_converge_along_t_and_sharpen_along_eps(lat):
    L, _ = lat
    err = np.maximum(L.row_err, L.col_err)
    assert (err[:, -1] <= err[:, 1] + 1e-12).all()  # more half-steps: closer to a coupling
    ent = L.summary.entropy[:, -1]
    assert (np.diff(ent) > 0).all()  # larger ε: more spread out


@hsettings(max_examples=EXAMPLES, deadline=None,
           suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 6), m=st.integers(1, 6), seed=st.integers(0, 10**6),
       log_eps=st.floats(-2, 2), t=st.sampled_from(STEPS), zeros=st.booleans())
def test_any_problem_frames_match_sinkhorn(n, m, seed, log_eps, t, zeros):
    S, a, b = problem(n + 2, m + 2, seed=seed, zeros=zeros)
    eps = float(10 ** log_eps)
    L = lattice(S, a, b, [eps, 2 * eps], STEPS)
    k = list(L.steps).index(t)
    c = sinkhorn(S, a, b, eps, t)
    assert np.isfinite(L.plans).all()
    assert np.abs(L.plans[0, k] - c.plan).max() <= 1e-7 * max(1.0, c.plan.max())


def test_history_plans_at_recorded_steps_equal_separate_solves():
    S, a, b = problem(seed=3)
    St = torch.from_numpy(np.stack([S, S / 0.3]))
    c = sinkhorn(St, torch.from_numpy(a), torch.from_numpy(b), 1.0, 40, record=[1, 4, 40],
                 record_plans=True)
    assert c.history.plans.shape == (2, 3, *S.shape)
    for k, t in enumerate((1, 4, 40)):
        one = sinkhorn(St, torch.from_numpy(a), torch.from_numpy(b), 1.0, t)
        assert torch.allclose(c.history.plans[:, k], one.plan, atol=1e-13)
    assert sinkhorn(S, a, b, 1.0, 5, record=[2]).history.plans is None


def test_grid_follows_the_sliders():
    eps, steps = grid(EPS_OPTIONS, HALF_STEP_OPTIONS, max_half_steps=1000)
    assert tuple(eps) == EPS_OPTIONS and 35 <= len(eps) <= 45
    assert steps[0] == 1 and steps[-1] == 1000 and set(steps) <= set(HALF_STEP_OPTIONS)
    eps, steps = grid(np.geomspace(1e-4, 1e4, 200), (1, 2, 50, 5000), max_half_steps=100,
                      max_eps_values=20)
    assert len(eps) == 20 and eps[0] == pytest.approx(1e-4) and eps[-1] == pytest.approx(1e4)
    assert list(steps) == [1, 2, 50]


def test_index_and_bad_input(lat):
    L, S = lat
    assert L.index(1.0, 20) == (2, 5) and L.index(0.7, 20) is None and L.index(1.0, 7) is None
    with pytest.raises(SettingsError, match="ε"):
        lattice(S, L.a, L.b, [0.0], [1])
    with pytest.raises(SettingsError, match="half_steps"):
        lattice(S, L.a, L.b, [1.0], [0])
    with pytest.raises(SettingsError, match="one layer and head"):
        lattice(np.stack([S, S]), L.a, L.b, [1.0], [1])
    with pytest.raises(SettingsError, match="sum to 1"):
        lattice(S, L.a * 2, L.b, [1.0], [1])


# ----------------------------------------------------------------------------- payload

def test_payload_round_trip_within_display_precision(lat):
    L, _ = lat
    data, bits = scrub.encode(L, "abc", max_bytes=10**7)
    assert bits == 16 and data[:4] == scrub.MAGIC
    d = scrub.decode(data)
    assert d["id"] == "abc" and d["eps"] == list(L.eps) and d["steps"] == list(L.steps)
    peak = L.plans.max(axis=(1, 2, 3))[:, None, None, None]
    assert (np.abs(d["plans"] - L.plans) <= peak / 65535).all()  # half a step each way
    assert np.abs(d["attention"] - L.attention).max() <= 1 / 65535
    np.testing.assert_allclose(d["row_sums"], L.plans.sum(-1), atol=1e-7)
    np.testing.assert_allclose(d["col_sums"], L.plans.sum(-2), atol=1e-7)
    for key in scrub.METRICS:  # metric numbers travel exactly (float64)
        np.testing.assert_array_equal(d["metrics"][key], np.broadcast_to(
            np.asarray(getattr(L.summary, key), dtype=float), L.shape))
    web = frames.browser_copy(data)  # what the browser gets: the page sends the texts
    assert len(web) < len(data) and "metrics" not in frames.header(web)
    assert scrub.decode(web)["metrics"] == {}
    np.testing.assert_array_equal(scrub.decode(web)["plans"], d["plans"])
    d8 = scrub.decode(frames._pack(L, "abc", 8, 6))
    assert (np.abs(d8["plans"] - L.plans) <= peak / 255).all()
    # a payload of another kind, or cut short (a served engine's answer broken off), is
    # refused with a sentence, never read past its end
    for bad, says in ((b"SKT1" + data[4:], "no SKL1 header"), (data[:6], "cut short"),
                      (data[:40], "cut short")):
        with pytest.raises(ValueError, match=says):
            scrub.decode(bad)


def test_payload_shrinks_to_8_bits_then_falls_back(lat):
    L, _ = lat
    data16, _ = scrub.encode(L, "x", max_bytes=10**7)
    data8, bits = scrub.encode(L, "x", max_bytes=len(data16) - 1)
    assert bits == 8 and len(data8) < len(data16)
    none, bits = scrub.encode(L, "x", max_bytes=100)
    assert none is None and bits == 0
    p = scrub.build(lambda: scrub.encode(L, "x", max_bytes=100), "x", max_bytes=100)
    assert p.data is None and "SINKSCOPE_LIVE_MAX_BYTES" in p.note and p.seconds >= 0
    assert "SINKSCOPE_LIVE_MAX_CELLS" in scrub.too_large_note(80, 90, 4096)
    assert "80 × 90 tokens" in scrub.too_large_note(80, 90, 4096)


@pytest.mark.parametrize("raw, want", [
    ({"frame": {"eps": 0.5, "steps": 40}}, (0.5, 40)),
    ({"frame": {"eps": 0.52, "steps": 41}}, (0.5, 40)),  # snapped to the stops
    ({"frame": {"eps": 1e9, "steps": 1e12}}, (EPS_OPTIONS[-1], HALF_STEP_OPTIONS[-1])),
    ({"frame": {"eps": -1, "steps": 3}}, None), ({"frame": {"eps": "nan", "steps": 3}}, None),
    ({"frame": {"eps": 1}}, None), ({"frame": "x"}, None), ({}, None), (None, None),
])
def test_slider_value_from_the_browser_is_checked(raw, want):
    assert scrub.parse_value(raw, EPS_OPTIONS, HALF_STEP_OPTIONS) == want


@pytest.mark.model
@pytest.mark.slow
def test_64_token_texts_fit_the_payload_budget():
    """Two real ~64-token texts (4,096 token pairs at most, the live budget) on every ε of
    the slider × every half-step stop up to 1,000: the payload stays within 3 MB."""
    from engine import encode_texts, relate_encodings
    from engine.relation.relate import default_encoder

    words = ("the old fisherman walked along the bank of the river at dawn watching mist "
             "rise over quiet water while birds sang in reeds near the wooden bridge").split()
    rng = np.random.default_rng(7)
    enc = default_encoder()
    for extra in range(6):
        a = " ".join(rng.choice(words, 62 - extra))
        b = " ".join(rng.choice(words, 62 - extra))
        e = encode_texts(enc, a, b, "separate")
        r = relate_encodings(e, layer=5, head="mean", eps=1.0, half_steps=1)
        if r.scores.size <= settings.CONFIG.live_max_cells:
            break
    n, m = r.scores.shape
    assert n * m <= settings.CONFIG.live_max_cells and n * m >= 60 * 60
    eps, steps = grid(EPS_OPTIONS, HALF_STEP_OPTIONS, max_half_steps=1000)
    L = relation_lattice(r, eps, steps)
    data, bits = scrub.encode(L, "x", max_bytes=3_000_000)
    assert data is not None and bits == 16 and len(data) <= 3_000_000
    # the first frame's metric strip, as the browser rebuilds it, is the server's
    d = scrub.decode(data)
    i, k = L.index(1.0, 100)
    assert d["metrics"]["softmax_col_err"][i, k] == pytest.approx(r.summary.softmax_col_err)
    assert [m.label for m in rows(r)][0] == "Softmax column error"


def test_exact_plan_cache_is_public_shared_and_read_only():
    """references.exact_plan_cached: the exact plan once per (S, a, b), whatever ε."""
    from engine.solver import references

    rng = np.random.default_rng(21)
    S = rng.normal(size=(5, 4))
    a, b = np.full(5, 0.2), np.full(4, 0.25)
    before = references._exact_by_key.cache_info().misses
    P = references.exact_plan_cached(S, a, b)
    np.testing.assert_array_equal(P, exact_plan(S, a, b))
    assert references.exact_plan_cached(S.copy(), a.copy(), b.copy()) is P  # a hit
    assert references._exact_by_key.cache_info().misses == before + 1
    assert not P.flags.writeable
    with pytest.raises(ValueError):
        P[0, 0] = 1.0
    Q = references.exact_plan_cached(S.T.copy(), b, a)  # another problem: another plan
    assert Q is not P and Q.shape == (4, 5)
    # the lattice and relate's finish read the exact plan from it
    L = lattice(S, a, b, [0.5, 1.0], [1, 2])
    np.testing.assert_allclose(L.summary.l1_to_exact[0, 0],
                               np.abs(L.plans[0, 0] - P).sum(), rtol=1e-12)
