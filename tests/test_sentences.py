"""The Sentences view's numbers and figures: the debiased Sinkhorn divergence against POT,
its properties (hypothesis), both rankings on the real MiniLM, and the figures' structure."""

from __future__ import annotations

import json

import numpy as np
import ot
import pytest
from hypothesis import HealthCheck, given, settings as hsettings
from hypothesis import strategies as st

from engine import TextError
from engine.relation.relate import default_encoder
from engine.relation.sentences import (MAX_CANDIDATES, cosine_cost, entropic_ot, measures,
                              parse_candidates, rank, rank_texts, sinkhorn_divergence)
from sinkscope_app.examples import sentence_sets
from viz import sentences as vsentences


def clouds(seed: int, n: int = 6, sizes=(4, 9, 7), d: int = 5):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), [rng.normal(size=(m, d)) for m in sizes]


def pot_divergence(x, y, eps):
    """S_ε from POT's own entropic solver (ot.solve, KL regularisation: value includes ε·KL)."""
    a, b = np.full(len(x), 1 / len(x)), np.full(len(y), 1 / len(y))

    def ot_eps(M, p, q):
        return ot.solve(M, p, q, reg=eps, max_iter=100_000, tol=1e-12).value

    return (ot_eps(cosine_cost(x, y), a, b) - 0.5 * ot_eps(cosine_cost(x, x), a, a)
            - 0.5 * ot_eps(cosine_cost(y, y), b, b))


@pytest.mark.parametrize("eps", [0.2, 1.0, 10.0])
def test_divergence_matches_pot_padded_batch(eps):
    x, ys = clouds(0)
    div, plans, converged = sinkhorn_divergence(x, ys, eps, tol=1e-9, half_steps=20_000)
    assert converged.all() and [p.shape for p in plans] == [(6, 4), (6, 9), (6, 7)]
    for k, y in enumerate(ys):
        assert div[k] == pytest.approx(pot_divergence(x, y, eps), rel=1e-6, abs=1e-9)
        np.testing.assert_allclose(plans[k].sum(1), 1 / 6, atol=1e-8)
        np.testing.assert_allclose(plans[k].sum(0), 1 / len(y), atol=1e-8)
    alone, _, _ = sinkhorn_divergence(x, ys[1:2], eps, tol=1e-9, half_steps=20_000)
    assert alone[0] == pytest.approx(div[1], rel=1e-9, abs=1e-12)  # padding changes nothing


def test_entropic_ot_value_is_cost_plus_eps_kl():
    x, (y, *_) = clouds(1)
    C = cosine_cost(x, y)
    a, b = np.full(len(x), 1 / len(x)), np.full(len(y), 1 / len(y))
    value, plan, ok = entropic_ot(C, a, b, 0.4, tol=1e-10, half_steps=20_000)
    kl = (plan * np.log(plan / np.outer(a, b))).sum()
    assert ok and value == pytest.approx((plan * C).sum() + 0.4 * kl, rel=1e-12)
    assert value == pytest.approx(ot.solve(C, a, b, reg=0.4, tol=1e-13, max_iter=10**5).value,
                                  rel=1e-7)


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), eps=st.sampled_from([0.3, 1.0, 4.0]),
       n=st.integers(1, 8), m=st.integers(1, 8))
def test_divergence_is_nonnegative_symmetric_and_zero_on_itself(seed, eps, n, m):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(n, 4)), rng.normal(size=(m, 4))
    kw = dict(tol=1e-9, half_steps=10_000)
    (xy,), _, ok1 = sinkhorn_divergence(x, [y], eps, **kw)
    (yx,), _, ok2 = sinkhorn_divergence(y, [x], eps, **kw)
    (xx,), _, _ = sinkhorn_divergence(x, [x], eps, **kw)
    if ok1.all() and ok2.all():
        assert xy >= -1e-7 and abs(xy - yx) <= 1e-6
    assert abs(xx) <= 1e-7
    assert np.isfinite([xy, yx, xx]).all()


def test_parse_candidates():
    assert parse_candidates(" one \n\n  two\n\t\n\x00\x01\n") == (["one", "two"], 0)
    lines, dropped = parse_candidates("\n".join(f"c{i}" for i in range(MAX_CANDIDATES + 3)))
    assert len(lines) == MAX_CANDIDATES and dropped == 3
    for bad in ("", "  \n\t\n"):
        with pytest.raises(TextError, match="at least one candidate"):
            parse_candidates(bad)


