"""Heatmaps of plans: softmax beside Sinkhorn with marginal bars, their difference, one map.

Text A's tokens run down the rows (token 0 at the top), text B's along the columns.
Axes are numeric (0..n-1) with tick text, so repeated tokens keep their own row/column.
The helpers other builders share live in :mod:`viz._axes` and :mod:`viz._traces`; the
names they had here stay importable from this module.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from engine.solver import references
from viz import theme as th
from viz._axes import (axis_titles, default_height, domains, figure, fill, hover_names,
                       map_layout, round_tick, top_title)
from viz._data import as_array, as_plan, labels, limits, row_normalise, symmetric_limit
from viz._traces import (CLASS_WORDS, CLASSES, LARGE, UNDER_FILL, class_bars, class_marker,
                         classes, hover_meta, map_trace, map_trace_dict, score_fields)
from viz.words import ENGLISH, WORDS, settings_text, steps_text, words_of

from engine.relation.summary import Numbers

from engine.types import Relation

__all__ = ["AXES", "COLORAXES", "COMPARE_TITLES", "DIFFERENCE_NOTE", "DIFFERENCE_TITLE",
           "IDENTICAL", "IDENTICAL_NOTE", "LARGE", "LEGEND_RANK", "NOT_CONVERGED", "SCALES",
           "TARGET", "UNDER_FILL", "axis_titles", "class_bars", "compare", "compare_limits",
           "default_height", "difference", "difference_limit", "fill", "heatmap",
           "hover_meta", "map_trace", "map_trace_dict", "top_title"]

_VIEWS = ("joint", "conditional")
_CLASSES = CLASSES
TARGET = "target"  # the legend entry of the target marks (a and b share it)
# Every legend entry keeps its place whatever a frame holds: the classes, then the target.
LEGEND_RANK = {**{label: 10 * (k + 1) for k, (label, _) in enumerate(_CLASSES)}, TARGET: 40}
SCALES = ("shared", "per_plan")  # compare's colour scales: one for both maps, or one each
IDENTICAL = 1e-12  # |Δ| at most this times the largest mass shown: "identical"


def compare_limits(soft: np.ndarray, sink: np.ndarray, a: np.ndarray, b: np.ndarray, *,
                   scale: str = "shared") -> dict[str, tuple[float, float]]:
    """Colour limits of :func:`compare`'s two maps.

    Each plan's peak is taken over the cells of tokens that carry weight (a_i > 0 and
    b_j > 0): a weight-0 token such as [CLS], where softmax may pile up mass, saturates
    instead of darkening every other cell. "shared" gives both maps the larger peak,
    "per_plan" each its own. The browser (``js/patch.js``, ``compareLimits``) follows this
    rule on every frame of the live sliders.

        hi(π) = max{π_ij : a_i > 0, b_j > 0}  (all cells when no token has weight)

    Args:
        soft, sink: (n, m) the maps shown (joint plans or row-normalised).
        a, b: (n,), (m,) the token weights.
        scale: one of :data:`SCALES`.

    Returns:
        {"softmax": (0, hi), "sinkhorn": (0, hi)}, hi > 0 (1 for an all-zero map).
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    rows, cols = np.asarray(a) > 0, np.asarray(b) > 0

    def peak(z: np.ndarray) -> float:
        sub = z[np.ix_(rows, cols)] if rows.any() and cols.any() else z
        hi = float(np.max(sub))
        return hi if hi > 0 else 1.0

    hi = {"softmax": peak(soft), "sinkhorn": peak(sink)}
    if scale == "shared":
        hi = dict.fromkeys(hi, max(hi.values()))
    return {k: (0.0, v) for k, v in hi.items()}


def difference_limit(soft: np.ndarray, sink: np.ndarray) -> tuple[float, bool]:
    """Colour limit of the difference map, and whether the two maps are identical.

    Identical means max|Δ| ≤ :data:`IDENTICAL` · peak, with peak the largest mass shown
    in either map (half-step 1 is softmax: Δ is rounding noise, ~1e-17). Then the scale
    is ±peak, so the noise stays pale; otherwise ±max|Δ|. ``js/patch.js``
    (``differenceLimit``) follows the same rule.

    Returns:
        (limit > 0, identical).
    """
    peak = max(float(np.max(np.abs(soft))), float(np.max(np.abs(sink))))
    delta = float(np.max(np.abs(sink - soft)))
    if delta <= IDENTICAL * peak:
        return (peak if peak > 0 else 1.0), True
    return delta, False


