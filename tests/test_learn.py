"""The Learn walk-through without a browser: the toy clouds against POT, the figures, the
texts in both languages, the URL state, and the page itself through Streamlit's AppTest
(every step in English and in Spanish, Back / Next, crafted links, the real model on
steps 6–8).
"""

from __future__ import annotations

import json
import os
import string
from pathlib import Path

import numpy as np
import ot
import pytest
from hypothesis import given, settings as hsettings, strategies as st

os.environ["SINKSCOPE_WARM_UP"] = "0"  # keep both cores for the tests

from streamlit.testing.v1 import AppTest  # noqa: E402

from engine.lab import toy  # noqa: E402
from engine.errors import SettingsError  # noqa: E402
from sinkscope_app import examples  # noqa: E402
from sinkscope_app.learn import params as learn_state, text as learn_text  # noqa: E402
from sinkscope_app.learn.text import LANGS, N_STEPS, STEPS, UI  # noqa: E402
from sinkscope_app.main.params import parse_query  # noqa: E402
from viz import learn as vl  # noqa: E402
from tests.support.apptest import data as component_data  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
EXAMPLES = examples.load()
FAST = hsettings(max_examples=int(os.environ.get("SINKSCOPE_FUZZ_EXAMPLES", 25)), deadline=None)
presets = st.sampled_from(toy.PRESETS)
shifts = st.sampled_from(np.arange(toy.SHIFT_MIN, toy.SHIFT_MAX + 1e-9, 0.25).round(2).tolist())


# ----------------------------------------------------------------------------- toy clouds
@pytest.mark.parametrize("preset", toy.PRESETS)
def test_clouds_are_probability_measures(preset):
    c = toy.clouds(preset)
    assert c.xa.shape == (c.n, 2) and c.xb.shape == (c.m, 2)
    for w in (c.a, c.b):
        assert np.all(w > 0) and w.sum() == pytest.approx(1.0, abs=1e-12)
    moved = toy.clouds(preset, 1.5)
    np.testing.assert_allclose(moved.xb - c.xb, np.tile([1.5, 0.0], (c.m, 1)))
    np.testing.assert_array_equal(moved.xa, c.xa)
    lo, hi = np.array([r[0] for r in toy.FRAME]), np.array([r[1] for r in toy.FRAME])
    for s in (toy.SHIFT_MIN, toy.SHIFT_MAX):
        pts = np.concatenate([toy.clouds(preset, s).xa, toy.clouds(preset, s).xb])
        assert np.all(pts > lo) and np.all(pts < hi), "the frame must hold every shift"


def test_presets_tell_their_stories():
    assert toy.clouds("unequal").n != toy.clouds("unequal").m
    assert len(set(toy.clouds("unequal").a)) > 1  # unequal masses in A
    c = toy.clouds("shifted")
    np.testing.assert_allclose(c.xb - c.xa, np.tile([3.2, 0.0], (c.n, 1)))
    # softmax leaves the far cluster and the outlier nearly alone
    far = toy.received(toy.softmax_plan(toy.clouds("clusters")))[3:].sum()
    assert far < 0.05
    assert toy.received(toy.softmax_plan(toy.clouds("outlier")))[-1] < 0.1 * 0.2


@pytest.mark.parametrize("bad", [dict(preset="nope"), dict(shift=99), dict(shift=float("nan")),
                                 dict(shift="x")])
def test_clouds_refuse_bad_settings(bad):
    with pytest.raises(SettingsError):
        toy.clouds(**bad)
    with pytest.raises(SettingsError):
        toy.scores(toy.clouds(), cost="manhattan")


def test_scores_are_half_squared_distance_and_inner_product():
    c = toy.clouds("outlier", 0.5)
    i, j = 2, 4
    d = c.xa[i] - c.xb[j]
    assert toy.scores(c)[i, j] == pytest.approx(-0.5 * d @ d)
    assert toy.scores(c, "inner")[i, j] == pytest.approx(c.xa[i] @ c.xb[j])


@FAST
@given(presets, shifts, st.sampled_from(["distance", "inner"]),
       st.sampled_from([0.1, 0.5, 1.0, 3.0]))
