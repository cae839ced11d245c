"""The Align page's live sliders against Python: the payload and the browser's rules.

``sinkscope_app/align_live.py`` ships, per pair and method, the values V at every τ (or m)
in one batched solve, each cell's kind by its gold and this pair's scores at every setting;
``sinkscope_app/js/align.js`` reads links and figures from them in the browser. Python's
own functions are the truth: ``engine.alignment.extract`` (V, links V > θ),
``engine.alignment.score`` (counts, metrics) and ``viz.align`` (the figures). This file
writes fixtures from them — hand-made pairs and the project's small gold set — and runs
``node --test tests/js/align.test.mjs`` on them; the payload itself is checked here (float32
on the right side of every threshold, the scores at every setting, the batched grid equal
to one solve per value). No model is loaded: the word scores S are drawn at random.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.alignment import extract
from engine.alignment.api import method_of
from engine.alignment.readers import make_pair, parse_pairs
from engine.alignment.score import METRICS, mask_counts, metrics_from_counts, pair_counts
from hypothesis import given, settings, strategies as st
from sinkscope_app import align_live as al
from sinkscope_app.align import MASS_OPTIONS, TAU_OPTIONS, THRESHOLDED, ui
from engine.relation.summary import numbers
from tests.test_js import plain
from viz import align as va
from tests.support.apptest import data as component_data

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
GOLD = ROOT / "tests" / "data" / "align" / "pairs.tsv"


def nan_to_none(node):
    if isinstance(node, float) and math.isnan(node):
        return None
    if isinstance(node, list):
        return [nan_to_none(x) for x in node]
    if isinstance(node, dict):
        return {k: nan_to_none(v) for k, v in node.items()}
    return node


def hand_made() -> list[tuple]:
    """(pair, S, valid_a, valid_b): small pairs with the cases extraction treats apart."""
    rng = np.random.default_rng(20)
    out = []
    p = make_pair("the cat sat", "a cat sat down", "0p0 1-1 2-2 2p3")
    out.append((p, rng.normal(size=(3, 4)), np.ones(3, bool), np.ones(4, bool)))
    p = make_pair("x y z w", "u v", "0-0 3-1")  # a word without tokens gets no link
    out.append((p, rng.normal(size=(4, 2)), np.array([1, 0, 1, 1], bool), np.ones(2, bool)))
    p = make_pair("one", "one")  # 1 × 1, no gold
    out.append((p, np.array([[0.7]]), np.ones(1, bool), np.ones(1, bool)))
    p = make_pair("a b c d", "a b c d", "0-0 1-1 2-2 3-3")  # ties everywhere
    out.append((p, np.round(rng.normal(size=(4, 4)), 1), np.ones(4, bool), np.ones(4, bool)))
    return out


def gold_set(k: int = 5) -> list[tuple]:
    """The first k pairs of the project's gold set, with random scores."""
    rng = np.random.default_rng(21)
    pairs = parse_pairs(GOLD.read_text(encoding="utf-8"), name="pairs.tsv")[:k]
    return [(p, rng.normal(size=p.shape) + 2 * np.eye(*p.shape), np.ones(p.shape[0], bool),
             np.ones(p.shape[1], bool)) for p in pairs]


def payload_of(pair, S, va_, vb_, name: str) -> al.LivePayload:
    key, grid = al.grid_of(name, TAU_OPTIONS, MASS_OPTIONS)
    return al.build(S, va_, vb_, method_of(name), pair, grid_key=key, grid=grid,
                    id_=al.payload_id(name, pair.text_a, pair.text_b))


def python_values(pair, S, va_, vb_, name: str) -> np.ndarray:
    """V (G, n, m) float64 straight from extraction, as the server reads links."""
    key, grid = al.grid_of(name, TAU_OPTIONS, MASS_OPTIONS)
    batch = extract.make_batch([S], [va_], [vb_])
    return extract.values(method_of(name), batch, grid=list(grid) if key else None)[:, 0].numpy()


def python_links(V: np.ndarray, theta: float) -> tuple:
    import torch

    return tuple(extract.links_of(torch.from_numpy(V[None]), theta, [V.shape])[0])


def python_scores(links, pair) -> dict | None:
    if not pair.has_gold:
        return None
    per = metrics_from_counts(pair_counts(links, pair))
    return {k: float(per[k]) for k in METRICS}


