"""The Corpus view: upload a file of pairs, align every pair as a job of the session, then
the table (sortable, a row opens the pair), the exports and the verdict: the methods ranked
by total F1 (the best marked) with their intervals and settings, the paired comparisons,
a chart zoomed to the range that separates them, and the command that prints the table.

The uploaded file, the aligned corpus and the table's order are kept in the session: a
rerun, a language switch, a trip to Pair and back, or another page and back find them as
they were, and a running job goes on (its progress shown again), never starting over.
"""

from __future__ import annotations

import hashlib
import math

import streamlit as st

from engine import SinkscopeError, settings
from engine.aligner.config import AlignerError
from engine.alignment.readers import AlignFileError

from .. import jobs, locale
from ..inputs import md_text
from . import calls, corpus
from .corpus import MAX_CORPUS_PAIRS, MAX_UPLOAD_MB
from .params import SOFTMAX_METHOD, TRANSPORT_METHOD, aligners
from .pair import on_method
from .words import (aligner_failed, column_names, file_error, paired_rows, ranked_rows,
                    settings_words, table, unread_message, written)

JOB = "align_corpus"
HEADER_FONT_PX, HEADER_PAD_PX = 13, 32  # the grid's header text (text_px errs wide); padding


def _upload(t: dict):
    """The uploader (our words under it: Streamlit's own cannot be translated) and the
    1-based switch; the file (name, bytes) to align: this run's upload once it reads, or
    the one kept from before (None when there is none). A file that does not read is said
    on the page and replaces nothing: the results of the kept one stay."""
    ss, num = st.session_state, locale.numbers(t["_lang"])
    f = st.file_uploader(t["upload"], key="align_file", max_upload_size=MAX_UPLOAD_MB,
                         help=t["upload_help"].format(mb=MAX_UPLOAD_MB,
                                                      pairs=num.count(MAX_CORPUS_PAIRS)))
    st.caption(t["upload_limits"].format(mb=MAX_UPLOAD_MB, pairs=num.count(MAX_CORPUS_PAIRS)))
    st.checkbox(t["one_based"], key="align_one_based")
    kept, error = ss.get("align_upload"), None
    new = None if f is None else (f.name, f.getvalue())
    if new is not None and new != kept:
        error = _rejected(*new, t)
        if error is None:
            ss["align_upload"] = kept = new
    if error is not None:
        st.error(t["bad_file"].format(error=md_text(error, 400)))
        if kept is not None:
            st.caption(t["kept_after_bad"].format(name=md_text(kept[0], 80)))
    elif kept is not None and f is None:
        st.caption(t["kept_file"].format(name=md_text(kept[0], 80)))
    return kept


def _rejected(name: str, raw: bytes, t: dict) -> str | None:
    """Why an uploaded file cannot be aligned, in the page's language (None when it
    reads). The last file's reading is kept, so a rerun does not read it again (a
    language switch does: the page's own sentences are in its language)."""
    ss = st.session_state
    one_based = bool(ss.get("align_one_based"))
    mark = (name, hashlib.sha256(raw).hexdigest(), one_based, t["_lang"])
    seen = ss.get("_align_checked")
    if seen is None or seen[0] != mark:
        try:
            corpus.read_file(raw, name, one_based, t)
            seen = (mark, None)
        except (AlignFileError, SinkscopeError) as e:
            seen = (mark, e)
        ss["_align_checked"] = seen
    return None if seen[1] is None else file_error(seen[1], t)


def progress_text(job: jobs.Job, t: dict) -> str:
    """What a corpus job is doing, in the page's words (its place in line while it waits)."""
    num = locale.numbers(t["_lang"])
    if job.state == "waiting":
        return t["waiting"].format(place=num.count(max(job.place, 1)))
    info, what = job.info, job.info.get("what", "…")
    if what == "encode":
        return t["computing"].format(done=num.count(info.get("done", 0)),
                                     total=num.count(info.get("total", 0)))
    return t["extracting_all"] if what == "links" else t["extracting"].format(method=what)


def _start(t: dict, raw: bytes, name: str):
    """The session's corpus job for this file and these settings: the running or finished
    one, else a new one (None when the file cannot be read: the page says why)."""
    ss = st.session_state
    lower, one_based = bool(ss["align_lower"]), bool(ss.get("align_one_based"))
    model, trained = calls.model_name(), calls.aligner_name() if aligners() else ""
    key = corpus.corpus_key(raw, name, lower, one_based, model) + f":{trained}"
    job = jobs.get(ss, JOB)
    if job is not None and job.key == key:
        return job
    try:
        pairs = corpus.read_file(raw, name, one_based, t)
    except (AlignFileError, SinkscopeError) as e:
        st.error(t["bad_file"].format(error=md_text(file_error(e, t), 400)))
        return None
    try:
        aligner = calls.load_aligner(trained, model) if trained else None
    except AlignerError as e:  # the other methods go on without it
        st.warning(aligner_failed(e, t))
        aligner = None

    def work(job: jobs.Job):
        def report(share, what, **info):
            job.report(share, what=what, **info)
        return corpus.align_corpus(pairs, key, lower, model, report, aligner=aligner,
                                   name=name, one_based=one_based)

    return jobs.start(ss, JOB, key, work)


