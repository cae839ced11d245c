"""Lab: train a Sinkhorn Transformer and its baselines to a coupling system, live.
Served at ``/lab`` (``/lab?target=whitened&lang=es``; ``models``, ``width`` and ``steps``
can be set in the link too).

This file only wires the page: the settings, Train (a progress bar and live held-out
curves; Stop, or any other click, stops it and keeps the weights reached), the held-out
pairs drawn as couplings and matrices, the "Error vs width" sweep, and heads trained on a
user's file of gold word alignments over the frozen sentence model. The numbers come
from ``engine.lab``, the figures from ``viz.lab``, every word from
``sinkscope_app/text/lab.<lang>.json``.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from engine import settings

settings.quiet_libraries()  # first: offline, no telemetry, before a library reads its environment

import streamlit as st  # noqa: E402

from engine.errors import SinkscopeError  # noqa: E402
from engine.lab.measures import MAX_POINTS  # noqa: E402
from engine.lab.nets import MODELS  # noqa: E402
from engine.lab.targets import DEFAULT_TARGET, NAMES  # noqa: E402
from engine.lab.training import (SWEEP_STEPS, SWEEP_WIDTHS, LabSettings, build,  # noqa: E402
                                 heldout_pairs, plan_errors, predict, sweep_widths, train)
from sinkscope_app import i18n  # noqa: E402
from viz import lab as vlab  # noqa: E402

log = logging.getLogger("sinkscope.lab")
LANGS = {"en": "English", "es": "Español"}
TEXT = {k: i18n.texts("lab", k) for k in LANGS}
D = LabSettings()
EPS_CHOICES = (0.05, 0.1, 0.2, 0.5, 1.0)
DEFAULTS = {"lab_lang": "en", "lab_target": DEFAULT_TARGET, "lab_models": list(MODELS),
            "lab_width": D.width, "lab_depth": D.depth, "lab_eps": D.eps,
            "lab_steps": D.steps, "lab_pair": 0, "lab_size": D.points,
            # not widgets: the sizes of the training and held-out sets (tests shrink them)
            "lab_train_pairs": D.train_pairs, "lab_heldout_pairs": D.heldout_pairs}
ss = st.session_state

if "_lab_init" not in ss:
    q = st.query_params
    for k, v in DEFAULTS.items():
        ss.setdefault(k, v)
    if q.get("lang") in LANGS:
        ss["lab_lang"] = q["lang"]
    if q.get("target") in NAMES:
        ss["lab_target"] = q["target"]
    # A shared link may also set the models, the width and the steps (?models=sinkhorn,softmax)
    picked = [m for m in str(q.get("models", "")).split(",") if m in MODELS]
    if picked:
        ss["lab_models"] = picked
    for key, lo, hi in (("width", 1, 64), ("steps", 1, 4000)):
        v = str(q.get(key, ""))
        if v.isdigit() and lo <= int(v) <= hi:
            ss[f"lab_{key}"] = int(v)
    ss["_lab_init"] = True
for k in DEFAULTS:  # keep every key across runs (Streamlit forgets undrawn widgets)
    ss[k] = ss[k] if k in ss else DEFAULTS[k]
ui = TEXT[ss["lab_lang"] if ss["lab_lang"] in LANGS else "en"]
st.set_page_config(page_title=ui["page_title"], page_icon="🧪", layout="wide")
theme = "dark" if getattr(st.context.theme, "type", None) == "dark" else "light"
words = {k: ui[k] for k in ("mass", "row", "col")} | {
    "step": ui["step_axis"], "heldout": ui["heldout_axis"], "width": ui["width_axis"]}


def on_train() -> None:
    ss["_lab_go"] = True


def on_stop() -> None:
    res = ss.get("_lab_results")
    if res and res["status"] == "training":
        res["status"] = "stopped"


def on_sweep() -> None:
    ss["_lab_sweep_go"] = True


def chosen() -> LabSettings:
    return LabSettings(target=ss["lab_target"], width=int(ss["lab_width"]),
                       depth=int(ss["lab_depth"]), eps=float(ss["lab_eps"]),
                       steps=int(ss["lab_steps"]), train_pairs=int(ss["lab_train_pairs"]),
                       heldout_pairs=int(ss["lab_heldout_pairs"]))


# A run left "training" was cut short by a click (Stop or any other): keep what it reached.
res = ss.get("_lab_results")
if res and res["status"] == "training" and not ss.get("_lab_go"):
    res["status"] = "stopped"

# --------------------------------------------------------------------------- settings
with st.sidebar:
    st.page_link("app.py", label=ui["main_link"], icon=":material/arrow_back:",
                 query_params={"lang": ss["lab_lang"] if ss["lab_lang"] in LANGS else "en"})
    st.page_link("pages/learn.py", label=ui["learn_link"], icon=":material/school:",
                 query_params={"lang": ss["lab_lang"] if ss["lab_lang"] in LANGS else "en"})
    st.page_link("pages/align.py", label=ui["align_link"], icon=":material/link:",
                 query_params={"lang": ss["lab_lang"] if ss["lab_lang"] in LANGS else "en"})
    st.subheader(ui["settings"])
    st.selectbox(ui["target"], list(NAMES), key="lab_target",
                 format_func=ui["targets"].get, help=ui["target_help"])
    st.multiselect(ui["models_label"], list(MODELS), key="lab_models",
                   format_func=ui["models"].get)
    st.slider(ui["width"], 1, 64, key="lab_width", help=ui["width_help"])
    st.slider(ui["depth"], 0, 4, key="lab_depth")
    st.select_slider(ui["eps"], options=list(EPS_CHOICES), key="lab_eps")
    st.number_input(ui["steps"], min_value=1, max_value=4000, step=50, key="lab_steps")

top = st.columns([6, 2], vertical_alignment="center")
top[0].markdown(f"### {ui['heading']}")
top[0].caption(ui["subtitle"])
top[1].segmented_control(ui["language"], list(LANGS), format_func=LANGS.get, key="lab_lang",
                         required=True, label_visibility="collapsed")
st.markdown(ui["theorem"])
st.query_params.update({"lang": ss["lab_lang"], "target": ss["lab_target"]})

buttons = st.columns([1, 1, 2, 4], vertical_alignment="center")
buttons[0].button(ui["train"], key="lab_train", type="primary", on_click=on_train,
                  disabled=not ss["lab_models"], width="stretch")
buttons[1].button(ui["stop"], key="lab_stop", on_click=on_stop, width="stretch")
buttons[2].button(ui["sweep"], key="lab_sweep", on_click=on_sweep,
                  disabled=not ss["lab_models"], width="stretch",
                  help=ui["sweep_help"].format(steps=min(int(ss["lab_steps"]), SWEEP_STEPS)))
status = st.empty()
bar = st.empty()
curves_slot = st.empty()


@st.cache_data(max_entries=4, show_spinner=False)
def text_pairs_of(text: str, name: str):
    from engine.alignment.readers import parse_pairs

    return parse_pairs(text, name=name, lowercase=True)


@st.cache_resource(show_spinner=False)
def _default_encoder():
    from engine.models.encoder import Encoder

    return Encoder.default()


def text_encoder():
    """The packaged sentence model, shared with the main page when it runs embedded."""
    from sinkscope_app import compute

    if not compute.served():
        return compute.encoder(compute.model_names()[0])
    return _default_encoder()


def curves_figure(res: dict):
    return vlab.loss_curves(res["curves"], labels=ui["models"], title=ui["curves_title"],
                            words=words, total_steps=res["steps"], theme=theme)


def run_training(s0: LabSettings, models: list[str]) -> None:
    """Train each chosen model in turn, drawing the curves as they grow."""
    res = {"status": "training", "target": s0.target, "steps": s0.steps, "settings": {},
           "models": {}, "runs": {}, "curves": {m: ([], []) for m in models}, "seconds": 0.0}
    ss["_lab_results"] = res
    progress = bar.progress(0.0, text=ui["training"].format(
        model=ui["models"][models[0]], step=0, steps=s0.steps))
    draws = [0]
    for i, m in enumerate(models):
        s = replace(s0, model=m)
        model = build(s)
        res["settings"][m], res["models"][m] = s, model

        def report(p, m=m, i=i) -> None:
            res["curves"][m][0].append(p.step)
            res["curves"][m][1].append(p.heldout_l1)
            progress.progress((i + p.step / p.steps) / len(models),
                              text=ui["training"].format(model=ui["models"][m], step=p.step,
                                                         steps=p.steps))
            draws[0] += 1
            curves_slot.plotly_chart(curves_figure(res), key=f"lab_live_{draws[0]}",
                                     width="stretch")

        run = train(s, model=model, callback=report)
        res["runs"][m] = run
        res["seconds"] += run.seconds
    res["status"] = "done"
    bar.empty()


try:
    if ss.pop("_lab_go", False) and ss["lab_models"]:
        ss["lab_pair"], ss["lab_size"] = 0, D.points
        run_training(chosen(), [m for m in MODELS if m in ss["lab_models"]])
    res = ss.get("_lab_results")
    if ss.pop("_lab_sweep_go", False) and ss["lab_models"]:
        s0 = chosen()
        progress = bar.progress(0.0)
        errs = sweep_widths(s0, [m for m in MODELS if m in ss["lab_models"]],
                            callback=lambda done, total, m, w: progress.progress(
                                done / total, text=ui["sweeping"].format(
                                    width=w, model=ui["models"][m])))
        ss["_lab_sweep"] = {"target": s0.target, "errors": errs}
        bar.empty()

    if not res:
        status.info(ui["no_results"])
    else:
        if res["status"] == "stopped":
            status.warning(ui["stopped"])
        elif res["status"] == "done":
            status.success(ui["trained"].format(n=len(res["runs"]), seconds=res["seconds"]))
        curves_slot.plotly_chart(curves_figure(res), key="lab_curves", width="stretch")
        if res["runs"]:
            st.dataframe([{ui["table_model"]: ui["models"][m],
                           ui["table_l1"]: round(r.heldout_l1, 4),
                           ui["table_l1_double"]: round(r.heldout_l1_double, 4),
                           ui["table_row"]: f"{r.row_err:.1e}",
                           ui["table_col"]: f"{r.col_err:.1e}",
                           ui["table_seconds"]: round(r.seconds, 1)}
                          for m, r in res["runs"].items()], hide_index=True)
        s0 = next(iter(res["settings"].values()))
        c1, c2 = st.columns(2)
        c2.slider(ui["size"].format(n=s0.points), 3, min(32, MAX_POINTS), key="lab_size",
                  help=ui["size_help"])
        pairs, plans = heldout_pairs(s0, int(ss["lab_size"]))
        ss["lab_pair"] = min(int(ss["lab_pair"]), len(pairs) - 1)
        c1.slider(ui["pair"], 0, len(pairs) - 1, key="lab_pair")
        k = int(ss["lab_pair"])
        one = pairs.take([k])
        shown = {"target": plans[k]}
        notes = {}
        for m, model in res["models"].items():
            P = predict(model, one)
            l1, row, col = plan_errors(P, plans[k:k + 1], one)
            shown[m] = P[0]
            notes[m] = ui["note"].format(l1=l1, row=row, col=col)
        labels = {"target": ui["target_panel"], **ui["models"]}
        st.plotly_chart(vlab.couplings(one.x[0], one.a[0], one.y[0], one.b[0], shown,
                                       labels=labels, notes=notes, words=words, theme=theme,
                                       title=ui["couplings_title"].format(
                                           k=k, n=one.x.shape[1])),
                        key="lab_couplings", width="stretch")
        st.plotly_chart(vlab.matrices(shown, labels=labels, title=ui["matrices_title"],
                                      words=words, theme=theme),
                        key="lab_matrices", width="stretch")
    sweep = ss.get("_lab_sweep")
    if sweep:
        st.plotly_chart(vlab.error_vs_width(SWEEP_WIDTHS, sweep["errors"], labels=ui["models"],
                                            title=ui["sweep_title"], words=words, theme=theme),
                        key="lab_sweep_chart", width="stretch")

    # ----------------------------------------------------------------- text relation
    st.markdown(f"#### {ui['text_heading']}")
    st.caption(ui["text_intro"])
    up = st.file_uploader(ui["text_file"], key="lab_text_upload",
                          type=["tsv", "txt", "json", "jsonl", "csv"])
    if up is not None:
        from engine.alignment.readers import decode

        ss["lab_text_data"], ss["lab_text_name"] = decode(up.getvalue(), up.name), up.name
    if ss.get("lab_text_data"):
        text_pairs = text_pairs_of(ss["lab_text_data"], ss.get("lab_text_name", "file"))
        st.caption(ui["text_loaded"].format(n=sum(p.has_gold for p in text_pairs)))
        if st.button(ui["text_train"], key="lab_text_train"):
            from engine.lab.text import compare_heads

            note = st.empty()
            ss["_lab_text_scores"] = compare_heads(
                text_pairs, text_encoder(),
                progress=lambda what: note.info(ui["text_running"].format(
                    what=ui["text_names"].get(what, what))))
            note.empty()
    if ss.get("_lab_text_scores"):
        st.dataframe([{ui["text_head"]: ui["text_names"][h.name],
                       ui["text_f1"]: round(h.total_f1, 3),
                       ui["text_theta"]: "" if h.theta is None else f"{h.theta:.2f}",
                       ui["text_seconds"]: round(h.seconds, 1)}
                      for h in ss["_lab_text_scores"]], hide_index=True, key="lab_text_table")
except SinkscopeError as e:
    st.error(ui["error"].format(error=e))
except Exception as e:  # never show a traceback to a visitor; log it for operators
    log.exception("lab page failed")
    st.error(ui["error"].format(error=type(e).__name__))
