"""The Corpus view: upload a file of pairs, align every pair as a job of the session, then
the table (sortable, a row opens the pair), the corpus scores and the exports.

The uploaded file, the aligned corpus and the table's order are kept in the session: a
rerun, a language switch, a trip to Pair and back, or another page and back find them as
they were, and a running job goes on (its progress shown again), never starting over.
"""

from __future__ import annotations

import streamlit as st

from engine import SinkscopeError, settings
from engine.alignment.readers import AlignFileError

from .. import jobs, locale
from ..inputs import md_text
from . import calls, corpus
from .corpus import MAX_CORPUS_PAIRS, MAX_UPLOAD_MB
from .params import METHODS, SOFTMAX_METHOD, TRANSPORT_METHOD
from .pair import on_method
from .words import column_names, file_error, table, unread_message

JOB = "align_corpus"
SORTS = ("pair", "disagreement", "null ratio", *[f"F1 {m}" for m in METHODS])


def _upload(t: dict):
    """The uploader and the 1-based switch; the file (name, bytes): this run's upload, or
    the one kept from before (None when there is none)."""
    ss, num = st.session_state, locale.numbers(t["_lang"])
    f = st.file_uploader(t["upload"], key="align_file", max_upload_size=MAX_UPLOAD_MB,
                         help=t["upload_help"].format(mb=MAX_UPLOAD_MB,
                                                      pairs=num.count(MAX_CORPUS_PAIRS)))
    st.checkbox(t["one_based"], key="align_one_based")
    if f is not None:
        ss["align_upload"] = (f.name, f.getvalue())
    kept = ss.get("align_upload")
    if kept is not None and f is None:
        st.caption(t["kept_file"].format(name=md_text(kept[0], 80)))
    return kept


def progress_text(job: jobs.Job, t: dict) -> str:
    """What a corpus job is doing, in the page's words (its place in line while it waits)."""
    num = locale.numbers(t["_lang"])
    if job.state == "waiting":
        return t["waiting"].format(place=num.count(max(job.place, 1)))
    info = job.info
    if info.get("what") == "encode":
        return t["computing"].format(done=num.count(info.get("done", 0)),
                                     total=num.count(info.get("total", 0)))
    return t["extracting"].format(method=info.get("what", "…"))


def _start(t: dict, raw: bytes, name: str):
    """The session's corpus job for this file and these settings: the running or finished
    one, else a new one (None when the file cannot be read: the page says why)."""
    ss = st.session_state
    lower, one_based = bool(ss["align_lower"]), bool(ss.get("align_one_based"))
    model = calls.model_name()
    key = corpus.corpus_key(raw, name, lower, one_based, model)
    job = jobs.get(ss, JOB)
    if job is not None and job.key == key:
        return job
    try:
        pairs = corpus.read_file(raw, name, one_based, t)
    except (AlignFileError, SinkscopeError) as e:
        st.error(t["bad_file"].format(error=md_text(file_error(e, t), 400)))
        return None

    def work(job: jobs.Job):
        def report(share, what, **info):
            job.report(share, what=what, **info)
        return corpus.align_corpus(pairs, key, lower, model, report)

    return jobs.start(ss, JOB, key, work)


def _run(t: dict, job: jobs.Job) -> corpus.Corpus | None:
    """The job's progress until it ends (Stop ends it), then its corpus (None, with a
    message, when it was stopped or failed)."""
    if job.active:
        bar = st.empty()
        st.button(t["stop"], key="align_stop", on_click=job.stop)
        jobs.watch(job, lambda j: bar.progress(j.progress, text=progress_text(j, t)))
        if job.active:  # (watched for jobs.WATCH_S only): the bar stays, the run ends
            return None
        bar.empty()
    if job.state == "stopped":
        st.warning(t["corpus_stopped"])
        st.button(t["run_again"], key="align_again",
                  on_click=lambda: jobs.forget(st.session_state, JOB))
        return None
    if job.state == "failed":
        e = job.error
        shown = unread_message(e, t) if getattr(e, "code", "") == "unread_pairs" \
            else file_error(e, t) if isinstance(e, SinkscopeError) else type(e).__name__
        st.error(t["bad_file"].format(error=md_text(shown, 400)))
        return None
    st.session_state["_align_corpus"] = job.result
    return job.result