def test_half_step_one_is_softmax(preset, shift, cost, eps):
    c = toy.clouds(preset, shift)
    P = toy.softmax_plan(c, eps, cost)
    np.testing.assert_allclose(toy.half_steps(c, 1, eps, cost).plan, P, atol=1e-12, rtol=0)
    np.testing.assert_allclose(toy.sent(P), c.a, atol=1e-12)  # rows right …
    assert np.abs(toy.received(P) - c.b).sum() > 1e-3  # … columns not


@pytest.mark.parametrize("preset", toy.PRESETS)
@pytest.mark.parametrize("eps", [5.0, 1.0, 0.5, 0.2])
def test_coupling_agrees_with_pot_sinkhorn_log(preset, eps):
    c = toy.clouds(preset, 0.5)
    ours = toy.coupling(c, eps, tol=1e-11).plan
    M = -toy.scores(c)
    theirs = ot.sinkhorn(c.a, c.b, M, eps, method="sinkhorn_log", numItermax=200_000,
                         stopThr=1e-13)
    np.testing.assert_allclose(ours, theirs, atol=1e-8)
    np.testing.assert_allclose(ours.sum(1), c.a, atol=1e-10)
    np.testing.assert_allclose(ours.sum(0), c.b, atol=1e-10)


@pytest.mark.parametrize("preset", toy.PRESETS)
def test_exact_plan_is_pots_emd(preset):
    c = toy.clouds(preset)
    M = -toy.scores(c)
    ours, theirs = toy.exact(c), ot.emd(c.a, c.b, M)
    assert (ours * M).sum() == pytest.approx((theirs * M).sum(), abs=1e-12)
    np.testing.assert_allclose(ours.sum(1), c.a, atol=1e-12)
    np.testing.assert_allclose(ours.sum(0), c.b, atol=1e-12)


@pytest.mark.parametrize("preset", toy.PRESETS)
def test_small_eps_tends_to_exact_transport(preset):
    c = toy.clouds(preset)
    M = -toy.scores(c)
    star = ot.emd(c.a, c.b, M)
    gaps = []
    for eps in toy.EPS_PATH:
        k = toy.coupling(c, eps)
        assert bool(k.converged), (preset, eps)
        gap = float((k.plan * M).sum() - (star * M).sum())
        # ⟨C, π_ε⟩ − ⟨C, π*⟩ ≤ ε (H(π_ε) − H(π*)) ≤ ε log(nm)
        assert -1e-9 <= gap <= eps * np.log(c.n * c.m) + 1e-9, (preset, eps, gap)
        gaps.append(gap)
    assert gaps[-1] < 0.01 * gaps[0]
    if preset == "shifted":  # a unique optimum: each point with its own copy
        np.testing.assert_allclose(star, np.diag(c.a))
        assert np.abs(toy.coupling(c, toy.EPS_PATH[-1]).plan - star).sum() < 1e-3


def test_large_eps_tends_to_the_product():
    c = toy.clouds("clusters")
    assert np.abs(toy.coupling(c, 1e4).plan - toy.product(c)).sum() < 1e-2


@FAST
@given(presets, shifts, shifts, st.sampled_from([0.2, 1.0, 5.0]))
def test_coupling_ignores_shifts_and_the_norm_terms(preset, s1, s2, eps):
    """A row term plus a column term in the cost changes no coupling: moving cloud B, or
    replacing ½‖x − y‖² by −⟨x, y⟩, gives the same coupling (softmax moves)."""
    p1 = toy.coupling(toy.clouds(preset, s1), eps).plan
    p2 = toy.coupling(toy.clouds(preset, s2), eps).plan
    p3 = toy.coupling(toy.clouds(preset, s1), eps, "inner").plan
    np.testing.assert_allclose(p1, p2, atol=2e-5)
    np.testing.assert_allclose(p1, p3, atol=2e-5)


def test_softmax_does_move_with_cloud_b():
    P1 = toy.softmax_plan(toy.clouds("shifted", -2.0))
    P2 = toy.softmax_plan(toy.clouds("shifted", 2.0))
    assert np.abs(P1 - P2).sum() > 0.3
    c = toy.clouds("shifted")
    assert np.abs(toy.softmax_plan(c) - toy.softmax_plan(c, cost="inner")).sum() > 0.1


