"""The Align page in Streamlit's AppTest: a pair with gold shows the matrix and every
method's scores; a slider move changes the links; a 50-pair file fills the corpus table and
a row selection opens that pair; bad input gets a message, never a traceback. The URL
state and the file checks are tested without the model."""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import time
from pathlib import Path

import numpy as np
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


def test_the_pair_view_opens_at_the_tuned_settings_and_its_moves_are_history_entries():
    from engine.alignment.api import opening
    from sinkscope_app.align.params import SCHEMA

    o = opening()  # unbalanced at θ 0.42, τ 4.94 (not θ 0.3, τ 1)
    assert (ap.DEFAULTS["align_method"], ap.DEFAULTS["align_threshold"],
            ap.DEFAULTS["align_tau"]) == (o["method"], o["theta"], o["tau"]) == (
        "unbalanced", 0.42, 4.94)
    assert 4.94 in ap.TAU_OPTIONS and ap.method_defaults("unbalanced")["align_tau"] == 4.94
    q = ap.to_query(ap.DEFAULTS)
    assert (q["threshold"], q["tau"]) == ("0.42", "4.94")
    # a new view, pair or method is a browser history entry; a slider moves the entry
    assert set(SCHEMA.nav) == {"view", "text_a", "text_b", "gold", "method", "aligner"}
    assert not {"threshold", "tau", "mass", "lower"} & set(SCHEMA.nav)


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
def test_a_50_pair_file_fills_the_table_and_a_row_opens_the_pair(tmp_path, monkeypatch,
                                                                  capsys):
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
    assert df["F1 unbalanced"].str.fullmatch(r"[01]\.\d{3}").all()  # written as shown
    # the verdict: ranked by total F1, the best marked, its settings, the command line
    c = at.session_state["_align_corpus"]
    ranked = table(at, "Δ best")
    assert list(ranked["rank"]) == list(range(1, len(ap.METHODS) + 1))
    assert ranked["method"].iloc[0] == "★ " + c.verdict.best
    assert ranked["total F1"].is_monotonic_decreasing
    assert ranked["settings"].str.contains("θ 0.42 · τ 4.94").any()
    assert table(at, "F1 95 %")["F1 95 %"].str.contains(" – ").all()  # every score, too
    [code] = at.code
    assert code.value == "python -m engine align --pairs pairs.tsv"
    # the command prints the same table: the same ranking, values and paired comparisons
    from engine.io.cli import main

    (tmp_path / "pairs.tsv").write_bytes(corpus_file(50))
    monkeypatch.chdir(tmp_path)
    assert main([*shlex.split(code.value)[3:], "--json", "--quiet"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ranked"] == [r.method for r in c.verdict.ranked]
    for r in c.verdict.ranked:
        assert doc["methods"][r.method]["scores"]["macro"]["total_f1"] == pytest.approx(
            r.value, abs=1e-12)
    assert doc["paired"] == [p.to_dict() for p in c.verdict.paired]
    chart = figures(at)["Which method wins: total F1, best first"]
    lo, hi = chart["layout"]["xaxis"]["range"]
    assert 0 < lo and hi < 1 and hi - lo < 0.6  # zoomed to the methods, not 0–1
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


class FakeClient:
    """A served engine's client that links every pair's first words (0-0), scored as the
    engine scores: one pair at a time (``POST /v1/align``, checked as the server would)
    and a corpus as the engine's job (``POST /v1/jobs``: the job's own document, done at
    once). It keeps the requests."""

    def __init__(self):
        self.calls, self.bodies, self.docs = [], [], {}

    def models(self):
        return []

    def aligners(self):
        return []

    @staticmethod
    def first_words(pairs, method: str) -> list:
        from engine.alignment.api import Alignment, as_pairs
        from engine.alignment.score import METRICS, metrics_from_counts, pair_counts

        out = []
        for p in as_pairs(pairs):
            per = metrics_from_counts(pair_counts(((0, 0),), p)) if p.has_gold else None
            out.append(Alignment(tuple(p.words_a), tuple(p.words_b), ((0, 0),),
                                 tuple(range(1, p.shape[0])), tuple(range(1, p.shape[1])),
                                 {"method": method}, {}, None,
                                 None if per is None else {k: float(per[k]) for k in METRICS}))
        return out

    def align(self, pairs, **kw):
        from engine.serving.schemas import AlignRequest

        self.calls.append((len(pairs), kw))
        AlignRequest(pairs=[{"text_a": "a", "text_b": "b"}],
                     **{k: v for k, v in kw.items() if k != "model"})  # the server's check
        return self.first_words(pairs, kw["method"])

    def start_job(self, body):
        from engine.alignment.api import method_of
        from engine.alignment.extract import METHODS
        from engine.jobs.spec import check
        from engine.jobs.text import corpus_doc

        spec = check(body)  # the engine's own check of the body
        self.bodies.append(body)
        methods = {m: method_of(m) for m in METHODS}
        als = {m: tuple(self.first_words(spec.pairs, m)) for m in METHODS}
        job = f"{len(self.docs):x}-{'0' * 12}"
        self.docs[job] = corpus_doc(spec, spec.pairs, methods, als)
        return self.job(job)

    def job(self, job_id):
        from engine.jobs.results import JobStatus

        return JobStatus(job_id, "align_corpus", "done", 1.0, 0, {}, None, None, "", False,
                         0.0, result=True)

    stop_job = job

    def job_result(self, job_id):
        from engine.jobs.results import read

        return read(self.docs[job_id])


@pytest.fixture
def served(monkeypatch):
    """The process's engine is a served one whose client is :class:`FakeClient`."""
    from sinkscope_app import engines

    client = FakeClient()
    engine = engines.Served("http://127.0.0.1:9", client=client)
    monkeypatch.setattr(engines, "current", lambda: engine)
    return client


def upload(at: AppTest, name: str, raw: bytes) -> AppTest:
    at.file_uploader(key="align_file").set_value((name, raw, "text/plain")).run()
    return at.run()


def test_a_served_engine_gets_the_corpus_as_one_job(served):
    """With SINKSCOPE_ENGINE a URL, the corpus goes to POST /v1/jobs as one align_corpus
    job (the engine aligns it in chunks, where it runs), with the page's settings; its
    id is in the page's address; nothing is encoded here."""
    at = align({"view": "corpus"})
    upload(at, "p.tsv", corpus_file(300))
    ok(at)
    (body,) = served.bodies
    assert body["kind"] == "align_corpus" and len(body["data"]["pairs"]) == 300
    assert body["settings"] == {"model": "all-MiniLM-L6-v2", "lowercase": False,
                                "bootstrap": 1000, "aligner": None}
    assert body["data"]["name"] == "p.tsv" and body["data"]["gold_column"] is True
    assert at.query_params["corpus_job"] == "0-000000000000"
    assert len(at.dataframe(key="align_table").value) == 300 and not served.calls
    at.run()  # a rerun finds the same job: never sent again
    assert len(served.bodies) == 1


def test_files_say_what_was_scored_and_name_the_header_that_is_wrong(served):
    """An empty gold cell is a pair without gold, counted and said; a file without gold
    has link counts, not columns of empty scores; a header word sinkscope does not read is
    named."""
    at = align({"view": "corpus"})
    upload(at, "pairs.tsv", b"source\ttarget\talignment\nthe cat sat\ta cat sat\t0-0 1-1\n"
           b"a dog\tthe dog\t1-1\nno gold here\tnone at all\t\n")
    ok(at)
    assert [s.value for s in at.success] == [
        "3 pairs, 2 with gold; 1 without gold are not scored. Aligned by 8 methods."]
    df = at.dataframe(key="align_table").value
    assert df["F1 unbalanced"].tolist()[2] == "–"  # the pair without gold has no score
    assert df["F1 unbalanced"].str.fullmatch(r"[01]\.\d{3}").tolist() == [True, True, False]
    assert at.session_state["_align_corpus"].verdict.n_pairs == 2
    assert len(table(at, "Δ best")) == len(ap.METHODS)
    [css] = [el.proto.body for el in at.get("html")  # download labels wrap, never cut
             if ".st-key-align_links" in el.proto.body]
    assert ".st-key-align_links" in css and "white-space: normal" in css

    upload(at, "nogold.tsv", b"source\ttarget\nthe cat sat\ta cat sat\na dog\tthe dog\n")
    ok(at)
    assert [s.value for s in at.success] == [
        "2 pairs without gold links, aligned by 8 methods: links only, no scores."]
    df = at.dataframe(key="align_table").value
    assert not [c for c in df.columns if c.startswith("F1")]
    assert df["links unbalanced"].tolist() == [1, 1] and len(df) == 2
    assert not at.table and not at.code  # no verdict, no command
    [info] = [i.value for i in at.info]
    assert "nothing is scored" in info and "lists the links" not in info

    upload(at, "typo.tsv", b"source\ttarget\talignmnt\nthe cat\ta cat\t0-0\n")
    assert not at.exception
    [err] = [e.value for e in at.error]
    assert "line 1" in err and "“alignmnt”" in err and "not a link" not in err
    # the rejected file replaces nothing: the last good file's results stay (issue 42)
    assert at.dataframe(key="align_table").value["links unbalanced"].tolist() == [1, 1]
    assert "still those of nogold" in " ".join(c.value for c in at.caption)
    es = ap.ui("es")
    from engine.alignment.readers import AlignFileError

    with pytest.raises(AlignFileError) as e:
        ap.read_file(b"source,src,target\nx,y,z\n", "f.csv", False, es)
    assert ap.file_error(e.value, es) == (
        "f.csv, línea 1: la cabecera nombra text_a más de una vez («source», «src»); deja "
        "solo una.")


def test_a_rejected_file_replaces_nothing_and_every_header_fits(served):
    """Issue 42 on a Spanish page: an image, an empty file or a bad header is refused in
    Spanish with the file named, and the last good file's results stay (removing the bad
    file shows them as before, under the good file's name); the limits and p are said in
    the page's words; every column is wide enough for its whole header."""
    from viz.theme import text_px

    at = align({"view": "corpus", "lang": "es"})
    captions = lambda: " ".join(c.value for c in at.caption)  # noqa: E731
    assert "Como máximo 2 MB y 2000 pares por archivo" in captions()  # beside Streamlit's
    upload(at, "pairs.tsv", corpus_file(5))
    ok(at)
    assert "p = min(1, 2·min(k₋, k₊)/B)" in captions() and "p < 0,05 justo cuando" in captions()
    config = json.loads(at.dataframe(key="align_table").proto.columns)
    for name, col in config.items():
        if name not in ("texto A", "texto B", "_index"):
            assert isinstance(col.get("width"), int) and col["width"] >= text_px(name, 13), (
                name, col)
    shown = at.dataframe(key="align_table").value
    for name, raw, says in [
            ("img.png", b"\x89PNG\r\n\x1a\n\x00\x00", "img.png no es un archivo de texto"),
            ("vacio.tsv", b"", "vacio.tsv está vacío"),
            ("missing_col.tsv", b"text_a\tgold\nx\t0-0\n",
             "missing_col.tsv, línea 1: la cabecera necesita text_a y text_b")]:
        upload(at, name, raw)
        assert not at.exception
        [err] = [e.value.replace("\\", "") for e in at.error]
        assert says in err, err
        assert at.dataframe(key="align_table").value.equals(shown)  # the results stay
        assert "siguen siendo los de pairs.tsv" in captions().replace("\\", "")
    at.file_uploader(key="align_file").set_value(None).run()  # the bad file removed
    ok(at)
    assert "Alineado: pairs.tsv" in captions().replace("\\", "") and not at.error
    assert at.dataframe(key="align_table").value.equals(shown)


def test_the_pair_view_s_gold_messages_and_scores_line_match_the_view(served):
    """Gold that does not fit is said without a 1-based flag this view lacks, and the hint
    asks to fix it rather than to type it; the scores line drawn by the server has
    precision and recall, as the live one."""
    at = align({"text_a": "the cat sat", "text_b": "a cat sat down", "gold": "3-0",
                "method": "sinkhorn-argmax"})
    ok(at)
    [warning] = [w.value.replace("\\", "") for w in at.warning]  # as shown: no Markdown
    assert "out of range" in warning and "1-based" not in warning
    assert [i.value for i in at.info] == [ap.ui()["scores_bad_gold"]]
    at.text_input(key="align_gold").set_value("").run()
    assert [i.value for i in at.info] == [ap.ui()["scores_none"]]
    at.text_input(key="align_gold").set_value("0-0 1-1").run()
    ok(at)
    from engine.alignment.readers import make_pair
    from engine.alignment.score import metrics_from_counts, pair_counts
    from sinkscope_app import align_live

    per = metrics_from_counts(pair_counts(((0, 0),), make_pair("the cat sat", "a cat sat down",
                                                               "0-0 1-1")))
    line = align_live.scores_line(align_live.WORDS, "sinkhorn-argmax",
                                  {k: float(v) for k, v in per.items()})
    shown = [m.value for m in at.markdown if "precision" in m.value]
    assert shown == [f"**{line}**"], shown
    assert "sinkhorn-argmax: precision 1.000, recall 0.500, F1 0.667" in line


def test_the_verdict_table_ranks_marks_the_best_and_writes_spanish_numbers():
    from engine.alignment.score import corpus_score
    from engine.alignment.verdict import verdict

    rng = np.random.default_rng(0)
    n = 40  # counts (N, 7) as COUNTS: links, hits sure, hits possible, sure, nulls…
    sure = rng.integers(3, 8, n)

    def counts(hit_share):
        hits = np.minimum(sure, rng.binomial(sure, hit_share))
        return np.stack([sure, hits, hits, sure, np.full(n, 2), np.full(n, 2),
                         np.full(n, 1)], -1)

    scores = {"softmax-argmax": corpus_score(counts(0.6)),
              "unbalanced": corpus_score(counts(0.8)), "exact": corpus_score(counts(0.7))}
    from engine.alignment.api import method_of

    settings = {k: method_of(k) for k in scores}
    v = verdict(scores, settings)
    es = ap.ui("es")
    from sinkscope_app.align.words import paired_rows, ranked_rows

    rows = ranked_rows(v, {k: {f: x for f, x in m.to_dict().items() if f != "method"}
                           for k, m in settings.items()}, es)
    assert [r["method"] for r in rows] == ["★ unbalanced", "exact", "softmax-argmax"]
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert [r["total F1"] for r in rows] == sorted((r["total F1"] for r in rows), reverse=True)
    assert rows[0]["Δ best"] == "el mejor" and rows[1]["Δ best"].startswith("−0,")
    assert rows[0]["settings"] == "θ 0,42 · τ 4,94 · ε 0,1"
    assert rows[2]["settings"] == "dirección intersection"
    lo, hi = v.ranked[0].ci95
    assert rows[0]["total F1 95 %"] == f"{lo:.3f} – {hi:.3f}".replace(".", ",")
    paired = paired_rows(v.against_best(), es)
    assert [(r["method"], r["against"]) for r in paired] == [("exact", "unbalanced"),
                                                               ("softmax-argmax", "unbalanced")]
    for r, p in zip(paired, v.against_best()):
        assert r["Δ total F1"] == f"{p.delta:+.3f}".replace("-", "−").replace(".", ",")
        assert r["95 % interval"] == "[{}; {}]".format(
            *(f"{x:+.3f}".replace("-", "−").replace(".", ",") for x in p.ci95))
        assert r["difference shown"] == es["differs_yes" if p.ci95[1] < 0 else "differs_no"]
    shown = ap.column_names(es, paired[0])
    assert shown["Δ total F1"] == "Δ F1 total" and shown["against"] == "frente a"


@pytest.fixture(scope="module")
def tiny_aligner(tiny_models, tmp_path_factory):
    """A trained aligner on the tiny BERT (one epoch on the synthetic relation of
    tests/test_aligner.py), saved in a folder: (folder, its θ)."""
    from engine.aligner.checkpoint import save
    from engine.aligner.training import train
    from engine.models.encoder import Encoder
    from tests.test_aligner import synthetic_pairs, tiny_settings

    enc = Encoder.load(str(tiny_models["bert"]), device="cpu")
    r = train(synthetic_pairs(32, 0), synthetic_pairs(16, 1),
              tiny_settings(enc.name, epochs=1), encoder=enc, threads=1)
    return save(r, tmp_path_factory.mktemp("aligner") / "tiny"), r.aligner.theta


@pytest.mark.model
@pytest.mark.slow
def test_a_listed_aligner_is_the_method_trained_in_pair_and_corpus(tiny_aligner, monkeypatch):
    from engine import settings
    from engine.aligner import registry
    from sinkscope_app.align import params
    from tests.test_aligner import synthetic_pairs
    from tests.test_aligner_cli import write_pairs

    def forget() -> None:  # the operator's list changed: look the aligners up again
        registry.forget()
        params._cached_listed.cache_clear()

    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(settings.CONFIG, aligners=""))
    forget()
    values, warn = ap.parse_query({"method": "trained"})  # none listed: not a method
    assert "align_method" not in values and "Unknown method" in warn[0]
    folder, theta = tiny_aligner
    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(settings.CONFIG,
                                                                aligners=f"tiny={folder}"))
    forget()
    try:
        values, warn = ap.parse_query({"method": "trained"})
        assert values["align_method"] == "trained" and not warn
        assert values["align_threshold"] == round(theta, 2)  # the aligner's own θ
        at = align({"method": "trained", "text_a": "the bank river money",
                    "text_b": "bank of the river money", "gold": "1-0 2-3 3-4"})
        ok(at)
        fig = figures(at)["Links of trained"]
        assert fig["data"][0]["type"] == "heatmap"  # the aligner's plan
        rows = table(at, "AER")
        assert list(rows["method"]) == [*ap.METHODS, "trained ◀"]
        assert at.session_state["align_threshold"] == round(theta, 2)  # its own θ
        at.text_input(key="align_gold").set_value("1-0 2-3").run()  # the address follows
        assert at.query_params["method"] == "trained"
        assert at.query_params["threshold"] == f"{round(theta, 2):g}"

        raw = write_pairs(folder.parent / "pairs.tsv", synthetic_pairs(6, 3))
        at = align({"view": "corpus"})
        upload(at, "pairs.tsv", Path(raw).read_bytes())
        ok(at)
        c = at.session_state["_align_corpus"]
        assert c.methods == (*ap.METHODS, "trained") and c.verdict.n_pairs == 6
        assert "trained" in [r.method for r in c.verdict.ranked]
        assert ("trained", c.verdict.best) in [(p.method, p.vs) for p in c.verdict.paired] \
            or c.verdict.best == "trained"
        θ = c.settings["trained"]["threshold"]  # the aligner's own, written out
        assert at.code[0].value == ("python -m engine align --pairs pairs.tsv --aligner tiny "
                                    f"--set trained:threshold={θ:g}")
        assert table(at, "Δ best")["settings"].str.contains("final layer sinkhorn").any()

        # an aligner whose base model's weights are not the ones it was trained on: a
        # message in the Pair view, and the other methods' table without it
        other = folder.parent / "other"
        shutil.copytree(folder, other)
        doc = json.loads((other / "config.json").read_text())
        (other / "config.json").write_text(json.dumps({**doc, "base_sha256": "0" * 64}))
        monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(
            settings.CONFIG, aligners=f"other={other}"))
        forget()
        at = align({"method": "trained"})
        assert not at.exception and not at.error
        [warning] = [w.value for w in at.warning]
        assert warning.startswith("The trained aligner cannot be used") and "trained on" in warning
        at.selectbox(key="align_method").set_value("exact").run()
        ok(at)
        assert "trained" not in list(table(at, "AER")["method"])
    finally:
        forget()


