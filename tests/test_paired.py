"""The paired bootstrap of two methods on the same pairs, against a direct computation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from engine.alignment.score import (interval95, macro_from_metrics, metrics_from_counts,
                                    p_value, paired_bootstrap, resample_sums)
from engine.errors import SettingsError


def _counts(rng, n):
    """(n, 7) consistent counts: |A∩S| ≤ |A∩P| ≤ |A|, |N̂∩N| ≤ min(|N̂|, |N|)."""
    pred = rng.integers(0, 12, n)
    ap = rng.integers(0, pred + 1)
    aS = rng.integers(0, ap + 1)
    sure = aS + rng.integers(0, 6, n)
    npred, ngold = rng.integers(0, 6, n), rng.integers(0, 6, n)
    hit = rng.integers(0, np.minimum(npred, ngold) + 1)
    return np.stack([pred, aS, ap, sure, npred, ngold, hit], 1)


def _total_f1(c):
    """Macro total F1 written out from the definition (OTAlign): P and R averaged, then F1."""
    A, AS, AP, S, Np, Ng, Nh = c.T.astype(float)
    def ratio(num, den, other):
        return np.where(den > 0, num / np.maximum(den, 1), np.where(other == 0, 1.0, 0.0))
    p = ratio(AP + Nh, A + Np, S + Ng).mean()
    r = ratio(AS + Nh, S + Ng, A + Np).mean()
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def test_matches_a_direct_loop_over_resamples():
    rng = np.random.default_rng(1)
    x, y = _counts(rng, 40), _counts(rng, 40)
    got = paired_bootstrap(x, y, method="x", vs="y", bootstrap=300, seed=7)
    idx = np.random.default_rng(7).integers(0, 40, size=(300, 40))
    d = np.array([_total_f1(x[i]) - _total_f1(y[i]) for i in idx])
    delta = _total_f1(x) - _total_f1(y)
    assert got.delta == pytest.approx(delta, abs=1e-12)
    s = np.sort(d)  # j = ⌈300/40⌉ = 8: the 8th smallest and the 8th largest
    assert got.ci95 == pytest.approx((s[7], s[-8]), abs=1e-12)
    p = min(1.0, 2 * min(np.sum(d <= 1e-13), np.sum(d >= -1e-13)) / 300)
    assert got.p == pytest.approx(p)
    assert got.to_dict() == {"method": "x", "vs": "y", "delta_total_f1": got.delta,
                             "ci95": list(got.ci95), "p": got.p}


def test_same_method_has_no_difference():
    c = _counts(np.random.default_rng(2), 25)
    got = paired_bootstrap(c, c, bootstrap=200)
    assert got.delta == 0.0 and got.ci95 == (0.0, 0.0) and got.p == 1.0


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 40), st.integers(1, 12),
       st.integers(1, 5))
def test_equal_columns_get_the_very_same_sums(seed, n, k, copies):
    """By construction, not by the CPU's matrix kernels: a column and its copies, wherever
    they sit among other columns, get bit-for-bit equal resampled sums."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, k)) * rng.integers(1, 1000, k)
    where = rng.integers(0, k, copies)
    X = np.concatenate([X, X[:, where]], 1)[:, rng.permutation(k + copies)]
    got = resample_sums(X, 37, seed=seed % 1000)
    assert got.shape == (37, k + copies)
    for c in range(X.shape[1]):
        same = np.flatnonzero((X == X[:, [c]]).all(0))
        assert (got[:, same] == got[:, [c]]).all()
    # the same resamples as without the copies, up to rounding
    alone = resample_sums(X[:, :1], 37, seed=seed % 1000)
    assert np.allclose(got[:, 0], alone[:, 0], rtol=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-4, 4), min_size=1, max_size=400), st.integers(0, 3))
def test_p_below_005_exactly_when_the_interval_leaves_out_0(ints, scale):
    """The rule of docs/align.md: p and the 95 % interval from the same resamples agree,
    for any number of resamples, ties and exact zeros included."""
    d = np.asarray(ints, dtype=np.float64) * 10.0 ** -scale
    lo, hi = interval95(d)
    p = p_value(d)
    assert lo <= hi and 0 <= p <= 1
    assert (p < 0.05) == (lo > 0 or hi < 0)
    assert p_value(-d) == p and interval95(-d) == (-hi, -lo)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 40), st.integers(1, 1200))
def test_paired_p_and_interval_always_agree(seed, n, bootstrap):
    rng = np.random.default_rng(seed)
    y = _counts(rng, n)
    x = y.copy()
    flip = rng.random(n) < rng.random()  # some pairs better, the others the same
    x[flip, 1] = x[flip, 2] = np.maximum(x[flip, 1], x[flip, 0])
    x[:, 3] = np.maximum(x[:, 3], x[:, 1])
    got = paired_bootstrap(x, y, bootstrap=bootstrap, seed=seed % 997)
    lo, hi = got.ci95
    assert (got.p < 0.05) == (lo > 0 or hi < 0)


def test_better_on_every_pair_excludes_zero():
    y = _counts(np.random.default_rng(3), 60)
    x = y.copy()
    x[:, 1] = x[:, 2] = np.maximum(x[:, 1], x[:, 0])     # every prediction now a sure hit
    x[:, 3] = np.maximum(x[:, 3], x[:, 1])
    got = paired_bootstrap(x, y, bootstrap=500)
    assert got.delta > 0 and got.ci95[0] > 0 and got.p < 0.01


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 30))
def test_swapping_the_methods_negates_the_difference(seed, n):
    rng = np.random.default_rng(seed)
    x, y = _counts(rng, n), _counts(rng, n)
    a = paired_bootstrap(x, y, bootstrap=100, seed=seed)
    b = paired_bootstrap(y, x, bootstrap=100, seed=seed)
    assert b.delta == pytest.approx(-a.delta, abs=1e-12)
    assert b.ci95 == pytest.approx((-a.ci95[1], -a.ci95[0]), abs=1e-12)
    assert b.p == a.p and 0 <= a.p <= 1
    assert a.ci95[0] - 1e-12 <= a.ci95[1]
    assert a.delta == pytest.approx(
        macro_from_metrics(metrics_from_counts(x))["total_f1"]
        - macro_from_metrics(metrics_from_counts(y))["total_f1"], abs=1e-12)


