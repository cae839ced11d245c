"""One frame for every page, in Streamlit's AppTest: hostile addresses open every page with
a notice, one language key serves every page and each page's controls survive a visit to
another, a corpus run survives a language switch and a trip to Pair and back, tables and
the Lab write numbers the page's way, one engine interface is chosen once, and notices
travel as codes."""

from __future__ import annotations

import json
import re
import threading
import time
import tomllib
from pathlib import Path

import pytest

from engine.settings import Settings
from sinkscope_app import engines, jobs, locale
from tests.support.apptest import run
from tests.test_align_app import corpus_file

ROOT = Path(__file__).resolve().parent.parent
PAGES = {name: f"sinkscope_app/pages/{name}.py" for name in ("main", "learn", "align", "lab")}


def shown(element):
    """What a table shows (its Styler's display values), as a DataFrame of strings."""
    from streamlit import dataframe_util

    styler = element.proto.arrow_data.styler
    return dataframe_util.convert_arrow_bytes_to_pandas_df(styler.display_values)


# ------------------------------------------------------------------ no model needed
def test_one_engine_is_chosen_once_and_takes_the_engine_s_settings():
    assert engines.current() is engines.current()
    calls = []

    class Client:
        def relate(self, text_a, text_b, *, settings):
            calls.append((text_a, text_b, settings))
            return "relation"

    served = engines.Served("http://127.0.0.1:9", client=Client())
    s = Settings(eps=0.5, half_steps=3, mode="self", layer=2, head=1)
    assert served.relate("x", "y", s) == "relation"
    assert calls == [("x", None, s)]  # self mode sends no text B
    assert served.served and not engines.Embedded().served


def test_the_server_takes_no_upload_larger_than_the_pages():
    from sinkscope_app.align.corpus import MAX_UPLOAD_MB

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == MAX_UPLOAD_MB


def test_notices_travel_as_codes_with_their_parameters():
    from engine.io.export import json_safe, relation_document, relation_from_dict
    from engine.relation.notices import notice

    n = notice("tokens_cut", name="text_b", n=256, dropped=1024)
    assert n.message == ("Text B was cut to the model's limit of 256 tokens: the next 1,024 "
                         "tokens were dropped.")
    es = locale.notice(n, "es")
    assert es == ("El texto B se recortó al límite del modelo, 256 tokens: se descartaron los "
                  "1024 tokens siguientes.")
    from engine import relate

    r = relate("word " * 300, "a short text", half_steps=2)
    back = relation_from_dict(json.loads(json.dumps(json_safe(relation_document(r)))))
    cut = [x for x in back.notices if x.code == "tokens_cut"]
    assert cut and cut[0].params["name"] == "text_a" and cut[0].params["dropped"] > 0
    assert back.notices == r.notices


def _a_page_then_its_fragment_alone():
    """The main page's frame drawn (in Spanish), then each later run its fragment alone, as
    Streamlit runs it after a live slider's release, unless the fragment asks for the page."""
    import streamlit as st

    from sinkscope_app import frame

    ss = st.session_state
    if "_frame" in ss and not ss.pop("_whole", False):
        ss["_whole"] = True  # kept when the fragment asks for the whole page
        frame.for_fragment()
        del ss["_whole"]
        ss["fragment_runs"] = ss.get("fragment_runs", 0) + 1
        return
    fr = ss["_frame"] = frame.Frame("main", ss.setdefault("lang", "es"), "light")
    fr.drawn = frame.page_state(fr.module)
    ss["page_runs"] = ss.get("page_runs", 0) + 1