def heatmap(plan: object, tokens_a: Sequence[str] | None = None,
            tokens_b: Sequence[str] | None = None, *, title: str = "",
            scores: object = None, zlabel: str = "mass", diverging: bool = False,
            zmin: float | None = None, zmax: float | None = None,
            height: int | None = None, width: int | None = None,
            theme: str = "light", mode: str = "separate", words: dict | None = None,
            num: Numbers = ENGLISH) -> go.Figure:
    """One plan (or attention matrix) as a heatmap with token tick labels.

    Args:
        plan: (n, m) values; rows are text A's tokens, columns text B's.
        tokens_a, tokens_b: n and m token strings (escaped here); None numbers them.
        title: figure title (trusted text, not escaped).
        scores: optional (n, m) scores S, shown with the cost −S on hover.
        zlabel: what a cell holds ("mass", "attention", "Δ mass").
        diverging: use the diverging scale centred at 0 (for differences).
        zmin, zmax: colour limits; default 0..max (or ±max|z| when diverging).
        height, width: size in pixels; height defaults to one that fits n rows.
        theme: "light" or "dark".
        mode: the relation's mode; "self" titles the axes text A (queries) and text A
            (keys) (:func:`axis_titles`).
        words, num: the figure's words over :data:`viz.words.WORDS`, and the page's
            number format (English by default).

    Returns:
        A figure with one ``Heatmap`` trace whose ``z`` is ``plan``.
    """
    w = words_of(words)
    z = as_plan(plan)
    n, m = z.shape
    la, lb = labels(tokens_a, n, "tokens_a"), labels(tokens_b, m, "tokens_b")
    if diverging:
        lim = symmetric_limit(z)
        lo, hi, scale = (zmin if zmin is not None else -lim), (zmax if zmax is not None else lim), th.DIFF_SCALE
    else:
        lo, hi = limits(z)
        lo, hi, scale = (zmin if zmin is not None else lo), (zmax if zmax is not None else hi), th.MASS_SCALE
    if not hi > lo:
        hi = lo + 1.0
    names = hover_names(mode, w)
    trace = map_trace_dict(
        z, la, lb, zname=zlabel, fields=score_fields(scores, z.shape, w), colorscale=scale,
        zmin=lo, zmax=hi, colorbar=th.colorbar(title=dict(text=zlabel), thickness=14),
        names=names)
    if diverging:
        trace["zmid"] = 0.0
    layout = map_layout(la, lb, title, axes=axis_titles(mode, w))
    hover = hover_meta(tokens_a if tokens_a is not None else la,
                       tokens_b if tokens_b is not None else lb, z.size, names=names)
    if hover:
        layout["meta"] = {"kind": "heatmap", **hover}
    return figure([trace], layout, theme, height or default_height(n), width, num.separators)