@pytest.mark.model
def test_rankings_on_the_real_model():
    enc = default_encoder()
    s = sentence_sets()["guitar"]
    ms, dropped = measures(enc, s["a"], "\n".join(s["candidates"]))
    assert dropped == 0 and len(ms) == 21
    r = rank(ms, eps=0.5, pooling=enc.pooling, mean_pooled=enc.mean_pooled)
    K = len(s["candidates"])
    assert r.similarity.shape == r.divergence.shape == r.converged.shape == (K,)
    assert sorted(r.by_similarity) == sorted(r.by_divergence) == list(range(K))
    assert np.all(np.diff(r.similarity[r.by_similarity]) <= 0)
    assert np.all(np.diff(r.divergence[r.by_divergence]) >= 0)
    assert r.converged.all() and (r.divergence > 0).all()
    assert r.barycenter_gap <= 1e-5  # MiniLM's embedding is the barycenter of the measure
    ref = enc.st.encode([s["a"], *s["candidates"]], convert_to_numpy=True)
    np.testing.assert_allclose(r.similarity, ref[1:] @ ref[0], atol=1e-5)
    para = s["candidates"].index("On stage, a man is playing a guitar.")
    stocks = s["candidates"].index("Stocks fell sharply on Monday morning.")
    assert r.by_similarity[0] == r.by_divergence[0] == para
    assert r.rank_divergence[stocks] > K - 5 and r.rank_similarity[stocks] > K - 5
    assert -1 <= r.spearman <= 1 and [p.shape[0] for p in r.plans] == [ms[0].points.shape[0]] * K
    # the same through the one-call API, and the plan mass of one candidate
    again = rank_texts(enc, s["a"], s["candidates"], eps=0.5)
    np.testing.assert_allclose(again.divergence, r.divergence, atol=1e-12)
    assert r.plans[para].sum() == pytest.approx(1.0, abs=1e-6)


@pytest.mark.model
def test_ranking_notices_and_bad_input():
    enc = default_encoder()
    r = rank_texts(enc, "A cat.", ["word " * 400, "A kitten."], eps=1.0)
    kinds = [n.kind for n in r.notices]
    assert "tokens_cut" in kinds and "Candidate 1 was cut" in r.notices[0].message
    with pytest.raises(TextError, match="Text A is empty"):
        rank_texts(enc, "  ", ["x"])
    with pytest.raises(TextError, match="at least one candidate"):
        rank_texts(enc, "A cat.", "\n \n")


def _fake_ranking():
    from engine.types import Ranking

    sim = np.array([0.9, 0.2, 0.5, 0.7])
    div = np.array([0.05, 0.6, 0.1, 0.3])
    texts = ("first <b>bold</b>", "second", "third & more", "fourth\nline")
    return Ranking(text_a="A", candidates=texts, tokens_a=("a",), tokens=(("x",),) * 4,
                   similarity=sim, divergence=div, plans=(np.ones((1, 1)),) * 4,
                   by_similarity=np.argsort(-sim), by_divergence=np.argsort(div),
                   spearman=0.8, eps=0.5, converged=np.ones(4, bool), barycenter_gap=1e-8,
                   pooling="mean")


def test_rankings_figure_structure():
    r = _fake_ranking()
    fig = vsentences.rankings(r)
    lines, marks = fig.data[:3], fig.data[3:]
    assert [t.mode for t in lines] == ["lines"] * 3 and len(marks) == 2
    left, right = marks
    np.testing.assert_array_equal(left.y, r.rank_similarity)
    np.testing.assert_array_equal(right.y, r.rank_divergence)
    assert list(left.customdata) == list(right.customdata) == [0, 1, 2, 3]
    # candidate 3 is third by similarity and second by divergence: a grey (same place) line
    assert "3. third &amp; more" in left.text[2] and right.text[2].endswith("3. third &amp; more")
    assert "&lt;b&gt;bold&lt;/b&gt;" in left.text[0] and "<b>bold" not in left.text[0]
    assert fig.layout.yaxis.autorange is None and fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]
    json.loads(fig.to_json())


