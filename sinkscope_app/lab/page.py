"""Lab (``/lab``): train a Sinkhorn Transformer and its baselines to a coupling system, live.

The settings, Train (the engine's job: a progress bar and live held-out curves; Stop keeps
the weights reached; a click elsewhere, a language switch, another page and back, a
reload of the address or a restarted front end on a served engine find it again), the
held-out pairs drawn as couplings and as matrices with their second marginals (the
engine's ``lab_predict``), the "Error vs width" sweep (a job too), and word aligners
trained on a person's file of gold alignments (:mod:`.aligners`). A job the engine lost
(its worker died) or that failed says so, with Restart. The numbers come from the engine,
the figures from ``viz.lab``, every word from ``text/lab.<lang>.json``, every number in
the page's language.
"""

from __future__ import annotations

import logging
import time

import streamlit as st

from engine.client import EngineUnavailable
from engine.errors import SinkscopeError
from engine.lab.config import MODELS, SWEEP_STEPS, TARGETS as NAMES, LabSettings
from viz import lab as vlab

from .. import frame, job_view, jobs, locale, outage, where
from . import aligners
from .params import D, DEFAULTS, EPS_CHOICES, SCHEMA, STEPS_MAX, WIDTH_MAX
from .results import results, sweep_chart

log = logging.getLogger("sinkscope.lab")
KEEP = ("lab_depth", "lab_eps", "lab_pair", "lab_size", "lab_train_pairs",
        "lab_heldout_pairs", *aligners.KEYS)
TRAIN, SWEEP = "lab_train", "lab_sweep"  # the page's jobs (ids: train_job, sweep_job)


def chosen() -> LabSettings:
    ss = st.session_state
    return LabSettings(target=ss["lab_target"], width=int(ss["lab_width"]),
                       depth=int(ss["lab_depth"]), eps=float(ss["lab_eps"]),
                       steps=int(ss["lab_steps"]), train_pairs=int(ss["lab_train_pairs"]),
                       heldout_pairs=int(ss["lab_heldout_pairs"]))


def _models() -> list[str]:
    return [m for m in MODELS if m in st.session_state["lab_models"]]


def body(kind: str) -> dict:
    """The job of the chosen settings and models (``lab_train`` or ``lab_sweep``)."""
    fields = {k: v for k, v in chosen().to_dict().items() if k != "model"}
    return {"kind": kind, "settings": {"models": _models(), **fields}, "data": {}}


def on_train() -> None:
    ss = st.session_state
    if ss["lab_models"]:
        ss["lab_pair"], ss["lab_size"] = 0, D.points
        job_view.submit(TRAIN, body("lab_train"), ss.get("lang", "en"))


def on_stop() -> None:
    for name in (TRAIN, SWEEP):
        job_view.stop(name)


def on_sweep() -> None:
    ss = st.session_state
    if ss["lab_models"]:
        job_view.submit(SWEEP, body("lab_sweep"), ss.get("lang", "en"))


def on_model() -> None:
    """The models ticked, in their order (the address's ``models``)."""
    ss = st.session_state
    ss["lab_models"] = [m for m in MODELS if ss.get(f"lab_use_{m}")]


def settings_sidebar(ui: dict, num) -> None:
    """The settings. Targets and models are named in full (a radio and checkboxes wrap
    their labels; a select box and its chips would cut them)."""
    ss = st.session_state
    with st.sidebar:
        st.subheader(ui["settings"])
        st.radio(ui["target"], list(NAMES), key="lab_target", format_func=ui["targets"].get,
                 help=ui["target_help"])
        st.markdown(ui["models_label"])
        for m in MODELS:
            ss[f"lab_use_{m}"] = m in ss["lab_models"]
            st.checkbox(ui["models"][m], key=f"lab_use_{m}", on_change=on_model)
        st.slider(ui["width"], 1, WIDTH_MAX, key="lab_width", help=ui["width_help"])
        st.slider(ui["depth"], 0, 4, key="lab_depth")
        st.select_slider(ui["eps"], options=list(EPS_CHOICES), key="lab_eps", format_func=num)
        st.number_input(ui["steps"], min_value=1, max_value=STEPS_MAX, step=50, key="lab_steps")


def _buttons(ui: dict, num, running: bool) -> None:
    ss = st.session_state
    b = st.columns([1, 1, 2, 4], vertical_alignment="center")
    b[0].button(ui["train"], key="lab_train", type="primary", on_click=on_train,
                disabled=not ss["lab_models"], width="stretch")
    b[1].button(ui["stop"], key="lab_stop", on_click=on_stop, disabled=not running,
                width="stretch")
    b[2].button(ui["sweep"], key="lab_sweep", on_click=on_sweep, disabled=not ss["lab_models"],
                width="stretch", help=ui["sweep_help"].format(
                    steps=num.count(min(int(ss["lab_steps"]), SWEEP_STEPS))))