# ----------------------------------------------------------------------------- figures
def _traces(fig, **match):
    return [t for t in fig.data if all(getattr(t, k, None) == v for k, v in match.items())]


def test_plane_draws_points_by_mass_and_lines_by_plan():
    c = toy.clouds("unequal")
    fig = vl.plane(c.xa, c.a, c.xb, c.b, plan=toy.exact(c), title="t",
                   words=learn_text.WORDS["en"])
    pts = [t for t in fig.data if t.mode == "markers+text"]
    assert [t.name for t in pts] == ["cloud A", "cloud B"]
    sizes = np.asarray(pts[0].marker.size)
    assert np.all(np.diff(sizes) < 0)  # masses 0.5 > 0.3 > 0.2: area follows mass
    ratio = (sizes[0] / sizes[1]) ** 2
    assert ratio == pytest.approx(0.5 / 0.3, rel=1e-6)
    lines = [t for t in fig.data if t.mode == "lines"]
    assert lines and all(t.hoverinfo == "skip" for t in lines)
    widths = [t.line.width for t in lines]
    assert widths == sorted(widths)  # heavier bins are drawn wider, later
    assert fig.layout.yaxis.scaleanchor == "x"  # distances are not distorted


def test_plane_escapes_labels_and_greys_weightless_points():
    fig = vl.plane([[0, 0], [1, 1]], [0.0, 1.0], [[2, 0]], [1.0],
                   labels_a=["<b>x</b>", "[CLS]"], labels_b=["y"],
                   words={**learn_text.WORDS["en"], "zero": "weighs 0"})
    names = [t.name for t in fig.data]
    assert names == ["cloud A", "weighs 0", "cloud B"]
    zero = fig.data[1]
    assert list(zero.text) == ["&lt;b&gt;x&lt;/b&gt;"]
    with pytest.raises(ValueError, match="points"):
        vl.plane([[0, 0]], [0.5, 0.5], [[1, 1]], [1.0], words=learn_text.WORDS["en"])


def test_plan_and_bars_marks_too_much_and_left_alone():
    c = toy.clouds("clusters")
    fig = vl.plan_and_bars(c.xa, c.a, c.xb, c.b, toy.softmax_plan(c), words=learn_text.WORDS["es"])
    bars = [t for t in fig.data if t.type == "bar" and t.xaxis == "x2"]
    by_name = {t.name: t for t in bars}
    assert set(by_name) == {"demasiado", "se queda corto", "lo justo"}
    assert list(by_name["demasiado"].x) == [0]  # B1 takes far too much
    assert set(by_name["se queda corto"].x) >= {3, 4, 5}  # the far cluster is left alone
    ticks = [t for t in fig.data if t.type == "scatter" and t.xaxis == "x2"]
    np.testing.assert_allclose(ticks[0].y, c.b)
    fig = vl.plan_and_bars(c.xa, c.a, c.xb, c.b, toy.coupling(c, 1.0).plan,
                           words=learn_text.WORDS["en"])
    assert {t.name for t in fig.data if t.type == "bar" and len(t.x)} == {"just right"}


def test_two_maps_share_one_colour_scale():
    c = toy.clouds("outlier")
    P, K = toy.softmax_plan(c), toy.coupling(c).plan
    fig = vl.two_maps(P, K, titles=("left", "right"), title="x")
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert len(heat) == 2 and all(t.coloraxis == "coloraxis" for t in heat)
    np.testing.assert_allclose(np.asarray(heat[0].z), P)
    assert fig.layout.coloraxis.cmax == pytest.approx(max(P.max(), K.max()))
    assert [a.text for a in fig.layout.annotations] == ["left", "right"]


def test_sink_figure_shows_heads_and_weights():
    got = np.array([0.5, 0.1, 0.1, 0.3])
    heads = np.array([[0.7, 0.1, 0.1, 0.1], [0.3, 0.1, 0.1, 0.5]])
    fig = vl.sink(["[CLS]", "a", "b", "[SEP]"], got, np.full(4, 0.25), per_head=heads,
                  words=learn_text.WORDS["en"])
    over = [t for t in fig.data if t.name == "too much"][0]
    assert list(over.x) == [0, 3]
    dots = [t for t in fig.data if t.name == "one head"][0]
    assert len(dots.y) == 8
    assert fig.data[-1].name == "its weight"  # the ticks are drawn last, on top


