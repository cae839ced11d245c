"""The Lab page in Streamlit's AppTest: opens, trains a few steps, stops, switches target,
speaks Spanish; and its two text files carry the same keys and fields."""

from __future__ import annotations

import json
import string
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.support.apptest import run

ROOT = Path(__file__).resolve().parent.parent
TEXTS = {lang: json.loads((ROOT / "sinkscope_app" / "text" / f"lab.{lang}.json")
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
    assert at.sidebar.selectbox, "nothing rendered"


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
    assert at.sidebar.selectbox(key="lab_target").value == "whitened"
    assert at.sidebar.multiselect(key="lab_models").value == ["sinkhorn", "softmax",
                                                              "context-free"]
    assert [i.value for i in at.info] == [en["no_results"]]
    assert not at.get("plotly_chart")


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
    heat = [tr for tr in figs[en["matrices_title"]]["data"] if tr["type"] == "heatmap"]
    assert len(heat) == 3
    assert len(at.table) == 1 and len(at.table[0].value) == 2

    # Another held-out pair and a size never trained on.
    at.slider(key="lab_pair").set_value(3).run()
    ok(at)
    assert en["couplings_title"].format(k=3, n=8) in charts(at)
    at.slider(key="lab_size").set_value(12).run()
    ok(at)
    assert en["couplings_title"].format(k=3, n=12) in charts(at)

    # A run cut short by a click leaves its results "training"; Stop keeps what it reached.
    at.session_state["_lab_results"]["status"] = "training"
    at.button(key="lab_stop").click().run()
    ok(at)
    assert [w.value for w in at.warning] == [en["stopped"]]
    assert en["curves_title"] in charts(at)

    # Switch target: the URL follows, and Train trains on the new one.
    at.sidebar.selectbox(key="lab_target").set_value("sq-euclid").run()
    assert at.query_params["target"] in ("sq-euclid", ["sq-euclid"])
    at.button(key="lab_train").click().run()
    ok(at)
    assert at.session_state["_lab_results"]["target"] == "sq-euclid"
    assert at.success


def test_spanish_and_a_target_from_the_link():
    es = TEXTS["es"]
    at = lab({"lang": "es", "target": "quantile"})
    ok(at)
    assert any(es["heading"] in m.value for m in at.markdown)
    assert at.sidebar.selectbox(key="lab_target").value == "quantile"
    assert [i.value for i in at.info] == [es["no_results"]]


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
def test_text_relation_trains_both_heads_on_a_users_pairs():
    # Tiny gold pairs in the table format (text A, text B, sure links "i-j", 0-based).
    texts = ["the cat sat", "a dog ran", "big red car", "she reads books", "we eat rice",
             "birds fly high", "old men talk", "he sings"]
    rows = [f"{t}\t{t}\t" + " ".join(f"{i}-{i}" for i in range(len(t.split())))
            for t in texts]
    at = lab(lab_text_data="\n".join(rows) + "\n", lab_text_name="tiny.tsv")
    ok(at)
    at.button(key="lab_text_train").click().run()
    ok(at)
    table = at.table[-1].value
    names = TEXTS["en"]["text_names"]
    assert list(table.iloc[:, 0]) == [names["sinkhorn"], names["softmax"], names["untrained"]]
    assert ((table.iloc[:, 1] >= 0) & (table.iloc[:, 1] <= 1)).all()
