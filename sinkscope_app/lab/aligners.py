"""The Lab's text section: the Sinkhorn Transformer learning a real relation.

A person's file of pairs with gold word links (any format the Align page reads; bounded
like Align's upload) is split (``engine.jobs.split``: the split the engine makes); the
engine's ``compare_text`` job tunes the untrained methods, trains a Sinkhorn (dustbin)
and a softmax (+ null) aligner and compares the three on the held-out pairs with paired
95 % intervals. The page says the result in a sentence, shows the table and the paired
differences, says why a balanced head loses on pairs with unaligned words, and offers
each trained aligner as a download or for the Align page (method ``trained``, this
session). Everything survives reruns, language switches and reloads (the job's id is in
the address: ``compare_job``); every number is written in the page's language.
"""

from __future__ import annotations

import hashlib

import streamlit as st

from engine.errors import SinkscopeError
from engine.jobs.split import null_share, split
from engine.lab.errors import LabError
from engine.settings import DEFAULT_MODEL

from .. import frame, job_view, jobs, locale, where
from ..inputs import md_text
from ..uploads import MAX_CORPUS_PAIRS, MAX_UPLOAD_MB, read_pairs

TEXT = "lab_text"  # the job (its id: compare_job)
PAIRS_MAX, EPOCHS_MAX = 20_000, 10  # the most the page lets a person ask for
DEFAULTS = {"lab_text_pairs": 400, "lab_text_epochs": 2}  # a class can wait for these
KEYS = ("lab_text_data", "lab_text_name", *DEFAULTS)
BOOTSTRAP = 1000


def _upload(fr: frame.Frame) -> None:
    """The text upload, bounded like Align's (size and pairs; our words under it); kept in
    the session. A file that does not read is said on the page and replaces nothing."""
    ss, ui, num = st.session_state, fr.words, fr.num
    up = st.file_uploader(ui["text_file"], key="lab_text_upload", max_upload_size=MAX_UPLOAD_MB,
                          type=["tsv", "txt", "json", "jsonl", "csv"])
    st.caption(ui["upload_limits"].format(mb=MAX_UPLOAD_MB, pairs=num.count(MAX_CORPUS_PAIRS)))
    if up is None:
        return
    raw = up.getvalue()
    mark = (up.name, hashlib.sha256(raw).hexdigest(), fr.lang)
    seen = ss.get("_lab_text_checked")
    if seen is None or seen[0] != mark:
        seen = (mark, *_read(raw, up.name, ui, fr.lang))
        ss["_lab_text_checked"] = seen
    text, error = seen[1], seen[2]
    if error is not None:
        st.error(ui["error"].format(error=md_text(locale.error(error, fr.lang), 400)))
        if ss.get("lab_text_name"):
            st.caption(ui["text_still"].format(name=md_text(ss["lab_text_name"], 80)))
        return
    ss["lab_text_data"], ss["lab_text_name"] = text, up.name


def _read(raw: bytes, name: str, ui: dict, lang: str) -> tuple:
    """(the file's text, None) when its pairs read within the limits, else (None, the
    error)."""
    from engine.alignment.readers import decode

    try:
        read_pairs(raw, name, ui, lang, lowercase=True)
        return decode(raw, name), None
    except SinkscopeError as e:
        return None, e


@st.cache_data(max_entries=4, show_spinner=False)
def text_pairs_of(text: str, name: str):
    from engine.alignment.readers import parse_pairs

    return parse_pairs(text, name=name, lowercase=True)


def body(pairs, train_pairs: int, epochs: int) -> dict:
    """The ``compare_text`` job of the file's pairs with gold (the others are left out)."""
    return {"kind": "compare_text",
            "settings": {"model": DEFAULT_MODEL, "epochs": int(epochs),
                         "train_pairs": int(train_pairs), "bootstrap": BOOTSTRAP, "seed": 0},
            "data": {"pairs": [p.to_dict() for p in pairs if p.has_gold]}}


def _controls(fr: frame.Frame, pairs) -> None:
    """The split the file gives, its unaligned words, the budget, and Train."""
    ss, ui, num = st.session_state, fr.words, fr.num
    c = st.columns([1, 1, 2], vertical_alignment="bottom")
    c[0].number_input(ui["text_pairs"], 1, PAIRS_MAX, step=100, key="lab_text_pairs",
                      help=ui["text_pairs_help"])
    c[1].number_input(ui["text_epochs"], 1, EPOCHS_MAX, key="lab_text_epochs",
                      help=ui["text_epochs_help"])
    sp = split(pairs, int(ss["lab_text_pairs"]))
    st.caption(ui["text_loaded"].format(
        n=num.count(len(sp.train) + len(sp.dev) + len(sp.test) + sp.unused),
        train=num.count(len(sp.train)), dev=num.count(len(sp.dev)),
        test=num.count(len(sp.test)), unused=num.count(sp.unused),
        share=num.percent(null_share(sp.test))))
    c[2].button(ui["text_train"], key="lab_text_train", type="primary",
                on_click=job_view.submit, args=(TEXT, body(pairs, int(ss["lab_text_pairs"]),
                                                           int(ss["lab_text_epochs"])),
                                                fr.lang))


