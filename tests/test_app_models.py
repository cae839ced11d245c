"""The app with several models (the picker, the model in the URL, texts kept across a model
change) and the Sentences view, driven in-process by Streamlit's AppTest."""

from __future__ import annotations

import json
import os

import pytest

os.environ["SINKSCOPE_WARM_UP"] = "0"  # keep both cores for the tests

from streamlit.testing.v1 import AppTest  # noqa: E402

from engine import settings  # noqa: E402
from engine.relation.relate import POSITION_BIAS_NOTE  # noqa: E402
from sinkscope_app.examples import sentence_sets  # noqa: E402
from sinkscope_app.main.params import DEFAULTS, parse_query, to_query  # noqa: E402
from sinkscope_app.inputs import md_text  # noqa: E402
from sinkscope_app.main.sentences import picked_candidate as _picked_candidate  # noqa: E402
from tests.support.apptest import figures, ok, run  # noqa: E402

SETS = sentence_sets()


def q(at: AppTest, key: str):
    v = at.query_params.get(key)
    return v[0] if isinstance(v, list) else v


@pytest.fixture
def two_models(monkeypatch, tiny_models):
    """The operator allows the packaged MiniLM and two tiny models."""
    spec = f"tiny-mpnet={tiny_models['mpnet']};tiny-roberta={tiny_models['roberta']}"
    monkeypatch.setattr(settings, "CONFIG", settings.Config.from_env({"SINKSCOPE_MODELS": spec}))


# ----------------------------------------------------------------------------- the picker

def test_no_picker_with_one_model():
    at = run()
    ok(at)
    assert not [s for s in at.sidebar.selectbox if s.key == "model"]


def test_picker_shows_each_model_and_keeps_the_texts(two_models):
    at = run(query={"a": "The bank of the river.", "b": "Money in the bank.", "layer": "5"})
    ok(at)
    picker = at.sidebar.selectbox(key="model")
    assert picker.options == [
        "all-MiniLM-L6-v2 · BERT · 6 layers × 12 heads · 256 tokens",
        "tiny-mpnet · MPNet · 2 layers × 4 heads · 24 tokens",
        "tiny-roberta · RoBERTa · 2 layers × 4 heads · 24 tokens"]
    picker.set_value("tiny-mpnet").run()
    ok(at)
    ss = at.session_state
    assert (ss["model"], ss["a"], ss["b"]) == ("tiny-mpnet", "The bank of the river.",
                                                "Money in the bank.")
    assert at.sidebar.text_area(key="a").value == "The bank of the river."
    assert q(at, "model") == "tiny-mpnet" and q(at, "a") == "The bank of the river."
    assert ss["layer"] == 1  # layer 5 does not exist in a 2-layer model: the last one
    assert at.sidebar.selectbox(key="layer").options == ["0", "1 (last)"]
    assert POSITION_BIAS_NOTE in [i.value for i in at.info]  # separate mode says so
    at.sidebar.radio(key="mode").set_value("self").run()
    ok(at)
    assert POSITION_BIAS_NOTE not in [i.value for i in at.info]
    fig = figures(at)[0]
    assert "tiny" not in json.dumps(fig["layout"]["title"])  # the texts' tokens, not names
    at.sidebar.selectbox(key="model").set_value("tiny-roberta").run()
    ok(at)
    assert at.session_state["a"] == "The bank of the river."
    assert "bank" in json.dumps(figures(at)[0]["layout"], ensure_ascii=False)  # decoded labels


def test_model_in_the_url(two_models):
    at = run(query={"model": "tiny-roberta", "view": "heads"})
    ok(at)
    assert at.session_state["model"] == "tiny-roberta" and q(at, "model") == "tiny-roberta"
    tiles = figures(at)[0]["data"][2]["customdata"]
    shape = tiles["shape"] if isinstance(tiles, dict) else f"{len(tiles)}, {len(tiles[0])}"
    assert shape.replace(" ", "") == f"{2 * 4},3"  # 2 layers × 4 heads
    bad = run(query={"model": "/etc"})
    ok(bad)
    assert bad.session_state["model"] == "all-MiniLM-L6-v2"
    assert any("Unknown model “/etc”" in w.value for w in bad.warning)


# ----------------------------------------------------------------------------- Sentences

