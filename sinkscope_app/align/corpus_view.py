"""The Corpus view: upload a file of pairs, align every pair as the engine's job, then the
table (sortable, a row opens the pair), the exports and the verdict: the methods ranked
by total F1 (the best marked) with their intervals and settings, the paired comparisons,
a chart zoomed to the range that separates them, and the command that prints the table.
A file with gold can also train an aligner (the engine's ``train_aligner`` job), which
the Pair view then offers as the method ``trained`` for this session, or which downloads.

The uploaded file, the job (its id also in the address: ``corpus_job``, ``aligner_job``)
and the table's order are kept in the session: a rerun, a language switch, a trip to Pair
and back, another page and back, a reload of the address, or a restarted front end on a
served engine find the job as it was, running or ended, never starting it over. Stop
keeps the pairs aligned so far, scored, as a partial result; a job the engine lost (its
worker died) or that failed says so, with Restart.
"""

from __future__ import annotations

import hashlib
import math

import streamlit as st

from engine import SinkscopeError, settings
from engine.alignment.readers import AlignFileError
from engine.client import EngineUnavailable

from .. import job_view, jobs, locale
from ..inputs import md_text
from . import calls, corpus
from .corpus import MAX_CORPUS_PAIRS, MAX_UPLOAD_MB
from .params import SESSION_ALIGNERS, SOFTMAX_METHOD, TRANSPORT_METHOD, aligners
from .pair import on_method
from .words import (column_names, file_error, paired_rows, ranked_rows, settings_words, table,
                    unread_message, written)

JOB, TRAIN = "align_corpus", "align_aligner"  # the page's jobs (their ids: corpus_job, …)
MARK, TRAIN_MARK = "_align_corpus_mark", "_align_aligner_mark"  # what each job was of
HEADER_FONT_PX, HEADER_PAD_PX = 13, 32  # the grid's header text (text_px errs wide); padding
EPOCHS = 2  # an aligner trained here: a class can wait for two epochs


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


def progress_text(status, t: dict) -> str:
    """What a corpus job is doing, in the page's words (its place in line while it waits)."""
    if status.state == "waiting":
        return job_view.waiting(status, t["_lang"])
    num, info = locale.numbers(t["_lang"]), status.info
    return t["aligning"].format(done=num.count(info.get("done", 0)),
                                total=num.count(info.get("total", 0)))


def _start(t: dict, raw: bytes, name: str) -> None:
    """Start the corpus job for this file and these settings, unless the session's job is
    of them already (running or ended)."""
    ss = st.session_state
    lower, one_based = bool(ss["align_lower"]), bool(ss.get("align_one_based"))
    model = calls.model_name()
    listed = list(_listed())  # (a job aligns by the operator's aligners only)
    trained = calls.aligner_name() if calls.aligner_name() in listed else (
        listed[0] if listed else "")
    mark = corpus.corpus_key(raw, name, lower, one_based, model) + f":{trained}"
    if ss.get(MARK) == mark and jobs.job_id(ss, JOB) is not None:
        return
    try:
        pairs = corpus.read_file(raw, name, one_based, t)
    except (AlignFileError, SinkscopeError) as e:
        st.error(t["bad_file"].format(error=md_text(file_error(e, t), 400)))
        return
    if job_view.submit(JOB, corpus.job_body(pairs, name, one_based=one_based, lowercase=lower,
                                            model=model, aligner=trained), t["_lang"],
                      say=lambda e: _unread(e, t)):
        ss[MARK] = mark


def _unread(e: BaseException, t: dict) -> str | None:
    """The page's sentence for a file's texts the model reads nothing of (None: others)."""
    return unread_message(e, t) if getattr(e, "code", "") == "unread_pairs" else None


def _listed() -> dict:
    """The operator's aligners (a job aligns by them; a session's own aligner is for the
    Pair view)."""
    own = st.session_state.get(SESSION_ALIGNERS) or {}
    return {k: v for k, v in aligners().items() if k not in own}