def _view_plans(relation: Relation, view: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(softmax shown, Sinkhorn shown, softmax joint, Sinkhorn joint) for ``view``."""
    if view not in _VIEWS:
        raise ValueError(f"view must be one of {_VIEWS}, got {view!r}")
    soft = as_plan(relation.softmax_plan, "relation.softmax_plan")
    sink = as_plan(relation.coupling.plan, "relation.coupling.plan")
    if soft.shape != sink.shape:
        raise ValueError(f"softmax plan {soft.shape} and coupling plan {sink.shape} differ in shape")
    if view == "joint":
        return soft, sink, soft, sink
    attn = as_plan(relation.attention, "relation.attention")
    return attn, row_normalise(sink), soft, sink


def _marginal_hover(side: str, names: tuple[str, str], w: dict = WORDS) -> str:
    """The hover of a marginal bar: the token, what it sends or receives, its target and
    the difference (customdata: token, target, difference, sum)."""
    pos = "%{x}" if side == "b" else "%{y}"
    who, verb = (names[1], w["receives"]) if side == "b" else (names[0], w["sends"])
    target = w["target_b" if side == "b" else "target_a"]
    return (f"{who}[{pos}] %{{customdata[0]}}<br>{verb} %{{customdata[3]:.4g}}"
            f"<br>{target} %{{customdata[1]:.4g}}<br>{w['difference']} %{{customdata[2]:+.3g}}"
            "<extra></extra>")


def _target_trace(target: np.ndarray, *, side: str, on: dict, fg: str, part: str,
                  plan: str, w: dict = WORDS) -> dict:
    """The target marks of one marginal: a tick per token at its weight."""
    name = w["target_b" if side == "b" else "target_a"]
    idx = np.arange(len(target))
    size = float(np.clip(360 / max(1, len(target)), 5, 16))
    mark = dict(symbol="line-ew-open" if side == "b" else "line-ns-open", size=size,
                color=fg, line=dict(width=2.5, color=fg))
    xy = dict(x=idx, y=target) if side == "b" else dict(x=target, y=idx)
    return dict(type="scatter", **xy, **on, mode="markers", marker=mark,
                name=name, legendgroup=TARGET, showlegend=False,
                hovertemplate=f"{name} %{{{'y' if side == 'b' else 'x'}:.4g}}<extra></extra>",
                meta=dict(part=f"{part}_target", plan=plan))


def _marginal_traces(sums: np.ndarray, target: np.ndarray, tokens: list[str], *,
                     side: str, axes: tuple[str, str], fg: str, plan: str = "",
                     names: tuple[str, str] = ("A", "B"), w: dict = WORDS) -> list[dict]:
    """Bars of the plan's marginal (split into above / below / on target) and target marks.

    ``side`` "b" draws vertical bars over columns j (sums over A); "a" horizontal bars
    beside rows i. ``axes`` names the (x, y) axes to draw on. None of them enters the
    legend (:func:`_legend_traces` does, in a fixed order); each belongs to its class's
    legend group. Each trace's ``meta`` names its part: {"part": "cols"/"rows", "plan":
    plan, "cls": k} for the bars of class k of :data:`_CLASSES` (:func:`class_bars`),
    "cols_target" / "rows_target" for the marks. ``names`` are what hover calls A's and
    B's tokens.
    """
    cd = np.stack([np.asarray(tokens, dtype=object), target, sums - target, sums], axis=-1)
    hover = _marginal_hover(side, names, w)
    on = dict(xaxis=axes[0], yaxis=axes[1])
    part = "cols" if side == "b" else "rows"
    traces: list[dict] = []
    for k, key in enumerate(CLASS_WORDS):
        label = w[key]
        bars = class_bars(sums, target, k)
        pos, value = bars["pos"], bars["value"]
        xy = dict(x=pos, y=value) if side == "b" else dict(x=value, y=pos, orientation="h")
        if k == 1:
            xy["base"] = bars["base"]
        traces.append(dict(type="bar", **xy, **on, width=0.8, marker=class_marker(k),
                           name=label, legendgroup=label, customdata=cd[pos],
                           showlegend=False, hovertemplate=hover,
                           meta=dict(part=part, plan=plan, cls=k)))
    traces.append(_target_trace(target, side=side, on=on, fg=fg, part=part, plan=plan, w=w))
    return traces


def _legend_traces(fg: str, axes: tuple[str, str], w: dict = WORDS) -> list[dict]:
    """The legend of the marginal bars: one entry per class and one for the targets,
    always shown (even when a frame has no bar of a class) at a fixed rank
    (:data:`LEGEND_RANK`), so the legend never reorders while the sliders move. They
    hold no data; a click on one hides its whole legend group."""
    on = dict(xaxis=axes[0], yaxis=axes[1], x=[None], y=[None], hoverinfo="skip",
              showlegend=True)
    out = [dict(type="bar", **on, name=w[key], legendgroup=w[key],
                legendrank=LEGEND_RANK[_CLASSES[k][0]], marker=class_marker(k))
           for k, key in enumerate(CLASS_WORDS)]
    out.append(dict(type="scatter", **on, mode="markers", name=w["target"], legendgroup=TARGET,
                    legendrank=LEGEND_RANK[TARGET],
                    marker=dict(symbol="line-ew-open", size=14, color=fg,
                                line=dict(width=2.5, color=fg))))
    return out


def _settings(relation: Relation, w: dict = WORDS) -> str:
    return settings_text(w, relation.layer, relation.head)


# compare's grid: columns map | row bars | map | row bars; rows column bars / maps.
_COLS = domains((0.39, 0.09, 0.39, 0.09), 0.012)
_ROWS = domains((0.8, 0.2), 0.03)  # from the bottom: maps, then the column bars above


# Titles of the figures whose numbers follow the sliders: the builders fill them with
# str.format, and the browser fills the same templates (``layout.meta``) when it shows
# another frame of the ε × half-step lattice without asking the server. Two lines each,
# so the two maps' titles never run into each other on a narrow or zoomed page.
COMPARE_TITLES = (WORDS["compare_softmax"], WORDS["compare_sinkhorn"])  # in English
NOT_CONVERGED = WORDS["not_converged"]
DIFFERENCE_TITLE = WORDS["difference_title"]
DIFFERENCE_NOTE = WORDS["difference_note"]
IDENTICAL_NOTE = WORDS["identical"]


# (map, column bars, row bars) axes of each plan in :func:`compare`'s figure
AXES = {"softmax": (("x", "y"), ("x3", "y3"), ("x5", "y5")),
        "sinkhorn": (("x2", "y2"), ("x4", "y4"), ("x6", "y6"))}
# The colour axis of each plan's map: one shared, or one each (with its own colour bar).
COLORAXES = {"shared": {"softmax": "coloraxis", "sinkhorn": "coloraxis"},
             "per_plan": {"softmax": "coloraxis", "sinkhorn": "coloraxis2"}}
LEGEND_PX = 34  # the legend's row at the bottom of compare's figure
# The mass axes of the column bars and of the row bars (layout names), which the browser
# rescales on every frame; the other plan's bars match them.
BAR_AXES = {"cols": "yaxis" + AXES["softmax"][1][1][1:], "rows": "xaxis" + AXES["softmax"][2][0][1:]}


def _colorbars(scale: str, zlabel: str) -> dict:
    """compare's colour axes: one bar beside the maps, or one per plan, stacked."""
    bar = dict(thickness=14, ticklabeloverflow="allow")
    if scale == "shared":
        return {"coloraxis": dict(colorscale=th.MASS_SCALE, colorbar=dict(
            bar, title=dict(text=zlabel, side="right"), len=0.7, y=0.0, yanchor="bottom"))}
    return {"coloraxis": dict(colorscale=th.MASS_SCALE, colorbar=dict(
                bar, title=dict(text="softmax", side="top"), len=0.29, y=0.41, yanchor="bottom")),
            "coloraxis2": dict(colorscale=th.MASS_SCALE, colorbar=dict(
                bar, title=dict(text="Sinkhorn", side="top"), len=0.29, y=0.0, yanchor="bottom"))}


