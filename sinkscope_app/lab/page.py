"""Lab (``/lab``): train a Sinkhorn Transformer and its baselines to a coupling system, live.

The settings, Train (a job of the session: a progress bar and live held-out curves; Stop
keeps the weights reached, and a click elsewhere, a language switch or another page and
back leave it running), the held-out pairs drawn as couplings and as matrices with their
second marginals, the "Error vs width" sweep, and word aligners trained on a person's file
of gold alignments (:mod:`.aligners`), each a job too. The numbers come from
``engine.lab`` and ``engine.aligner``, the figures from ``viz.lab``, every word from
``text/lab.<lang>.json``, every number in the page's language.
"""

from __future__ import annotations

import logging
import time

import streamlit as st

from engine.errors import SinkscopeError
from engine.lab.nets import MODELS
from engine.lab.targets import NAMES
from engine.lab.training import SWEEP_STEPS, LabSettings
from viz import lab as vlab

from .. import frame, jobs, locale, where
from . import aligners, runs
from .params import D, DEFAULTS, EPS_CHOICES, SCHEMA, STEPS_MAX, WIDTH_MAX
from .results import results, sweep_chart

log = logging.getLogger("sinkscope.lab")
KEEP = ("lab_depth", "lab_eps", "lab_pair", "lab_size", "lab_train_pairs",
        "lab_heldout_pairs", *aligners.KEYS)
TRAIN, SWEEP = "lab_train", "lab_sweep"


def chosen() -> LabSettings:
    ss = st.session_state
    return LabSettings(target=ss["lab_target"], width=int(ss["lab_width"]),
                       depth=int(ss["lab_depth"]), eps=float(ss["lab_eps"]),
                       steps=int(ss["lab_steps"]), train_pairs=int(ss["lab_train_pairs"]),
                       heldout_pairs=int(ss["lab_heldout_pairs"]))


def _models() -> list[str]:
    return [m for m in MODELS if m in st.session_state["lab_models"]]


def on_train() -> None:
    ss = st.session_state
    if ss["lab_models"]:
        ss["lab_pair"], ss["lab_size"] = 0, D.points
        jobs.forget(ss, TRAIN)
        ss["_lab_results"] = jobs.start(ss, TRAIN, time.monotonic(),
                                        runs.training(chosen(), _models())).result


def on_stop() -> None:
    ss = st.session_state
    for name in (TRAIN, SWEEP):
        job = jobs.get(ss, name)
        if job is not None:
            job.stop()
    res = ss.get("_lab_results")
    if res and res["status"] == "training":
        res["status"] = "stopped"


def _running() -> bool:
    """Whether a Lab job (training or the sweep) waits or runs: Stop is enabled only then."""
    ss = st.session_state
    return any(j is not None and j.active for j in (jobs.get(ss, TRAIN), jobs.get(ss, SWEEP)))


def on_sweep() -> None:
    ss = st.session_state
    if ss["lab_models"]:
        jobs.forget(ss, SWEEP)
        jobs.start(ss, SWEEP, time.monotonic(), runs.sweep(chosen(), _models()))


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


def _buttons(ui: dict, num) -> None:
    ss = st.session_state
    b = st.columns([1, 1, 2, 4], vertical_alignment="center")
    b[0].button(ui["train"], key="lab_train", type="primary", on_click=on_train,
                disabled=not ss["lab_models"], width="stretch")
    b[1].button(ui["stop"], key="lab_stop", on_click=on_stop, disabled=not _running(),
                width="stretch")
    b[2].button(ui["sweep"], key="lab_sweep", on_click=on_sweep, disabled=not ss["lab_models"],
                width="stretch", help=ui["sweep_help"].format(
                    steps=num.count(min(int(ss["lab_steps"]), SWEEP_STEPS))))


