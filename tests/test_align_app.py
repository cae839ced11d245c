"""The Align page in Streamlit's AppTest: a pair with gold shows the matrix and every
method's scores; a slider move changes the links; a 50-pair file fills the corpus table and
a row selection opens that pair; bad input gets a message, never a traceback. The URL
state and the file checks are tested without the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.apptest import data as component_data, run

from engine.alignment.readers import AlignFileError
from sinkscope_app import align as ap

ROOT = Path(__file__).resolve().parent.parent
PAIRS = ROOT / "tests" / "data" / "align" / "pairs.tsv"


def align(query: dict | None = None, **state) -> AppTest:
    """A fresh session of the Align page at ``query`` with ``state`` set, run once."""
    return run(query, page="sinkscope_app/pages/align.py", timeout=180, **state)


def ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.get("button_group") or at.checkbox, "nothing rendered: a syntax error?"


def figures(at: AppTest) -> dict[str, dict]:
    specs = [el.proto.spec for el in at.get("plotly_chart")] + [  # and the live charts
        component_data(el)["spec"] for el in at.get("bidi_component")
        if el.proto.component_name == "sinkscope_live_chart"]
    return {json.loads(s)["layout"]["title"]["text"]: json.loads(s) for s in specs}


def kinds(fig: dict) -> dict[str, list]:
    return {t["meta"]["kind"]: list(zip(t.get("y", []), t.get("x", []))) for t in fig["data"]}


def table(at: AppTest, column: str):
    """The first table with ``column`` (tables without selection carry no key)."""
    for el in [*at.dataframe, *at.table]:
        if column in el.value.columns:
            return el.value
    raise AssertionError(f"no table with a {column!r} column")


def corpus_file(n: int = 50) -> bytes:
    """n pairs cycled from the project's own hand-made gold set."""
    lines = PAIRS.read_text(encoding="utf-8").splitlines()
    body = [lines[1 + k % (len(lines) - 1)] for k in range(n)]
    return ("\n".join([lines[0], *body]) + "\n").encode("utf-8")


# ------------------------------------------------------------------ no model needed
def test_url_state_round_trips_and_refuses_bad_values():
    values, warn = ap.parse_query({"view": "corpus", "text_a": "a b", "text_b": "c",
                                   "gold": "0-0", "method": "partial", "mass": "0.52",
                                   "lower": "true"})
    assert not warn
    assert values["align_view"] == "corpus" and values["align_method"] == "partial"
    assert values["align_mass"] == 0.51 and values["align_lower"] is True  # 26/51
    q = ap.to_query({**ap.DEFAULTS, **values})
    assert q["mass"] == "0.51" and "tau" not in q and q["text_a"] == "a b"
    assert ap.parse_query(q)[0]["align_mass"] == 0.51
    # m outside the slider is clamped to its ends: m = 1 is not on the engine's grid
    assert ap.parse_query({"mass": "1"})[0]["align_mass"] == 0.98
    assert ap.parse_query({"mass": "-3"})[0]["align_mass"] == ap.MASS_OPTIONS[0] == 0.04
    values, warn = ap.parse_query({"view": "nope", "method": "<b>", "tau": "nan"})
    assert values == {} and len(warn) == 3
    assert any("Unknown method" in w for w in warn)
    link = ap.compare_link("the cat", "a & b")
    assert link.startswith("./?") and "a=the+cat" in link and "b=a+%26+b" in link
    assert "view=compare" in link


def test_the_m_slider_is_the_engines_grid_and_holds_its_default_m():
    from engine.alignment.api import DEFAULTS as ENGINE
    from engine.alignment.extract import MASS_GRID

    # every stop is a stop of the engine's grid (k/51, no m = 1), as the page writes it
    grid = [round(x, 2) for x in MASS_GRID]
    assert len(set(grid)) == len(MASS_GRID) == 50 and 1.0 not in grid
    assert set(ap.MASS_OPTIONS) <= set(grid) and list(ap.MASS_OPTIONS) == sorted(ap.MASS_OPTIONS)
    assert 10 <= len(ap.MASS_OPTIONS) <= 50
    for source in ENGINE:  # hidden states and attention
        m = ENGINE[source]["partial"].mass
        assert m in ap.MASS_OPTIONS, (source, m)  # the default lies on the slider, exactly
    m = ENGINE["hidden"]["partial"].mass
    assert ap.method_defaults("partial")["align_mass"] == m == ap.DEFAULTS["align_mass"]
    assert ap.parse_query({"method": "partial"})[0]["align_mass"] == m
    assert ap.nearest_mass(m) == m and ap.nearest_mass(0.5) == 0.51


