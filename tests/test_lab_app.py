"""The Lab page in Streamlit's AppTest: opens, trains a few steps, stops, switches target,
speaks Spanish, names models and targets in full, keeps a row for every model it draws,
links to Learn, and trains word aligners on a person's pairs; and its two text files carry
the same keys and fields."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.support.apptest import run
from tests.test_frame import shown

ROOT = Path(__file__).resolve().parent.parent
TEXTS = {lang: json.loads((ROOT / "sinkscope_app" / "text" / f"lab.{lang}.json")
                          .read_text(encoding="utf-8")) for lang in ("en", "es")}
TEXTS_FRAME = {lang: json.loads((ROOT / "sinkscope_app" / "text" / f"frame.{lang}.json")
                                .read_text(encoding="utf-8")) for lang in ("en", "es")}
SMALL = dict(lab_steps=6, lab_width=4, lab_depth=1, lab_models=["sinkhorn", "softmax"],
             lab_target="quantile", lab_train_pairs=64, lab_heldout_pairs=8)


def _keys(d: dict, prefix: str = "") -> set[str]:
    out = set()
    for k, v in d.items():
        out |= _keys(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k}
    return out


def _fields(d: dict) -> dict[str, set[str]]:
    flat = {}
    for k in _keys(d):
        v = d
        for part in k.split("."):
            v = v[part]
        flat[k] = {f for _, f, _, _ in string.Formatter().parse(v) if f}
    return flat


def test_both_languages_have_every_key_and_the_same_fields():
    assert _keys(TEXTS["en"]) == _keys(TEXTS["es"])
    assert _fields(TEXTS["en"]) == _fields(TEXTS["es"])
    from engine.lab.nets import MODELS
    from engine.lab.targets import NAMES

    for t in TEXTS.values():
        assert set(t["targets"]) == set(NAMES) and set(t["models"]) == set(MODELS)
        for key in _keys(t):  # every word is written, none left blank
            v = t
            for part in key.split("."):
                v = v[part]
            assert str(v).strip(), key


def lab(query: dict | None = None, **state) -> AppTest:
    """A fresh session of the Lab page at ``query`` with ``state`` set, run once."""
    return run(query, page="sinkscope_app/pages/lab.py", timeout=180, **state)


def ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.sidebar.radio, "nothing rendered"


def arr(v) -> np.ndarray:
    """A figure array from its JSON: a list, or plotly's typed array {dtype, bdata, shape}."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
    return np.asarray(v, dtype=float)


def charts(at: AppTest) -> dict[str, dict]:
    out = {}
    for el in at.get("plotly_chart"):
        fig = json.loads(el.proto.spec)
        t = fig["layout"].get("title", {}).get("text", "")
        out[t] = fig
    return out


def test_opens_with_the_defaults_and_nothing_trained():
    at = lab()
    ok(at)
    en = TEXTS["en"]
    assert at.sidebar.radio(key="lab_target").value == "whitened"
    assert at.session_state["lab_models"] == ["sinkhorn", "softmax", "context-free"]
    assert [c.value for c in at.sidebar.checkbox] == [True, True, True]
    assert [i.value for i in at.info] == [en["no_results"], en["text_why"]]
    assert not at.get("plotly_chart")


def test_targets_and_models_are_named_in_full_and_models_are_ticked():
    # A select box and a multiselect's chips cut long names ("Context-free encod…");
    # radio buttons and checkboxes wrap them.
    en = TEXTS["en"]
    at = lab()
    assert not at.sidebar.selectbox and not at.sidebar.multiselect
    radio = at.sidebar.radio(key="lab_target")
    assert radio.options == [en["targets"][t] for t in ("sq-euclid", "exact", "whitened",
                                                         "quantile")]
    assert [c.label for c in at.sidebar.checkbox] == list(en["models"].values())
    at.sidebar.checkbox(key="lab_use_softmax").uncheck().run()
    ok(at)
    assert at.session_state["lab_models"] == ["sinkhorn", "context-free"]
    assert at.query_params["models"] in ("sinkhorn,context-free", ["sinkhorn,context-free"])