def _run(t: dict):
    """The session's corpus job: its progress until it ends (Stop ends it), then its result
    (an ``engine.jobs.results.CorpusResult``; partial after Stop), or None with what the
    page says (running on, lost, failed, nothing aligned)."""
    ss, lang = st.session_state, t["_lang"]
    status = job_view.find(JOB, lang)
    if status is None:
        return None
    if status.active:
        bar, stop = st.empty(), st.empty()
        stop.button(t["stop"], key="align_stop", on_click=job_view.stop, args=(JOB,))
        status = job_view.follow(JOB, lambda s: bar.progress(s.progress,
                                                             text=progress_text(s, t)), lang)
        if status is None or status.active:  # (followed for jobs.WATCH_S only): it runs on
            return None
        bar.empty()
        stop.empty()
    if status.state == "failed" and status.error is not None and \
            status.error.code == "unread_pairs":  # the file's fault: Restart would not help
        st.error(t["bad_file"].format(error=md_text(unread_message(status.error.exception(),
                                                                   t), 400)))
        return None
    if job_view.trouble(status, JOB, lang, key="align_restart"):
        return None
    try:
        c = jobs.result(ss, JOB)
    except SinkscopeError as e:
        st.error(t["bad_file"].format(error=md_text(file_error(e, t), 400)))
        return None
    if status.state == "failed" or c is None:
        return None
    if not c.pairs:  # stopped before a pair was aligned
        st.warning(t["corpus_stopped"])
        st.button(t["run_again"], key="align_again", on_click=_again)
        return None
    if c.partial:
        st.warning(t["corpus_partial"].format(n=locale.numbers(lang).count(len(c.pairs)),
                                              total=locale.numbers(lang).count(c.n_total)))
        st.button(t["run_again"], key="align_again", on_click=_again)
    ss["_align_corpus"] = c
    return c


def _again() -> None:
    """Run again: forget the job, so that the kept file is aligned anew."""
    ss = st.session_state
    jobs.forget(ss, JOB)
    ss.pop(MARK, None)


def open_row(c, df, event) -> bool:
    """A row click opens that pair in the Pair view; True when it did (rerun then). The
    same selection is acted on once, so coming back to the table does not reopen it."""
    ss = st.session_state
    try:
        rows = [int(r) for r in event["selection"]["rows"]]
    except (KeyError, TypeError, ValueError):
        rows = []
    mark = (jobs.job_id(ss, JOB), tuple(rows))
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


def _table(t: dict, c):
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


def _exports(t: dict, c, df) -> None:
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


def _verdict(t: dict, c, theme: str) -> None:
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


def _done(t: dict, c) -> str:
    """What was aligned and scored: "3 pairs, 2 with gold; 1 without gold are not
    scored. …"."""
    num, k, n = locale.numbers(t["_lang"]), len(c.methods), len(c.pairs)
    if not c.gold_column or not c.n_gold:
        return t["corpus_done_no_gold"].format(n=num.count(n), k=num.count(k))
    return t["corpus_done" if c.n_gold == n else "corpus_done_some"].format(
        n=num.count(n), gold=num.count(c.n_gold), m=num.count(n - c.n_gold), k=num.count(k))


def corpus_view(t: dict, theme: str) -> None:
    """The Corpus view: upload, align every pair (a job), table, exports, the verdict, and
    an aligner trained on the file's gold (a job)."""
    ss, lang = st.session_state, t["_lang"]
    upload = _upload(t)
    if upload is not None:
        _start(t, upload[1], upload[0])
    elif jobs.job_id(ss, JOB) is None and not ss.get(jobs.key(JOB)):
        st.info(t["no_file"])
        return
    c = _run(t)
    if c is None:
        return
    if calls.served():
        st.caption(t["served_note"].format(url=settings.CONFIG.engine))
    st.success(_done(t, c))
    if c.gold_column:
        st.caption(t["corpus_tokens"].format(
            base="1" if ss.get("align_one_based") else "0",
            lower=t["lower_on"] if c.lowercase else ""))
    df = _table(t, c)
    _exports(t, c, df)
    if c.verdict is None:
        st.info(t["no_gold"])
    else:
        _verdict(t, c, theme)
    if upload is not None:
        training(t, upload, c)


# --------------------------------------------------------------------------- an aligner
def _train_pairs(upload) -> tuple[list, list]:
    """(train, dev) pairs with gold of the kept file (read once per file)."""
    ss = st.session_state
    one_based = bool(ss.get("align_one_based"))
    mark = (hashlib.sha256(upload[1]).hexdigest(), upload[0], one_based)
    kept = ss.get("_align_train_pairs")
    if kept is None or kept[0] != mark:
        try:
            pairs = corpus.read_file(upload[1], upload[0], one_based, {"_lang": "en"})
        except SinkscopeError:
            pairs = []
        kept = (mark, corpus.train_split(pairs))
        ss["_align_train_pairs"] = kept
    return kept[1]


