"""Every number sinkscope shows, recomputed here independently from the plans.

Relations come from small synthetic encodings (random queries, keys and hidden states with
[CLS]/[SEP] at the ends), so these tests need no model and run in a second. The real model
is covered in test_engine_model.py.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import ot
import pytest
from hypothesis import HealthCheck, given, settings as hsettings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from engine import eps_path, project, relate_encodings, sinkhorn
from engine.io.export import (marginals_csv, plans_csv, relation_from_dict, relation_to_dict,
                           to_npz)
from engine.solver.references import kl, mutual_information, product, zero_weight_mass
from engine.relation.summary import fmt, rows
from engine.types import Encoding

L, H, D = 2, 3, 4  # layers, heads, head size of the synthetic "model"


def encoding(tokens: list[str], seed: int) -> Encoding:
    """A synthetic Encoding: special tokens at both ends, random vectors."""
    rng = np.random.default_rng(seed)
    n = len(tokens)
    special = np.array([t in ("[CLS]", "[SEP]") for t in tokens])
    word_ids = np.where(special, -1, np.cumsum(~special) - 1)
    return Encoding(texts=(" ".join(tokens[1:-1]),), tokens=tuple(tokens), word_ids=word_ids,
                    special=special, segment=np.zeros(n, dtype=np.int64),
                    hidden=rng.normal(size=(L + 1, n, 8)).astype(np.float32),
                    q=(2 * rng.normal(size=(L, H, n, D))).astype(np.float32),
                    k=(2 * rng.normal(size=(L, H, n, D))).astype(np.float32),
                    attentions=None, model="synthetic")


ENC = (encoding(["[CLS]", "the", "bank", "of", "the", "river", "[SEP]"], 1),
       encoding(["[CLS]", "money", "in", "the", "bank", "[SEP]"], 2))


def rel(**kw):
    args = dict(layer=1, head=2, eps=0.7, half_steps=40)
    args.update(kw)
    return relate_encodings(ENC, **args)


def entropy(p):
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


@pytest.mark.parametrize("half_steps", [1, 2, 7, 40])
def test_every_summary_number_from_the_plans(half_steps):
    r = rel(half_steps=half_steps)
    s, S, a, b = r.summary, r.scores, r.a, r.b
    P = a[:, None] * np.exp(S / r.eps) / np.exp(S / r.eps).sum(1, keepdims=True)
    pi = r.sinkhorn_plan
    star = ot.emd(a[a > 0] / a[a > 0].sum(), b[b > 0] / b[b > 0].sum(),
                  np.ascontiguousarray(-S[np.ix_(a > 0, b > 0)]))
    exact = np.zeros_like(S)
    exact[np.ix_(a > 0, b > 0)] = star
    np.testing.assert_allclose(r.softmax_plan, P, atol=1e-14)
    assert s.softmax_col_err == pytest.approx(np.abs(P.sum(0) - b).sum(), abs=1e-13)
    assert s.sinkhorn_row_err == pytest.approx(np.abs(pi.sum(1) - a).sum(), abs=1e-13)
    assert s.sinkhorn_col_err == pytest.approx(np.abs(pi.sum(0) - b).sum(), abs=1e-13)
    assert s.cost == pytest.approx(-(pi * S).sum(), abs=1e-13)
    assert s.softmax_cost == pytest.approx(-(P * S).sum(), abs=1e-13)
    assert s.entropy == pytest.approx(entropy(pi), abs=1e-12)
    assert s.exact_cost == pytest.approx(-(exact * S).sum(), abs=1e-12)
    assert s.l1_to_exact == pytest.approx(np.abs(pi - exact).sum(), abs=1e-9)
    assert s.l1_to_product == pytest.approx(np.abs(pi - np.outer(a, b)).sum(), abs=1e-13)
    zero = (a == 0)[:, None] | (b == 0)[None, :]
    assert s.zero_weight_mass == pytest.approx(pi[zero].sum(), abs=1e-15)
    ab = np.outer(a, b)
    pos = pi > 0
    if (pos & zero).any():  # half-step 1: softmax sends mass to [CLS] and [SEP] of B
        assert half_steps == 1 and s.kl_to_product == np.inf and s.zero_weight_mass > 0.01
    else:
        assert s.kl_to_product == pytest.approx((pi[pos] * np.log(pi[pos] / ab[pos])).sum(),
                                                abs=1e-12)
    marg = np.outer(pi.sum(1), pi.sum(0))
    assert s.mutual_information == pytest.approx(
        (pi[pos] * np.log(pi[pos] / marg[pos])).sum(), abs=1e-12)
    assert s.converged == (max(s.sinkhorn_row_err, s.sinkhorn_col_err) <= 1e-6)


def test_shown_metrics_are_the_summary_numbers():
    for half_steps in (1, 40):
        r = rel(half_steps=half_steps)
        shown = {m.key: m for m in rows(r)}
        s = r.summary
        for key in ("softmax_col_err", "sinkhorn_row_err", "sinkhorn_col_err", "cost",
                    "entropy", "l1_to_exact"):
            assert shown[key].value == fmt(getattr(s, key))
        assert shown["cost"].detail.startswith(
            f"exact OT {fmt(s.exact_cost)} · softmax {fmt(s.softmax_cost)}")
        # a plan cheaper than exact OT is said not to be a coupling (it is outside Π(a, b))
        assert ("not a coupling" in shown["cost"].detail) == (s.cost < s.exact_cost - 1e-9)
        if half_steps == 1:
            assert s.cost < s.exact_cost and "not a coupling" in shown["cost"].detail
        assert shown["converged"].value == ("yes" if s.converged else "no")
        kl_row = shown["kl_to_product"]
        if half_steps == 1:
            assert kl_row.value == "∞" and fmt(s.zero_weight_mass) in kl_row.detail
        else:
            assert kl_row.value == fmt(s.kl_to_product) and kl_row.detail == ""
    assert rows(rel(half_steps=1))[-1].detail == "1 half-step"


# token weights: zero, or not so small that a_i·b_j underflows
weights_st = st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 1.0)), min_size=2,
                      max_size=7).filter(lambda w: sum(w) > 1e-3)


@hsettings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=weights_st, b=weights_st, seed=st.integers(0, 2**31 - 1),
       eps=st.floats(0.05, 20.0))
def test_hypothesis_kl_and_mutual_information(a, b, seed, eps):
    a, b = np.array(a) / sum(a), np.array(b) / sum(b)
    assert kl(product(a, b), product(a, b)) == 0.0  # a ⊗ b is independent of itself
    assert mutual_information(product(a, b)) == pytest.approx(0.0, abs=1e-12)
    S = np.random.default_rng(seed).normal(size=(len(a), len(b)))
    pi = sinkhorn(S, a, b, eps=eps, half_steps=2000, early_stop=True, tol=1e-10).plan
    mi = mutual_information(pi)
    assert mi >= -1e-12
    # chain rule: KL(π ‖ a ⊗ b) = MI(π) + KL(π1 ‖ a) + KL(πᵀ1 ‖ b), for any plan of mass 1;
    # for a coupling the last two vanish and KL to a ⊗ b is its mutual information
    rows, cols = pi.sum(1)[None], pi.sum(0)[None]
    chain = mi + kl(rows, a[None]) + kl(cols, b[None])
    assert kl(pi, product(a, b)) == pytest.approx(chain, abs=1e-9)
    if max(np.abs(rows - a).sum(), np.abs(cols - b).sum()) <= 1e-10:
        assert kl(pi, product(a, b)) == pytest.approx(mi, abs=1e-8)
    # mass where a ⊗ b has none makes the KL infinite, and is measured
    if (a == 0).any():
        bad = pi.copy()
        bad[np.argmax(a == 0), 0] += 0.1
        assert kl(bad, product(a, b)) == np.inf
        assert zero_weight_mass(bad, a, b) == pytest.approx(0.1)


def test_pca_is_the_svd_of_the_centred_points_and_rank_correlation_is_spearmans():
    r = rel()
    p = project(r, space="qk", method="pca", dim=2)
    X = np.concatenate([r.points_a, r.points_b])
    Xc = X - X.mean(0)
    U, sv, Vt = np.linalg.svd(Xc, full_matrices=False)
    Y = np.concatenate([p.xy_a, p.xy_b])
    for k in range(2):  # each coordinate is a principal component up to its sign
        ref = Xc @ Vt[k]
        assert min(np.abs(Y[:, k] - ref).max(), np.abs(Y[:, k] + ref).max()) <= 1e-10
    assert p.explained == pytest.approx((sv[:2] ** 2).sum() / (sv ** 2).sum())
    d = np.linalg.norm(p.xy_a[:, None] - p.xy_b[None], axis=-1)
    mask = np.outer(r.a, r.b) > 0
    assert p.distance_cost_corr == pytest.approx(spearmanr(d[mask], -r.scores[mask]).statistic)
    hidden = project(r, space="hidden", method="pca", dim=3)
    assert hidden.xy_a.shape == (7, 3) and hidden.xy_b.shape == (6, 3)


def test_eps_path_solves_each_eps_and_ends_near_exact_transport():
    r = rel()
    eps, plans = eps_path(r, [10.0, 1.0, 0.1, 0.02])
    np.testing.assert_allclose(eps, [10.0, 1.0, 0.1, 0.02])
    a, b = r.a, r.b
    for e, plan in zip(eps, plans):
        np.testing.assert_allclose(plan.sum(1), a, atol=1e-6)
        np.testing.assert_allclose(plan.sum(0), b, atol=1e-6)
        ia, ib = a > 0, b > 0
        ref = ot.sinkhorn(a[ia], b[ib], np.ascontiguousarray(-r.scores[np.ix_(ia, ib)]), e,
                          method="sinkhorn_log", numItermax=100_000, stopThr=1e-12)
        assert np.abs(plan[np.ix_(ia, ib)] - ref).max() <= 1e-5
    ents = [entropy(p) for p in plans]
    assert ents == sorted(ents, reverse=True)  # smaller ε, sharper plan
    assert np.abs(plans[0] - np.outer(a, b)).sum() < np.abs(plans[-1] - np.outer(a, b)).sum()
    assert np.abs(plans[-1] - r.exact_plan).sum() < 0.2


def test_exports_round_trip_to_the_same_numbers():
    r = rel(half_steps=1)  # the hardest case: −inf potentials, an infinite KL
    d = json.loads(json.dumps(relation_to_dict(r), allow_nan=False))
    back = relation_from_dict(d)
    for name in ("a", "b", "scores", "attention", "softmax_plan", "exact_plan", "product",
                 "points_a", "points_b", "hidden_a", "hidden_b"):
        np.testing.assert_array_equal(getattr(back, name), getattr(r, name), err_msg=name)
    for name in ("plan", "f", "g", "row_err", "col_err", "cost", "entropy", "converged"):
        np.testing.assert_array_equal(getattr(back.coupling, name), getattr(r.coupling, name),
                                      err_msg=name)
    np.testing.assert_array_equal(back.coupling.history.cost, r.coupling.history.cost)
    assert back.summary == r.summary and back.summary.kl_to_product == np.inf
    assert (back.tokens_a, back.text_b, back.layer, back.head, back.eps) == \
        (r.tokens_a, r.text_b, r.layer, r.head, r.eps)

    z = np.load(io.BytesIO(to_npz(r)))
    for name in ("a", "b", "scores", "softmax_plan", "exact_plan", "f", "g"):
        np.testing.assert_array_equal(z[name], getattr(r, name) if hasattr(r, name)
                                      else getattr(r.coupling, name))
    np.testing.assert_array_equal(z["sinkhorn_plan"], r.sinkhorn_plan)
    assert list(z["tokens_a"]) == list(r.tokens_a)

    table = list(csv.DictReader(io.StringIO(plans_csv(r))))
    assert len(table) == len(r.tokens_a) * len(r.tokens_b)
    for row in table:
        i, j = int(row["i"]), int(row["j"])
        assert row["token_a"] == r.tokens_a[i] and row["token_b"] == r.tokens_b[j]
        for col, arr in (("score", r.scores), ("softmax_plan", r.softmax_plan),
                         ("sinkhorn_plan", r.sinkhorn_plan), ("exact_plan", r.exact_plan)):
            assert float(row[col]) == pytest.approx(arr[i, j], rel=1e-9, abs=1e-300)
    margins = list(csv.DictReader(io.StringIO(marginals_csv(r))))
    got = np.array([float(m["sinkhorn_marginal"]) for m in margins if m["text"] == "B"])
    np.testing.assert_allclose(got, r.sinkhorn_plan.sum(0), rtol=1e-9)


def test_engine_package_names_functions_and_torch_free_modules_stay_torch_free():
    import subprocess
    import sys
    code = ("import sys, warnings; warnings.simplefilter('error');"
            "import engine.types, engine.relation.summary, engine.io.export, engine.settings;"
            "assert 'torch' not in sys.modules, 'torch imported';"
            "import engine.relation.relate, engine.solver.core, engine;"
            "from engine import relate, sinkhorn;"
            "assert callable(engine.relate) and callable(engine.sinkhorn) and relate is engine.relate;"
            "assert engine.types.Relation is engine.Relation")
    out = subprocess.run([sys.executable, "-W", "error::ImportWarning", "-c", code],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
