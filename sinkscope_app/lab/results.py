"""What the Lab shows once a job has run: the trained models' curves, table and held-out
couplings; the error against width; and the heads trained on a person's pairs (with its
upload, bounded like Align's)."""

from __future__ import annotations

import streamlit as st

from engine.lab.measures import MAX_POINTS
from engine.lab.training import SWEEP_WIDTHS, heldout_pairs, plan_errors, predict
from viz import lab as vlab

from .. import frame, jobs, locale
from ..align.corpus import MAX_CORPUS_PAIRS, MAX_UPLOAD_BYTES, MAX_UPLOAD_MB

TEXT = "lab_text"


def _status(fr: frame.Frame, status, res: dict) -> None:
    ui, num = fr.words, fr.num
    if res["status"] == "stopped":
        status.warning(ui["stopped"])
    elif res["status"] == "done":
        status.success(ui["trained"].format(n=len(res["runs"]),
                                            seconds=num.fixed(res["seconds"], 1)))


def _table(fr: frame.Frame, res: dict) -> None:
    ui = fr.words
    rows = [{ui["table_model"]: ui["models"][m], ui["table_l1"]: float(r.heldout_l1),
             ui["table_l1_double"]: float(r.heldout_l1_double),
             ui["table_row"]: float(r.row_err), ui["table_col"]: float(r.col_err),
             ui["table_seconds"]: float(r.seconds)} for m, r in res["runs"].items()]
    st.table(locale.table(rows, fr.lang, digits=4, formats={
        ui["table_row"]: ".1e", ui["table_col"]: ".1e",
        ui["table_seconds"]: lambda x: fr.num.fixed(x, 1)}), hide_index=True)


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
                                       k=k, n=one.x.shape[1])),
                    key="lab_couplings", width="stretch")
    st.plotly_chart(vlab.matrices(shown, labels=labels, title=ui["matrices_title"],
                                  words=words_of(ui), theme=fr.theme, num=num),
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
    if res["runs"]:
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


def _upload(fr: frame.Frame) -> None:
    """The text upload, bounded like Align's (size and pairs); kept in the session."""
    from engine.alignment.readers import decode

    ss, ui, num = st.session_state, fr.words, fr.num
    up = st.file_uploader(ui["text_file"], key="lab_text_upload", max_upload_size=MAX_UPLOAD_MB,
                          type=["tsv", "txt", "json", "jsonl", "csv"])
    if up is None:
        return
    raw = up.getvalue()
    if len(raw) > MAX_UPLOAD_BYTES:
        st.error(ui["too_big"].format(size=num.fixed(len(raw) / 2**20, 1), mb=MAX_UPLOAD_MB))
        return
    ss["lab_text_data"], ss["lab_text_name"] = decode(raw, up.name), up.name


@st.cache_data(max_entries=4, show_spinner=False)
def text_pairs_of(text: str, name: str):
    from engine.alignment.readers import parse_pairs

    return parse_pairs(text, name=name, lowercase=True)


def text_relation(fr: frame.Frame) -> None:
    """Heads trained on a person's file of gold alignments (a job), and their scores."""
    from . import runs

    ss, ui, num = st.session_state, fr.words, fr.num
    st.markdown(f"#### {ui['text_heading']}")
    st.caption(ui["text_intro"])
    _upload(fr)
    if ss.get("lab_text_data"):
        pairs = text_pairs_of(ss["lab_text_data"], ss.get("lab_text_name", "file"))
        if len(pairs) > MAX_CORPUS_PAIRS:
            st.error(ui["too_many"].format(n=num.count(len(pairs)),
                                           limit=num.count(MAX_CORPUS_PAIRS)))
            return
        st.caption(ui["text_loaded"].format(n=num.count(sum(p.has_gold for p in pairs))))
        if st.button(ui["text_train"], key="lab_text_train"):
            jobs.forget(ss, TEXT)
            jobs.start(ss, TEXT, id(pairs), runs.text_heads(pairs))
    job = jobs.get(ss, TEXT)
    if job is None:
        return
    if job.active:
        note = st.empty()
        st.button(ui["stop"], key="lab_text_stop", on_click=job.stop)
        jobs.watch(job, lambda j: note.info(
            ui["waiting"].format(place=num.count(max(j.place, 1))) if j.state == "waiting"
            else ui["text_running"].format(what=ui["text_names"].get(j.info.get("what"), "…"))))
        if job.active:
            return
        note.empty()
    if job.state == "failed":
        st.error(ui["error"].format(error=locale.error(job.error, fr.lang)))
    elif job.result:
        _text_table(fr, job.result)


def _text_table(fr: frame.Frame, scores) -> None:
    ui = fr.words
    rows = [{ui["text_head"]: ui["text_names"][h.name], ui["text_f1"]: float(h.total_f1),
             ui["text_theta"]: None if h.theta is None else float(h.theta),
             ui["text_seconds"]: float(h.seconds)} for h in scores]
    st.table(locale.table(rows, fr.lang, formats={
        ui["text_theta"]: lambda x: fr.num.fixed(x, 2),
        ui["text_seconds"]: lambda x: fr.num.fixed(x, 1)}), hide_index=True)