def test_train_a_few_steps_then_stop_then_switch_target():
    en = TEXTS["en"]
    at = lab(**SMALL)
    at.button(key="lab_train").click().run()
    ok(at)
    assert at.success and at.success[0].value.startswith("Trained 2 model(s)")
    figs = charts(at)
    curves = figs[en["curves_title"]]
    assert [tr["name"] for tr in curves["data"]] == [en["models"]["sinkhorn"],
                                                     en["models"]["softmax"]]
    assert arr(curves["data"][0]["x"])[-1] == 6
    title = en["couplings_title"].format(k=0, n=8)
    couplings = figs[title]
    names = [a["text"].split("<br>")[0] for a in couplings["layout"]["annotations"]]
    assert names == [en["target_panel"], en["models"]["sinkhorn"], en["models"]["softmax"]]
    matrices = figs[en["matrices_title"]]
    heat = [tr for tr in matrices["data"] if tr["type"] == "heatmap"]
    assert len(heat) == 3
    # Above each matrix, its second marginal against b: the target's and the Sinkhorn
    # model's bars all sit on their ticks; softmax's miss (above and below).
    bars = [tr for tr in matrices["data"] if tr["type"] == "bar"]
    on_axis = {}
    for tr in bars:
        on_axis.setdefault(tr.get("xaxis", "x"), {})[tr["meta"]["cls"]] = len(arr(tr["x"]))
    assert list(on_axis.values())[:2] == [{0: 0, 1: 0, 2: 8}] * 2
    soft = list(on_axis.values())[2]
    assert soft[0] > 0 and soft[1] > 0 and sum(soft.values()) == 8
    assert len(at.table) == 1 and len(at.table[0].value) == 2

    # Another held-out pair and a size never trained on.
    at.slider(key="lab_pair").set_value(3).run()
    ok(at)
    assert en["couplings_title"].format(k=3, n=8) in charts(at)
    at.slider(key="lab_size").set_value(12).run()
    ok(at)
    assert en["couplings_title"].format(k=3, n=12) in charts(at)

    # Nothing runs, so Stop is disabled. A reload (a new session opened at the page's
    # address) finds the job by the id the address holds, and shows what it reached.
    assert at.button(key="lab_stop").disabled
    job = at.query_params["train_job"]
    job = job[0] if isinstance(job, list) else job
    again = lab({"train_job": job, "target": "quantile"}, **{k: v for k, v in SMALL.items()
                                                             if k != "lab_target"})
    ok(again)
    assert again.success and again.success[0].value.startswith("Trained 2 model(s)")
    assert en["couplings_title"].format(k=0, n=8) in charts(again)
    gone = lab({"train_job": "0-000000000000"})  # the engine no longer knows it
    ok(gone)
    said = TEXTS_FRAME["en"]["jobs"]["gone"].format(id="0-000000000000")
    assert said in [i.value for i in gone.info] and "train_job" not in gone.query_params

    # Switch target: the URL follows, and Train trains on the new one, from pair 0 at the
    # training size again.
    at.sidebar.radio(key="lab_target").set_value("sq-euclid").run()
    assert at.query_params["target"] in ("sq-euclid", ["sq-euclid"])
    at.button(key="lab_train").click().run()
    ok(at)
    assert at.session_state["_engine_jobs"]["lab_train"]["result"].target == "sq-euclid"
    assert at.success
    assert (at.slider(key="lab_pair").value, at.slider(key="lab_size").value) == (0, 8)
    assert en["couplings_title"].format(k=0, n=8) in charts(at)


def test_stop_is_enabled_while_training_runs_and_keeps_what_it_reached(monkeypatch):
    from sinkscope_app import engines, jobs

    monkeypatch.setattr(jobs, "WATCH_S", 0.0)  # one look per run: the test clicks meanwhile
    en = TEXTS["en"]
    at = lab(**{**SMALL, "lab_steps": 4000})
    assert at.button(key="lab_stop").disabled
    at.button(key="lab_train").click().run()
    job = at.session_state["_engine_jobs"]["lab_train"]["id"]
    assert engines.current().job(job).active and not at.button(key="lab_stop").disabled
    at.button(key="lab_stop").click().run()
    assert engines.current().jobs.wait(job, 120)["state"] in ("done", "stopped")
    at.run()
    ok(at)
    assert at.session_state["_engine_jobs"]["lab_train"]["result"].status == "stopped"
    assert [w.value for w in at.warning] == [en["stopped"]]
    assert at.button(key="lab_stop").disabled
    rows = shown(at.table[0])  # the model stopped has its row; the next never started
    assert list(rows[en["table_model"]]) == [en["models"]["sinkhorn"]]
    assert rows[en["table_steps"]].iloc[0].endswith(" of 4,000")


def test_the_lab_links_to_the_theorem_in_learn():
    # (Learn links back: tests/test_learn.py, its last step and its sidebar.)
    at = lab({"lang": "es"})
    ok(at)
    (link,) = [p.proto for p in at.main.get("page_link") if p.proto.page == "learn"]
    assert link.label == TEXTS["es"]["learn_link"]
    assert "step=8" in link.query_string and "lang=es" in link.query_string


def test_one_name_for_the_sinkhorn_transformer_in_each_language():
    root = ROOT / "sinkscope_app" / "text"
    names = {"en": ("Sinkhorn Transformer", "Transformer de Sinkhorn"),
             "es": ("Transformer de Sinkhorn", "Sinkhorn Transformer")}
    for lang, (name, other) in names.items():
        for page in ("lab", "learn", "frame"):
            text = (root / f"{page}.{lang}.json").read_text(encoding="utf-8")
            assert other not in text, (page, lang)
        assert TEXTS[lang]["models"]["sinkhorn"] == name
        assert name in json.loads((root / f"learn.{lang}.json").read_text())["ui"]["heading"]