def compare(relation: Relation, *, view: str = "joint", scale: str = "shared",
            height: int | None = None, width: int | None = None,
            theme: str = "light", words: dict | None = None,
            num: Numbers = ENGLISH) -> go.Figure:
    """Softmax beside the Sinkhorn coupling, with marginal bars.

    Softmax as a joint measure, diag(a)·softmax(S/ε), has row sums a but column sums
    ≠ b; the coupling π ∈ Π(a, b) has both. Above each map the column sums (what each
    B token receives) are drawn as bars against the target b: vermillion above, blue
    below ("left alone"), grey on target. Beside each map the row sums against a.

    Args:
        relation: a single-layer, single-head Relation; plans are (n, m).
        view: "joint" shows the plans; "conditional" shows each row normalised
            (softmax's own attention, π / π1), as attention viewers do. The bars always
            show the joint marginals.
        scale: "shared": both maps on one colour scale; "per_plan": each map on its own
            (a nearly flat coupling at large ε then shows its pattern). Weight-0 tokens
            never set a scale (:func:`compare_limits`).
        height, width: size in pixels; height defaults to one that fits n rows.
        theme: "light" or "dark".
        words, num: the figure's words over :data:`viz.words.WORDS` (the titles the
            browser fills on other frames, in ``layout.meta``, too) and the page's number
            format (English by default).

    Returns:
        A figure with ``Heatmap`` traces for softmax (axes x, y) then Sinkhorn (x2, y2),
        on ``coloraxis`` (shared) or ``coloraxis`` and ``coloraxis2`` (per plan); per
        map 4 column-marginal traces above it (x3, y3 and x4, y4) and 4 row-marginal
        traces beside it (x5, y5 and x6, y6), :data:`AXES` naming them; then 4 legend
        traces without data (:func:`_legend_traces`). In self mode the axes read text A
        (queries) and text A (keys).
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    w = words_of(words)
    shown_soft, shown_sink, soft, sink = _view_plans(relation, view)
    n, m = soft.shape
    la, lb = labels(relation.tokens_a, n, "tokens_a"), labels(relation.tokens_b, m, "tokens_b")
    a, b = _compare_weights(relation, (n, m))
    fg = th.foreground(theme)
    axes_of = COLORAXES[scale]
    data = _compare_traces(relation, {"softmax": (shown_soft, soft), "sinkhorn": (shown_sink, sink)},
                           la, lb, a, b, view=view, axes_of=axes_of, fg=fg, w=w)
    data += _legend_traces(fg, AXES["softmax"][1], w)
    coloraxes = _colorbars(scale, w["mass_pi"] if view == "joint" else "π(j | i)")
    lims = compare_limits(shown_soft, shown_sink, a, b, scale=scale)
    for key, name in axes_of.items():
        coloraxes[name].update(cmin=lims[key][0], cmax=lims[key][1])
    col_hi = 1.08 * max(1e-12, float(np.max([soft.sum(0), sink.sum(0), b])))
    row_hi = 1.08 * max(1e-12, float(np.max([soft.sum(1), sink.sum(1), a])))
    x_tokens, y_tokens, axes = _compare_axes(la, lb, relation.mode, col_hi=col_hi,
                                             row_hi=row_hi, w=w)
    margin = th.token_margins(x_tokens, y_tokens, top=90, right=110)
    margin["b"] += LEGEND_PX
    what = w["what_self" if relation.mode == "self" else "what_b"]
    titles = [w["compare_softmax"], w["compare_sinkhorn"]]
    layout = dict(
        **coloraxes,
        barmode="overlay", bargap=0.15,
        # the legend in a row of its own at the bottom: never over a title
        legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.0,
                    xanchor="left", title=dict(text=w["bars"]), traceorder="normal"),
        title=top_title(w["relates"].format(what=what, settings=_settings(relation, w))),
        meta=dict(kind="compare", view=view, scale=scale, titles=titles,
                  not_converged=w["not_converged"], labels_a=la, labels_b=lb,
                  coloraxes=axes_of, bar_axes=BAR_AXES,
                  **hover_meta(relation.tokens_a, relation.tokens_b, n * m,
                               names=hover_names(relation.mode, w))),
        # fixed margins (sized for the colour bar and legend): a colour bar whose tick
        # labels change width would otherwise move them, and plotly would draw twice
        margin={**margin, "autoexpand": False},
        annotations=_map_titles(_compare_titles(relation, soft, sink, a, b, w, num)),
        **axes,
    )
    return figure(data, layout, theme, height or default_height(n, extra=170), width,
                  num.separators)


def _compare_weights(relation: Relation, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The relation's weights a (n,) and b (m,), checked against the plans' shape."""
    a, b = as_array(relation.a, "relation.a", 1), as_array(relation.b, "relation.b", 1)
    if a.shape != (shape[0],) or b.shape != (shape[1],):
        raise ValueError(f"weights a {a.shape} and b {b.shape} do not match the plan {shape}")
    return a, b