@pytest.fixture
def sentences_app() -> AppTest:
    """A fresh session on the Sentences view (each test starts from its default set)."""
    return run(query={"view": "sentences"})


def test_sentences_view_renders_both_rankings(sentences_app):
    at = sentences_app
    ok(at)
    labels = [m.label for m in at.metric]
    assert labels[-3:] == ["Rankings agree (Spearman ρ)", "Same top candidate",
                           "Embedding = barycenter"]
    assert at.metric[-1].value.startswith("± ") and float(at.metric[-1].value[2:]) <= 1e-5
    figs = figures(at)
    titles = [json.dumps(f["layout"].get("title", {}), ensure_ascii=False) for f in figs]
    assert any("Two rankings" in t for t in titles) and any("One ranking against" in t for t in titles)
    assert any("Coupling of text A with candidate 1" in t for t in titles)
    K = len(SETS["bank"]["candidates"])
    assert sorted(b.key for b in at.button if b.key.startswith("cmp_")) == sorted(
        f"cmp_{k}" for k in range(K))
    assert q(at, "view") == "sentences" and q(at, "sentence_set") == "bank"
    assert q(at, "candidates") == "\n".join(SETS["bank"]["candidates"])


def test_compare_button_opens_the_candidate_as_text_b(sentences_app):
    at = sentences_app
    k = SETS["bank"]["candidates"].index("She went to the bank to deposit her money.")
    at.button(key=f"cmp_{k}").click().run()
    ok(at)
    assert at.session_state["view"] == "compare" and at.session_state["ex"] == "custom"
    assert at.sidebar.text_area(key="b").value == "She went to the bank to deposit her money."
    assert q(at, "b") == "She went to the bank to deposit her money." and q(at, "candidates") is None
    fig = figures(at)[0]
    assert "deposit" in json.dumps(fig["layout"]["xaxis"]["ticktext"])
    at.segmented_control(key="view").set_value("sentences").run()  # and back: nothing stale
    ok(at)
    assert at.session_state["view"] == "sentences"


def test_example_set_loads_text_a_and_candidates_and_edits_make_it_custom(sentences_app):
    at = sentences_app
    at.selectbox(key="sset").set_value("guitar").run()
    ok(at)
    s = SETS["guitar"]
    assert at.sidebar.text_area(key="a").value == s["a"]
    assert at.text_area(key="cands").value == "\n".join(s["candidates"])
    assert len([b for b in at.button if b.key.startswith("cmp_")]) == 20
    at.text_area(key="cands").set_value("A man plays a guitar.\nStocks fell.").run()
    ok(at)
    assert at.session_state["sset"] == "custom"
    assert len([b for b in at.button if b.key.startswith("cmp_")]) == 2
    at.text_area(key="cands").set_value(" \n \n").run()
    assert not at.exception
    assert any("at least one candidate" in e.value for e in at.error)
    at.text_area(key="cands").set_value("<script>alert(1)</script>\n**bold** [x](http://e.x)").run()
    ok(at)
    shown = [m.value for m in at.markdown]
    assert md_text("**bold** [x](http://e.x)") in shown
    assert not any("](http" in m and "\\]" not in m for m in shown)


def test_sentences_link_restores_the_set_and_custom_candidates():
    at = run(query={"view": "sentences", "sset": "order"})
    ok(at)
    assert at.session_state["a"] == SETS["order"]["a"]
    assert at.session_state["cands"] == "\n".join(SETS["order"]["candidates"])
    p = parse_query({"view": "sentences", "cands": "x\ny", "sset": "nope"}, n_layers=6,
                    n_heads=12, models=("all-MiniLM-L6-v2",), examples={})
    assert p.values["cands"] == "x\ny" and p.values["sset"] == "custom"
    assert any("Unknown example set “nope”" in w for w in p.warnings)
    assert "candidates" not in to_query(dict(DEFAULTS, view="compare"))


def test_scatter_click_parsing():
    assert _picked_candidate({"selection": {"points": [{"customdata": 3}]}}, 5) == 3
    assert _picked_candidate({"selection": {"points": [{"customdata": [2]}]}}, 5) == 2
    assert _picked_candidate({"selection": {"points": [{"customdata": 9}]}}, 5) is None
    assert _picked_candidate({"selection": {"points": []}}, 5) is None
    assert _picked_candidate(None, 5) is None