def test_spanish_and_a_target_from_the_link():
    es = TEXTS["es"]
    at = lab({"lang": "es", "target": "quantile"})
    ok(at)
    assert any(es["heading"] in m.value for m in at.markdown)
    assert at.sidebar.radio(key="lab_target").value == "quantile"
    assert [i.value for i in at.info] == [es["no_results"], es["text_why"]]


@pytest.mark.slow
def test_error_vs_width_sweep_draws_one_line_per_model():
    at = lab(lab_steps=2, lab_width=4, lab_depth=1, lab_models=["context-free"],
             lab_target="quantile", lab_train_pairs=32, lab_heldout_pairs=4)
    at.button(key="lab_sweep").click().run()
    ok(at)
    fig = charts(at)[TEXTS["en"]["sweep_title"]]
    assert len(fig["data"]) == 1
    y = arr(fig["data"][0]["y"])
    assert len(y) == 6 and (y > 0).all()


@pytest.mark.slow
@pytest.mark.model
def test_text_section_trains_aligners_and_says_the_result_in_spanish():
    # The shipped gold pairs (tests/data/align/pairs.tsv): 13 to train, 2 dev, 5 held out.
    es = TEXTS["es"]
    data = (ROOT / "tests" / "data" / "align" / "pairs.tsv").read_text(encoding="utf-8")
    at = lab({"lang": "es"}, lab_text_data=data, lab_text_name="pairs.tsv", lab_text_epochs=1)
    ok(at)
    assert any(c.value.startswith("20 pares con referencia: 13 para entrenar") for c in at.caption)
    at.button(key="lab_text_train").click().run()
    ok(at)
    res = at.session_state["_engine_jobs"]["lab_text"]["result"]
    assert set(res.trained) == {"sinkhorn", "softmax"}
    assert set(res.paired) == {("sinkhorn", "untrained"), ("softmax", "untrained"),
                               ("sinkhorn", "softmax")}
    sentence = next(m.value for m in at.markdown if m.value.startswith("En 5 pares reservados"))
    assert "intervalo pareado del 95 %" in sentence and not re.search(r"\d\.\d", sentence)
    scores, paired = (shown(t) for t in at.table[-2:])
    names = es["text_names"]
    assert list(scores[es["text_head"]]) == [
        names["untrained"].format(method=res.untrained["method"]), names["sinkhorn"],
        names["softmax"]]
    cells = " ".join(str(v) for col in (scores, paired) for c in col.columns[1:] for v in col[c])
    assert re.search(r"\d,\d{3}", cells) and not re.search(r"\d\.\d", cells), cells
    assert len(paired) == 3
    assert [d.label for d in at.get("download_button")] == [
        es["text_download"].format(name=names[f]) for f in ("sinkhorn", "softmax")]
    # The result survives a switch to English.
    at.session_state["lang"] = "en"
    at.run()
    ok(at)
    assert any(m.value.startswith("On 5 held-out pairs the trained Sinkhorn Transformer")
               for m in at.markdown)
    # A trained aligner, used in Align for this session: the engine finds it by its name.
    at.button(key="lab_text_use_sinkhorn").click().run()
    ok(at)
    (link,) = [p.proto for p in at.main.get("page_link") if p.proto.page == "align"]
    job = at.session_state["_engine_jobs"]["lab_text"]["id"]
    assert f"aligner=sinkhorn%40{job}" in link.query_string and "method=trained" in link.query_string
    assert at.session_state["_session_aligners"] == {
        f"sinkhorn@{job}": pytest.approx(res.trained["sinkhorn"].run.theta)}


def test_a_failed_job_says_so_in_the_page_s_language_with_restart(monkeypatch):
    """A training that fails on the engine is said in the page's language (the engine's
    code worded), with Restart, which starts the same job again under a new id (in the
    address); nothing waits."""
    from engine.jobs.errors import JobError
    from engine.jobs.local import LocalJobs
    from sinkscope_app import engines

    def broken(ctx, spec):
        raise JobError.of("job_weights", model="softmax", reason="a broken run")

    eng = engines.Embedded()
    eng.__dict__["jobs"] = LocalJobs(eng.model, models=eng.models, work={"lab_train": broken})
    monkeypatch.setattr(engines, "current", lambda: eng)
    at = lab({"lang": "es"}, **SMALL)
    at.button(key="lab_train").click().run()
    assert not at.exception
    first = at.query_params["train_job"]
    [err] = [e.value for e in at.error]
    assert err.startswith("El trabajo falló: Los pesos de «softmax» no encajan") and \
        "Pulsa Reiniciar" in err, err
    at.button(key="lab_restart").click().run()
    assert at.query_params["train_job"] != first and len(at.error) == 1