def test_titles_wrap_and_scale_for_presenter_mode():
    assert vl.wrap("aaa bbb ccc", 7) == "aaa bbb<br>ccc"
    c = toy.clouds()
    long = "A very long title " * 6
    small = vl.plane(c.xa, c.a, c.xb, c.b, title=long, words=learn_text.WORDS["en"])
    big = vl.plane(c.xa, c.a, c.xb, c.b, title=long, scale=1.35, words=learn_text.WORDS["en"])
    assert big.layout.font.size > small.layout.font.size
    assert big.layout.height > small.layout.height
    assert big.layout.title.text.count("<br>") > small.layout.title.text.count("<br>") >= 1
    assert big.layout.margin.t > small.layout.margin.t


# ----------------------------------------------------------------------------- texts
def _fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def test_both_languages_say_the_same_things():
    assert set(LANGS) == {"en", "es"} and N_STEPS == 8
    assert UI["en"].keys() == UI["es"].keys()
    for key in UI["en"]:
        assert _fields(UI["en"][key]) == _fields(UI["es"][key]), key
    for en, es in zip(STEPS["en"], STEPS["es"]):
        assert en.words.keys() == es.words.keys(), en.title
        assert _fields(en.body) == _fields(es.body), en.title
        for key in en.words:
            assert _fields(en.words[key]) == _fields(es.words[key]), (en.title, key)
        for text in (en.title, en.body, en.math, es.title, es.body, es.math):
            assert text.strip() and "  " not in text.replace("\n\n", "")
    for table in (learn_text.WORDS, learn_text.PRESETS):
        assert table["en"].keys() == table["es"].keys()
    assert set(learn_text.EXAMPLES_ES) == set(EXAMPLES)


def test_spanish_is_spanish():
    body = " ".join(s.body for s in STEPS["es"])
    assert "¿" in body and "á" in body and "ñ" in body
    for english in (" the ", " and ", " of the "):
        assert english not in body
    from sinkscope_app.locale import numbers

    assert numbers("es").percent(0.483) == "48\u00a0%"
    assert numbers("en").percent(0.483) == "48%"
    assert numbers("en").percent(0.0004) == "0.04%"
    assert numbers("es").percent(1e-12) == "0\u00a0%"


# ----------------------------------------------------------------------------- URL state
def _parse(q, locale=None):
    return learn_state.parse(q, EXAMPLES, locale=locale)


@FAST
@given(st.integers(1, N_STEPS), st.sampled_from(sorted(LANGS)), st.booleans(), presets, shifts)
def test_url_round_trip(step, lang, present, preset, shift):
    state = dict(learn_state.DEFAULTS, learn_step=step, lang=lang,
                 learn_present=present, learn_cloud=preset, learn_shift=shift, ex="bank")
    q = learn_state.to_query(state)
    assert q["step"] == str(step) and q["lang"] == lang
    p = _parse(q)
    assert not p.warnings
    for k in learn_state.DEFAULTS:
        assert p.values.get(k, learn_state.DEFAULTS[k]) == state[k], k


def test_url_round_trip_with_own_texts():
    state = dict(learn_state.DEFAULTS, ex="custom", a="x & <b>y</b>", b="ünïcode")
    p = _parse(learn_state.to_query(state))
    assert (p.values["ex"], p.values["a"], p.values["b"]) == ("custom", "x & <b>y</b>", "ünïcode")
    assert _parse({"ex": "negation"}).values["a"] == EXAMPLES["negation"]["a"]