def _compare_titles(relation: Relation, soft: np.ndarray, sink: np.ndarray, a: np.ndarray,
                    b: np.ndarray, w: dict = WORDS, num: Numbers = ENGLISH) -> tuple[str, str]:
    """The two maps' titles (``compare_softmax`` and ``compare_sinkhorn`` of ``w``
    filled, numbers as ``num`` writes them): softmax's column error ‖πᵀ1 − b‖₁, and the
    coupling's largest marginal error and whether it converged."""
    c = relation.coupling
    soft_col = references.l1(soft.sum(0), b, axes=-1)
    sink_err = max(references.l1(sink.sum(1), a, axes=-1), references.l1(sink.sum(0), b, axes=-1))
    converged = bool(np.all(np.asarray(c.converged)))
    return (fill(w["compare_softmax"], eps=num(relation.eps), softmax_col_err=num(soft_col)),
            fill(w["compare_sinkhorn"], eps=num(c.eps), steps=steps_text(w, c.half_steps_run, num),
                 max_err=num(sink_err), not_converged="" if converged else w["not_converged"]))


def _map_titles(titles: Sequence[str]) -> list[dict]:
    """Each map's title as an annotation starting at its left edge: the most room for
    two lines."""
    return [dict(text=t, x=_COLS[2 * k][0], y=1.0, xref="paper", yref="paper",
                 xanchor="left", yanchor="bottom", align="left", showarrow=False,
                 font=dict(size=16)) for k, t in enumerate(titles)]