def progress_text(job: jobs.Job, ui: dict, num) -> str:
    """What a Lab job is doing, in the page's words (its place in line while it waits)."""
    if job.state == "waiting":
        return ui["waiting"].format(place=num.count(max(job.place, 1)))
    i = job.info
    if job.name == SWEEP:
        return ui["sweeping"].format(width=i.get("width", ""), model=ui["models"].get(
            i.get("model"), ""))
    return ui["training"].format(model=ui["models"].get(i.get("model"), ""),
                                 step=num.count(i.get("step", 0)),
                                 steps=num.count(i.get("steps", 0)))


def _watch(fr: frame.Frame, ui: dict, bar, curves_slot) -> None:
    """The running jobs' progress (and, while training, the curves growing) until they end:
    training, then the sweep (a job that waits for the other shows its place in line).
    Once they have ended the page runs again, so that Stop is disabled."""
    ss = st.session_state
    drawn = {"at": 0.0, "n": 0}

    def draw(j: jobs.Job) -> None:
        bar.progress(j.progress, text=progress_text(j, ui, fr.num))
        res = j.result
        if j.name == TRAIN and res and time.monotonic() - drawn["at"] > 1.0:
            drawn["at"], drawn["n"] = time.monotonic(), drawn["n"] + 1
            curves_slot.plotly_chart(curves_figure(res, ui, fr), key=f"lab_live_{drawn['n']}",
                                     width="stretch")

    ended = False
    for job in (jobs.get(ss, TRAIN), jobs.get(ss, SWEEP)):
        if job is not None and job.active:
            jobs.watch(job, draw)
            if job.active:  # (watched for jobs.WATCH_S only): the bar stays, the run ends
                return
            ended = True
    bar.empty()
    if ended:  # drawn while a job ran (Stop enabled): the page again, with what it reached
        st.rerun()


def curves_figure(res: dict, ui: dict, fr: frame.Frame):
    return vlab.loss_curves(res["curves"], labels=ui["models"], title=ui["curves_title"],
                            words=words_of(ui), total_steps=res["steps"], theme=fr.theme,
                            num=fr.num)


def words_of(ui: dict) -> dict:
    return {k: ui[k] for k in ("mass", "row", "col", "drawn", "above", "below", "on",
                               "receives", "weight_b")} | {
        "step": ui["step_axis"], "heldout": ui["heldout_axis"], "width": ui["width_axis"]}


def _settle() -> None:
    """The session's state: defaults, and results left "training" by a run that is not
    running (a previous session's, or a server restart) marked stopped."""
    ss = st.session_state
    for k, v in DEFAULTS.items():
        ss.setdefault(k, v)
    job, res = jobs.get(ss, TRAIN), ss.get("_lab_results")
    if job is not None and job.result is not None:
        ss["_lab_results"] = res = job.result
    if res and res["status"] == "training" and not (job and job.active):
        res["status"] = "stopped"


def show(fr: frame.Frame) -> None:
    """The Lab page, in the frame ``fr``."""
    ss, ui = st.session_state, fr.words
    _settle()
    settings_sidebar(ui, fr.num)
    st.markdown(f"### {ui['heading']}")
    st.caption(ui["subtitle"])
    frame.notices(fr)
    st.markdown(ui["theorem"])
    st.page_link(where.page("learn"), label=ui["learn_link"], icon=":material/school:",
                 query_params={"step": "8", "lang": fr.lang})
    _buttons(ui, fr.num)
    status, bar, curves_slot = st.empty(), st.empty(), st.empty()
    try:
        _watch(fr, ui, bar, curves_slot)
        _settle()
        results(fr, status, curves_slot, ss.get("_lab_results"))
        sweep_chart(fr, jobs.get(ss, SWEEP))
        aligners.section(fr)
    except SinkscopeError as e:
        st.error(ui["error"].format(error=locale.error(e, fr.lang)))
    except Exception as e:  # never show a traceback to a visitor; log it for operators
        log.exception("lab page failed")
        st.error(ui["error"].format(error=type(e).__name__))


__all__ = ["SCHEMA", "show"]
