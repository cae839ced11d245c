"""Word alignment without the model: extraction on hand-made plans, the scorer against a
hand computation and a plain reimplementation of the definitions, grid counts, tuning."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from engine.alignment import extract, transport
from engine.alignment.api import Scored, evaluate_grid, extract_links, method_of, tune_scored
from engine.alignment.extract import Method, make_batch
from engine.alignment.readers import make_pair
from engine.alignment.score import METRICS, corpus_score, metrics_from_counts, pair_counts, score
from engine.alignment.sources import Source
from engine.errors import SettingsError


def _scored(S_list, golds):
    pairs = tuple(make_pair(" ".join(f"a{i}" for i in range(S.shape[0])),
                            " ".join(f"b{j}" for j in range(S.shape[1])), g)
                  for S, g in zip(S_list, golds))
    return Scored(pairs, tuple(np.asarray(S, float) for S in S_list),
                  tuple(np.ones(S.shape[0], bool) for S in S_list),
                  tuple(np.ones(S.shape[1], bool) for S in S_list), Source())


def _links(method, S, gold="0-0"):
    return set(extract_links(_scored([np.asarray(S, float)], [gold]), method)[0].links)


S3 = np.array([[5.0, 1.0, 0.0],
               [4.0, 0.0, 1.0],
               [0.0, 1.0, 3.0]])


def test_softmax_argmax_directions():
    # rows: 0→0, 1→0, 2→2; columns: 0→0, 1→0 or 2 (tie: first = 0), 2→2
    fwd = {(0, 0), (1, 0), (2, 2)}
    bwd = {(0, 0), (0, 1), (2, 2)}
    for d, want in (("forward", fwd), ("backward", bwd), ("intersection", fwd & bwd),
                    ("union", fwd | bwd)):
        assert _links(Method("softmax-argmax", direction=d), S3) == want


def test_similarity_threshold_is_min_max_scaled():
    # scaled = S / 5: 1.0, 0.2, 0, 0.8, 0, 0.2, 0, 0.2, 0.6
    assert _links(Method("similarity-threshold", threshold=0.5), S3) == {(0, 0), (1, 0), (2, 2)}
    assert _links(Method("similarity-threshold", threshold=0.7), S3) == {(0, 0), (1, 0)}
    # the same links for any affine rescaling of the scores
    assert _links(Method("similarity-threshold", threshold=0.7), 3 * S3 - 7) == {(0, 0), (1, 0)}


def test_softmax_both_needs_both_directions():
    S = np.log(np.array([[0.98, 0.01, 0.01], [0.49, 0.49, 0.02]]))
    # temperature 1: P→ is S's rows; P← columns; (1, 1): P→ = .49, P← = .49/.5 = .98
    got = _links(Method("softmax-both", threshold=0.4, temperature=1.0), S)
    assert got == {(0, 0), (1, 1)}
    assert (1, 0) not in got  # P→ = .49 but P← = .49/1.47 = .33 < .4


def test_sinkhorn_argmax_is_mutual_on_a_permutation():
    S = np.full((4, 4), 0.0)
    perm = [2, 0, 3, 1]
    for i, j in enumerate(perm):
        S[i, j] = 1.0
    for name in ("sinkhorn-argmax", "softmax-argmax"):
        assert _links(Method(name), S) == {(i, j) for i, j in enumerate(perm)}
    for name in ("sinkhorn-threshold", "exact", "unbalanced", "partial"):
        assert _links(Method(name, threshold=0.5, mass=0.9), S) == set(enumerate(perm))


def test_exact_plan_leaves_the_extra_word_to_threshold():
    # 2 × 3: exact transport must spread a's mass over all of b; one column gets the rest
    S = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5]])
    got = _links(Method("exact", threshold=0.9), S)
    assert {(0, 0), (1, 1)} <= got and len(got) == 2


def test_unbalanced_large_tau_is_balanced_and_partial_full_mass_is_balanced():
    rng = np.random.default_rng(1)
    shapes = ((3, 5), (6, 4), (5, 5))
    C, a, b = transport.pad([rng.uniform(size=s) for s in shapes],
                            [np.ones(s[0], bool) for s in shapes],
                            [np.ones(s[1], bool) for s in shapes])
    bal = transport.balanced(C, a, b, 0.1, 2000)
    big = transport.unbalanced(C, a, b, [1e9], 0.1, 2000)[0]
    full = transport.partial(C, a, b, [1.0], 0.1, 2000)[0]
    assert torch.allclose(big, bal, atol=1e-7)
    assert torch.allclose(full, bal, atol=1e-6)
    assert torch.allclose(bal.sum(-1), a, atol=1e-6)  # zero-weight padding gets no mass


def test_padded_batch_equals_each_pair_alone():
    rng = np.random.default_rng(2)
    S = [rng.normal(size=(n, m)) for n, m in ((2, 6), (7, 3), (4, 4))]
    va = [np.ones(s.shape[0], bool) for s in S]
    vb = [np.ones(s.shape[1], bool) for s in S]
    vb[2][1] = False  # a word without tokens takes no part
    batch = make_batch(S, va, vb)
    for name, grid in (("unbalanced", [0.05, 1.0]), ("partial", [0.5, 0.9]),
                       ("sinkhorn-threshold", None)):
        P = extract.plans(Method(name), batch, grid, dtype=torch.float64)
        for k, s in enumerate(S):
            alone = extract.plans(Method(name), make_batch([s], [va[k]], [vb[k]]), grid,
                                  dtype=torch.float64)
            n, m = s.shape
            assert torch.allclose(P[:, k, :n, :m], alone[:, 0], atol=1e-10)
            assert float(P[:, k, n:].abs().sum() + P[:, k, :, m:].abs().sum()) == 0
        assert float(P[:, 2, :, 1].abs().max()) == 0


def test_unbalanced_mass_approaches_one_as_tau_grows():
    S = [np.eye(3) + 0.1]
    batch = make_batch(S, [np.ones(3, bool)], [np.ones(3, bool)])
    P = extract.plans(Method("unbalanced"), batch, [0.01, 0.1, 1.0, 100.0])
    gap = (P.sum((-1, -2))[:, 0] - 1).abs()  # relaxed marginals: the mass is free
    assert (gap[1:] < gap[:-1]).all() and float(gap[-1]) < 0.01 and float(gap[0]) > 0.1


def test_score_by_hand():
    # gold: sure {0-0, 1-1}, possible {2p2}; A = {0-0, 1-2, 2-2}; 3 × 4 words
    p = make_pair("a b c", "w x y z", "0-0 1-1 2p2")
    c = pair_counts({(0, 0), (1, 2), (2, 2)}, p)
    m = {k: float(v) for k, v in metrics_from_counts(c).items()}
    assert m["precision"] == pytest.approx(2 / 3)  # |A∩P| = 2 of 3
    assert m["recall"] == pytest.approx(1 / 2)  # |A∩S| = 1 of 2
    assert m["aer"] == pytest.approx(1 - (1 + 2) / (3 + 2))
    # gold null (sure): A: c; B: y, z. predicted null: A: none; B: x, z. hits: z
    assert m["null_precision"] == pytest.approx(1 / 2)
    assert m["null_recall"] == pytest.approx(1 / 3)
    assert m["total_precision"] == pytest.approx((2 + 1) / (3 + 2))
    assert m["total_recall"] == pytest.approx((1 + 1) / (2 + 3))
    pp = make_pair("a b", "x y", "")
    e = {k: float(v) for k, v in metrics_from_counts(pair_counts(set(), pp)).items()}
    # nothing predicted, nothing in gold: every ratio is 0/0, which counts 1
    assert e["f1"] == 1 and e["null_f1"] == 1 and e["total_f1"] == 1 and e["aer"] == 0


def _reference(links, pair):
    """The published definitions, written out with Python sets."""
    A, S, P = set(links), set(pair.sure), set(pair.possible) | set(pair.sure)
    n, m = pair.shape

    def ratio(x, y, other):
        return x / y if y else (1.0 if other == 0 else 0.0)

    def f1(p, r):
        return 2 * p * r / (p + r) if p + r else 0.0

    na = {("a", i) for i in range(n) if not any(l[0] == i for l in A)} | \
        {("b", j) for j in range(m) if not any(l[1] == j for l in A)}
    ng = {("a", i) for i in range(n) if not any(l[0] == i for l in S)} | \
        {("b", j) for j in range(m) if not any(l[1] == j for l in S)}
    p, r = ratio(len(A & P), len(A), len(S)), ratio(len(A & S), len(S), len(A))
    npr, nre = ratio(len(na & ng), len(na), len(ng)), ratio(len(na & ng), len(ng), len(na))
    tp = ratio(len(A & P) + len(na & ng), len(A) + len(na), len(S) + len(ng))
    tr = ratio(len(A & S) + len(na & ng), len(S) + len(ng), len(A) + len(na))
    return {"precision": p, "recall": r, "f1": f1(p, r),
            "aer": 1 - (len(A & S) + len(A & P)) / (len(A) + len(S)) if A or S else 0.0,
            "null_f1": f1(npr, nre), "total_f1": f1(tp, tr)}


links_strategy = st.integers(1, 5).flatmap(lambda n: st.integers(1, 5).flatmap(
    lambda m: st.tuples(st.just(n), st.just(m),
                        st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, m - 1))),
                        st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, m - 1))),
                        st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, m - 1))))))


@settings(max_examples=60, deadline=None)
@given(st.lists(links_strategy, min_size=1, max_size=4))
def test_score_matches_the_definitions(cases):
    pairs, preds = [], []
    for n, m, pred, sure, poss in cases:
        gold = " ".join([f"{i}-{j}" for i, j in sure] + [f"{i}p{j}" for i, j in poss])
        pairs.append(make_pair(" ".join("a" * n), " ".join("b" * m), gold))
        preds.append(pred)
    res = score(preds, pairs, bootstrap=0)
    refs = [_reference(l, p) for l, p in zip(preds, pairs)]
    for k in ("precision", "recall", "aer", "null_f1", "total_f1", "f1"):
        assert res.per_pair[k] == pytest.approx([r[k] for r in refs])
    # macro: F1 of averaged precision and recall (OTAlign); micro: of summed counts
    p = np.mean([r["precision"] for r in refs])
    r = np.mean([r["recall"] for r in refs])
    assert res.macro["f1"] == pytest.approx(2 * p * r / (p + r) if p + r else 0.0)
    tot = res.counts.sum(0)
    micro_p = tot[2] / tot[0] if tot[0] else (1.0 if tot[3] == 0 else 0.0)
    assert res.micro["precision"] == pytest.approx(micro_p)


def test_bootstrap_interval_brackets_the_estimate():
    rng = np.random.default_rng(0)
    counts = np.stack([rng.integers(0, 10, 7) for _ in range(40)])
    counts[:, 1] = np.minimum(counts[:, 1], counts[:, [0, 3]].min(1))
    counts[:, 2] = np.clip(counts[:, 2], counts[:, 1], counts[:, 0])
    counts[:, 6] = np.minimum(counts[:, 6], counts[:, [4, 5]].min(1))
    res = corpus_score(counts, bootstrap=500, seed=1)
    for k in METRICS:
        lo, hi = res.macro_ci[k]
        assert lo <= res.macro[k] + 1e-12 and res.macro[k] <= hi + 1e-12
        assert lo < hi
    assert corpus_score(counts, bootstrap=500, seed=1).macro_ci == res.macro_ci


def test_score_refuses_bad_input():
    p = make_pair("a b", "c d", "0-0")
    with pytest.raises(SettingsError, match="2 predictions for 1 pairs"):
        score([set(), set()], [p])
    with pytest.raises(SettingsError, match="no gold"):
        score([set()], [make_pair("a", "b")])
    with pytest.raises(SettingsError, match="outside"):
        score([{(5, 0)}], [p])
    with pytest.raises(SettingsError, match="no pairs"):
        corpus_score(np.zeros((0, 7)))


def test_grid_counts_equal_counting_each_threshold():
    rng = np.random.default_rng(3)
    S = [rng.normal(size=(n, m)) for n, m in ((3, 4), (5, 2), (4, 6))]
    golds = ["0-0 1-1 2p3", "0-1 4-0", ""]
    sc = _scored(S, golds)
    for name in ("similarity-threshold", "sinkhorn-threshold", "softmax-both"):
        res = evaluate_grid(sc, name)
        for g in (0, 13, 50, 87):
            m = method_of(name).with_theta(g / extract.GRID)
            direct = np.stack([pair_counts(a.links, p) for a, p in
                               zip(extract_links(sc, m), sc.pairs)]).sum(0)
            assert (res.count_sums[0, 0, g] == direct).all(), (name, g)


def test_tune_picks_the_dev_optimum():
    # every pair: a strong diagonal, one extra word in B that no word of A is aligned to
    rng = np.random.default_rng(4)
    S, golds = [], []
    for k in range(12):
        n = int(rng.integers(3, 6))
        s = rng.uniform(0, 0.3, size=(n, n + 1))
        s[np.arange(n), np.arange(n)] = rng.uniform(0.8, 1.0, n)
        S.append(s)
        golds.append(" ".join(f"{i}-{i}" for i in range(n)))
    sc = _scored(S, golds)
    taus = {"unbalanced": (0.01, 0.1, 1.0)}
    tuned = tune_scored(sc, methods=("similarity-threshold", "unbalanced"), bootstrap=0,
                        grids=taus)
    for name in ("similarity-threshold", "unbalanced"):
        assert tuned.dev[name].macro["total_f1"] == pytest.approx(1.0)
        res = evaluate_grid(sc, name, grid=taus.get(name))
        best = res.metric_sums[0][..., METRICS.index("total_f1")].max() / len(S)
        assert best == pytest.approx(1.0)
    th = tuned.settings["similarity-threshold"].threshold
    assert 0.3 <= th < 0.8  # anything between the off-diagonal and the diagonal values


def test_partial_gives_each_word_capacity_one_and_leaves_the_longer_texts_extra_word():
    # OTAlign's weights: a_i = b_j = 1 (here / min(n, n')), m a share of min(‖a‖, ‖b‖); the
    # balanced plan must send a third of the mass to B's extra word 2, partial sends none
    S = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5]])
    batch = make_batch([S], [np.ones(2, bool)], [np.ones(3, bool)])
    P = extract.plans(Method("partial"), batch, [0.5, 0.98], dtype=torch.float64)[:, 0]
    assert torch.allclose(P.sum((-1, -2)), torch.tensor([0.5, 0.98], dtype=torch.float64))
    assert float(P.sum(-1).max()) <= 0.5 + 1e-9 and float(P.sum(-2).max()) <= 0.5 + 1e-9
    assert float(P[1, :, 2].sum()) < 0.02  # the extra word of B gets (almost) nothing
    bal = extract.plans(Method("sinkhorn-threshold"), batch, dtype=torch.float64)[0, 0]
    assert float(bal[:, 2].sum()) == pytest.approx(1 / 3, abs=1e-6)
    assert _links(Method("partial", threshold=0.3, mass=0.98), S) == {(0, 0), (1, 1)}


def test_mass_grid_is_otaligns_and_leaves_out_the_balanced_plan():
    assert len(extract.MASS_GRID) == 50 and max(extract.MASS_GRID) < 1
    assert extract.MASS_GRID[0] == pytest.approx(1 / 51) and extract.MASS_GRID[-1] == \
        pytest.approx(50 / 51)


def test_tune_picks_a_partial_mass_below_one_where_it_is_best():
    # every pair: 5 × 5 words, four gold links (one weak, 0.7, with a spurious 0.8 beside it
    # on the same word of B) and one unaligned word on each side. A balanced plan (and
    # m = 1) must link the two unaligned words; m ≈ 4/5 leaves them out and keeps the weak
    # link, which a small m (like a threshold on the similarity) loses to the spurious one.
    rng = np.random.default_rng(5)
    S, golds = [], []
    for _ in range(12):
        s = rng.uniform(0.0, 0.2, size=(5, 5))
        pa, pb = rng.permutation(5), rng.permutation(5)
        for i in range(3):
            s[pa[i], pb[i]] = rng.uniform(0.9, 1.0)
        s[pa[3], pb[3]] = 0.7
        s[pa[0], pb[3]] = 0.8
        S.append(s)
        golds.append(" ".join(f"{pa[i]}-{pb[i]}" for i in range(4)))
    sc = _scored(S, golds)
    tuned = tune_scored(sc, methods=("partial", "sinkhorn-threshold", "similarity-threshold"),
                        bootstrap=0)
    m = tuned.settings["partial"].mass
    assert m in extract.MASS_GRID and 0.6 < m < 1
    assert tuned.dev["partial"].macro["total_f1"] == pytest.approx(1.0)
    res = evaluate_grid(sc, "partial")
    f = res.metric_sums[0][..., METRICS.index("total_f1")].max(-1) / len(S)
    assert res.grid[int(np.argmax(f))] == m  # the dev optimum over the m grid
    assert f[0] < 0.95  # the smallest m keeps the spurious link
    full = evaluate_grid(sc, "partial", grid=(1.0,)).metric_sums[0][
        ..., METRICS.index("total_f1")].max() / len(S)
    assert full < 0.95  # m = 1 cannot leave the unaligned pair out
    for other in ("sinkhorn-threshold", "similarity-threshold"):
        assert tuned.dev[other].macro["total_f1"] < 0.95


def test_method_settings_are_checked():
    with pytest.raises(SettingsError, match="method must be one of"):
        Method("argmax")
    with pytest.raises(SettingsError, match="threshold"):
        Method("exact", threshold=1.5)
    with pytest.raises(SettingsError, match="mass"):
        Method("partial", mass=0)
    with pytest.raises(SettingsError, match="direction"):
        Method("softmax-argmax", direction="sideways")
    with pytest.raises(SettingsError, match="finite"):
        Method("unbalanced", tau=float("nan"))
    assert Method("softmax-both", threshold=1e-3).with_theta(0.25).threshold == \
        pytest.approx(1e-3)


def test_cost_is_min_max_scaled_on_valid_words():
    S = np.array([[2.0, 0.0], [1.0, 9.0]])
    C = transport.cost_of(S, np.array([True, True]), np.array([True, False]))
    assert C.tolist() == [[0.0, 1.0], [1.0, 1.0]]


def test_source_settings_are_checked():
    assert Source("hidden", -1).check(6, 12).layer == 6  # hidden states 0 … L
    assert Source("attention", -1, head=-1).check(6, 12) == Source("attention", 5, 11)
    with pytest.raises(SettingsError, match="layer 6 is out of range"):
        Source("attention", 6).check(6, 12)
    with pytest.raises(SettingsError, match="head 12 is out of range"):
        Source("attention", 0, head=12).check(6, 12)
    with pytest.raises(SettingsError, match="source must be"):
        Source("logits")


def test_words_without_tokens_get_no_links():
    S = np.array([[1.0, 0.0], [0.0, 1.0]])
    sc = Scored((make_pair("a b", "c d", "0-0 1-1"),), (S,), (np.array([True, False]),),
                (np.ones(2, bool),), Source())
    for name in ("softmax-argmax", "sinkhorn-threshold", "unbalanced", "exact"):
        al = extract_links(sc, Method(name, threshold=0.5))[0]
        assert all(i == 0 for i, _ in al.links) and 1 in al.null_a
        assert (al.values[1] == -1).all()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("ab\x00\x01\x1b\x7f\u200b\u0301e\t"),
                        min_size=1, max_size=6).filter(lambda w: w.split() == [w]),
                min_size=1, max_size=8))
def test_the_encoded_text_keeps_one_word_per_gold_word(words):
    """Control characters inside a word never split it (gold indices stay in place)."""
    from engine.alignment.sources import words_text

    assert len(words_text(words).split(" ")) == len(words)
    assert all(w.strip() for w in words_text(words).split(" "))


@pytest.mark.model
def test_control_characters_keep_words_in_place_and_unread_pairs_are_named():
    from engine.alignment.api import score_corpus
    from engine.alignment.sources import encode_words
    from engine.errors import TextError
    from engine.relation.relate import default_encoder

    enc = default_encoder()
    w = encode_words(["cat\x01dog house"], enc)[0]
    ref = encode_words(["catdog house"], enc)[0]
    assert w.words == ("cat\x01dog", "house") and w.valid.all()
    np.testing.assert_allclose(w.hidden, ref.hidden, atol=1e-6)
    with pytest.raises(TextError, match=r"pair 2 \(text A\).*no word the model can read"):
        score_corpus([make_pair("the cat", "a cat"), make_pair("\u200b", "a dog")], encoder=enc)


def test_method_refuses_booleans_for_numbers():
    with pytest.raises(SettingsError, match="tau must be a finite number"):
        Method("unbalanced", tau=True)


# ------------------------------------------------- several methods in one pass, and the verdict
def _corpus(seed=0, n_pairs=9, gold_every=1):
    rng = np.random.default_rng(seed)
    S, golds = [], []
    for k in range(n_pairs):
        n, m = rng.integers(2, 7, 2)
        S.append(rng.normal(size=(n, m)))
        links = {(int(i), int(rng.integers(0, m))) for i in range(n) if rng.random() < 0.7}
        golds.append(" ".join(f"{i}-{j}" for i, j in sorted(links)) if k % gold_every == 0
                     else None)
    return _scored(S, golds)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(0, 0.99))
def test_link_counts_equal_counting_pair_by_pair(seed, theta):
    from engine.alignment.score import mask_counts

    sc = _corpus(seed)
    rng = np.random.default_rng(seed)
    batch = make_batch(sc.S, sc.valid_a, sc.valid_b, [(p.sure, p.possible) for p in sc.pairs])
    V = torch.where(batch.valid, torch.from_numpy(rng.uniform(size=batch.S.shape)), -1.0)
    got = extract.link_counts(V, theta, batch).numpy()
    for k, p in enumerate(sc.pairs):
        n, m = p.shape
        S_, P_ = (batch.sure[k, :n, :m].numpy(), batch.possible[k, :n, :m].numpy())
        want = mask_counts(V[k, :n, :m].numpy() > theta, S_, P_)
        assert (got[k] == want).all()
        assert {(i, j) for i, j in p.sure} == set(zip(*np.nonzero(S_)))


def test_batched_costs_equal_each_pairs_cost():
    rng = np.random.default_rng(3)
    S = [rng.normal(size=s) for s in ((3, 4), (5, 2), (1, 1))]
    va = [np.array([1, 0, 1], bool), np.ones(5, bool), np.ones(1, bool)]
    vb = [np.ones(4, bool), np.array([0, 1], bool), np.ones(1, bool)]
    batch = make_batch(S, va, vb)
    C = transport.costs(batch.S, batch.valid)
    for k, s in enumerate(S):
        n, m = s.shape
        want = transport.cost_of(s, va[k], vb[k])
        np.testing.assert_array_equal(np.where(np.outer(va[k], vb[k]), C[k, :n, :m].numpy(), 1),
                                      want)


def test_compare_methods_equals_one_method_at_a_time_and_solves_shared_plans_once(monkeypatch):
    sc = _corpus(4, n_pairs=12, gold_every=3)
    settings_ = {name: method_of(name) for name in extract.METHODS}
    calls = []
    plans = extract.plans
    monkeypatch.setattr(extract, "plans", lambda m, *a, **k: calls.append(m.name) or plans(
        m, *a, **k))
    res = api_compare(sc, settings_, bootstrap=100)
    balanced = calls.count("sinkhorn-argmax") + calls.count("sinkhorn-threshold")
    assert balanced == calls.count("exact") >= 1  # one balanced solve per batch for both
    assert res.gold == (0, 3, 6, 9) and res.n_pairs == 12
    for name, m in settings_.items():
        alone = extract_links(sc, m)
        assert [a.links for a in res.alignments[name]] == [a.links for a in alone]
        assert [a.scores for a in res.alignments[name]] == [a.scores for a in alone]
        want = score([alone[k] for k in res.gold], [sc.pairs[k] for k in res.gold],
                     bootstrap=100)
        assert res.scores[name].macro == pytest.approx(want.macro, abs=1e-12)
        for k, ci in want.macro_ci.items():
            assert res.scores[name].macro_ci[k] == pytest.approx(ci, abs=1e-12)
        assert res.alignments[name][1].scores is None  # no gold, no scores
    assert res.verdict.best == res.verdict.ranked[0].method
    assert res.verdict.n_pairs == 4 and res.verdict.ranked[0].settings["method"]


def api_compare(*a, **k):
    from engine.alignment.api import compare_methods

    return compare_methods(*a, **k)


def test_tuning_scores_dev_at_the_picked_settings():
    from engine.alignment.api import pick_settings

    sc = _corpus(6, n_pairs=10)
    picked = pick_settings(sc, ("sinkhorn-threshold", "softmax-argmax"))
    t = tune_scored(sc, methods=("sinkhorn-threshold", "softmax-argmax"), bootstrap=0)
    assert picked == t.settings
    assert t.dev["sinkhorn-threshold"].macro == pytest.approx(
        score(extract_links(sc, picked["sinkhorn-threshold"]), sc.pairs, bootstrap=0).macro)
    with pytest.raises(SettingsError, match="gold for every dev pair"):
        pick_settings(_corpus(1, gold_every=2))


def test_the_pair_view_opens_at_the_tuned_settings():
    from engine.alignment.api import DEFAULTS, opening

    o = opening()
    assert o == {"method": "unbalanced", "theta": 0.42, "tau": 4.94, "mass": 0.8, "eps": 0.1}
    assert o["tau"] == DEFAULTS["hidden"]["unbalanced"].tau
    assert opening("softmax-both")["theta"] == round(DEFAULTS["hidden"]["softmax-both"].theta, 2)


@pytest.mark.model
def test_one_layer_encoding_gives_the_vectors_of_the_whole_model(monkeypatch):
    """The model run through a source's layer only, texts batched by length, gives the
    vectors every layer's encoding gives (a cut text included); a model it cannot cut is
    encoded whole."""
    from engine.alignment import sources
    from engine.alignment.sources import Source, encode_words, first_layers
    from engine.relation.relate import default_encoder

    enc = default_encoder()
    texts = ["the cat sat on the mat", "a", "naïve café\x01owner, 3 km away",
             "word " * 300, "he purchased a brand new vehicle yesterday"]
    for src in (Source("hidden", 3), Source("hidden", 0), Source("attention", 2)):
        fast = encode_words(texts, enc, keep=src, batch_size=2)
        with monkeypatch.context() as m:
            m.setattr(sources, "layer_words", lambda *a, **k: None)
            whole = encode_words(texts, enc, keep=src, batch_size=2)
        for x, y in zip(fast, whole):
            assert x.words == y.words and (x.valid == y.valid).all()
            for f in ("hidden", "q", "k"):
                a, b = getattr(x, f), getattr(y, f)
                assert (a is None) == (b is None)
                if a is not None:
                    np.testing.assert_allclose(a, b, atol=2e-5)
    assert not fast[3].valid.all() and fast[3].valid[:200].all()  # cut at the token limit
    assert first_layers(enc, 3) is first_layers(enc, 3)  # cut and checked once

    class Plain:  # an encoder without a model to cut: encode_many as before
        def __getattr__(self, name):
            return getattr(enc, name) if name != "model" else None

    assert first_layers(Plain(), 3) is None
    plain = encode_words(texts[:2], Plain(), keep=Source("hidden", 3))
    cut = encode_words(texts[:2], enc, keep=Source("hidden", 3))
    for x, y in zip(plain, cut):
        np.testing.assert_allclose(x.hidden, y.hidden, atol=2e-5)