@pytest.mark.model
def test_stop_on_a_corpus_run_keeps_the_aligned_pairs_scored_and_labelled_partial(monkeypatch):
    """Issue 42: Stop after the first chunk of pairs keeps them, scored and ranked, in the
    table, with a warning that says the result is partial; Align this file again starts
    over."""
    from engine.jobs import text
    from engine.jobs.local import LocalJobs
    from sinkscope_app import engines, jobs

    real = engines.current()
    eng = engines.Embedded()
    eng.model = real.model  # (the process's loaded model)

    def held(ctx, spec):  # the job holds after its first chunk until Stop is asked
        report = ctx.report

        def wait_for_stop(share, *args, **info):
            report(share, *args, **info)
            if info.get("done", 0) >= 2:
                while not ctx.flush():
                    time.sleep(0.02)
        ctx.report = wait_for_stop
        return text.align_corpus(ctx, spec)

    eng.__dict__["jobs"] = LocalJobs(eng.model, models=eng.models, work={"align_corpus": held})
    monkeypatch.setattr(engines, "current", lambda: eng)
    monkeypatch.setattr(jobs, "WATCH_S", 0.0)  # one look per run: the test clicks meanwhile
    monkeypatch.setattr(text, "CHUNK", 2)
    at = align({"view": "corpus"})
    upload(at, "pairs.tsv", corpus_file(6))
    job = at.session_state["_engine_jobs"]["align_corpus"]["id"]
    end = time.monotonic() + 120
    while eng.job(job).info.get("done", 0) < 2:
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)
    at.run()
    at.button(key="align_stop").click().run()
    assert eng.jobs.wait(job, 120)["state"] == "stopped"
    at.run()
    ok(at)
    assert [w.value for w in at.warning] == [
        "Stopped: 2 of 6 pairs were aligned; they are scored below, a partial result."]
    assert len(at.dataframe(key="align_table").value) == 2
    c = at.session_state["_align_corpus"]
    assert c.partial and c.n_total == 6 and c.verdict.n_pairs == 2
    assert len(table(at, "Δ best")) == len(ap.METHODS)  # ranked on what was aligned
    at.button(key="align_again").click().run()  # starts over: a new job
    new = at.session_state["_engine_jobs"]["align_corpus"]["id"]
    assert new != job
    eng.stop_job(new)  # (held after its first chunk, as the first)
    assert eng.jobs.wait(new, 120)["state"] == "stopped"
