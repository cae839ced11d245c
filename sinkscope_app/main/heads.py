"""The All heads view: every layer and head at once, ranked by one number; a click on a
tile, or a choice from the ranking, opens that head in every view."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from engine import SinkscopeError, settings
from engine.types import Relation
from viz import grid as vgrid

from .. import compute, locale
from .params import GRID_PLANS, GRID_VALUES
from .views import Ctx, chart, radio


def ranked_heads(values: np.ndarray, *, lowest_first: bool = False
                 ) -> list[tuple[int, int, float]]:
    """(layer, head, value) for every head of an (L, H) array, highest value first (or
    lowest); ties keep layer-then-head order."""
    v = np.asarray(values, dtype=float)
    key = v.ravel() if lowest_first else -v.ravel()
    order = np.argsort(key, kind="stable")
    H = v.shape[1]
    return [(int(k // H), int(k % H), float(v.ravel()[k])) for k in order]


def picked_head(event, n_layers: int, n_heads: int) -> tuple[int, int] | None:
    """(layer, head) from a grid selection event, or None.

    Reads the tile marker's ``customdata`` [layer, head, value]; plotly sends a typed-array
    row as {"0": l, "1": h, ...}, so both lists and index-keyed dicts are accepted.
    """
    try:
        points = list(event["selection"]["points"])
    except (KeyError, TypeError, AttributeError):
        return None
    for p in points:
        cd = p.get("customdata") if isinstance(p, dict) else None
        if isinstance(cd, dict):
            cd = [cd.get(k, cd.get(str(k))) for k in range(2)]
        try:
            layer, head = int(round(float(cd[0]))), int(round(float(cd[1])))
        except (TypeError, ValueError, IndexError):
            continue
        if 0 <= layer < n_layers and 0 <= head < n_heads:
            return layer, head
    return None


def render_heads(r: Relation, ctx: Ctx, theme: str, img: str) -> list[go.Figure]:
    w = ctx.w["heads"]
    names = {k: w["values"][k] for k in GRID_VALUES}
    c1, c2 = st.columns(2)
    with c1:
        kind = st.selectbox(w["tiles"], list(GRID_PLANS), format_func=w["plans"].get,
                            key="gplan")
    with c2:
        gval = st.selectbox(w["value"], list(GRID_VALUES), format_func=names.get, key="gval")
    n, m = len(r.tokens_a), len(r.tokens_b)
    heads = ctx.n_layers * ctx.n_heads
    if n * m > settings.CONFIG.grid_max_cells:
        st.info(w["too_many"].format(n=n, m=m, heads=heads,
                                     cells=ctx.num.count(settings.CONFIG.grid_max_cells)))
        return []
    try:
        with st.spinner(w["relating"].format(heads=heads)):
            g = compute.grid(ctx.a, ctx.b, ctx.settings.replace(eps=float(r.eps),
                                                                half_steps=int(r.half_steps)))
    except SinkscopeError as e:
        if getattr(e, "code", "") != "answer":  # (a served engine's bound on its answers)
            raise
        st.info(w["too_large_served"].format(n=n, m=m, heads=heads, mb=ctx.num.count(
            round(int(e.params.get("limit", 0)) / 2**20))))
        return []
    plans = {"sinkhorn": g.coupling.plan, "softmax": g.softmax_plan,
             "difference": g.coupling.plan - g.softmax_plan}[kind]
    values = np.asarray(getattr(g.summary, gval), dtype=float)
    selected = (ctx.layer, ctx.head) if isinstance(ctx.head, int) else None
    fig = vgrid.grid(plans, values, value_name=names[gval], selected=selected,
                     scale="diverging" if kind == "difference" else "mass", theme=theme,
                     words=ctx.fw, num=ctx.num)
    # The key names the selected head: a new selection gets a fresh, empty widget, so an
    # old click can never fight a head chosen in the sidebar.
    event = chart(fig, "heads", img, key=f"fig_heads_{ctx.layer}_{ctx.head}",
                  live=False, on_select="rerun", selection_mode="points", present=ctx.present)
    head = (w["current_head"].format(head=ctx.head) if isinstance(ctx.head, int)
            else w["current_mean"])
    st.caption(w["caption"].format(layer=ctx.layer, head=head))
    pick = picked_head(event, ctx.n_layers, ctx.n_heads) or ranking(values, names[gval], ctx)
    if pick is not None and pick != (ctx.layer, ctx.head):
        st.session_state["_pending_lh"] = pick
        st.rerun(scope="app")
    return [fig]


def ranking(values: np.ndarray, name: str, ctx: Ctx) -> tuple[int, int] | None:
    """The heads ranked by ``values`` (a table, its numbers the page's way) and the
    keyboard's way to a head: a select box, ranked. Returns the head chosen, if any."""
    w = ctx.w["heads"]
    c1, c2 = st.columns([1, 2], vertical_alignment="bottom")
    with c1:
        order = radio(w["rank_by"].format(value=name), w["ranks"], "grank")
    ranked = ranked_heads(values, lowest_first=order == "low")
    with c2:
        options = [None, *[(l, h) for l, h, _ in ranked]]
        value_of = {(l, h): v for l, h, v in ranked}
        chosen = st.selectbox(
            w["open"], options, key=f"head_pick_{st.session_state.get('gval')}_{ctx.layer}_"
                                    f"{ctx.head}",
            format_func=lambda o: w["choose"] if o is None else w["option"].format(
                layer=o[0], head=o[1], value=name, number=ctx.num(value_of[o])))
    rows = [{w["col_rank"]: k, w["col_layer"]: l, w["col_head"]: h, name: v}
            for k, (l, h, v) in enumerate(ranked, 1)]
    st.dataframe(locale.table(rows, ctx.lang, digits=None), hide_index=True, height=247,
                 width="stretch")
    return chosen