@pytest.mark.parametrize("query, key, value, needle", [
    ({"step": "99"}, "learn_step", 8, "There is no step “99”"),
    ({"step": "0"}, "learn_step", 1, "showing step 1"),
    ({"step": "-3"}, "learn_step", 1, "There is no step “\\-3”"),  # Markdown escaped
    ({"step": "2.5"}, "learn_step", 1, "There is no step"),
    ({"step": "<script>"}, "learn_step", 1, "“\\<script\\>”"),
    ({"step": "[x](http://e.vil)"}, "learn_step", 1, "\\[x\\]\\(http\\:"),
    ({"step": "1e400"}, "learn_step", 1, "There is no step"),
    ({"lang": "fr"}, "lang", "en", "Unknown language “fr”"),
    ({"cloud": "spiral"}, "learn_cloud", None, "Unknown cloud shape “spiral”"),
    ({"a": "x" * 30_000}, "a", "x" * 20_000, "only the first 20,000 are kept"),
    ({"shift": "50"}, "learn_shift", 2.0, "using 2"),
    ({"shift": "nan"}, "learn_shift", 0.0, "using 0"),
    ({"present": "maybe"}, "learn_present", False, "Presenter mode in the link must be on or off"),
    ({"ex": "../../etc"}, "ex", None, "Unknown example"),
])
def test_crafted_urls_are_clamped_with_a_notice(query, key, value, needle):
    p = _parse(query)
    assert p.values.get(key) == value
    assert any(needle in w for w in p.warnings), p.warnings


def test_notices_speak_the_pages_language():
    p = _parse({"step": "12", "lang": "es"})
    assert p.values == {"lang": "es", "learn_step": 8}
    assert p.warnings == ["No hay paso «12» (el recorrido va del 1 al 8); se muestra el paso 8."]
    assert _parse({}, locale="es-AR").values["lang"] == "es"
    assert _parse({}, locale="de-DE").values["lang"] == "en"
    long = _parse({"step": "9" * 5000}).warnings[0]
    assert len(long) < 200  # a huge value is quoted cut short


# ----------------------------------------------------------------------------- the page
def learn(query: dict | None = None, **state) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("sinkscope_app/pages/learn.py")
    if query:
        at.query_params.update(query)
    for k, v in state.items():
        at.session_state[k] = v
    return at.run()


def arr(v) -> np.ndarray:
    """A figure array from its JSON: a list, or plotly's typed array {dtype, bdata, shape}."""
    if isinstance(v, dict) and "bdata" in v:
        import base64
        out = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        shape = v.get("shape")
        if isinstance(shape, str):
            shape = [int(k) for k in shape.split(",")]
        return out.reshape(shape) if shape else out
    return np.asarray(v, dtype=float)


def figures(at: AppTest) -> list[dict]:
    specs = [component_data(el)["spec"] for el in at.get("bidi_component")
             if el.proto.component_name == "sinkscope_live_chart"]
    return [json.loads(s) for s in specs if s]


def title(at: AppTest) -> str:
    figs = figures(at)
    assert len(figs) == 1, "each step draws one figure"
    return figs[0]["layout"]["title"]["text"].replace("<br>", " ")


def ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def heading(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("### ") and " · " in m.value)


EXPECTED_TITLES = {  # a fragment of each step's figure title, per language
    "en": ["Two clusters · n = 6", "Softmax at ε = 1", "After 1 half-step",
           "Sinkhorn coupling at ε = 1", "Cloud A (rows)", "Softmax (ε = 1) on your texts",
           "Text A reading itself", "F(μ, ν) for your pair"],
    "es": ["Dos grupos · n = 6", "Softmax con ε = 1", "Tras 1 medio paso",
           "Acoplamiento de Sinkhorn con ε = 1", "Nube A (filas)",
           "Softmax (ε = 1) sobre tus textos", "El texto A leyéndose", "F(μ, ν) para tu par"],
}


@pytest.mark.model
@pytest.mark.parametrize("lang", ["en", "es"])
def test_walk_every_step_with_next(lang):
    at = learn({"lang": lang})
    for step in range(1, N_STEPS + 1):
        ok(at)
        assert heading(at).startswith(f"### {UI[lang]['step_of'].format(i=step, n=N_STEPS)}")
        assert STEPS[lang][step - 1].title in heading(at)
        assert EXPECTED_TITLES[lang][step - 1] in title(at)
        assert dict(at.query_params) == {"step": str(step), "lang": lang}
        assert at.button(key="learn_back").disabled == (step == 1)
        assert at.button(key="learn_next").disabled == (step == N_STEPS)
        if step < N_STEPS:
            at.button(key="learn_next").click().run()
    at.button(key="learn_back").click().run()
    assert dict(at.query_params)["step"] == str(N_STEPS - 1)