def _compare_traces(relation: Relation, plans: dict[str, tuple[np.ndarray, np.ndarray]],
                    la: list[str], lb: list[str], a: np.ndarray, b: np.ndarray, *, view: str,
                    axes_of: dict[str, str], fg: str, w: dict = WORDS) -> list[dict]:
    """Per plan: its map, then the bars of its column sums (above) and row sums (beside).

    ``plans`` maps "softmax" and "sinkhorn" to (the map shown, the joint plan); the bars
    always show the joint plan's marginals.
    """
    names = hover_names(relation.mode, w)
    fields = score_fields(relation.scores, (len(la), len(lb)), w)
    data: list[dict] = []
    for key, (z, joint) in plans.items():
        maps, cols, rows = AXES[key]
        data.append(map_trace_dict(z, la, lb, zname=w["mass"] if view == "joint" else "π(j|i)",
                                   fields=fields, coloraxis=axes_of[key], names=names,
                                   xaxis=maps[0], yaxis=maps[1],
                                   meta=dict(part="map", plan=key)))
        data += _marginal_traces(joint.sum(0), b, lb, side="b", axes=cols, fg=fg, plan=key,
                                 names=names, w=w)
        data += _marginal_traces(joint.sum(1), a, la, side="a", axes=rows, fg=fg, plan=key,
                                 names=names, w=w)
    return data


def _compare_axes(la: list[str], lb: list[str], mode: str, *, col_hi: float,
                  row_hi: float, w: dict = WORDS) -> tuple[dict, dict, dict]:
    """(x token axis, y token axis, the six axes of :data:`AXES` by layout name).

    The maps sit on numeric token axes (Sinkhorn's rows follow softmax's); the column
    bars above them share their token axis and one mass axis up to ``col_hi``; the row
    bars beside them share their rows and one mass axis up to ``row_hi``, labelled above
    (below, the next map's slanted token labels would run into them).
    """
    rows_title, cols_title = axis_titles(mode, w)
    x_tokens = th.token_axis(lb, title=cols_title, rotate=True)
    y_tokens = th.token_axis(la, title=rows_title, reverse=True)
    bottom, top = _ROWS
    # "A sends" on two lines: its row bars are narrow
    receives, sends = w["a_receives" if mode == "self" else "b_receives"], w["a_sends"]
    bare = dict(automargin=False, showticklabels=False, showgrid=False)
    row_mass = dict(automargin=False, range=[0, row_hi], tickangle=0, tickmode="array",
                    tickvals=[round_tick(row_hi)],  # one: the panel is narrow
                    side="top", title=dict(text=sends, standoff=4))
    axes = dict(
        xaxis=dict(x_tokens, domain=_COLS[0], anchor="y"),
        yaxis=dict(y_tokens, domain=bottom, anchor="x"),
        xaxis2=dict(x_tokens, domain=_COLS[2], anchor="y2"),
        yaxis2=dict(y_tokens, domain=bottom, anchor="x2", matches="y", showticklabels=False,
                    title=dict(text="")),
        xaxis3=dict(bare, domain=_COLS[0], anchor="y3", matches="x"),
        yaxis3=dict(automargin=False, domain=top, anchor="x3", range=[0, col_hi], nticks=3,
                    title=dict(text=receives)),
        xaxis4=dict(bare, domain=_COLS[2], anchor="y4", matches="x2"),
        yaxis4=dict(automargin=False, domain=top, anchor="x4", range=[0, col_hi], nticks=3,
                    matches="y3", showticklabels=False),  # as y3's
        xaxis5=dict(row_mass, domain=_COLS[1], anchor="y5"),
        yaxis5=dict(bare, domain=bottom, anchor="x5", matches="y"),
        xaxis6=dict(row_mass, domain=_COLS[3], anchor="y6", matches="x5"),
        yaxis6=dict(bare, domain=bottom, anchor="x6", matches="y"),
    )
    return x_tokens, y_tokens, axes