def test_a_language_click_sent_with_a_slider_s_release_runs_the_whole_page():
    """Streamlit's browser side sends the changes of one moment in one rerun, scoped to the
    first one's fragment: a click on the language picker that takes the focus off a live
    slider (its release sends the value) must still run the frame, in the new language."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_a_page_then_its_fragment_alone, default_timeout=30).run()
    at.run()  # a release alone: the fragment alone
    assert (at.session_state["page_runs"], at.session_state["fragment_runs"]) == (1, 1)
    at.session_state["lang"] = "en"  # the picker's click, in the release's rerun
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert (at.session_state["page_runs"], at.session_state["fragment_runs"]) == (2, 1)
    assert at.session_state["_frame"].lang == "en"


# ------------------------------------------------------------------ the pages
HOSTILE = [("lab", {"steps": "²"}, "steps", "lab_steps", 400),
           ("lab", {"width": "9" * 5000}, "width", "lab_width", 16),
           ("lab", {"target": "[x](http://e.vil)", "steps": "nan"}, "target", "lab_target",
            "whitened"),
           ("learn", {"step": "²"}, "no step", "learn_step", 1),
           ("align", {"tau": "NaN", "view": "9" * 5000}, "τ", "align_view", "pair"),
           ("main", {"steps": "9" * 5000, "head": "NaN"}, "half-steps", "head", "mean")]


@pytest.mark.model
@pytest.mark.parametrize("page, query, word, key, value", HOSTILE,
                         ids=[f"{p}-{next(iter(q))}" for p, q, *_ in HOSTILE])
def test_a_hostile_link_opens_every_page_with_a_notice(page, query, word, key, value):
    at = run(query, page=None if page == "main" else PAGES[page], timeout=180)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    warnings = [w.value for w in at.warning]
    assert any(word in w for w in warnings), warnings
    assert at.session_state[key] == value
    assert not [w for w in warnings if "](http" in w]  # a crafted value never becomes a link
    assert not any(v == query.get("steps") for v in at.query_params.values())


@pytest.mark.model
def test_one_language_for_every_page_and_each_page_keeps_its_controls():
    at = run({"lang": "es"})
    assert at.sidebar.text_area[0].label == locale.texts("main", "es")["sidebar"]["text_a"]
    at.query_params.clear()
    at.query_params["lang"] = "es"  # what the sidebar's link to Align carries
    at.switch_page(PAGES["align"]).run()
    es = locale.texts("align", "es")
    assert at.session_state["lang"] == "es"
    assert [t.label for t in at.text_area][:1] == [es["text_a"]]
    at.text_area(key="align_a").set_value("el perro duerme").run()
    at.sidebar.get("button_group")[0].set_value("en").run()  # one picker, one key
    assert [t.label for t in at.text_area][:1] == [locale.texts("align", "en")["text_a"]]
    at.switch_page(PAGES["main"]).run()
    assert at.sidebar.text_area[0].label == locale.texts("main", "en")["sidebar"]["text_a"]
    at.switch_page(PAGES["align"]).run()
    assert at.text_area(key="align_a").value == "el perro duerme"  # kept across the trip


class Gated:
    """The corpus job's work held after 448 of 1,200 pairs until ``gate`` is set; counts
    how often it ran."""

    def __init__(self):
        self.gate, self.calls = threading.Event(), 0

    def __call__(self, ctx, spec):
        from engine.jobs.text import align_corpus

        self.calls += 1
        ctx.report(0.3, stage="align", done=448, total=1200)
        ctx.flush()
        self.gate.wait(120)
        return align_corpus(ctx, spec)


@pytest.mark.model
@pytest.mark.slow
def test_a_corpus_run_survives_a_language_switch_and_a_trip_to_pair(monkeypatch):
    from engine.jobs.local import LocalJobs

    gated, real = Gated(), engines.current()
    eng = engines.Embedded()
    eng.model = real.model  # (the process's loaded model)
    eng.__dict__["jobs"] = LocalJobs(eng.model, models=eng.models, work={"align_corpus": gated})
    monkeypatch.setattr(engines, "current", lambda: eng)
    monkeypatch.setattr(jobs, "WATCH_S", 0.0)  # one look per run: the test clicks meanwhile
    at = run({"view": "corpus"}, page=PAGES["align"], timeout=180)
    at.file_uploader(key="align_file").set_value(("pairs.tsv", corpus_file(6),
                                                  "text/tab-separated-values")).run()
    job = at.session_state["_engine_jobs"]["align_corpus"]["id"]
    deadline = time.monotonic() + 60
    while eng.job(job).info.get("done") != 448 and time.monotonic() < deadline:
        time.sleep(0.05)
    at.run()
    assert eng.job(job).active and not [el for el in at.dataframe if el.key == "align_table"]
    assert any("448 of 1,200" in str(el.proto.text) for el in at.get("progress"))
    at.sidebar.get("button_group")[0].set_value("es").run()  # Español, mid-run
    assert at.session_state["_engine_jobs"]["align_corpus"]["id"] == job and gated.calls == 1
    assert any("448 de 1200" in str(el.proto.text) for el in at.get("progress"))
    gated.gate.set()
    assert eng.jobs.wait(job, 120)["state"] == "done"
    at.run()
    names = locale.texts("align", "es")["columns"]
    assert len(at.dataframe(key="align_table").value) == 6
    at.selectbox(key="align_sort").set_value("disagreement").run()
    at.session_state["align_table"] = {"selection": {"rows": [2], "columns": [], "cells": []}}
    at.run()
    assert at.session_state["align_view"] == "pair"
    at.segmented_control(key="align_view").set_value("corpus").run()  # and back
    assert not at.exception and gated.calls == 1  # the same run: never started again
    table = at.dataframe(key="align_table")
    assert len(table.value) == 6 and names["disagreement"] in table.value.columns
    assert at.selectbox(key="align_sort").value == "disagreement"  # its order kept
    kept = locale.texts("align", "es")["kept_file"].split("{")[0]
    assert any(c.value.startswith(kept) and "pairs" in c.value for c in at.caption), (
        [c.value for c in at.caption], at.file_uploader(key="align_file").value)
    cells = table.value[names["disagreement"]]  # written as shown: 0,250, not 0.250
    assert cells.str.fullmatch(r"\d,\d{3}").all(), list(cells)
    values = [float(x.replace(",", ".")) for x in cells]
    assert values == sorted(values)  # sorted by value


@pytest.mark.model
@pytest.mark.slow
def test_the_lab_writes_every_number_the_spanish_way():
    from tests.test_lab_app import SMALL

    es = locale.texts("lab", "es")
    at = run({"lang": "es"}, page=PAGES["lab"], timeout=180, **SMALL)
    assert "0,05" in at.sidebar.select_slider(key="lab_eps").options
    at.button(key="lab_train").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (done,) = at.success
    seconds = done.value.split(" en ")[-1]
    assert done.value.startswith(es["trained"].split("{")[0]) and "," in seconds, done.value
    cells = shown(at.table[0])
    numbers = [str(v) for col in cells.columns[1:] for v in cells[col]]
    assert numbers and not [v for v in numbers if "." in v], numbers
    charts = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    assert charts and all(c["layout"].get("separators") == ",\u00a0" for c in charts)
    notes = " ".join(a["text"] for c in charts for a in c["layout"].get("annotations", []))
    assert re.search(r"L1 \d,\d{3} · ", notes) and not re.search(r"\d\.\d", notes), notes