def _run(t: dict, job: jobs.Job) -> corpus.Corpus | None:
    """The job's progress until it ends (Stop ends it), then its corpus (None, with a
    message, when it was stopped or failed)."""
    if job.active:
        bar, stop = st.empty(), st.empty()
        stop.button(t["stop"], key="align_stop", on_click=job.stop)
        jobs.watch(job, lambda j: bar.progress(j.progress, text=progress_text(j, t)))
        if job.active:  # (watched for jobs.WATCH_S only): the bar stays, the run ends
            return None
        bar.empty()
        stop.empty()
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
    per_method = [k for k in df.columns if k.split(" ", 1)[-1] in c.methods]
    sorts = ["pair", "disagreement", "null ratio", *per_method]
    if ss.get("align_sort") not in sorts:
        ss["align_sort"] = "pair"
    s1, s2 = st.columns([3, 1], vertical_alignment="bottom")
    by = s1.selectbox(t["sort_by"], sorts, key="align_sort", format_func=names.get)
    desc = s2.toggle(t["descending"], key="align_desc")
    shown = df.sort_values(by, ascending=not desc, kind="stable", na_position="last")
    st.caption(t["table_help"])
    # every column's width given (the grid measures no cell of 800 rows to size one)
    config = {names[k]: st.column_config.TextColumn(
        names[k], width="medium" if k in ("text A", "text B") else header_px(names[k]))
        for k in df.columns if k != "pair"}
    config[names["pair"]] = st.column_config.NumberColumn(names["pair"],
                                                          width=header_px(names["pair"]))
    order = [names[k] for k in ("pair", "text A", "text B", "disagreement", "null ratio",
                                *per_method, "gold")]
    event = st.dataframe(
        written(shown.rename(columns=names), t), key="align_table",
        on_select="rerun", selection_mode="single-row", hide_index=True, width="stretch",
        column_config=config, column_order=order)
    if open_row(c, shown, event):
        st.rerun()
    return df


def header_px(label: str, least: int = 64) -> int:
    """A table column's width in pixels that shows its whole header: the grid cuts a
    header to its column, never wraps it ("F1 similarity-threshold", "discrepancia")."""
    from viz.theme import text_px

    return max(least, math.ceil(text_px(label, HEADER_FONT_PX) + HEADER_PAD_PX))


def _exports(t: dict, c: corpus.Corpus, df) -> None:
    """The table as CSV and one method's links (labels wrap: a name is never cut)."""
    ss = st.session_state
    worst = corpus.most_disagreeing(c)
    if worst:
        st.caption(t["disagree"].format(soft=SOFTMAX_METHOD, ot=TRANSPORT_METHOD,
                                        pairs=", ".join(map(str, worst))))
    if ss.get("align_method") not in c.methods:
        ss["align_method"] = TRANSPORT_METHOD
    st.selectbox(t["method"], c.methods, key="align_method", on_change=on_method)
    d1, d2 = st.columns(2)
    d1.download_button(t["export_csv"], corpus.table_csv(df), file_name="alignments.csv",
                       mime="text/csv", key="align_csv", width="stretch")
    d2.download_button(t["export_links"].format(method=ss["align_method"]),
                       corpus.links_file(c, ss["align_method"]),
                       file_name=f"links-{ss['align_method']}.txt", mime="text/plain",
                       key="align_links", width="stretch")


def _verdict(t: dict, c: corpus.Corpus, theme: str) -> None:
    """Which method wins and by how much: the ranking, the paired comparisons, the chart,
    the command that prints the same table, and every score."""
    import viz.align as va

    v, num = c.verdict, locale.numbers(t["_lang"])
    st.markdown("#### " + t["verdict"].format(n=num.count(v.n_pairs)))
    st.caption(t["verdict_help"].format(b=num.count(v.bootstrap)))
    st.table(table(ranked_rows(v, c.settings, t), t), hide_index=True)
    settings = {k: settings_words(d, t) for k, d in c.settings.items()}
    st.plotly_chart(va.ranking(v.ranked, settings=settings, theme=theme, words=t.get("figure"),
                               num=num), key="align_ranking", width="stretch", theme=None)
    groups = [(v.against_best(), t["paired_best"].format(best=v.best))]
    if v.best != SOFTMAX_METHOD:  # else the first group holds them
        groups.append((v.against_baseline(), t["paired_softmax"]))
    for group, caption in groups:
        if group:
            st.caption(caption)
            st.table(table(paired_rows(group, t), t), hide_index=True)
    st.caption(t["p_help"].format(b=num.count(v.bootstrap)))
    st.caption(t["command"])
    st.code(c.command, language=None, wrap_lines=True)  # plain: no highlighter to load
    with st.expander(t["corpus_scores"]):
        st.table(table(corpus.scores_rows(c, num), t), hide_index=True)


def _done(t: dict, c: corpus.Corpus) -> str:
    """What was aligned and scored: "3 pairs, 2 with gold; 1 without gold are not
    scored. …"."""
    num, k, n = locale.numbers(t["_lang"]), len(c.methods), len(c.pairs)
    if not c.gold_column or not c.n_gold:
        return t["corpus_done_no_gold"].format(n=num.count(n), k=num.count(k))
    return t["corpus_done" if c.n_gold == n else "corpus_done_some"].format(
        n=num.count(n), gold=num.count(c.n_gold), m=num.count(n - c.n_gold), k=num.count(k))


def corpus_view(t: dict, theme: str) -> None:
    """The Corpus view: upload, align every pair (a job), table, exports, the verdict."""
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
    st.success(_done(t, c))
    lower, one_based = bool(st.session_state["align_lower"]), bool(
        st.session_state.get("align_one_based"))
    if c.gold_column:
        st.caption(t["corpus_tokens"].format(base="1" if one_based else "0",
                                             lower=t["lower_on"] if lower else ""))
    df = _table(t, c)
    _exports(t, c, df)
    if c.verdict is None:
        st.info(t["no_gold"])
        return
    _verdict(t, c, theme)