def progress_text(status, ui: dict, num, lang: str = "en") -> str:
    """What the text job is doing, in the page's words."""
    if status.state == "waiting":
        return job_view.waiting(status, lang)
    i = status.info
    stage = i.get("stage", "untrained")
    if stage in ("untrained", "score", "save"):
        return ui["text_stage"][stage if stage != "save" else "score"].format(
            name=ui["text_names"].get(i.get("final"), ""))
    return ui["text_stage"][stage].format(
        name=ui["text_names"][i["final"]], epoch=num.count(i["epoch"]),
        epochs=num.count(i["epochs"]), step=num.count(i["step"]), steps=num.count(i["steps"]))


def _follow(fr: frame.Frame, status):
    """The job's progress and Stop until it ends (its last status) or this run is over
    (None)."""
    ui = fr.words
    stop, bar, history = st.empty(), st.empty(), st.empty()
    stop.button(ui["stop"], key="lab_text_stop", on_click=job_view.stop, args=(TEXT,))

    def draw(s) -> None:
        bar.progress(s.progress, text=progress_text(s, ui, fr.num, fr.lang))
        if s.partial is not None and getattr(s.partial, "history", None):
            history.caption(_history(fr, s.partial))

    status = job_view.follow(TEXT, draw, fr.lang)
    if status is None or status.active:
        return None
    for slot in (stop, bar, history):
        slot.empty()
    return status


def _history(fr: frame.Frame, res) -> str:
    """Each aligner's dev total F1 after each epoch so far."""
    ui, num = fr.words, fr.num
    return " · ".join(ui["text_history"].format(
        name=ui["text_names"][final], f1s=", ".join(num.fixed(f, 3) for _, f in h))
        for final, h in res.history.items() if h)


def section(fr: frame.Frame) -> None:
    """The text section: upload, split, Train (a job), progress, the comparison."""
    ss, ui = st.session_state, fr.words
    for k, v in DEFAULTS.items():
        ss.setdefault(k, v)
    st.markdown(f"#### {ui['text_heading']}")
    st.markdown(ui["text_intro"])
    st.info(ui["text_why"])
    _upload(fr)
    if ss.get("lab_text_data"):
        pairs = text_pairs_of(ss["lab_text_data"], ss.get("lab_text_name", "file"))
        try:
            _controls(fr, pairs)
        except LabError as e:
            st.error(ui["error"].format(error=locale.error(e, fr.lang)))
            return
    status = job_view.find(TEXT, fr.lang)
    if status is None:
        return
    if status.active:
        status = _follow(fr, status)
        if status is None:
            return
    if job_view.trouble(status, TEXT, fr.lang, key="lab_text_restart"):
        return
    res = jobs.result(ss, TEXT)
    if res is not None and res.untrained:
        if status.state == "stopped":
            st.warning(ui["text_stopped"])
        verdict(fr, res)
    elif status.state == "stopped":
        st.warning(ui["text_stopped_early"])


def verdict(fr: frame.Frame, res) -> None:
    """The comparison: a sentence with the paired intervals, the table of the three, the
    paired differences, and the downloads."""
    ui = fr.words
    st.markdown(sentence(fr, res))
    st.table(locale.table(rows(fr, res), fr.lang, digits=3, formats={
        ui["text_seconds"]: lambda x: fr.num.fixed(x, 1)}), hide_index=True)
    if res.paired:
        st.table(locale.table(paired_rows(fr, res), fr.lang, digits=3, formats={
            ui["text_p"]: lambda x: fr.num.fixed(x, 3)}), hide_index=True)
        st.caption(ui["text_p_help"])
    _downloads(fr, res)
    if res.history:
        st.caption(_history(fr, res))


def _interval(num, ci) -> str:
    """A 95 % interval with three decimals, or the ones an end needs not to read 0."""
    if not ci:
        return "–"
    return " – ".join(num.fixed(x, locale.nonzero_digits(x)) for x in ci)


