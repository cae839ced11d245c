"""The main page's fragment: the live ε and half-step sliders with the metric strip, the
view picker, the chosen view and the exports. A slider's release reruns only this
fragment (while a slider moves the browser redraws from the precomputed frames)."""

from __future__ import annotations

import dataclasses
import logging

import streamlit as st

from engine import SinkscopeError, settings
from engine.client import EngineUnavailable

from .. import compute, frame, locale, metrics, outage, scrub
from . import calls, export
from .heads import render_heads
from .params import DEFAULTS, EPS_OPTIONS, FRAGMENT_KEYS, HALF_STEP_OPTIONS
from .sentences import render_sentences
from .sidebar import example_note, own_attention
from .views import (Ctx, render_about, render_cloud, render_compare, render_convergence,
                    render_graph, render_path)

log = logging.getLogger("sinkscope.app")
RENDER = {"compare": render_compare, "graph": render_graph, "cloud": render_cloud,
          "convergence": render_convergence, "heads": render_heads, "path": render_path,
          "sentences": render_sentences, "about": render_about}


def on_scrub() -> None:
    """A live slider was released on a new value: keep it (the URL, exports and the other
    views follow on this rerun)."""
    ss = st.session_state
    value = scrub.parse_value(ss.get("scrub"), EPS_OPTIONS, HALF_STEP_OPTIONS)
    if value is not None:
        ss["eps"], ss["steps"] = value


def live_note(ctx: Ctx, n: int, m: int, cap: int) -> str:
    """Why the sliders recompute on the server for texts of n × m tokens."""
    return ctx.w["sliders"]["live_off_cells"].format(n=n, m=m, cap=ctx.num.count(cap))


def live_sliders(ctx: Ctx, r) -> Ctx:
    """Both sliders and the metric strip (sinkscope_app.scrub); returns ``ctx`` naming the
    lattice of frames the charts may take from them (None above the size budget)."""
    ss = st.session_state
    n, m = r.scores.shape if r is not None else (0, 0)
    cap = settings.CONFIG.live_max_cells
    live = r is not None and n * m <= cap
    lattice = calls.lattice_id(ctx.a, ctx.b, ctx.settings) if live else None
    w = ctx.w["sliders"]
    scrub.sliders(key="scrub", eps=ss["eps"], steps=ss["steps"], eps_stops=EPS_OPTIONS,
                  step_stops=HALF_STEP_OPTIONS, lattice=lattice,
                  metrics=metrics.rows(r, ctx.lang) if r is not None else [],
                  note="" if live or r is None else live_note(ctx, n, m, cap),
                  help={"eps": w["eps_help"], "steps": w["steps_help"]},
                  words=w["words"], num=ctx.num, on_change=on_scrub,
                  grid=calls.lattice_grid(EPS_OPTIONS, HALF_STEP_OPTIONS), lang=ctx.lang)
    return dataclasses.replace(ctx, lattice=lattice)


def _own_eps(ctx: Ctx) -> None:
    """Your own texts away from ε = 1: what softmax then is, and one click back."""
    ss, w = st.session_state, ctx.w["notices"]
    if ss.get("ex") != "custom" or float(ss["eps"]) == DEFAULTS["eps"]:
        return
    c1, c2 = st.columns([4, 1.3], vertical_alignment="center")
    eps = float(ss["eps"])
    c1.caption(w["own_eps"].format(eps=ctx.num(eps), how=w["sharpened" if eps < 1
                                                            else "flattened"],
                                   factor=ctx.num(max(eps, 1 / eps))))
    c2.button(w["own_button"], key="own_attention", on_click=own_attention, width="stretch")


def _relation(ctx: Ctx):
    """The relation at the sliders' values, or (None, the error)."""
    ss = st.session_state
    s = ctx.settings.replace(eps=float(ss["eps"]), half_steps=int(ss["steps"]))
    try:
        return compute.relation(ctx.a, ctx.b, s), None
    except (SinkscopeError, EngineUnavailable) as e:
        return None, e


def _view(r, ctx: Ctx, theme: str) -> tuple[str, list]:
    """The view picker, then the chosen view drawn; (the view, its figures)."""
    ss, W = st.session_state, ctx.w
    names = W["views"]
    top = st.columns([5, 1], vertical_alignment="bottom")
    with top[0]:
        view = st.segmented_control(W["view_label"], list(names), format_func=names.get,
                                    key="view", required=True, label_visibility="collapsed")
    box = top[1].popover(W["export"]["button"], width="stretch")
    view = view if view in names else "compare"
    if "_pending_state" in ss:  # a view set sidebar controls: redraw the sidebar too
        st.rerun(scope="app")
    ctx = dataclasses.replace(  # what the views' own controls hold (a view reads no session)
        ctx, eps=float(ss["eps"]), hl=str(ss.get("hl", "none")), sset=str(ss.get("sset", "")),
        cands=str(ss.get("cands", "")), scand=int(ss.get("scand", 0) or 0),
        clicks=int(ss.get("_sent_clicks", 0)))
    try:
        figs = RENDER[view](r, ctx, theme, ss["img"])
    except SinkscopeError as e:
        st.error(locale.error(e, ctx.lang))
        figs = []
    except EngineUnavailable as e:
        outage.notice(e, ctx.lang)
        figs = []
    except Exception as e:  # never show a traceback to a visitor; log it for operators
        log.exception("view %s failed", view)
        st.error(W["notices"]["view_failed"].format(error=f"{type(e).__name__}: {e}"))
        figs = []
    with box:
        export.buttons(r, ctx, view, figs)
    return view, figs


@st.fragment
def explore(ctx: Ctx, theme: str) -> None:
    """Sliders, metrics and the selected view; re-runs alone when a slider is released
    (while it moves, the browser redraws from the precomputed frames)."""
    ss, fr = st.session_state, frame.for_fragment()  # a click outside: the whole page
    for k in FRAGMENT_KEYS:
        if k in ss:
            ss[k] = ss[k]
    if example_note(ctx.n_layers, ctx.lang) != ss.get("_note_drawn"):  # a slider moved off
        st.rerun(scope="app")  # (or onto) the example's settings: redraw the sidebar's note
    r, error = _relation(ctx)
    ctx = live_sliders(ctx, r)
    if r is None:  # the sliders stay; the page says what is wrong
        if isinstance(error, EngineUnavailable):
            outage.notice(error, ctx.lang)
        else:
            st.error(locale.error(error, ctx.lang))
        fr.sync()
        return
    for level, text in locale.notices(r.notices, ctx.lang):  # in the page's language
        (st.warning if level == "warning" else st.info)(text)
    _own_eps(ctx)
    _view(r, ctx, theme)
    if ctx.lattice is not None:  # last, so the charts are out first
        _lattice(ctx)
    fr.sync()


def _lattice(ctx: Ctx) -> None:
    """The live sliders' frames and their texts in the page's language, sent once per
    relation (after the charts)."""
    try:
        payload = calls.lattice(ctx.a, ctx.b, ctx.settings, EPS_OPTIONS, HALF_STEP_OPTIONS)
        texts = calls.frame_texts(payload, ctx.lang)
    except Exception:  # the sliders keep working through the server
        log.exception("the live sliders' frames could not be computed")
        payload = texts = None
    scrub.lattice_element(payload)
    scrub.texts_element(texts)
    if payload is not None and payload.data is None:
        st.caption(ctx.w["sliders"]["live_off_bytes"].format(
            mb=ctx.num.fixed(settings.CONFIG.live_max_bytes / 1e6, 1)))
