"""What the Lab shows once a job has run: the trained models' curves, their table (a row
for every model that draws a coupling, a stopped one too), the held-out couplings and
matrices with each model's second marginal against the target's, and the error against
width."""

from __future__ import annotations

import streamlit as st

from engine.lab.measures import MAX_POINTS
from engine.lab.training import SWEEP_WIDTHS, heldout_pairs, make_data, plan_errors, predict
from viz import lab as vlab

from .. import frame, jobs, locale


def _status(fr: frame.Frame, status, res: dict) -> None:
    ui, num = fr.words, fr.num
    if res["status"] == "stopped":
        status.warning(ui["stopped"])
    elif res["status"] == "done":
        status.success(ui["trained"].format(n=len(res["runs"]),
                                            seconds=num.fixed(res["seconds"], 1)))


def table_row(m: str, res: dict) -> dict:
    """A model's numbers on the held-out pairs: its run's when it ended, else (a model cut
    short before its run returned) those of the weights it has now, as the couplings draw
    them."""
    run, steps = res["runs"].get(m), res["curves"][m][0]
    if run is not None:
        return {"l1": run.heldout_l1, "l1_double": run.heldout_l1_double, "row": run.row_err,
                "col": run.col_err, "steps": run.steps_done, "seconds": run.seconds}
    s, model = res["settings"][m], res["models"][m]
    d = make_data(s)
    l1, row, col = plan_errors(predict(model, d.heldout), d.heldout_plans, d.heldout)
    l1d = plan_errors(predict(model, d.double), d.double_plans, d.double)[0]
    return {"l1": l1, "l1_double": l1d, "row": row, "col": col,
            "steps": steps[-1] if steps else 0, "seconds": None}


def _table(fr: frame.Frame, res: dict) -> None:
    """A row for every model that draws a coupling (a stopped one too)."""
    ui, num = fr.words, fr.num
    rows = []
    for m in res["models"]:
        r = table_row(m, res)
        rows.append({ui["table_model"]: ui["models"][m], ui["table_l1"]: float(r["l1"]),
                     ui["table_l1_double"]: float(r["l1_double"]),
                     ui["table_row"]: float(r["row"]), ui["table_col"]: float(r["col"]),
                     ui["table_steps"]: ui["table_steps_of"].format(
                         done=num.count(r["steps"]), steps=num.count(res["steps"])),
                     ui["table_seconds"]: None if r["seconds"] is None else float(r["seconds"])})
    st.table(locale.table(rows, fr.lang, digits=4, formats={
        ui["table_row"]: ".1e", ui["table_col"]: ".1e",
        ui["table_seconds"]: lambda x: num.fixed(x, 1)}), hide_index=True)


def _heldout(fr: frame.Frame, res: dict) -> None:
    """A held-out pair (of the training size, or of a size never trained on) as every
    model couples it, beside the target."""
    from ..lab.page import words_of

    ss, ui, num = st.session_state, fr.words, fr.num
    s0 = next(iter(res["settings"].values()))
    c1, c2 = st.columns(2)
    c2.slider(ui["size"].format(n=s0.points), 3, min(32, MAX_POINTS), key="lab_size",
              help=ui["size_help"])
    pairs, plans = heldout_pairs(s0, int(ss["lab_size"]))
    ss["lab_pair"] = min(int(ss["lab_pair"]), len(pairs) - 1)
    c1.slider(ui["pair"], 0, len(pairs) - 1, key="lab_pair")
    k = int(ss["lab_pair"])
    one = pairs.take([k])
    shown, notes = {"target": plans[k]}, {}
    for m, model in res["models"].items():
        P = predict(model, one)
        l1, row, col = plan_errors(P, plans[k:k + 1], one)
        shown[m] = P[0]
        notes[m] = ui["note"].format(l1=num.fixed(l1, 3), row=num.general(row, ".1e"),
                                     col=num.general(col, ".1e"))
    labels = {"target": ui["target_panel"], **ui["models"]}
    st.plotly_chart(vlab.couplings(one.x[0], one.a[0], one.y[0], one.b[0], shown,
                                   labels=labels, notes=notes, words=words_of(ui),
                                   theme=fr.theme, num=num, title=ui["couplings_title"].format(
                                       k=k, n=one.x.shape[1]), note=ui["couplings_note"].format(
                                       share=num.percent(vlab.LINK_SHARE))),
                    key="lab_couplings", width="stretch")
    st.plotly_chart(vlab.matrices(shown, b=one.b[0], labels=labels,
                                  title=ui["matrices_title"], note=ui["matrices_note"],
                                  words=words_of(ui),
                                  theme=fr.theme, num=num),
                    key="lab_matrices", width="stretch")


def results(fr: frame.Frame, status, curves_slot, res: dict | None) -> None:
    """The trained models: status, curves, table, held-out couplings."""
    from ..lab.page import curves_figure

    if not res:
        status.info(fr.words["no_results"])
        return
    _status(fr, status, res)
    curves_slot.plotly_chart(curves_figure(res, fr.words, fr), key="lab_curves",
                             width="stretch")
    if res["models"]:
        _table(fr, res)
        _heldout(fr, res)


def sweep_chart(fr: frame.Frame, job: jobs.Job | None) -> None:
    """The error against width, as far as the sweep went (a stopped one keeps its widths)."""
    from ..lab.page import words_of

    if job is None or job.active or not job.result or not job.result.get("errors"):
        return
    ui = fr.words
    if job.state == "stopped":
        st.warning(ui["sweep_stopped"])
    st.plotly_chart(vlab.error_vs_width(SWEEP_WIDTHS, job.result["errors"], labels=ui["models"],
                                        title=ui["sweep_title"], words=words_of(ui),
                                        theme=fr.theme, num=fr.num),
                    key="lab_sweep_chart", width="stretch")