def train_body(train, dev, *, model: str, lowercase: bool) -> dict:
    """The ``train_aligner`` job: a Sinkhorn aligner on ``model`` (the engine's defaults,
    :data:`EPOCHS` epochs) trained on ``train``, θ and its best epoch picked on ``dev``."""
    return {"kind": "train_aligner",
            "settings": {"name": "aligner", "model": model, "epochs": EPOCHS,
                         "lowercase": bool(lowercase)},
            "data": {"train": corpus.job_pairs(train), "dev": corpus.job_pairs(dev)}}


def train_text(status, t: dict) -> str:
    """What an aligner's training is doing, in the page's words."""
    if status.state == "waiting":
        return job_view.waiting(status, t["_lang"])
    num, i = locale.numbers(t["_lang"]), status.info
    if i.get("stage") in ("train", "dev"):
        return t["train_epoch"].format(epoch=num.count(i.get("epoch", 1)),
                                       epochs=num.count(i.get("epochs", 1)),
                                       step=num.count(i.get("step", 0)),
                                       steps=num.count(i.get("steps", 0)))
    return t["train_preparing"]


def _on_train(body: dict, mark) -> None:
    if job_view.submit(TRAIN, body, st.session_state.get("lang", "en")):
        st.session_state[TRAIN_MARK] = mark


def _use(theta: float) -> None:
    """Use the trained aligner in the Pair view (this session): register it with the
    engine, then open the Pair view with it."""
    ss = st.session_state
    try:
        name = jobs.register_aligner(ss, TRAIN, "aligner", theta)
    except (SinkscopeError, EngineUnavailable) as e:
        job_view.refused(TRAIN, e, ss.get("lang", "en"))
        return
    ss["_align_pending"] = {"align_view": "pair", "align_method": "trained",
                            "align_aligner": name, "align_threshold": round(float(theta), 2)}


def training(t: dict, upload, c) -> None:
    """Train an aligner on the file's pairs with gold (a job), then use it in the Pair view
    (method ``trained``) or download it."""
    ss, lang = st.session_state, t["_lang"]
    train, dev = _train_pairs(upload)
    if not train:
        return
    num = locale.numbers(lang)
    st.markdown("#### " + t["train_heading"])
    mark = (hashlib.sha256(upload[1]).hexdigest(), c.model, c.lowercase)
    st.caption(t["train_intro"].format(train=num.count(len(train)), dev=num.count(len(dev)),
                                       epochs=num.count(EPOCHS)))
    if ss.get(TRAIN_MARK) not in (None, mark):  # trained on another file: not this one's
        jobs.forget(ss, TRAIN)
        ss.pop(TRAIN_MARK, None)
    status = job_view.find(TRAIN, lang)
    st.button(t["train_button"], key="align_train", type="primary",
              disabled=status is not None and status.active, on_click=_on_train,
              args=(train_body(train, dev, model=c.model, lowercase=c.lowercase), mark))
    if status is None:
        return
    if status.active:
        bar, stop = st.empty(), st.empty()
        stop.button(t["stop"], key="align_train_stop", on_click=job_view.stop, args=(TRAIN,))
        status = job_view.follow(TRAIN, lambda s: bar.progress(s.progress,
                                                               text=train_text(s, t)), lang)
        if status is None or status.active:
            return
        st.rerun()  # the page again, with the button enabled and the result
    if job_view.trouble(status, TRAIN, lang, key="align_train_restart"):
        return
    r = jobs.result(ss, TRAIN)
    if r is None or r.run is None:
        st.warning(t["train_stopped_early"])
        return
    run = r.run
    st.success(t["train_done"].format(f1=num.fixed(run.dev_total_f1, 3),
                                      theta=num.fixed(run.theta, 2),
                                      best=num.count(run.best_epoch), epochs=num.count(run.epochs)))
    u, d = st.columns(2)
    u.button(t["train_use"], key="align_train_use", on_click=_use, args=(run.theta,),
             width="stretch")
    d.download_button(t["train_download"], data=jobs.zip_of(ss, TRAIN, "aligner"),
                      file_name="sinkscope-aligner.zip", mime="application/zip",
                      key="align_train_download", width="stretch")
