"""The paired bootstrap of two methods on the same pairs, against a direct computation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from engine.alignment.score import macro_from_metrics, metrics_from_counts, paired_bootstrap
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
    assert got.ci95 == pytest.approx(tuple(np.percentile(d, [2.5, 97.5])), abs=1e-12)
    p = (1 + np.sum(np.abs(d - delta) >= abs(delta) - 1e-12)) / 301
    assert got.p == pytest.approx(p)
    assert got.to_dict() == {"method": "x", "vs": "y", "delta_total_f1": got.delta,
                             "ci95": list(got.ci95), "p": got.p}


def test_same_method_has_no_difference():
    c = _counts(np.random.default_rng(2), 25)
    got = paired_bootstrap(c, c, bootstrap=200)
    assert got.delta == 0.0 and got.ci95 == (0.0, 0.0) and got.p == 1.0


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
    assert b.p == pytest.approx(a.p) and 0 < a.p <= 1
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


def test_corpus_interval_is_the_percentile_of_a_direct_resample_loop():
    from engine.alignment.score import corpus_score

    c = _counts(np.random.default_rng(5), 30)
    got = corpus_score(c, bootstrap=250, seed=9)
    idx = np.random.default_rng(9).integers(0, 30, size=(250, 30))
    macro = np.array([_total_f1(c[i]) for i in idx])
    micro = np.array([metrics_from_counts(c[i].sum(0))["total_f1"] for i in idx])
    assert got.macro_ci["total_f1"] == pytest.approx(tuple(np.percentile(macro, [2.5, 97.5])),
                                                     abs=1e-12)
    assert got.micro_ci["total_f1"] == pytest.approx(tuple(np.percentile(micro, [2.5, 97.5])),
                                                     abs=1e-12)


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