@pytest.mark.parametrize("kw, shapes", [({}, (3, 4)), ({}, (0, 0)), ({"metric": "bleu"}, (3, 3)),
                                        ({"bootstrap": -1}, (3, 3))])
def test_bad_requests_say_what_to_change(kw, shapes):
    rng = np.random.default_rng(0)
    with pytest.raises(SettingsError):
        paired_bootstrap(_counts(rng, shapes[0]), _counts(rng, shapes[1]), **kw)


# ------------------------------------------------------------------ the verdict of a corpus
def _scores(counts_by_method, bootstrap=200):
    from engine.alignment.score import corpus_score

    return {k: corpus_score(c, bootstrap=bootstrap, seed=3) for k, c in counts_by_method.items()}


def test_corpus_interval_is_read_off_a_direct_resample_loop():
    from engine.alignment.score import corpus_score

    c = _counts(np.random.default_rng(5), 30)
    got = corpus_score(c, bootstrap=250, seed=9)
    idx = np.random.default_rng(9).integers(0, 30, size=(250, 30))
    macro = np.sort([_total_f1(c[i]) for i in idx])
    micro = np.sort([metrics_from_counts(c[i].sum(0))["total_f1"] for i in idx])
    # one interval rule everywhere: j = ⌈250/40⌉ = 7, the 7th smallest and largest
    assert got.macro_ci["total_f1"] == pytest.approx((macro[6], macro[-7]), abs=1e-12)
    assert got.micro_ci["total_f1"] == pytest.approx((micro[6], micro[-7]), abs=1e-12)


def test_resamples_in_blocks_draw_each_pair_n_times_in_all(monkeypatch):
    from engine.alignment import score as sc

    X = np.arange(12.0).reshape(6, 2)
    one = sc.resample_sums(X, 50, seed=1)
    monkeypatch.setattr(sc, "DRAWS_PER_BLOCK", 7)  # one resample per block
    blocks = sc.resample_sums(X, 50, seed=1)
    ones = sc.resample_sums(np.ones((6, 1)), 50, seed=1)
    assert one.shape == blocks.shape == (50, 2) and (ones == 6).all()
    assert np.allclose(blocks.mean(0), X.sum(0), rtol=0.2)  # E[Σ w_i x_i] = Σ x_i


def test_verdict_ranks_and_compares_on_the_same_resamples():
    from engine.alignment.verdict import verdict

    rng = np.random.default_rng(11)
    base = _counts(rng, 50)
    better = base.copy()
    better[:, 1] = better[:, 2] = np.maximum(better[:, 1], better[:, 0])
    better[:, 3] = np.maximum(better[:, 3], better[:, 1])
    counts = {"softmax-argmax": base, "unbalanced": better, "similarity-threshold":
              _counts(rng, 50), "exact": base}
    v = verdict(_scores(counts), bootstrap=300, seed=4)
    values = {k: _total_f1(c) for k, c in counts.items()}
    order = sorted(counts, key=lambda k: (-values[k], list(counts).index(k)))
    assert [r.method for r in v.ranked] == order and v.best == order[0] == "unbalanced"
    assert [r.rank for r in v.ranked] == [1, 2, 3, 4] and v.ranked[0].best
    for r in v.ranked:
        assert r.value == pytest.approx(values[r.method], abs=1e-12)
        assert r.delta == pytest.approx(values[r.method] - values[v.best], abs=1e-12)
    # every method against the best, then each transport method against softmax-argmax
    want = [(k, "unbalanced") for k in order[1:]] + [("unbalanced", "softmax-argmax"),
                                                     ("exact", "softmax-argmax")]
    assert [(p.method, p.vs) for p in v.paired] == want
    for p in v.paired:  # the same as comparing the two alone with the same resamples
        alone = paired_bootstrap(counts[p.method], counts[p.vs], bootstrap=300, seed=4)
        assert (p.delta, p.p) == pytest.approx((alone.delta, alone.p), abs=1e-12)
        assert p.ci95 == pytest.approx(alone.ci95, abs=1e-12)
        assert set(p.to_dict()) == {"method", "vs", "delta_total_f1", "ci95", "p"}
    assert [p.method for p in v.against_baseline()] == ["unbalanced", "exact"]
    assert v.against_best()[0].ci95[1] < 0  # softmax-argmax loses on every pair


def test_verdict_without_resamples_and_refusals():
    from engine.alignment.score import corpus_score
    from engine.alignment.verdict import verdict

    c = _counts(np.random.default_rng(2), 10)
    v = verdict({"a": corpus_score(c, bootstrap=0), "b": corpus_score(c[::-1], bootstrap=0)},
                bootstrap=0)
    assert v.paired[0].p == 1.0 and v.paired[0].ci95 == (v.paired[0].delta,) * 2
    assert v.ranked[0].ci95 is None and len(v.paired) == 1
    with pytest.raises(SettingsError, match="same pairs"):
        verdict({"a": corpus_score(c), "b": corpus_score(c[:5])})
    with pytest.raises(SettingsError, match="nothing to rank"):
        verdict({})
    with pytest.raises(SettingsError, match="metric"):
        verdict({"a": corpus_score(c)}, metric="bleu")