def open_row(c: corpus.Corpus, df, event) -> bool:
    """A row click opens that pair in the Pair view; True when it did (rerun then). The
    same selection is acted on once, so coming back to the table does not reopen it."""
    ss = st.session_state
    try:
        rows = [int(r) for r in event["selection"]["rows"]]
    except (KeyError, TypeError, ValueError):
        rows = []
    mark = (c.key, tuple(rows))
    if not rows or ss.get("_align_row_done") == mark or not 0 <= rows[0] < len(df):
        return False
    ss["_align_row_done"] = mark
    k = int(df["pair"].iloc[rows[0]]) - 1
    p = c.pairs[k]
    # applied by the page before its widgets are drawn (see :func:`apply_pending`)
    ss["_align_pending"] = {"align_a": p["text_a"], "align_b": p["text_b"],
                            "align_gold": p.get("gold", ""), "align_view": "pair",
                            "_align_opened": k + 1}
    return True


def apply_pending() -> None:
    """State set by the last run for this one (a row opened), before any widget exists."""
    st.session_state.update(st.session_state.pop("_align_pending", None) or {})


def _table(t: dict, c: corpus.Corpus):
    """The corpus table in the order chosen (kept in the session); a row click opens it."""
    ss = st.session_state
    df = corpus.corpus_table(c)  # English column names: the CSV export's
    names = column_names(t, df.columns)
    s1, s2 = st.columns([3, 1], vertical_alignment="bottom")
    by = s1.selectbox(t["sort_by"], SORTS, key="align_sort", format_func=names.get)
    desc = s2.toggle(t["descending"], key="align_desc")
    shown = df.sort_values(by, ascending=not desc, kind="stable", na_position="last")
    st.caption(t["table_help"])
    config = {names[k]: st.column_config.TextColumn(names[k], width=w)
              for k, w in (("text A", "medium"), ("text B", "medium"), ("gold", "small"))}
    order = [names[k] for k in ("pair", "text A", "text B", "disagreement", "null ratio",
                                *[f"F1 {m}" for m in METHODS], "gold")]
    event = st.dataframe(
        locale.table(shown.rename(columns=names), t["_lang"], digits=3), key="align_table",
        on_select="rerun", selection_mode="single-row", hide_index=True, width="stretch",
        column_config=config, column_order=order)
    if open_row(c, shown, event):
        st.rerun()
    return df


def _exports(t: dict, c: corpus.Corpus, df) -> None:
    ss = st.session_state
    worst = corpus.most_disagreeing(c)
    if worst:
        st.caption(t["disagree"].format(soft=SOFTMAX_METHOD, ot=TRANSPORT_METHOD,
                                        pairs=", ".join(map(str, worst))))
    d1, d2, d3 = st.columns([2, 2, 3])
    d1.download_button(t["export_csv"], corpus.table_csv(df), file_name="alignments.csv",
                       mime="text/csv", key="align_csv")
    d3.selectbox(t["method"], METHODS, key="align_method", on_change=on_method)
    d2.download_button(t["export_links"].format(method=ss["align_method"]),
                       corpus.links_file(c, ss["align_method"]),
                       file_name=f"links-{ss['align_method']}.txt", mime="text/plain",
                       key="align_links")


def _scores(t: dict, c: corpus.Corpus, theme: str) -> None:
    import viz.align as va

    num = locale.numbers(t["_lang"])
    st.markdown("**" + t["corpus_scores"] + "**")
    rows = corpus.scores_rows(c, num)
    st.table(table(rows, t), hide_index=True)
    st.plotly_chart(va.corpus_scores({m: c.scores[m]["macro"] for m in METHODS},
                                     {m: c.scores[m]["macro_ci"] for m in METHODS},
                                     theme=theme, words=t.get("figure"), num=num),
                    key="align_corpus_chart", width="stretch")


def corpus_view(t: dict, theme: str) -> None:
    """The Corpus view: upload, align every pair (a job), table, scores, exports."""
    upload = _upload(t)
    if upload is None:
        st.info(t["no_file"])
        return
    job = _start(t, upload[1], upload[0])
    c = _run(t, job) if job is not None else None
    if c is None:
        return
    if calls.served():
        st.caption(t["served_note"].format(url=settings.CONFIG.engine))
    st.success(t["corpus_done"].format(n=len(c.pairs), gold=c.n_gold, k=len(METHODS)))
    lower, one_based = bool(st.session_state["align_lower"]), bool(
        st.session_state.get("align_one_based"))
    st.caption(t["corpus_tokens"].format(base="1" if one_based else "0",
                                         lower=t["lower_on"] if lower else ""))
    df = _table(t, c)
    _exports(t, c, df)
    if not c.scores:
        st.info(t["no_gold"])
        return
    _scores(t, c, theme)
