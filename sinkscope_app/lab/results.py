"""What the Lab shows once a job has run: the trained models' curves, their table (a row
for every model whose training ended, a stopped one too), a held-out pair (of the training
size, or of a size never trained on) as every model couples it, as couplings and as
matrices with each model's second marginal against the target's (the engine's
``lab_predict``, from the weights the job returned), and the error against width."""

from __future__ import annotations

import streamlit as st

from engine.lab.config import MAX_POINTS, SWEEP_WIDTHS
from viz import lab as vlab

from .. import engines, frame, jobs, locale


def _status(fr: frame.Frame, status, res) -> None:
    ui, num = fr.words, fr.num
    if res.status == "stopped":
        status.warning(ui["stopped"])
    elif res.status == "done":
        status.success(ui["trained"].format(n=len(res.runs), seconds=num.fixed(res.seconds, 1)))


def _table(fr: frame.Frame, res) -> None:
    """A row for every model whose training ended (a stopped one too)."""
    ui, num = fr.words, fr.num
    rows = []
    for m in res.models:
        r = res.runs.get(m)
        if r is None:
            continue
        rows.append({ui["table_model"]: ui["models"][m], ui["table_l1"]: float(r.heldout_l1),
                     ui["table_l1_double"]: float(r.heldout_l1_double),
                     ui["table_row"]: float(r.row_err), ui["table_col"]: float(r.col_err),
                     ui["table_steps"]: ui["table_steps_of"].format(
                         done=num.count(r.steps_done), steps=num.count(res.steps)),
                     ui["table_seconds"]: float(r.seconds)})
    st.table(locale.table(rows, fr.lang, digits=4, formats={
        ui["table_row"]: ".1e", ui["table_col"]: ".1e",
        ui["table_seconds"]: lambda x: num.fixed(x, 1)}), hide_index=True)


@st.cache_data(show_spinner=False, max_entries=32)
def predict(engine: str, job_id: str, size: int, pair: int, _res=None):
    """A held-out pair as the job's trained models couple it (the engine's
    ``lab_predict``, kept per job, size and pair)."""
    s0 = next(iter(_res.settings.values()))
    return engines.current().lab_predict(s0, _res.weights, int(size), int(pair))


def _heldout(fr: frame.Frame, res) -> None:
    """A held-out pair (of the training size, or of a size never trained on) as every
    model couples it, beside the target."""
    from .page import words_of

    ss, ui, num = st.session_state, fr.words, fr.num
    s0 = next(iter(res.settings.values()))
    c1, c2 = st.columns(2)
    c2.slider(ui["size"].format(n=s0.points), 3, min(32, MAX_POINTS), key="lab_size",
              help=ui["size_help"])
    p = predict(engines.current().name, jobs.job_id(ss, "lab_train") or "", int(ss["lab_size"]),
                int(ss["lab_pair"]), _res=res)
    if p.pair != int(ss["lab_pair"]):
        ss["lab_pair"] = p.pair
    c1.slider(ui["pair"], 0, max(p.n_pairs - 1, 1), key="lab_pair")
    shown = {"target": p.target, **p.plans}
    notes = {m: ui["note"].format(l1=num.fixed(e["l1"], 3), row=num.general(e["row"], ".1e"),
                                  col=num.general(e["col"], ".1e"))
             for m, e in p.errors.items()}
    labels = {"target": ui["target_panel"], **ui["models"]}
    st.plotly_chart(vlab.couplings(p.x, p.a, p.y, p.b, shown, labels=labels, notes=notes,
                                   words=words_of(ui), theme=fr.theme, num=num,
                                   title=ui["couplings_title"].format(k=p.pair, n=p.size),
                                   note=ui["couplings_note"].format(
                                       share=num.percent(vlab.LINK_SHARE))),
                    key="lab_couplings", width="stretch")
    st.plotly_chart(vlab.matrices(shown, b=p.b, labels=labels, title=ui["matrices_title"],
                                  note=ui["matrices_note"], words=words_of(ui),
                                  theme=fr.theme, num=num),
                    key="lab_matrices", width="stretch")


def results(fr: frame.Frame, status, curves_slot, res, job=None) -> None:
    """The trained models: status, curves, table, held-out couplings (``res``: a
    ``LabTrainResult``, or None before a training ended)."""
    from .page import curves_figure

    if res is None:
        if job is None:
            status.info(fr.words["no_results"])
        return
    _status(fr, status, res)
    curves_slot.plotly_chart(curves_figure(res, fr.words, fr), key="lab_curves",
                             width="stretch")
    if res.runs:
        _table(fr, res)
    if res.weights:
        _heldout(fr, res)


def sweep_chart(fr: frame.Frame, res) -> None:
    """The error against width, as far as the sweep went (a stopped one keeps its widths;
    ``res``: a ``SweepResult``, or None)."""
    from .page import words_of

    if res is None or not res.errors:
        return
    ui = fr.words
    if res.status == "stopped":
        st.warning(ui["sweep_stopped"])
    st.plotly_chart(vlab.error_vs_width(SWEEP_WIDTHS, res.errors, labels=ui["models"],
                                        title=ui["sweep_title"], words=words_of(ui),
                                        theme=fr.theme, num=fr.num),
                    key="lab_sweep_chart", width="stretch")