def difference(relation: Relation, *, view: str = "joint", height: int | None = None,
               width: int | None = None, theme: str = "light", words: dict | None = None,
               num: Numbers = ENGLISH) -> go.Figure:
    """Sinkhorn − softmax on a diverging scale centred at 0.

    Red cells are pairs the coupling gives more mass than softmax (mass moved towards
    B tokens softmax left alone), blue cells pairs it gives less. When the two maps
    agree to rounding (half-step 1 is softmax) the title says "identical" and the scale
    is ±the largest mass shown, so the noise stays pale (:func:`difference_limit`).

    Args:
        relation: a single-layer, single-head Relation; plans are (n, m).
        view: "joint" (plan difference) or "conditional" (row-normalised difference).
        height, width, theme, words, num: as for :func:`compare`.

    Returns:
        A figure with one ``Heatmap`` whose ``z`` is (n, m) Sinkhorn − softmax, zmid 0.
    """
    w = words_of(words)
    shown_soft, shown_sink, _, _ = _view_plans(relation, view)
    n, m = shown_soft.shape
    z = shown_sink - shown_soft
    la, lb = labels(relation.tokens_a, n, "tokens_a"), labels(relation.tokens_b, m, "tokens_b")
    lim, identical = difference_limit(shown_soft, shown_sink)
    names = hover_names(relation.mode, w)
    fields = [("Sinkhorn", shown_sink), ("softmax", shown_soft)] + score_fields(
        relation.scores, (n, m), w)
    trace = map_trace_dict(
        z, la, lb, zname="Sinkhorn − softmax", fields=fields, colorscale=th.DIFF_SCALE,
        zmin=-lim, zmax=lim, zmid=0.0, names=names,
        colorbar=th.colorbar(title=dict(text=w["delta_mass"] if view == "joint" else "Δ π(j|i)"),
                             thickness=14),
        meta=dict(part="diff", fields=["Sinkhorn", "softmax"]))
    c = relation.coupling
    title = fill(w["difference_title"], eps=num(relation.eps),
                 steps=steps_text(w, c.half_steps_run, num),
                 identical=w["identical"] if identical else "")
    layout = map_layout(la, lb, title, top=72, axes=axis_titles(relation.mode, w))
    layout["title"] = top_title(title)
    layout["annotations"] = [dict(text=fill(w["difference_note"], settings=_settings(relation, w)),
                                  x=0.0, y=1.0, xref="paper", yref="paper", xanchor="left",
                                  yanchor="bottom", align="left", showarrow=False,
                                  yshift=4, font=dict(size=th.FONT_SIZE))]
    layout["meta"] = dict(kind="difference", view=view, title=w["difference_title"],
                          identical=w["identical"], tolerance=IDENTICAL,
                          **hover_meta(relation.tokens_a, relation.tokens_b, n * m, names=names))
    return figure([trace], layout, theme, height or default_height(n), width, num.separators)