def rows(fr: frame.Frame, res) -> list[dict]:
    """One row per method scored on the held-out pairs: the untrained best, then the
    trained aligners (a stopped one with the epoch it kept)."""
    ui, num = fr.words, fr.num
    u = res.untrained
    theta = u["setting"].get("threshold")
    out = [{ui["text_head"]: ui["text_names"]["untrained"].format(method=u["method"]),
            ui["text_f1"]: u["score"].macro["total_f1"],
            ui["text_ci"]: _interval(num, u["score"].macro_ci.get("total_f1")),
            ui["text_theta"]: None if theta is None else float(theta),
            ui["text_epochs_col"]: "–", ui["text_seconds"]: None}]
    for final, t in res.trained.items():
        r, sc = t.run, t.score
        out.append({ui["text_head"]: ui["text_names"][final],
                    ui["text_f1"]: sc.macro["total_f1"],
                    ui["text_ci"]: _interval(num, sc.macro_ci.get("total_f1")),
                    ui["text_theta"]: float(r.theta),
                    ui["text_epochs_col"]: ui["text_kept"].format(
                        best=num.count(r.best_epoch), ran=num.count(r.epochs)),
                    ui["text_seconds"]: float(r.seconds)})
    return out


def paired_rows(fr: frame.Frame, res) -> list[dict]:
    """The paired differences of total F1 on the same held-out pairs."""
    ui, num = fr.words, fr.num
    names = ui["text_names"]
    out = []
    for (x, y), p in res.paired.items():
        other = names["untrained"].format(method=res.untrained["method"]) \
            if y == "untrained" else names[y]
        out.append({ui["text_pair"]: f"{names[x]} − {other}", ui["text_delta"]: p.delta,
                    ui["text_ci"]: _interval(num, p.ci95), ui["text_p"]: p.p})
    return out


def _compare(fr: frame.Frame, res, vs: str) -> str | None:
    """One clause of the sentence: the trained Sinkhorn aligner against ``vs``."""
    ui, num = fr.words, fr.num
    p = res.paired.get(("sinkhorn", vs))
    if p is None:
        return None
    if vs == "untrained":
        other = ui["text_other_untrained"].format(method=res.untrained["method"])
        f1 = res.untrained["score"].macro["total_f1"]
    else:
        other, f1 = ui["text_other_softmax"], res.trained[vs].score.macro["total_f1"]
    lo, hi = p.ci95
    return ui["text_clause"].format(
        delta=num.fixed(abs(p.delta), 3), side=ui["text_above" if p.delta >= 0 else "text_below"],
        other=other, f1=num.fixed(f1, 3), lo=num.fixed(lo, locale.nonzero_digits(lo)),
        hi=num.fixed(hi, locale.nonzero_digits(hi)),
        clear=ui["text_clear" if lo > 0 or hi < 0 else "text_unclear"])


def sentence(fr: frame.Frame, res) -> str:
    """The result in words, with the paired intervals."""
    ui, num = fr.words, fr.num
    n = num.count(res.sizes["test"])
    if "sinkhorn" not in res.trained:
        u = res.untrained
        return ui["text_only_untrained"].format(n=n, method=u["method"],
                                                f1=num.fixed(u["score"].macro["total_f1"], 3))
    clauses = [c for c in (_compare(fr, res, "untrained"), _compare(fr, res, "softmax")) if c]
    f1 = res.trained["sinkhorn"].score.macro["total_f1"]
    return ui["text_sentence"].format(n=n, f1=num.fixed(f1, 3),
                                      clauses=ui["text_and"].join(clauses))


def _downloads(fr: frame.Frame, res) -> None:
    """Each trained aligner as a .zip (made when its button is pressed), and for the Align
    page (method ``trained``, this session)."""
    ss, ui = st.session_state, fr.words
    if not res.trained:
        return
    cols = st.columns(len(res.trained))
    for col, (final, t) in zip(cols, res.trained.items()):
        name = f"sinkscope-aligner-{final}"
        col.download_button(ui["text_download"].format(name=ui["text_names"][final]),
                            data=jobs.zip_of(ss, TEXT, final),
                            file_name=f"{name}.zip", mime="application/zip",
                            key=f"lab_text_download_{final}", width="stretch")
        used = ss.get("_lab_used", {}).get((jobs.job_id(ss, TEXT), final))
        if used:
            col.page_link(where.page("align"), label=ui["text_open_align"].format(
                name=ui["text_names"][final]), icon=":material/link:", query_params={
                "method": "trained", "aligner": used, "lang": fr.lang})
        else:
            col.button(ui["text_use"].format(name=ui["text_names"][final]),
                       key=f"lab_text_use_{final}", on_click=_use,
                       args=(final, t.run.theta), width="stretch")
    st.caption(ui["text_download_help"])


def _use(final: str, theta: float) -> None:
    """Register the trained aligner ``final`` for this session (the Align page offers it)."""
    ss = st.session_state
    try:
        name = jobs.register_aligner(ss, TEXT, final, theta)
    except Exception as e:  # the job is gone, or the engine away: said on the next run
        job_view.refused(TEXT, e, ss.get("lang", "en"))
        return
    ss.setdefault("_lab_used", {})[(jobs.job_id(ss, TEXT), final)] = name