@pytest.mark.model
def test_url_opens_the_step_and_language_and_switches_language():
    at = learn({"step": "5", "lang": "es"})
    ok(at)
    assert "Paso 5 de 8" in heading(at) and "Nube A (filas)" in title(at)
    at.segmented_control(key="lang").set_value("en").run()
    ok(at)
    assert "Step 5 of 8" in heading(at)
    assert dict(at.query_params) == {"step": "5", "lang": "en"}
    at.segmented_control(key="learn_jump").set_value(2).run()
    assert dict(at.query_params) == {"step": "2", "lang": "en"}


@pytest.mark.model
def test_crafted_link_opens_with_a_notice():
    at = learn({"step": "42", "lang": "xx", "cloud": "<b>", "shift": "-1e9"})
    ok(at)
    warnings = [w.value for w in at.warning]
    assert any("no step “42”" in w for w in warnings), warnings
    assert any("Unknown language “xx”" in w for w in warnings)
    assert any("“\\<b\\>”" in w for w in warnings)  # shown as typed, not as HTML
    assert any("using \\-3" in w or "using -3" in w for w in warnings), warnings
    assert "Step 8 of 8" in heading(at)
    assert dict(at.query_params) == {"step": "8", "lang": "en", "shift": "-3"}


@pytest.mark.model
def test_step_three_alternates_rows_and_columns():
    at = learn({"step": "3"})
    ok(at)
    texts = lambda: " ".join(m.value for m in at.markdown)  # noqa: E731
    assert "Half-step 1** (rows just fixed)" in texts()
    at.button(key="learn_next_half").click().run()
    assert "Half-step 2** (columns just fixed)" in texts() and "After 2 half-steps" in title(at)
    bars = [t for t in figures(at)[0]["data"] if t.get("type") == "bar" and t["xaxis"] == "x2"]
    assert {t["name"] for t in bars if len(arr(t.get("x", [])))} == {"just right"}
    at.number_input(key="learn_t").set_value(80).run()
    assert "Half-step 80**" in texts() and "The plan is a coupling" in texts()
    at.number_input(key="learn_t").set_value(1).run()
    assert "Half-step 1**" in texts()


@pytest.mark.model
def test_step_five_half_step_one_shows_identical_maps():
    at = learn({"step": "5"})
    ok(at)
    heat = [t for t in figures(at)[0]["data"] if t["type"] == "heatmap"]
    left, right = (arr(t["z"]) for t in heat)
    assert np.max(np.abs(left - right)) < 1e-12
    at.select_slider(key="learn_t5").set_value(100).run()
    heat = [t for t in figures(at)[0]["data"] if t["type"] == "heatmap"]
    right = arr(heat[1]["z"])
    np.testing.assert_allclose(right.sum(0), toy.clouds().b, atol=1e-6)


@pytest.mark.model
def test_presenter_mode_enlarges_type_and_figures():
    at = learn({"step": "2"})
    normal = figures(at)[0]["layout"]
    at.toggle(key="learn_present").set_value(True).run()
    ok(at)
    big = figures(at)[0]["layout"]
    assert big["font"]["size"] > normal["font"]["size"] and big["height"] > normal["height"]
    assert dict(at.query_params)["present"] == "on"
    assert any("font-size: 1.3rem" in m.value for m in at.markdown)


@pytest.mark.model
def test_step_six_links_to_the_main_page_with_the_same_settings():
    at = learn({"step": "6", "ex": "paraphrase"})
    ok(at)
    assert "paraphrase" == at.session_state["ex"]
    link = at.get("link_button")[0].proto.url
    assert link.startswith("./?")
    from urllib.parse import parse_qs
    q = {k: v[-1] for k, v in parse_qs(link[3:]).items()}
    p = parse_query(q, n_layers=6, n_heads=12, models=("all-MiniLM-L6-v2",), examples=EXAMPLES)
    assert not p.warnings
    pair = EXAMPLES["paraphrase"]
    assert (p.values["a"], p.values["b"]) == (pair["a"], pair["b"])
    assert (p.values["mode"], p.values["layer"], p.values["head"], p.values["eps"]) == \
        ("separate", 5, "mean", 1.0)
    tokens = [t for t in figures(at)[0]["data"] if t.get("mode") == "markers+text"]
    assert any("postponed" in t["text"] for t in tokens)