def test_uploads_that_are_too_big_binary_or_malformed_are_refused_with_messages():
    t = ap.ui()
    with pytest.raises(AlignFileError, match="more than 2 MB: split it"):
        ap.read_file(b"a\tb\n" * (ap.MAX_UPLOAD_BYTES // 4 + 1), "big.tsv", False, t)
    with pytest.raises(AlignFileError, match="not a text file"):
        ap.read_file(b"\x89PNG\x00\x00\x01", "x.png", False, t)
    with pytest.raises(AlignFileError, match="out of range"):
        ap.read_file(b"text_a\ttext_b\tgold\nthe cat\ta cat\t0-99\n", "bad.tsv", False, t)
    assert len(ap.read_file(corpus_file(5), "ok.tsv", False, t)) == 5


# ------------------------------------------------------------------ the real model
@pytest.mark.model
@pytest.mark.slow
def test_a_pair_with_gold_shows_the_matrix_and_every_methods_scores():
    at = align({"text_a": "the cat sat on the mat", "text_b": "a cat was sitting on the mat",
                "gold": "0p0 1-1 2-2 2-3 3-4 4-5 5-6", "method": "unbalanced"})
    ok(at)
    figs = figures(at)
    fig = figs["Links of unbalanced"]
    z = fig["data"][0]["z"]  # plotly's typed array: {"dtype", "bdata", "shape"}
    assert fig["data"][0]["type"] == "heatmap"
    assert (z["shape"] if isinstance(z, dict) else f"{len(z)}, {len(z[0])}") == "6, 7"
    k = kinds(fig)
    assert k["hit"] and set(k) >= {"plan", "hit"}
    assert any("bipartite" in title for title in figs)
    tab = table(at, "AER")
    assert len(tab) == len(ap.METHODS)
    assert tab["F1"].between(0, 1).all() and tab["AER"].between(0, 1).all()
    assert at.query_params["method"] == "unbalanced"
    assert any("0 the · 1 cat" in e.value for e in at.text)  # the gold's tokenisation
    [button] = at.get("link_button")  # the pair in the main page's Compare view
    assert button.proto.url == ap.compare_link("the cat sat on the mat",
                                               "a cat was sitting on the mat")

    # a slider move redraws the links (θ near 0 links far more cells)
    before = sum(len(v) for key, v in k.items() if key in ("hit", "hit_possible", "false"))
    at.session_state["align_threshold"] = 0.02  # what the live slider's release sets
    at.run()
    ok(at)
    k2 = kinds(figures(at)["Links of unbalanced"])
    after = sum(len(v) for key, v in k2.items() if key in ("hit", "hit_possible", "false"))
    assert after > before and k2.get("false")
    assert at.query_params["threshold"] == "0.02"

    # lower-casing: the words shown (and encoded) are lower-cased, the numbers stay
    at.text_area(key="align_a").set_value("The Cat sat on the mat").run()
    at.checkbox(key="align_lower").check().run()
    ok(at)
    assert any("texts lower-cased" in e.value and "0 the · 1 cat" in e.value for e in at.text)
    assert at.query_params["lower"] == "true"

    # bad gold: a message, and the links are still drawn without it
    at.text_input(key="align_gold").set_value("0-99").run()
    assert not at.exception and not at.error
    assert any("out of range" in w.value for w in at.warning)
    assert "link" in kinds(figures(at)["Links of unbalanced"])
    # a message quoting the visitor's words shows them as text, never as Markdown
    at.text_input(key="align_gold").set_value("![x](http://example.invalid/p.png)").run()
    assert not at.exception and at.warning
    assert all("![x](" not in w.value for w in at.warning)
    at.text_input(key="align_gold").set_value("0-99").run()
    # HTML in a text stays text
    at.text_area(key="align_a").set_value("<b>bold</b> cat").run()
    ok(at)
    ticks = figures(at)["Links of unbalanced"]["layout"]["yaxis2"]["ticktext"]
    assert "&lt;b&gt;bold&lt;/b&gt;" in ticks
    at.text_area(key="align_b").set_value("word " * 401).run()  # too long for a gold set
    ok(at)
    assert any("more than 400" in w.value for w in at.warning)
    at.text_area(key="align_b").set_value("\u200b").run()  # a word with no tokens
    ok(at)
    assert any("no word the model can read" in w.value for w in at.warning)
    at.text_area(key="align_b").set_value("   ").run()
    ok(at)
    assert any("Type both texts" in i.value for i in at.info)


@pytest.mark.model
@pytest.mark.slow
def test_a_50_pair_file_fills_the_table_and_a_row_opens_the_pair():
    at = align({"view": "corpus"})
    ok(at)
    at.file_uploader(key="align_file").set_value(("binary.tsv", b"\x00\x01\x02", "text/plain"))
    at.run()
    assert not at.exception and any("not a text file" in e.value for e in at.error)
    at.file_uploader(key="align_file").set_value(("pairs.tsv", corpus_file(50),
                                                  "text/tab-separated-values")).run()
    ok(at)
    df = at.dataframe(key="align_table").value
    assert len(df) == 50
    assert {f"F1 {m}" for m in ap.METHODS} <= set(df.columns)
    assert {"null ratio", "disagreement"} <= set(df.columns)
    assert df["F1 unbalanced"].between(0, 1).all()
    scores = table(at, "F1 95 %")
    assert list(scores["method"]) == list(ap.METHODS)
    assert scores["F1 95 %"].str.contains(" – ").all()
    assert any("Corpus scores" in title for title in figures(at))
    c = at.session_state["_align_corpus"]
    assert len(ap.links_file(c, "unbalanced").decode().splitlines()) == 50
    assert ap.table_csv(ap.corpus_table(c)).decode().count("\n") == 51

    at.session_state["align_table"] = {"selection": {"rows": [3], "columns": [],
                                                     "cells": []}}
    at.run()
    ok(at)
    want = PAIRS.read_text(encoding="utf-8").splitlines()[4].split("\t")
    assert at.session_state["align_view"] == "pair"
    assert at.text_area(key="align_a").value == want[0]
    assert at.text_area(key="align_b").value == want[1]
    assert any("Pair 4 of the corpus" in i.value for i in at.info)
    assert table(at, "AER")["F1"].notna().all()


def test_a_served_engine_gets_its_own_fields_in_chunks(monkeypatch):
    """With SINKSCOPE_ENGINE a URL, the corpus goes to POST /v1/align in requests of at most
    256 pairs, with only the fields the endpoint takes; nothing is encoded here."""
    from engine.alignment.api import Alignment
    from engine.alignment.readers import parse_pairs
    from engine.serving.schemas import AlignRequest

    calls = []

    class FakeClient:
        def align(self, pairs, **kw):
            calls.append((len(pairs), kw))
            AlignRequest(pairs=[{"text_a": "a", "text_b": "b"}],
                         **{k: v for k, v in kw.items() if k != "model"})  # the server's check
            return [Alignment(tuple(p.words_a), tuple(p.words_b), ((0, 0),), (), (),
                              {"method": kw["method"]}, {}, None,
                              {"f1": 1.0} if p.has_gold else None) for p in pairs]

    from sinkscope_app import engines

    served = engines.Served("http://127.0.0.1:9", client=FakeClient())
    monkeypatch.setattr(engines, "current", lambda: served)
    pairs = parse_pairs(corpus_file(300).decode(), name="p.tsv")
    seen = []
    c = ap.align_corpus(pairs, "k", False, "m", lambda share, text, **info: seen.append(share))
    assert [n for n, _ in calls] == [256, 44] * len(ap.METHODS)
    assert {kw["method"] for _, kw in calls} == set(ap.METHODS)
    assert all(kw["values"] is False for _, kw in calls)
    assert len(c.pairs) == 300 and c.n_gold == 300 and set(c.scores) == set(ap.METHODS)
    assert seen[-1] == 1.0 and seen == sorted(seen)
