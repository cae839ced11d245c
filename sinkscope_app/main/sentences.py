"""The Sentences view: candidates ranked against text A by sentence similarity and by
Sinkhorn divergence; a click opens a candidate as text B in Compare."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from engine import settings
from engine.settings import MAX_CANDIDATES
from engine.types import Relation
from viz import heatmaps
from viz import sentences as vsentences

from .. import examples, locale
from ..inputs import md_text
from . import calls
from .params import cut_text
from .views import Ctx, chart

def _load_set() -> None:
    """The example set picker: load its text A (sidebar) and candidates on the next run."""
    s = examples.sentence_sets().get(st.session_state["sset"])
    if s:
        st.session_state["_pending_state"] = {"a": s["a"], "cands": "\n".join(s["candidates"]),
                                               "ex": "custom"}


def _edited_cands() -> None:
    s = examples.sentence_sets().get(st.session_state.get("sset"))
    if s and st.session_state["cands"] != "\n".join(s["candidates"]):
        st.session_state["sset"] = "custom"


def open_candidate(text: str, ctx: Ctx) -> None:
    """Text B := this candidate, and the Compare view, on a fresh run of the whole page."""
    ss = st.session_state
    ss["_pending_state"] = {"b": text, "view": "compare", "ex": "custom",
                            "mode": "separate" if ctx.mode == "self" else ctx.mode}
    ss["_sent_clicks"] = ctx.clicks + 1  # a fresh scatter: no stale click
    st.rerun(scope="app")


def picked_candidate(event, K: int) -> int | None:
    """The candidate index (customdata) of the first clicked point, or None."""
    try:
        points = list(event["selection"]["points"])
    except (KeyError, TypeError, AttributeError):
        return None
    for pt in points:
        cd = pt.get("customdata") if isinstance(pt, dict) else None
        if isinstance(cd, (list, tuple)):
            cd = cd[0] if cd else None
        try:
            k = int(round(float(cd)))
        except (TypeError, ValueError):
            continue
        if 0 <= k < K:
            return k
    return None


def _controls(ctx: Ctx) -> str:
    """The example set and the candidates' box; returns the candidates (cut to the
    limit, with a notice)."""
    w, sets = ctx.w["sentences"], examples.sentence_sets()
    set_words = ctx.w.get("sentence_sets", {})
    opts = {**{k: set_words.get(k, {}).get("title", v["title"]) for k, v in sets.items()},
            "custom": w["own"]}
    c1, c2 = st.columns([2, 3])
    with c1:
        st.selectbox(w["set"], list(opts), format_func=opts.get, key="sset",
                     on_change=_load_set, help=w["set_help"])
        note = set_words.get(ctx.sset, {}).get("note", sets.get(ctx.sset, {}).get("note"))
        if note:
            st.caption(note)
        st.caption(w["about"])
    with c2:
        cands, notice = cut_text(ctx.cands, "candidates", "typed", lang=ctx.lang)
        if notice:
            st.session_state["cands"] = cands
            st.warning(notice)
        st.text_area(w["cands"].format(max=MAX_CANDIDATES), key="cands", height=170,
                     on_change=_edited_cands,
                     help=w["cands_help"].format(chars=ctx.num.count(settings.CONFIG.max_chars)))
    return cands


def _metrics(rk, ctx: Ctx) -> None:
    w, num = ctx.w["sentences"], ctx.num
    m1, m2, m3 = st.columns(3)
    rho = w["na"] if not np.isfinite(rk.spearman) else num.fixed(rk.spearman, 2)
    m1.metric(w["agree"], rho, border=True, help=w["agree_help"])
    m2.metric(w["same_top"], w["yes"] if rk.by_similarity[0] == rk.by_divergence[0]
              else w["no"], border=True, help=w["same_top_help"])
    m3.metric(w["barycenter"], w["na"] if rk.barycenter_gap is None
              else "± " + num.general(rk.barycenter_gap, ".0e"), border=True,
              help=w["barycenter_help"])


def _table(rk, ctx: Ctx) -> None:
    w, num = ctx.w["sentences"], ctx.num
    widths = [0.5, 6, 1.6, 1.6, 1.3]
    for col, label in zip(st.columns(widths, vertical_alignment="center"),
                          ("#", w["col_candidate"], w["col_cosine"], w["col_divergence"], "")):
        col.markdown(f"**{label}**" if label else "")
    for place, k in enumerate(rk.by_divergence, 1):
        row = st.columns(widths, vertical_alignment="center")
        row[0].markdown(f"{k + 1}")
        row[1].markdown(md_text(rk.candidates[k]))
        row[2].markdown(f"{num.fixed(rk.similarity[k], 3)} · {rk.rank_similarity[k]}")
        row[3].markdown(f"{num(float(rk.divergence[k]))} · {place}")
        if row[4].button(w["compare"], key=f"cmp_{k}", width="stretch",
                         help=w["compare_help"]):
            open_candidate(rk.candidates[k], ctx)


def render_sentences(r: Relation, ctx: Ctx, theme: str, img: str) -> list[go.Figure]:
    w, say = ctx.w["sentences"], dict(words=ctx.fw, num=ctx.num, theme=theme)
    cands = _controls(ctx)
    eps = float(ctx.eps)
    with st.spinner(w["ranking"]):
        rk = calls.ranking(ctx.model, ctx.a, cands, eps)
    for level, text in locale.notices(rk.notices, ctx.lang):
        (st.warning if level == "warning" else st.info)(text)
    _metrics(rk, ctx)
    figs = [vsentences.rankings(rk, **say)]
    chart(figs[0], "rankings", img, key="fig_rankings", present=ctx.present,
          failed=ctx.chart_failed)
    figs.append(vsentences.scatter(rk, **say))
    event = chart(figs[1], "similarity_vs_divergence", img, key=f"fig_sentences_{ctx.clicks}",
                  live=False, on_select="rerun", selection_mode="points", present=ctx.present)
    st.caption(w["click"])
    pick = picked_candidate(event, len(rk.candidates))
    if pick is not None:
        open_candidate(rk.candidates[pick], ctx)
    _table(rk, ctx)
    K = len(rk.candidates)
    if not 0 <= int(ctx.scand or 0) < K:
        st.session_state["scand"] = 0
    with st.expander(w["plan"]):
        k = st.selectbox(w["candidate"], list(range(K)), key="scand",
                         format_func=lambda i: f"{i + 1}. {rk.candidates[i][:80]}")
        fig = heatmaps.heatmap(rk.plans[k], rk.tokens_a, rk.tokens[k], zlabel=ctx.fw["mass"],
                               title=w["plan_title"].format(k=k + 1, eps=ctx.num.general(eps)),
                               **say)
        chart(fig, "sentence_plan", img, key="fig_sentence_plan", present=ctx.present,
              failed=ctx.chart_failed)
        figs.append(fig)
    return figs