def test_scatter_figure_structure():
    r = _fake_ranking()
    fig = vsentences.scatter(r, theme="dark")
    (pts,) = fig.data
    np.testing.assert_array_equal(pts.x, r.similarity)
    np.testing.assert_array_equal(pts.y, r.divergence)
    assert list(pts.text) == ["1", "2", "3", "4"] and list(pts.customdata) == [0, 1, 2, 3]
    assert "Spearman ρ(cosine, −S_ε) = 0.80" in fig.layout.title.text
    assert "ε = 0.5" in fig.layout.yaxis.title.text
    assert all("<b>bold</b>" not in h for h in pts.hovertext)


@pytest.mark.model
def test_hostile_candidates_rank_with_finite_numbers_and_escaped_figures():
    from tests.support.hostile import CASES

    enc = default_encoder()
    texts = [t for c in CASES for t in (c.a, c.b) if t.strip()]
    r = rank_texts(enc, "<script>alert(1)</script> A river bank.", texts, eps=1.0)
    assert len(r.candidates) == min(MAX_CANDIDATES, len(texts))
    assert np.isfinite(r.similarity).all() and np.isfinite(r.divergence).all()
    assert any(n.kind == "candidates_cut" for n in r.notices) == (len(texts) > MAX_CANDIDATES)
    for fig in (vsentences.rankings(r), vsentences.scatter(r)):
        text = fig.to_json()
        assert "<script" not in text and "<img" not in text and "<iframe" not in text


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")
def test_tiny_mpnet_on_cuda_matches_cpu(tiny_models):
    from engine import Encoder

    text = "The bank of the river."
    g = Encoder.load(str(tiny_models["mpnet"]), device="cuda").encode(text)
    c = Encoder.load(str(tiny_models["mpnet"]), device="cpu").encode(text)
    assert np.abs(g.bias - c.bias).max() < 1e-5 and np.abs(g.attentions - c.attentions).max() < 1e-4
    assert np.abs(g.embedding - c.embedding).max() < 1e-4


def test_ranking_exports_carry_both_scores_both_ranks_and_the_settings():
    import csv
    import io

    from sinkscope_app import report

    r = _fake_ranking()
    url = "http://localhost/?view=sentences&eps=0.5"
    doc = json.loads(report.ranking_json(r, url=url))
    assert doc["settings"]["eps"] == 0.5 and doc["settings"]["url"] == url
    assert doc["settings"]["text_a"] == "A" and doc["spearman"] == pytest.approx(0.8)
    rows = doc["candidates"]
    assert [row["candidate"] for row in rows] == [1, 3, 4, 2]  # smallest divergence first
    assert [row["rank_by_divergence"] for row in rows] == [1, 2, 3, 4]
    by_text = {row["text"]: row for row in rows}
    assert by_text["fourth\nline"]["rank_by_similarity"] == 2  # 0.7: second most similar
    assert by_text["second"]["cosine_similarity"] == pytest.approx(0.2)
    assert by_text["third & more"]["sinkhorn_divergence"] == pytest.approx(0.1)
    text = report.ranking_csv(r, url=url)
    head = [line for line in text.splitlines() if line.startswith("#")]
    assert "# eps: 0.5" in head and f"# url: {url}" in head
    table = list(csv.DictReader(io.StringIO(
        "".join(line for line in text.splitlines(True) if not line.startswith("#")))))
    assert [row["text"] for row in table] == [row["text"] for row in rows]
    assert {k for k in table[0]} >= {"cosine_similarity", "rank_by_similarity",
                                      "sinkhorn_divergence", "rank_by_divergence"}
    assert float(table[0]["sinkhorn_divergence"]) == pytest.approx(0.05)
    nan = dataclasses_replace(r, spearman=float("nan"))
    assert json.loads(report.ranking_json(nan))["spearman"] is None


def dataclasses_replace(obj, **kw):
    import dataclasses

    return dataclasses.replace(obj, **kw)


@pytest.mark.model
def test_sentences_view_exports_its_ranking():
    """The Export menu of the Sentences view offers the ranking (it used to offer only the
    A–B files)."""
    from tests.support.apptest import ok, run

    at = run({"view": "sentences"})
    ok(at)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Sentences ranking (CSV)" in labels and "Sentences ranking (JSON)" in labels
    at = run({"view": "compare"})
    assert "Sentences ranking (CSV)" not in [b.proto.label for b in at.get("download_button")]
