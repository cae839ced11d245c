"""The Streamlit app, driven in-process by ``streamlit.testing.v1.AppTest``.

The model loads once per test process (``st.cache_resource``), so after the first run each
AppTest run costs a fraction of a second. Pure helpers (URL parsing, exports) are tested
directly, without Streamlit.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

os.environ["SINKSCOPE_WARM_UP"] = "0"  # keep both cores for the tests

from streamlit.testing.v1 import AppTest  # noqa: E402

from engine.io.export import to_npz  # noqa: E402
from tests.support.apptest import data as component_data, figures, ok, run  # noqa: E402
from sinkscope_app import examples, metrics, report  # noqa: E402
from engine.settings import CONFIG as LIMITS  # noqa: E402
from sinkscope_app.main.params import (DEFAULTS, EPS_OPTIONS, HALF_STEP_OPTIONS, KEYS,  # noqa: E402
                                 PARAMS, SENTENCE_KEYS, VIEWS, eps_options,
                                 half_step_options,
                                 parse_query, to_query)

EXAMPLES = examples.load()
L, H = 6, 12  # all-MiniLM-L6-v2


def component(at: AppTest, name: str) -> list:
    """The protos of the live components named ``name`` on the page."""
    return [el.proto for el in at.get("bidi_component") if el.proto.component_name == name]


def scrub_data(at: AppTest) -> dict:
    """What the live sliders were given: values, stops, lattice id, metric strip, note."""
    (proto,) = component(at, "sinkscope_scrub")
    return component_data(proto)


def metric(at: AppTest, label: str) -> str:
    rows = scrub_data(at)["metrics"]
    for m in rows:
        if m["label"] == label:
            return m["value"]
    raise AssertionError(f"no metric {label!r}; have {[m['label'] for m in rows]}")


@pytest.fixture
def default_app() -> AppTest:
    """A fresh session on the default page (the model stays loaded in the process)."""
    return run()


# ----------------------------------------------------------------------------- pure helpers

def test_eps_options_are_log_spaced_and_round():
    assert EPS_OPTIONS[0] == pytest.approx(LIMITS.eps_min)
    assert EPS_OPTIONS[-1] == pytest.approx(LIMITS.eps_max)
    assert 1.0 in EPS_OPTIONS and 0.1 in EPS_OPTIONS and 0.5 in EPS_OPTIONS
    ratios = np.diff(np.log10(EPS_OPTIONS))
    assert ratios.max() < 0.13 and ratios.min() > 0  # ten stops per decade
    assert eps_options(0.5, 2.0) == (0.5, 0.6, 0.8, 1.0, 1.2, 1.5, 2.0)


def test_half_step_options_start_with_softmax():
    assert HALF_STEP_OPTIONS[:3] == (1, 2, 3)
    assert HALF_STEP_OPTIONS[-1] == LIMITS.max_half_steps
    assert half_step_options(35)[-1] == 35


@pytest.mark.parametrize("raw, expect_key, expect", [
    ({"eps": "0"}, "eps", None), ({"eps": "-1"}, "eps", None), ({"eps": "nan"}, "eps", None),
    ({"eps": "inf"}, "eps", None), ({"eps": "1e300"}, "eps", LIMITS.eps_max),
    ({"eps": "1e-300"}, "eps", LIMITS.eps_min), ({"eps": "0.5"}, "eps", 0.5),
    ({"steps": "1000000000"}, "steps", LIMITS.max_half_steps), ({"steps": "0"}, "steps", 1),
    ({"steps": "abc"}, "steps", None), ({"layer": "99"}, "layer", L - 1),
    ({"layer": "-1"}, "layer", L - 1), ({"layer": "x"}, "layer", None),
    ({"head": "12"}, "head", None), ({"head": "3"}, "head", 3), ({"head": "mean"}, "head", "mean"),
    ({"mode": "bogus"}, "mode", None), ({"mode": "joint"}, "mode", "joint"),
    ({"weights": "<script>"}, "weights", None), ({"pool": "maybe"}, "pool", None),
    ({"view": "heads"}, "view", "heads"), ({"view": "../../etc"}, "view", None),
    ({"topk": "-3"}, "topk", None), ({"thr": "2"}, "thr", None), ({"dim": "3"}, "dim", 3),
    ({"hl": "a3"}, "hl", "a3"), ({"hl": "<b>"}, "hl", None),
])
def test_parse_query_clamps_or_rejects(raw, expect_key, expect):
    p = parse_query(raw, n_layers=L, n_heads=H, models=("all-MiniLM-L6-v2",),
                    examples=EXAMPLES)
    if expect is None:
        assert expect_key not in p.values
        assert p.warnings, "a rejected value must say so"
    else:
        assert p.values[expect_key] == expect
    exact = {"eps": "0.5", "head": "3", "mode": "joint", "view": "heads", "dim": "3",
             "hl": "a3", "layer": "-1"}
    if expect is not None and raw.get(expect_key) == exact.get(expect_key):
        assert not p.warnings


def test_parse_query_truncates_huge_text_and_ignores_unknown_keys():
    big = "word " * 300_000  # 1.5 MB
    p = parse_query({"a": big, "zzz": "1", "b": "hi"}, n_layers=L, n_heads=H,
                    models=("m",), examples=EXAMPLES)
    assert len(p.values["a"]) == LIMITS.max_chars
    assert any("characters" in w for w in p.warnings)
    assert "zzz" not in p.values and p.values["ex"] == "custom"


def test_query_round_trip():
    state = dict(DEFAULTS, layer=2, head=7, eps=0.25, steps=40, mode="joint", pool=True,
                 view="sentences", a="x & y", b="ünïcode <b>", cands="one\ntwo <i>",
                 sset="custom")
    q = to_query(state)
    assert set(q) == {p.url for p in PARAMS}
    p = parse_query(q, n_layers=L, n_heads=H, models=("all-MiniLM-L6-v2",), examples=EXAMPLES)
    for k in KEYS:
        assert p.values.get(k, state[k]) == state[k], k
    assert not p.warnings


def test_examples_cover_the_issue():
    ids = set(EXAMPLES)
    assert {"bank", "paraphrase", "qa", "negation", "lengths", "reordered", "en-es",
            "self"} <= ids
    assert EXAMPLES["self"]["mode"] == "self"
    assert "English" in EXAMPLES["en-es"]["title"]
    for ex in EXAMPLES.values():  # each example says what to look at, at which settings
        assert ex["note"] and ex["settings"]["eps"] in EPS_OPTIONS
        assert ex["settings"]["steps"] in HALF_STEP_OPTIONS


def test_metric_format():
    assert metrics.fmt(0) == "0" and metrics.fmt(1.23456) == "1.23"
    assert metrics.fmt(3e-17) == "3.00e-17" and metrics.fmt(float("nan")) == "n/a"


# ----------------------------------------------------------------------------- the app

def test_default_page_renders(default_app):
    at = default_app
    ok(at)
    data = scrub_data(at)
    labels = [m["label"] for m in data["metrics"]]
    assert labels == ["Softmax column error", "Sinkhorn row error", "Sinkhorn column error",
                      "Cost ⟨−S, π⟩", "Entropy H(π)", "KL(π ‖ a⊗b)", "‖π − π*‖₁ to exact OT",
                      "Converged"]
    assert all(m["help"] for m in data["metrics"])
    # The live sliders: the slider stops, the values, and the lattice the charts bind to
    assert data["eps_stops"] == list(EPS_OPTIONS) and data["step_stops"] == list(HALF_STEP_OPTIONS)
    bank = EXAMPLES["bank"]["settings"]  # a bare address opens the default example's settings
    assert (data["eps"], data["steps"]) == (bank["eps"], bank["steps"])
    assert set(data["help"]) == {"eps", "steps"}
    (lattice,) = component(at, "sinkscope_lattice")
    assert lattice.WhichOneof("data") == "bytes" and lattice.bytes[:4] == b"SKL1"
    (texts,) = component(at, "sinkscope_texts")  # its frames' texts in the page's language
    assert texts.bytes[:4] == b"SKT1" and data["texts"] == data["lattice"] + ":en"
    binds = [component_data(el).get("bind") for el in at.get("bidi_component")
             if el.proto.component_name == "sinkscope_live_chart"]
    assert [b for b in binds if b] == [{"lattice": data["lattice"], "eps": bank["eps"],
                                        "steps": bank["steps"]}] * 2
    assert at.segmented_control(key="view").value == "compare"
    figs = figures(at)
    assert len(figs) == 2
    assert figs[0]["layout"]["title"]["text"].startswith("How text A relates to text B")
    assert all(t["type"] in ("heatmap", "bar", "scatter") for t in figs[0]["data"])
    assert "Sinkhorn − softmax" in figs[1]["layout"]["title"]["text"]
    # The URL carries every control (the Sentences view's candidates only while it is open).
    assert set(at.query_params) == {p.url for p in PARAMS if p.key not in SENTENCE_KEYS}
    # ... and a bare address opens the default example at its own settings
    bank = EXAMPLES["bank"]["settings"]
    assert at.query_params["ex"] in ("bank", ["bank"])
    for k in ("eps", "steps", "layer"):
        q = at.query_params[k]
        assert float(q[0] if isinstance(q, list) else q) == bank[k], k
    # Export buttons exist.
    assert len(at.get("download_button")) == 5


def test_eps_slider_changes_coupling_and_metrics(default_app):
    at = default_app
    before = (metric(at, "Entropy H(π)"), metric(at, "KL(π ‖ a⊗b)"))
    at.session_state["eps"] = 2.0  # what the live slider's release sets (explore.on_scrub)
    at.run()
    ok(at)
    title = figures(at)[0]["layout"]["annotations"][1]["text"]
    assert "ε=2" in title, title
    after = (metric(at, "Entropy H(π)"), metric(at, "KL(π ‖ a⊗b)"))
    assert after != before
    assert float(after[0]) > float(before[0])  # larger ε: a more spread-out plan
    q = at.query_params["eps"]
    assert (q[0] if isinstance(q, list) else q) == "2"


def test_half_step_one_is_softmax(default_app):
    at = default_app
    at.session_state["eps"] = 1.0
    at.session_state["steps"] = 1
    at.run()
    ok(at)
    assert metric(at, "Sinkhorn column error") == metric(at, "Softmax column error")
    assert float(metric(at, "Sinkhorn row error")) < 1e-12
    assert metric(at, "Converged") == "no"
    assert scrub_data(at)["steps"] == 1  # the browser adds the "half-step 1 is softmax" note
    at.session_state["steps"] = 100
    at.run()
    ok(at)
    assert float(metric(at, "Sinkhorn column error")) < 1e-6


@pytest.mark.parametrize("view", [v for v in VIEWS])
def test_each_view_renders(default_app, view):
    at = default_app
    at.segmented_control(key="view").set_value(view).run()
    ok(at)
    figs = figures(at)
    if view == "about":
        assert not figs
        assert any("half a Sinkhorn step" in m.value for m in at.markdown)
        return
    assert figs, f"view {view} drew no chart"
    text = json.dumps(figs[0]["layout"].get("title", {}), ensure_ascii=False)
    expect = {"compare": "How text A relates", "graph": "Who sends mass", "cloud": "Joint PCA",
              "convergence": "Sinkhorn convergence", "heads": "Layers × heads",
              "path": "Sinkhorn coupling at ε", "sentences": "Two rankings"}[view]
    assert expect in text, text
    if view == "heads":
        tiles = figs[0]["data"][2]
        cd = tiles["customdata"]
        shape = cd["shape"] if isinstance(cd, dict) else f"{len(cd)}, {len(cd[0])}"
        assert shape.replace(" ", "") == f"{L * H},3"


def test_long_texts_fall_back_to_the_server_with_a_note():
    long = " ".join(["river bank money water stone bridge"] * 14)  # > 64 tokens each
    at = run({"a": long, "b": long})
    ok(at)
    data = scrub_data(at)
    assert data["lattice"] is None and "whose frames are precomputed" in data["note"]
    assert "SINKSCOPE_" not in data["note"]  # said for a visitor, not an operator
    assert not component(at, "sinkscope_lattice") and not component(at, "sinkscope_texts")
    assert all("bind" not in component_data(el) for el in at.get("bidi_component")
               if el.proto.component_name == "sinkscope_live_chart")
    assert len(figures(at)) == 2


def test_view_controls(default_app):
    at = default_app
    at.segmented_control(key="view").set_value("graph").run()
    at.radio(key="gwhich").set_value("sinkhorn")
    at.selectbox(key="hl").set_value("a5").run()
    ok(at)
    fig = figures(at)[0]
    assert len(fig["layout"]["annotations"]) == 1  # one panel
    assert "Sinkhorn coupling" in fig["layout"]["annotations"][0]["text"]
    at.segmented_control(key="view").set_value("cloud").run()
    at.radio(key="space").set_value("hidden")
    at.radio(key="dim").set_value(3).run()
    ok(at)
    fig = figures(at)[0]
    assert any(t["type"] == "scatter3d" for t in fig["data"])
    assert "hidden" in fig["layout"]["title"]["text"]
    at.segmented_control(key="view").set_value("compare").run()


def test_sidebar_settings(default_app):
    at = default_app
    at.sidebar.selectbox(key="layer").set_value(2)
    at.sidebar.selectbox(key="head").set_value(4).run()
    ok(at)
    assert "layer 2, head 4" in figures(at)[0]["layout"]["title"]["text"]
    at.sidebar.radio(key="mode").set_value("joint").run()
    ok(at)
    assert any("model's own" in e.label for e in at.expander)
    at.sidebar.radio(key="weights").set_value("uniform")
    at.sidebar.toggle(key="pool").set_value(True).run()
    ok(at)
    assert at.query_params["pool"] in ("true", ["true"])
    assert "uniform" in at.query_params["weights"]
    at.sidebar.radio(key="mode").set_value("self").run()
    ok(at)
    assert at.sidebar.text_area(key="b").disabled
    for k, v in (("mode", "separate"), ("weights", "content"), ("pool", False),
                 ("layer", L - 1), ("head", "mean")):
        at.session_state[k] = v
    at.run()
    ok(at)


def test_each_example_loads():
    at = run()
    for ex_id, ex in EXAMPLES.items():
        at.sidebar.selectbox(key="ex").set_value(ex_id).run()
        ok(at)
        assert at.sidebar.text_area(key="a").value == ex["a"]
        assert at.session_state["mode"] == (ex["mode"] or "separate")
        for k, v in ex["settings"].items():  # the settings that show its point
            assert at.session_state[k] == v, (ex_id, k)
        assert len(figures(at)) >= 2, ex_id
        assert ex["note"] in [c.value for c in at.sidebar.caption]


def test_url_state_round_trips():
    query = {"a": "The cat sat on the mat.", "b": "A dog lay on the rug.", "mode": "joint",
             "layer": "3", "head": "5", "eps": "0.25", "steps": "40", "weights": "uniform",
             "pool": "true", "view": "graph", "topk": "2", "gwhich": "softmax"}
    at = run(query)
    ok(at)
    assert not [w.value for w in at.warning if "converged" not in w.value]
    ss = at.session_state
    assert (ss["a"], ss["mode"], ss["layer"], ss["head"], ss["eps"], ss["steps"]) == (
        query["a"], "joint", 3, 5, 0.25, 40)
    assert ss["ex"] == "custom"
    fig = figures(at)[0]
    assert "layer 3, head 5" in fig["layout"]["title"]["text"]
    q = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    readable = {"topk": "edges_per_token", "gwhich": "graph_plans"}  # the link's old names
    for k, v in query.items():
        assert q[readable.get(k, k)] == v, (k, q, v)
    # The URL the app writes restores the same view.
    at2 = run(q)
    ok(at2)
    assert {k: at2.session_state[k] for k in KEYS} == {k: ss[k] for k in KEYS}


def test_hostile_url_is_clamped_with_warnings():
    query = {"eps": "-1", "steps": "1000000000", "layer": "99", "head": "NaN", "mode": "evil",
             "weights": "x", "view": "<script>", "a": "word " * (LIMITS.max_chars // 4),
             "topk": "1e308", "thr": "nan", "dim": "7"}
    at = run(query)
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    for part in ("ε", "half-steps", "Layer 99", "head", "mode", "weights", "view",
                 "characters", "edges per token", "threshold", "dimensions"):
        assert part in warnings, part
    ss = at.session_state
    assert ss["eps"] == 1.0 and ss["steps"] == LIMITS.max_half_steps and ss["layer"] == L - 1
    assert ss["mode"] == "separate" and ss["view"] == "compare"
    assert figures(at), "the page still works after a hostile link"


@pytest.mark.parametrize("text, message", [
    ("", "Text A is empty"),
    ("   \n\t ", "Text A is empty"),
    ("\x00\x01\x02", "Text A is empty"),
])
def test_bad_text_shows_message(text, message):
    at = run({"a": text, "b": "A normal sentence."})
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert not figures(at)


@pytest.mark.parametrize("text", [
    "<script>alert('x')</script><b>bold</b> &amp;",
    "café naïve 東京 🚀 مرحبا \u200b\u202e zero-width and RTL",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \ud800 lone surrogate",
])
def test_odd_text_renders_as_text(text):
    # Typed into the box (session state): a URL cannot even carry a lone surrogate.
    at = run(a=text, b="Plain words here.", ex="custom")
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    fig = figures(at)[0]
    blob = json.dumps(fig)
    assert "<script>" not in blob and "<b>bold" not in blob


def test_long_text_is_truncated_with_notice():
    long = " ".join(["word"] * 700)
    at = run({"a": long, "b": "short text"})
    ok(at)
    assert any("cut" in i.value or "limit" in i.value for i in at.info), [i.value for i in at.info]


def test_html_report_and_exports_describe_themselves():
    import io

    import plotly.graph_objects as go

    from engine import relate
    r = relate("The <b>bank</b> & river.", "Money in the bank.", half_steps=20)
    url = "http://127.0.0.1:8501/?a=The+%3Cb%3Ebank&b=Money&" + "x" * 300
    page = report.html_report(r, [go.Figure(go.Heatmap(z=[[1, 2]]))], metrics.table(r),
                              url=url)
    assert page.startswith("<!DOCTYPE html>") and "plotly" in page.lower()
    assert "&lt;b&gt;bank&lt;/b&gt; &amp; river." in page and "<b>bank</b>" not in page
    assert "Softmax column error" in page
    assert "overflow-wrap: anywhere" in page  # the long link wraps
    assert "sendChartToCloud" in page and '"showSendToCloud": false' in page
    data = json.loads(report.relation_json(r, url))
    assert (data["text_a"], data["text_b"]) == ("The <b>bank</b> & river.", "Money in the bank.")
    assert data["settings"] == {"layer": 5, "head": "mean", "eps": 1.0, "half_steps": 20,
                                "mode": "separate", "weights": "content",
                                "pool_words": False, "tol": 1e-6}
    assert data["url"] == url and data["model"] == "all-MiniLM-L6-v2"
    v = data["versions"]
    assert v["model"] == "all-MiniLM-L6-v2" and v["torch"].startswith("2.") and v["sinkscope"]
    z = np.load(io.BytesIO(to_npz(r, url=url)))
    assert str(z["text_a"]) == r.text_a and str(z["url"]) == url
    assert json.loads(str(z["settings"]))["half_steps"] == 20
    assert json.loads(str(z["versions"])) == v
    # two pairs with the same settings get different file names
    other = relate("Another text.", "Money in the bank.", half_steps=20)
    assert report.slug(r) != report.slug(other)
    assert report.slug(r).startswith(f"sinkscope_{report.texts_hash(r)}_separate_L5_hmean_eps1_t20")


def test_grid_click_event_parsing():
    from sinkscope_app.main.heads import picked_head as _picked_head
    ev = {"selection": {"points": [{"curve_number": 2, "customdata": {"0": 2, "1": 7, "2": 0.5}}]}}
    assert _picked_head(ev, L, H) == (2, 7)
    ev = {"selection": {"points": [{"customdata": [3.0, 11.0, 1.2]}]}}
    assert _picked_head(ev, L, H) == (3, 11)
    for bad in ({}, None, {"selection": {"points": []}},
                {"selection": {"points": [{"customdata": [9, 99]}]}},
                {"selection": {"points": [{"x": 1}]}}):
        assert _picked_head(bad, L, H) is None


def test_heads_ranked_and_opened_without_a_mouse():
    at = run({"view": "heads", "gval": "entropy", "eps": "1", "steps": "50"})
    ok(at)
    table = at.dataframe[0].value
    values = [float(v) for v in table["entropy H(π)"]]
    assert len(values) == L * H and values == sorted(values, reverse=True)
    at.radio(key="grank").set_value("low").run()
    ok(at)
    low = at.dataframe[0].value
    assert [float(v) for v in low["entropy H(π)"]] == sorted(values)
    assert at.query_params["grid_order"] in ("low", ["low"])
    # The select box (keyboard-reachable) opens the head it names, ranked first here
    first = (int(low["layer"].iloc[0]), int(low["head"].iloc[0]))
    box = next(s for s in at.selectbox if s.label == "Open a head")
    box.set_value(first).run()
    ok(at)
    assert (at.session_state["layer"], at.session_state["head"]) == first
    assert any(f"Currently: layer {first[0]}, head {first[1]}." in c.value for c in at.caption)
    assert len(figures(at)[0]["layout"]["shapes"]) == 1  # its tile is outlined


def test_a_heads_grid_larger_than_a_served_engine_sends_is_said_in_the_page_s_words(
        monkeypatch):
    """A served engine bounds its answers (32 MiB, code ``answer``): the All heads view
    says so in the page's words, the texts' size and the bound, never the engine's
    English sentence naming its setting."""
    from engine.serving.client import RequestTooLarge
    from sinkscope_app import engines

    class Bounded(engines.Embedded):
        name = "bounded"  # its own key in the pages' caches

        def relate(self, text_a, text_b, s):
            if s.layer == "all":
                raise RequestTooLarge("The answer to this request could take 40.0 MiB as "
                                      "NPZ; the served engine sends at most 32.0 MiB "
                                      "(SINKSCOPE_SERVE_MAX_ANSWER).", code="answer",
                                      params={"route": "relate", "work": 40 * 2**20,
                                              "limit": 32 * 2**20, "unit": "bytes"})
            return super().relate(text_a, text_b, s)

    real = engines.current()
    bounded = Bounded()
    bounded.model = real.model
    monkeypatch.setattr(engines, "current", lambda: bounded)
    at = run({"view": "heads", "lang": "es"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    [info] = [i.value for i in at.info if "cabezas" in i.value]
    assert info.startswith("Los textos tienen") and "(32 MB)" in info, info
    assert "SINKSCOPE" not in info and not figures(at)


def test_ranked_heads_order_and_ties():
    from sinkscope_app.main.heads import ranked_heads
    v = np.array([[0.2, np.inf], [0.2, 0.1]])
    assert ranked_heads(v) == [(0, 1, np.inf), (0, 0, 0.2), (1, 0, 0.2), (1, 1, 0.1)]
    assert ranked_heads(v, lowest_first=True)[0] == (1, 1, 0.1)


# ----------------------------------------------------------------------------- pictures

def arr(v) -> np.ndarray:
    """A figure JSON's array: a list, or plotly's typed array {"dtype", "bdata", "shape"}."""
    if isinstance(v, dict) and "bdata" in v:
        import base64
        out = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        shape = v.get("shape")
        return out.reshape([int(k) for k in str(shape).split(",")]) if shape else out
    return np.asarray(v, dtype=float)


def test_compare_colour_scale_per_plan_control_and_url():
    at = run({"eps": "1", "steps": "100", "view": "compare"})
    ok(at)
    radio = at.radio(key="cscale")
    assert radio.value == "shared" and radio.options == ["one for both maps", "one per map"]
    shared = figures(at)[0]
    assert "coloraxis2" not in shared["layout"]
    radio.set_value("per_plan").run()
    ok(at)
    fig = figures(at)[0]
    maps = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert [t["coloraxis"] for t in maps] == ["coloraxis", "coloraxis2"]
    lay = fig["layout"]
    assert lay["meta"]["scale"] == "per_plan"
    # each map's own peak over the tokens with weight ([CLS] and [SEP] weigh 0: the first
    # and last row and column), where softmax's [CLS] column holds far more
    soft, sink = (arr(t["z"]) for t in maps)
    assert lay["coloraxis"]["cmax"] == pytest.approx(soft[1:-1, 1:-1].max())
    assert lay["coloraxis2"]["cmax"] == pytest.approx(sink[1:-1, 1:-1].max())
    assert soft.max() > 2 * lay["coloraxis"]["cmax"]
    assert shared["layout"]["coloraxis"]["cmax"] == pytest.approx(
        max(lay["coloraxis"]["cmax"], lay["coloraxis2"]["cmax"]))
    q = at.query_params["colour_scale"]  # the readable name (old links say cscale)
    assert (q[0] if isinstance(q, list) else q) == "per_plan"
    again = run({"eps": "1", "steps": "100", "cscale": "per_plan"})  # a shared link
    ok(again)
    assert again.radio(key="cscale").value == "per_plan"
    assert "coloraxis2" in figures(again)[0]["layout"]
    bad = parse_query({"cscale": "rainbow"}, n_layers=L, n_heads=H,
                      models=("all-MiniLM-L6-v2",), examples=EXAMPLES)
    assert "cscale" not in bad.values and "colour scale" in bad.warnings[0]


def test_difference_says_identical_at_half_step_one():
    at = run({"eps": "1", "steps": "1", "view": "compare"})
    ok(at)
    compare, diff = figures(at)[:2]
    title = diff["layout"]["title"]["text"]
    assert "1 half-step · identical" in title, title
    (tr,) = diff["data"]
    peak = max(arr(t["z"]).max() for t in compare["data"] if t["type"] == "heatmap")
    assert tr["zmax"] == pytest.approx(peak) and tr["zmin"] == -tr["zmax"]
    assert np.abs(arr(tr["z"])).max() < 1e-12 * peak  # pale noise
    at.session_state["steps"] = 100  # what the half-step slider's release sets
    at.run()
    ok(at)
    diff = figures(at)[1]
    assert "identical" not in diff["layout"]["title"]["text"]
    (tr,) = diff["data"]
    assert tr["zmax"] == pytest.approx(np.abs(arr(tr["z"])).max())


def test_presentation_mode_from_the_url_and_the_sidebar():
    at = run({"eps": "1", "steps": "100", "present": "on"})
    ok(at)
    assert at.sidebar.toggle(key="present").value is True
    q = at.query_params["present"]
    assert (q[0] if isinstance(q, list) else q) == "true"
    assert any("font-size:18px" in h.proto.body for h in at.get("html"))
    from sinkscope_app.main.views import PRESENT_COMPARE_HEIGHT
    compare, diff = figures(at)[:2]
    assert compare["layout"]["height"] == PRESENT_COMPARE_HEIGHT
    for fig in (compare, diff):
        assert fig["layout"]["font"]["size"] >= 18
        assert all(a["font"]["size"] >= 18 for a in fig["layout"].get("annotations", []))
    at.sidebar.toggle(key="present").set_value(False).run()
    ok(at)
    assert not any("font-size:18px" in h.proto.body for h in at.get("html"))
    assert "font" not in figures(at)[0]["layout"]  # the template's 13 px again


def test_self_mode_axes_name_text_a_twice():
    at = run({"mode": "self", "eps": "1", "steps": "100"})
    ok(at)
    compare, diff = figures(at)[:2]
    for fig in (compare, diff):
        lay = fig["layout"]
        assert lay["yaxis"]["title"]["text"] == "text A (queries)"
        assert lay["xaxis"]["title"]["text"] == "text A (keys)"
        assert "text B" not in json.dumps(lay, ensure_ascii=False)


def test_presentation_mode_renders_every_view():
    at = run({"eps": "0.5", "steps": "50", "present": "true"})
    ok(at)
    for view in VIEWS:
        at.segmented_control(key="view").set_value(view).run()
        ok(at)
        for fig in figures(at):
            assert fig["layout"]["font"]["size"] >= 18, view


# ----------------------------------------------------------------------------- a new user's trips

PASTE = ("The river bank was quiet after the flood, and the boats stayed moored. " * 400)


def test_a_paste_over_the_limit_is_cut_with_a_notice(default_app):
    """A paste longer than the limit keeps its first SINKSCOPE_MAX_CHARS characters and
    says so (the browser's max_chars used to drop the whole paste without a word)."""
    paste = PASTE[:24_285]
    at = default_app.sidebar.text_area(key="a").input(paste).run()
    ok(at)
    assert at.session_state["a"] == paste[: LIMITS.max_chars]
    assert at.session_state["ex"] == "custom"
    notes = [w.value for w in at.warning if "Text A as typed or pasted" in w.value]
    assert notes and f"24,285 characters; only the first {LIMITS.max_chars:,}" in notes[0]
    assert at.sidebar.text_area(key="a").value == paste[: LIMITS.max_chars]
    at.run()  # said once, not on every later run
    assert not [w for w in at.warning if "as typed or pasted" in w.value]


def test_a_paste_of_candidates_over_the_limit_is_cut_with_a_notice():
    at = run({"view": "sentences"})
    paste = "A man deposited his money at the bank.\nThe shore of a river.\n" + \
        ("A long candidate about rivers and money. " * 600)[:20_940]
    at.text_area(key="cands").input(paste).run()
    ok(at)
    assert at.session_state["cands"] == paste[: LIMITS.max_chars]
    assert any(f"The candidates as typed or pasted had {len(paste):,} characters" in w.value
               for w in at.warning)


def _sidebar_captions(at) -> list[str]:
    return [c.value for c in at.sidebar.caption]


def test_own_texts_start_from_the_model_s_own_attention(default_app):
    """After an example at ε = 0.1, your own pair is compared at ε = 1 (softmax is then the
    model's own attention), and the page says which settings were kept."""
    at = default_app
    assert at.session_state["eps"] == pytest.approx(0.1)  # the default example's setting
    at.sidebar.text_area(key="b").input("A heron stood on the muddy shore.").run()
    ok(at)
    assert at.session_state["ex"] == "custom"
    assert at.session_state["eps"] == 1.0
    infos = [i.value for i in at.info if "Your own texts" in i.value]
    assert infos and "ε set back to 1 (it was 0.1)" in infos[0]
    assert "layer 4" in infos[0] and "200 half-steps" in infos[0]
    # Moved to ε = 0.1 again by hand: the page says so, and one click returns to ε = 1.
    at.session_state["eps"] = 0.1
    at.run()
    assert any("Your own texts at ε = 0.1" in c.value and "sharpened 10×" in c.value
               for c in at.caption)
    at.button(key="own_attention").click().run()
    ok(at)
    assert at.session_state["eps"] == 1.0
    assert not any("Your own texts at ε" in c.value for c in at.caption)


def test_choosing_your_own_texts_resets_eps_and_names_what_was_kept():
    at = run({"ex": "paraphrase"})
    at.sidebar.selectbox(key="ex").select("custom").run()
    ok(at)
    assert at.session_state["eps"] == 1.0
    assert any("Kept from the example: layer 2" in i.value for i in at.info)


@pytest.mark.parametrize("query", [{"present": "true"}, {"view": "graph"}])
def test_a_link_that_names_no_texts_opens_the_example_at_its_settings(query):
    """/?present=true used to show the Polysemy texts at layer 5, ε = 1 beside a note that
    describes layer 4 at ε = 0.1."""
    bank = EXAMPLES["bank"]
    at = run(query)
    ok(at)
    for k, v in bank["settings"].items():
        assert at.session_state[k] == (L - 1 if k == "layer" and v == -1 else v), k
    assert bank["note"] in _sidebar_captions(at)


def test_an_unknown_example_with_a_custom_text_shows_no_example_note():
    at = run({"ex": "nope", "a": "My own sentence about a heron."})
    ok(at)
    assert at.session_state["ex"] == "custom"
    assert any("Unknown example “nope”" in w.value and "your own texts" in w.value
               for w in at.warning)
    notes = {e["note"] for e in EXAMPLES.values()}
    assert not notes & set(_sidebar_captions(at))


def test_the_note_shows_only_at_the_example_s_settings():
    bank = EXAMPLES["bank"]
    at = run({"ex": "bank", "eps": "1"})
    ok(at)
    caps = _sidebar_captions(at)
    assert bank["note"] not in caps
    assert any("note describes it at layer 4, mean of heads, ε = 0.1, 200 half-steps" in c
               for c in caps), caps
    at.sidebar.button(key="ex_settings").click().run()
    ok(at)
    assert at.session_state["eps"] == pytest.approx(0.1)
    assert bank["note"] in _sidebar_captions(at)
    at.session_state["eps"] = 0.5  # as a live slider's release sets it (fragment run)
    at.run()
    assert bank["note"] not in _sidebar_captions(at)


def test_example_differences_in_words():
    from sinkscope_app.main.params import example_differences

    ex = EXAMPLES["en-es"]
    state = dict(DEFAULTS, **ex["settings"], mode="separate")
    assert example_differences(ex, state, n_layers=L) == []
    assert example_differences(ex, dict(state, eps=1.0, pool=False), n_layers=L) == [
        "ε = 0.1", "words pooled"]
    assert example_differences(EXAMPLES["self"], dict(state, mode="separate"),
                               n_layers=L)[-1] == "self mode"


def test_a_text_outside_the_model_s_vocabulary_gets_a_notice():
    """Spanish text B falls apart into English word pieces; the page says so, names the
    text and the model, and what to do. English texts get no such notice."""
    at = run({"ex": "en-es"})
    ok(at)
    notes = [w.value for w in at.warning if "outside the vocabulary" in w.value]
    assert len(notes) == 1 and notes[0].startswith("Text B is mostly outside the vocabulary "
                                                   "of all-MiniLM-L6-v2")
    assert "word pieces per word" in notes[0] and "multilingual" in notes[0]
    assert "ga ##to" in notes[0]
    at = run({"a": "🎉🎉🎉 🙂 🎶🎶", "b": "A party with music."})
    assert any(w.value.startswith("Text A is mostly outside") and "[UNK]" in w.value
               for w in at.warning)
    at = run({"ex": "paraphrase"})
    assert not [w for w in at.warning if "outside the vocabulary" in w.value]


def test_vocabulary_notice_thresholds():
    from engine.relation.relate import default_encoder
    from sinkscope_app.main.calls import vocabulary_notice

    tok = default_encoder().tokenizer
    assert vocabulary_notice(tok, "I sat on the bank of the river and watched the water.",
                             "text_a", "m") is None
    assert vocabulary_notice(tok, "   ", "text_a", "m") is None
    assert vocabulary_notice(None, "שלום עולם מה שלומך", "text_a", "m") is None
    hebrew = vocabulary_notice(tok, "שלום עולם מה שלומך היום", "text_a", "m")
    assert hebrew and "Text A is mostly outside the vocabulary of m" in hebrew.message


# ----------------------------------------------------------------------------- the URL schema

def test_old_links_open_the_same_state_as_readable_ones():
    old = {"view": "sentences", "cview": "conditional", "cscale": "per_plan", "gwhich": "softmax",
           "topk": "5", "thr": "0.01", "hl": "a2", "space": "hidden", "method": "umap",
           "dim": "3", "edges": "12", "cwhich": "softmax", "gplan": "difference",
           "gval": "entropy", "grank": "low", "img": "svg", "sset": "guitar"}
    kw = dict(n_layers=L, n_heads=H, models=("all-MiniLM-L6-v2",), examples=EXAMPLES)
    by_old = parse_query(old, **kw)
    new = to_query(dict(DEFAULTS, **by_old.values))
    assert not set(new) & (set(old) - {"view"}), "the page writes the readable names"
    by_new = parse_query(new, **kw)
    assert not by_old.warnings and not by_new.warnings
    for k, v in by_old.values.items():
        assert by_new.values[k] == v, k
    assert (by_old.values["cview"], by_old.values["hl"], by_old.values["sset"]) == (
        "conditional", "a2", "guitar")


def test_one_truthy_parser_for_every_page():
    from sinkscope_app import present
    from sinkscope_app.inputs import parse_bool
    from sinkscope_app.learn import params as learn_state

    for word in ("1", "true", "TRUE", "yes", "on", " On "):
        assert parse_bool(word) is True and present.link(word)
        assert learn_state.parse({"present": word}, EXAMPLES).values["learn_present"] is True
        kw = dict(n_layers=L, n_heads=H, models=("m",), examples=EXAMPLES)
        assert parse_query({"present": word}, **kw).values["present"] is True
    for word in ("0", "false", "no", "off", "", None):
        assert parse_bool(word) is False and not present.link(word)
    assert parse_bool("maybe") is None and not present.link("maybe")


def test_fragment_keys_come_from_the_schema_and_docs_list_every_parameter():
    from pathlib import Path

    from sinkscope_app.main import explore as views
    from sinkscope_app.main.params import FRAGMENT_KEYS

    assert views.FRAGMENT_KEYS == FRAGMENT_KEYS
    assert {p.key for p in PARAMS if p.scope == "view"} <= set(FRAGMENT_KEYS)
    assert not {p.key for p in PARAMS if p.scope == "page"} & set(FRAGMENT_KEYS)
    docs = (Path(__file__).resolve().parents[1] / "docs" / "urls.md").read_text()
    for p in PARAMS:
        assert f"| `{p.url}` |" in docs, p.url
        assert all(f"`{o}`" in docs for o in p.old), p.old


def test_charts_take_presentation_mode_from_the_page_not_the_session():
    """The main page's presentation toggle used to leak into Learn's figures (views.chart
    read the session); now the page passes it."""
    from tests.test_learn import learn

    plain = learn({"step": "2", "lang": "en"})
    leaked = learn({"step": "2", "lang": "en"}, present=True)  # the main page's toggle on
    assert not leaked.exception
    size = [f["layout"].get("font", {}).get("size") for f in figures(plain)]
    assert size and size == [f["layout"].get("font", {}).get("size") for f in figures(leaked)]