def progress_text(status, ui: dict, num, lang: str = "en") -> str:
    """What a Lab job is doing, in the page's words (its place in line while it waits)."""
    if status.state == "waiting":
        return job_view.waiting(status, lang)
    i = status.info
    if status.kind == "lab_sweep":
        return ui["sweeping"].format(width=i.get("width", ""), model=ui["models"].get(
            i.get("model"), ""))
    return ui["training"].format(model=ui["models"].get(i.get("model"), ""),
                                 step=num.count(i.get("step", 0)),
                                 steps=num.count(i.get("steps", 0)))


def _follow(fr: frame.Frame, ui: dict, found: dict, bar, curves_slot) -> bool:
    """The running jobs' progress (and, while training, the curves growing) until they end:
    training, then the sweep (a job that waits for the other shows its place in line).
    True when the page must run again (a job ended while it was followed: Stop off, the
    results on)."""
    drawn = {"at": 0.0, "n": 0}

    def draw(s) -> None:
        bar.progress(s.progress, text=progress_text(s, ui, fr.num, fr.lang))
        res = s.partial
        if s.kind == "lab_train" and res is not None and hasattr(res, "curves") and \
                time.monotonic() - drawn["at"] > 1.0:
            drawn["at"], drawn["n"] = time.monotonic(), drawn["n"] + 1
            curves_slot.plotly_chart(curves_figure(res, ui, fr), key=f"lab_live_{drawn['n']}",
                                     width="stretch")

    ended = False
    for name in (TRAIN, SWEEP):
        s = found.get(name)
        if s is not None and s.active:
            s = job_view.follow(name, draw, fr.lang)
            if s is None or s.active:  # (followed for jobs.WATCH_S only): it runs on
                return False
            ended = True
    bar.empty()
    return ended


def curves_figure(res, ui: dict, fr: frame.Frame):
    return vlab.loss_curves(res.curves, labels=ui["models"], title=ui["curves_title"],
                            words=words_of(ui), total_steps=res.steps, theme=fr.theme,
                            num=fr.num)


def words_of(ui: dict) -> dict:
    return {k: ui[k] for k in ("mass", "row", "col", "drawn", "above", "below", "on",
                               "receives", "weight_b")} | {
        "step": ui["step_axis"], "heldout": ui["heldout_axis"], "width": ui["width_axis"]}


def _settle() -> None:
    """The session's state: defaults."""
    ss = st.session_state
    for k, v in DEFAULTS.items():
        ss.setdefault(k, v)


def _result(name: str, status):
    """An ended job's result (None while it runs, or without one)."""
    if status is None or status.active:
        return None
    try:
        return jobs.result(st.session_state, name)
    except SinkscopeError:
        return None


def show(fr: frame.Frame) -> None:
    """The Lab page, in the frame ``fr``."""
    ui = fr.words
    _settle()
    settings_sidebar(ui, fr.num)
    st.markdown(f"### {ui['heading']}")
    st.caption(ui["subtitle"])
    frame.notices(fr)
    st.markdown(ui["theorem"])
    st.page_link(where.page("learn"), label=ui["learn_link"], icon=":material/school:",
                 query_params={"step": "8", "lang": fr.lang})
    try:
        found = {name: jobs.find(st.session_state, name) for name in (TRAIN, SWEEP)}
        for name in (TRAIN, SWEEP):
            job_view.notices(name, fr.lang)
    except EngineUnavailable as e:
        _buttons(ui, fr.num, False)
        outage.notice(e, fr.lang)
        return
    _buttons(ui, fr.num, any(s is not None and s.active for s in found.values()))
    status, bar, curves_slot = st.empty(), st.empty(), st.empty()
    try:
        if _follow(fr, ui, found, bar, curves_slot):
            st.rerun()  # the page again, with what the jobs reached
        train, sweep = found[TRAIN], found[SWEEP]
        lost = train is not None and job_view.trouble(train, TRAIN, fr.lang, key="lab_restart")
        results(fr, status, curves_slot, None if lost else _result(TRAIN, train), job=train)
        if sweep is not None and not job_view.trouble(sweep, SWEEP, fr.lang,
                                                      key="lab_sweep_restart"):
            sweep_chart(fr, _result(SWEEP, sweep))
        aligners.section(fr)
    except SinkscopeError as e:
        st.error(ui["error"].format(error=locale.error(e, fr.lang)))
    except EngineUnavailable as e:
        outage.notice(e, fr.lang)
    except Exception as e:  # never show a traceback to a visitor; log it for operators
        log.exception("lab page failed")
        st.error(ui["error"].format(error=type(e).__name__))


__all__ = ["SCHEMA", "show"]
