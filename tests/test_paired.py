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