def gold_of(pair):
    if not pair.has_gold:
        return None, None
    return sorted(pair.sure), sorted(pair.possible)


def figures(payload: al.LivePayload, pair, g: int, links, words=None,
            lang: str = "en") -> tuple[dict, dict]:
    sure, possible = gold_of(pair)
    mx = va.matrix(pair.words_a, pair.words_b, links, plan=payload.plan(g), sure=sure,
                   possible=possible, method=payload.method, words=words, num=numbers(lang))
    gr = va.graph(pair.words_a, pair.words_b, links, sure=sure, possible=possible,
                  words=words)
    return nan_to_none(plain(mx)), plain(gr)


def fixtures() -> dict:
    rng = np.random.default_rng(22)
    cases = []
    for c, (pair, S, va_, vb_) in enumerate(hand_made() + gold_set()):
        for name in THRESHOLDED:
            if c >= 4 and name in ("exact", "sinkhorn-threshold") and c % 2:
                continue  # keep the file small: every method on most pairs
            p = payload_of(pair, S, va_, vb_, name)
            V64 = python_values(pair, S, va_, vb_, name)
            G = V64.shape[0]
            n, m = p.shape
            lang = "es" if c in (1, 6) else "en"  # two pairs in Spanish: words and figures
            t = ui(lang)
            words, fig_words = al.words_of(t), t["figure"]
            style = al.style_of(n, m, "light", fig_words, lang)
            steps = []
            g0, k0 = int(rng.integers(G)), int(rng.integers(100))
            before_links = python_links(V64[g0], p.thetas[k0])
            # figures are slow to build: a few pairs (gold and none, a dead word) per method
            draw = c in (0, 1, 2, 6) and (c != 2 or name == "unbalanced")
            before = (figures(p, pair, g0, before_links, fig_words, lang) if draw
                      else ({"data": None},))
            picks = {(int(rng.integers(G)), int(k)) for k in rng.integers(0, 100, 6)}
            picks |= {(0, 0), (G - 1, 99), (G // 2, 30)}
            for q, (g, k) in enumerate(sorted(picks)):
                links = python_links(V64[g], p.thetas[k])
                mx, gr = (figures(p, pair, g, links, fig_words, lang) if draw and q < 2
                          else ({}, {}))
                s = python_scores(links, pair)
                steps.append(dict(g=g, k=k, links=[list(x) for x in links],
                                  scores_line=al.scores_line(words, name, s),
                                  links_line=al.links_line(words, links),
                                  matrix=mx.get("data"), graph=gr.get("data")))
            cases.append(dict(name=f"{name}/{c}/{lang}", lang=lang, words=words,
                              header=p.header(), style=style,
                              bytes=base64.b64encode(p.encode()).decode(),
                              V=nan_to_none([float(x) for x in p.V.ravel()]),
                              scores=None if p.scores is None else p.scores.ravel().tolist(),
                              before=before[0]["data"], steps=steps))
    return dict(cases=cases)


@pytest.mark.slow
def test_the_browser_reads_links_scores_and_figures_as_python(tmp_path):
    assert NODE, "Node ≥ 20 (`node`) is needed to test the browser code; apt-get install nodejs"
    path = tmp_path / "align.json"
    path.write_text(json.dumps(fixtures(), allow_nan=False), encoding="utf-8")
    run = subprocess.run([NODE, "--test", "--test-reporter=tap",
                          str(ROOT / "tests" / "js" / "align.test.mjs")],
                         env={**os.environ, "SINKSCOPE_ALIGN_FIXTURES": str(path)},
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    assert "# fail 0" in out and re.search(r"^# pass [1-9]", out, re.M), out[-2000:]
    assert "fixtures from Python" in out  # the fixture tests ran, not only the hand-made ones


def test_float32_values_keep_every_threshold_side():
    assert np.isnan(al.side_safe_float32(np.array([np.nan, 0.5]), [0.5])[0])
    thetas = al.thetas_of(method_of("similarity-threshold"))
    eps32 = np.float64(np.finfo(np.float32).eps)
    # values within a float32 rounding of a threshold, on both sides, and on it
    V = np.array([t + d for t in thetas for d in (-2e-8, -1e-9, 0.0, 1e-9, 2e-8)] + [-1.0, 1.0])
    plain32 = V.astype(np.float32).astype(np.float64)
    flips = sum(int(((plain32 > t) != (V > t)).sum()) for t in thetas)
    assert flips > 0  # plain rounding does cross thresholds: the case is real
    f = al.side_safe_float32(V, thetas).astype(np.float64)
    for t in thetas:
        assert np.array_equal(f > t, V > t)
    assert np.all(np.abs(f - V) <= 2 * eps32 * np.maximum(np.abs(V), 1e-30) + 1e-45)
    # softmax-both's thresholds are its own round trip through t = 10^(4θ − 4)
    soft = al.thetas_of(method_of("softmax-both"))
    assert len(soft) == 100 and all(abs(a - b) < 1e-12 for a, b in zip(soft, al.THETA_STOPS))


@pytest.mark.parametrize("name", THRESHOLDED)
def test_the_payload_links_are_extractions_at_every_setting(name):
    pair, S, va_, vb_ = gold_set(3)[2]
    p = payload_of(pair, S, va_, vb_, name)
    V64 = python_values(pair, S, va_, vb_, name)
    G = {"unbalanced": len(TAU_OPTIONS), "partial": len(MASS_OPTIONS)}.get(name, 1)
    assert p.V.shape == (G, *pair.shape) and p.V.dtype == np.float32
    for g in range(G):
        for k in range(100):
            links = p.links(g, k)
            assert links == python_links(V64[g], p.thetas[k]), (name, g, k)
            scores = python_scores(links, pair)  # the shipped digits are score's, f"{:.3f}"
            assert [f"{q // 1000}.{q % 1000:03d}" for q in p.scores[g, k].tolist()] == [
                al.fixed3(scores[key]) for key in al.SHOWN], (name, g, k)
    header, V, shipped = al.decode(p.encode())
    assert np.array_equal(V, p.V, equal_nan=True) and header["thetas"] == list(p.thetas)
    assert np.array_equal(shipped, p.scores) and header["scores"] == list(al.SHOWN)
    assert header["words_a"] == pair.words_a and header["method"] == name
    assert header["sure"] == [list(x) for x in sorted(pair.sure)]
    assert header["kind_of"] == {"linked": ["false", "hit", "hit_possible"],
                                 "unlinked": [None, "miss", "miss_possible"]}


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_every_setting_s_counts_are_mask_counts(G, n, m, seed):
    """setting_counts in one pass equals score.mask_counts of V[g] > θ_k, ties, NaN
    (a word without tokens), empty and full gold included."""
    rng = np.random.default_rng(seed)
    V = np.round(rng.uniform(-0.05, 1, size=(G, n, m)), 2)  # on the thresholds too
    V[rng.uniform(size=V.shape) < 0.15] = np.nan
    sure = rng.uniform(size=(n, m)) < 0.3
    possible = sure | (rng.uniform(size=(n, m)) < 0.3)
    thetas = np.asarray(al.THETA_STOPS)
    got = al.setting_counts(V, thetas, sure, possible)
    for g in range(G):
        want = mask_counts(V[g][None] > thetas[:, None, None], sure, possible)
        assert np.array_equal(got[g], want), g


@given(st.lists(st.one_of(st.floats(0, 1), st.integers(0, 2000).map(lambda k: k / 2000),
                          st.integers(0, 64).map(lambda k: k / 64)), min_size=1, max_size=40))
def test_thousandths_are_python_s_three_decimals(xs):
    got = al.thousandths(np.array(xs)).tolist()
    assert got == [int(al.fixed3(x).replace(".", "")) for x in xs]


def test_without_gold_every_link_is_a_link_and_there_are_no_scores():
    pair, S, va_, vb_ = hand_made()[2]
    p = payload_of(pair, S, va_, vb_, "unbalanced")
    assert p.scores is None and al.kind_table(False) == {"linked": ["link"] * 3,
                                                         "unlinked": [None] * 3}
    header, V, shipped = al.decode(p.encode())
    assert shipped is None and header["scores"] is None and V.shape == p.V.shape


def test_a_word_without_tokens_takes_no_part():
    pair, S, va_, vb_ = hand_made()[1]  # word 1 of A has no tokens
    p = payload_of(pair, S, va_, vb_, "similarity-threshold")
    assert np.isnan(p.V[:, 1]).all() and not np.isnan(p.V[:, [0, 2, 3]]).any()
    assert np.isnan(p.plan(0)[1]).all() and all(i != 1 for i, _ in p.links(0, 0))


@pytest.mark.parametrize("name,key,options", [("unbalanced", "tau", TAU_OPTIONS[::8]),
                                               ("partial", "mass", MASS_OPTIONS[::6])])
def test_one_batched_solve_equals_one_solve_per_value(name, key, options):
    """τ (and m) are a batch dimension of the solver: the grid is one call, and each of its
    plans is the plan of that value solved alone (float64 here, to compare exactly)."""
    import torch

    pair, S, va_, vb_ = gold_set(2)[1]
    batch = extract.make_batch([S], [va_], [vb_])
    m = method_of(name)
    grid = extract.plans(m, batch, list(options), dtype=torch.float64)[:, 0]
    for g, x in enumerate(options):
        one = extract.plans(method_of(name, **{key: x}), batch, dtype=torch.float64)[0, 0]
        assert torch.allclose(grid[g], one, rtol=1e-9, atol=1e-12), (name, x)


def test_the_budget_falls_back_with_a_reason():
    w = al.WORDS
    assert al.too_large(10, 10, 41, max_cells=4096, max_bytes=3_000_000, words=w) == ""
    cells = al.too_large(70, 70, 41, max_cells=4096, max_bytes=3_000_000, words=w)
    assert "70 × 70 words" in cells and "4,096" in cells and "SINKSCOPE_" not in cells
    big = al.too_large(60, 60, 41, max_cells=4096, max_bytes=100_000, words=w)
    assert "SINKSCOPE_" not in big and "0.1 MB" in big
    assert al.parse_choice({"choice": {"theta": 0.304, "grid": 5.2}}, TAU_OPTIONS) == (
        0.3, min(TAU_OPTIONS, key=lambda x: abs(x - 5.2)))
    assert al.parse_choice({"choice": {"theta": "x"}}, ()) is None
    assert al.parse_choice({"choice": {"theta": float("nan")}}, ()) is None
    assert al.parse_choice({}, ()) is None
    assert al.parse_choice({"choice": {"theta": 0.5, "grid": None}}, ()) == (0.5, None)


# ------------------------------------------------------------------ the page (AppTest)
def _components(at, name: str) -> list:
    return [el.proto for el in at.get("bidi_component") if el.proto.component_name == name]


@pytest.mark.model
@pytest.mark.slow
def test_the_pair_view_ships_the_payload_and_falls_back_above_the_budget(monkeypatch):
    import dataclasses

    from engine import settings
    from tests.support.apptest import run

    q = {"text_a": "the cat sat on the mat", "text_b": "a cat was sitting on the mat",
         "gold": "0p0 1-1 2-2 2-3 3-4 4-5 5-6", "method": "unbalanced", "threshold": "0.3",
         "tau": "1"}
    at = run(q, page="sinkscope_app/pages/align.py", timeout=180)
    assert not at.exception and not at.error
    assert not at.slider  # the sliders are the browser's
    [payload] = [p for p in _components(at, "sinkscope_align") if p.WhichOneof("data") == "bytes"]
    header, V, _ = al.decode(payload.bytes)
    assert V.shape == (len(TAU_OPTIONS), 6, 7) and header["grid_key"] == "tau"
    [controls] = [component_data(p) for p in _components(at, "sinkscope_align")
                  if p.WhichOneof("data") == "json"]
    assert controls["payload"] == header["id"] and controls["theta"] == 30
    assert controls["grid_stops"][controls["grid"]] == 1.0
    binds = [component_data(p)["bind"] for p in _components(at, "sinkscope_live_chart")
             if "bind" in component_data(p)]
    assert [b["chart"] for b in binds] == ["matrix", "graph"]
    assert all(b["align"] == header["id"] and b["theta"] == 0.3 for b in binds)
    # the server's lines and the table's chosen row are the payload's links at (τ, θ)
    g = controls["grid"]
    links = python_links(V[g].astype(np.float64), header["thetas"][30])
    assert controls["lines"]["links"] == al.links_line(al.WORDS, links)
    row = [r for r in at.table[0].value.to_dict("records") if r["method"].endswith("◀")]
    assert row[0]["links"] == len(links)

    # a release: the component's state names the new values; the callback keeps them
    at.session_state["align_live"] = {"choice": {"theta": 0.05, "grid": 10.0}}
    from sinkscope_app.align import pair as ap
    with monkeypatch.context() as mp:
        mp.setattr(ap.st, "session_state", at.session_state)
        ap.on_live()
    assert at.session_state["align_threshold"] == 0.05
    assert at.session_state["align_tau"] == min(TAU_OPTIONS, key=lambda x: abs(x - 10))

    # above the budget: Streamlit's sliders and a note saying why
    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(settings.CONFIG,
                                                                live_max_cells=20))
    at = run(q, page="sinkscope_app/pages/align.py", timeout=180)
    assert not at.exception and not at.error
    assert at.select_slider(key="align_threshold").value == 0.3
    assert not _components(at, "sinkscope_align")
    assert any("6 × 7 words is more than the 20 word pairs" in c.value for c in at.caption)


@pytest.mark.parametrize("name,lang", [("unbalanced", "es"), ("partial", "en"),
                                       ("exact", "en")])
def test_the_address_gets_python_s_text_of_each_stop(name, lang, monkeypatch):
    """The browser writes θ and τ (or m) into the address as the page's own link writes
    them (``inputs.written``, shipped per stop), not their labels ("0,30" in Spanish)."""
    from sinkscope_app import inputs

    pair, S, va_, vb_ = gold_set(1)[0]
    p = payload_of(pair, S, va_, vb_, name)
    got = {}
    monkeypatch.setattr(al, "_component", lambda: lambda **kw: got.update(kw))
    t = ui(lang)
    al.controls(key="k", payload=p, theta=0.3, grid_value=p.grid[0] if p.grid else None,
                words=al.words_of(t), style={}, note="", lines={}, on_change=None)
    [data] = got["data"]
    vals = data["url_values"]
    assert vals["theta"] == [inputs.written(x) for x in al.THETA_STOPS]
    assert [inputs.to_float(x) for x in vals["theta"]] == list(al.THETA_STOPS)
    assert [inputs.to_float(x) for x in vals["grid"]] == [float(x) for x in p.grid]
    assert vals["theta"][30] == "0.3" and vals["theta"][0] == "0"
    js = (ROOT / "sinkscope_app" / "js" / "align.js").read_text(encoding="utf-8")
    assert "replace(/0+$/" not in js and "url_values" in js


# ------------------------------------------------------------------ the payload is the engine's
def _kind_table_by_viz(gold: bool) -> dict:
    """Each cell's kind as viz.align.classify names it, linked and not, by its gold."""
    cells = [(0, 0), (0, 1), (0, 2)]
    kw = {"sure": [(0, 1)], "possible": [(0, 2)]} if gold else {}
    out = {}
    for name, links in (("linked", cells), ("unlinked", [])):
        kinds = [None] * len(cells)
        for kind, found in va.classify(links, 1, len(cells), **kw).items():
            for _, j in found:
                kinds[j] = kind
        out[name] = kinds
    return out


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12))
def test_the_engines_payload_words_are_the_pages(word):
    """engine.alignment.live builds the payload without viz: its labels are viz's escape,
    its cells' kinds viz's classify, its τ and m stops the page's sliders'."""
    from engine.alignment import live
    from viz import theme

    assert live.escape(word) == theme.escape(word)
    for gold in (False, True):
        assert live.kind_table(gold) == _kind_table_by_viz(gold)
    assert live.TAU_STOPS == TAU_OPTIONS and live.MASS_STOPS == MASS_OPTIONS


def test_the_payload_and_the_clouds_build_without_torch():
    """What a front end on a served engine imports: the payload's format and readers, the
    Learn page's clouds, the aligners' list and the client."""
    code = ("import sys; import engine.alignment.live, engine.lab.clouds, "
            "engine.aligner.registry, engine.serving.client, sinkscope_app.align_live; "
            "engine.lab.clouds.received(engine.lab.clouds.product(engine.lab.clouds.clouds()))"
            "; assert 'torch' not in sys.modules, 'torch'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