@pytest.mark.model
@pytest.mark.parametrize("lang", ["en", "es"])
def test_last_step_links_to_the_lab_with_the_context_dependent_target(lang):
    at = learn({"step": str(N_STEPS), "lang": lang})
    ok(at)
    links = [el.proto for el in at.get("page_link")]
    lab = [l for l in links if l.page.endswith("lab.py") or "lab" in l.page]
    assert lab, [l.page for l in links]
    assert STEPS[lang][N_STEPS - 1].words["lab_link"] in [l.label for l in lab]
    assert "target=whitened" in lab[0].query_string and f"lang={lang}" in lab[0].query_string
    # The sidebar links to the Lab too, and the step no longer says, right above its link,
    # that the app shows no trained Sinkhorn Transformer.
    assert [p for p in at.sidebar.get("page_link") if p.proto.page == "lab"]
    body = STEPS[lang][N_STEPS - 1].body
    assert ("in the Lab, Sinkhorn Transformers trained" if lang == "en" else
            "en el Laboratorio, Transformers de Sinkhorn entrenados") in body
    assert "trained Sinkhorn Transformer, or" not in body and "entrenado, ni" not in body


@pytest.mark.model
def test_step_seven_is_the_models_own_attention():
    """The bars are the model's own attention (recomputed by the model itself, with its
    attention outputs), and the sink is real: [CLS] and [SEP] take far more than 2/n."""
    from engine.relation.relate import default_encoder
    at = learn({"step": "7"})
    ok(at)
    fig = figures(at)[0]
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    got = np.zeros(sum(len(arr(t["x"])) for t in bars))
    for t in bars:
        got[arr(t["x"]).astype(int)] = arr(t["y"])
    enc = default_encoder().encode(at.session_state["a"], attentions=True)
    own = enc.attentions[-1].mean(1).mean(0)  # mean over rows, then over heads
    np.testing.assert_allclose(got, own, atol=1e-5)
    special = np.isin(enc.tokens, ["[CLS]", "[SEP]"])
    assert got[special].sum() > 2 * special.sum() / len(got)
    at.selectbox(key="learn_head7").set_value(3).run()
    at.select_slider(key="learn_layer7").set_value(0).run()
    ok(at)
    assert "layer 0, head 3" in title(at)


@pytest.mark.model
def test_step_seven_refuses_a_text_too_long_for_it():
    at = learn({"step": "7", "lang": "es", "ex": "custom", "a": "río " * 400, "b": "x"})
    ok(at)
    assert any("Acorta el texto A" in i.value for i in at.info), [i.value for i in at.info]
    assert not figures(at)


@pytest.mark.model
def test_bad_text_shows_a_message_not_a_traceback():
    at = learn({"step": "6", "ex": "custom", "a": "   ", "b": "hello"})
    assert not at.exception
    assert any("empty" in e.value for e in at.error), [e.value for e in at.error]


@pytest.mark.model
def test_main_page_links_to_learn():
    at = AppTest.from_file(APP, default_timeout=120).run()
    links = [el.proto for el in at.get("page_link")]
    assert any("Learn" in p.label and "learn" in p.page for p in links), links
    assert any("Align" in p.label and "align" in p.page for p in links), links
    assert any("Lab" in p.label and "lab" in p.page for p in links), links


def test_a_paste_over_the_limit_is_cut_with_a_notice_in_the_page_s_language():
    """Learn's text boxes keep the first SINKSCOPE_MAX_CHARS characters of a long paste and
    say so (max_chars used to drop the whole paste without a word)."""
    from engine.settings import CONFIG

    at = learn({"step": "1", "lang": "es"})
    paste = ("La orilla del río estaba tranquila. " * 700)[:23_456]
    at.sidebar.text_area(key="b").input(paste).run()
    assert not at.exception
    assert at.session_state["b"] == paste[: CONFIG.max_chars]
    assert any("23\u00a0456 caracteres" in w.value and "pegado" in w.value for w in at.warning)
