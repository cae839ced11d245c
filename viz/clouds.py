"""Point cloud: both texts' points in one joint 2-D or 3-D projection, with coupling edges."""

from __future__ import annotations


import numpy as np
import plotly.graph_objects as go

from viz import theme as th
from viz._data import as_array, as_plan, bin_edges, bin_style, segments, spread_labels, top_edges
from viz._data import labels as _labels
from viz._axes import axis_titles
from viz.words import ENGLISH, WORDS, words_of

from engine.relation.summary import Numbers
from engine.types import Projection, Relation

N_BINS = 5
LOW_CORR = 0.3
_SPACES = {"qk": "cloud_qk", "hidden": "cloud_hidden"}  # each space's words


def _coords(projection: Projection, n: int, m: int) -> tuple[np.ndarray, np.ndarray, int]:
    dim = int(projection.dim)
    if dim not in (2, 3):
        raise ValueError(f"projection.dim must be 2 or 3, got {dim}")
    xa, xb = as_array(projection.xy_a, "projection.xy_a", 2), as_array(projection.xy_b, "projection.xy_b", 2)
    if xa.shape != (n, dim) or xb.shape != (m, dim):
        raise ValueError(f"projection coordinates {xa.shape}, {xb.shape} do not match "
                         f"{n} and {m} tokens in {dim} dimensions")
    return xa, xb, dim


def _points(xy, w, tokens, raw, side, show_labels, dim, theme, name, words=WORDS,
            num=ENGLISH):
    """One trace of a text's points: size ∝ √weight, zero-weight tokens small and grey.

    ``tokens`` are escaped (SVG text and hover); ``raw`` feed the 3-D WebGL labels.
    ``show_labels`` is a bool, or an (N,) mask of the points to label.
    """
    shown = np.broadcast_to(np.asarray(show_labels, dtype=bool), (len(w),))
    show_labels = bool(shown.any())
    w_max = float(w.max()) if w.max() > 0 else 1.0
    size = np.where(w > 0, 6 + 16 * np.sqrt(w / w_max), 4.0)
    color = np.where(w > 0, th.COLOR_A if side == "a" else th.COLOR_B, th.COLOR_ZERO)
    hover = [words["cloud_weight"].format(SIDE=side.upper(), k=k, label=t, side=side,
                                          weight=num(w[k])) for k, t in enumerate(tokens)]
    common = dict(
        mode="markers+text" if show_labels else "markers",
        text=None if not show_labels else [
            (th.shorten(t, 14) if dim == 2 else th.escape_gl(r)) if on else ""
            for t, r, on in zip(tokens, raw, shown)],
        textposition="top center", hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
        name=name, textfont=dict(color=th.text_color(side, theme), size=11))
    marker = dict(size=size, color=color, opacity=1.0,
                  symbol="circle" if side == "a" else "diamond",
                  line=dict(width=1, color=th.TEMPLATES[theme].layout.paper_bgcolor))
    if dim == 2:
        return go.Scatter(x=xy[:, 0], y=xy[:, 1], marker=marker, **common)
    marker["size"] = size * 0.6
    return go.Scatter3d(x=xy[:, 0], y=xy[:, 1], z=xy[:, 2], marker=marker, **common)


def _edges(xa, xb, plan, top, dim, theme, name="coupling"):
    i, j, mass = top_edges(plan, max_edges=top)
    scale = float(mass.max()) if mass.size else 1.0
    traces = []
    for k, sel in enumerate(bin_edges(mass, scale, N_BINS)):
        w, op = bin_style(k, N_BINS)
        pa, pb = xa[i[sel]], xb[j[sel]]
        coords = segments(pa[:, 0], pa[:, 1], pb[:, 0], pb[:, 1],
                          *((pa[:, 2], pb[:, 2]) if dim == 3 else ()))
        line = dict(width=w, color=th.edge_color(theme))
        kw = dict(mode="lines", line=line, opacity=op, hoverinfo="skip", name=name,
                  legendgroup="coupling", showlegend=k == N_BINS - 1)
        if dim == 2:
            traces.append(go.Scatter(x=coords[0], y=coords[1], **kw))
        else:
            traces.append(go.Scatter3d(x=coords[0], y=coords[1], z=coords[2], **kw))
    return traces


def cloud(relation: Relation, projection: Projection, *, which: str = "sinkhorn",
          top_edges: int = 40, labels: bool = True, height: int | None = None,
          width: int | None = None, theme: str = "light", words: dict | None = None,
          num: Numbers = ENGLISH) -> go.Figure:
    """Both texts' points in one projection, joined by the heaviest coupling edges.

    The picture is honest only when projected distance tracks cost: the title reports
    the Spearman correlation ρ between A–B distances and the cost −S, and warns when
    ρ < 0.3.

    Args:
        relation: a single-layer, single-head Relation (plans (n, m), weights a, b).
        projection: the joint projection; ``xy_a`` (n, dim), ``xy_b`` (m, dim), dim 2 or 3.
        which: edges from the "sinkhorn" coupling or the "softmax" joint measure.
        top_edges: how many of the heaviest edges to draw (opacity and width ∝ mass).
        labels: write tokens next to the points, as many as fit without piling up (the
            heaviest first); hover always names every point.
        height, width: size in pixels.
        theme: "light" or "dark".
        words, num: the figure's words over :data:`viz.words.WORDS` and the page's number
            format (English by default).

    Returns:
        ``N_BINS`` edge traces (lightest first), then text A's and text B's points;
        ``Scatter`` for dim 2, ``Scatter3d`` for dim 3.
    """
    if which not in ("sinkhorn", "softmax"):
        raise ValueError(f"which must be 'sinkhorn' or 'softmax', got {which!r}")
    plan = as_plan(relation.coupling.plan if which == "sinkhorn" else relation.softmax_plan,
                   f"{which} plan")
    n, m = plan.shape
    xa, xb, dim = _coords(projection, n, m)
    la = _labels(relation.tokens_a, n, "tokens_a")
    lb = _labels(relation.tokens_b, m, "tokens_b")
    a, b = as_array(relation.a, "relation.a", 1), as_array(relation.b, "relation.b", 1)
    w = words_of(words)
    fig = go.Figure(_edges(xa, xb, plan, int(top_edges), dim, theme, w["coupling"]))
    label_a = label_b = labels
    if labels:  # many points: label the heaviest spread-out ones, so labels do not pile up
        mask = spread_labels(np.concatenate([xa, xb]), np.concatenate([a, b]))
        label_a, label_b = mask[:n], mask[n:]
    names = axis_titles(relation.mode, w)  # self mode: text A's queries and its keys
    fig.add_trace(_points(xa, a, la, list(relation.tokens_a), "a", label_a, dim, theme,
                          names[0], w, num))
    fig.add_trace(_points(xb, b, lb, list(relation.tokens_b), "b", label_b, dim, theme,
                          names[1], w, num))
    rho = float(projection.distance_cost_corr)
    rho_text = num(rho) if np.isfinite(rho) else w["na"]
    method = projection.method.upper()
    space = w[_SPACES[projection.space]] if projection.space in _SPACES else projection.space
    notes = [w["cloud_edges"].format(k=int(top_edges), which=which)]
    if projection.explained is not None:
        notes.append(w["cloud_keeps"].format(method=method, share=num.count(
            round(100 * float(projection.explained)))))
    if projection.note:
        notes.append(th.escape(w.get("note_" + projection.note_code) or projection.note))
    fig.update_layout(
        title=th.title(w["cloud_title"].format(method=method, space=space, rho=rho_text),
                       " · ".join(notes)),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=1.0, xanchor="right"),
        hovermode="closest", margin=dict(t=110))  # t: title, its note, then the legend
    if not (np.isfinite(rho) and rho >= LOW_CORR):
        fig.add_annotation(
            text=w["cloud_low"].format(rho=rho_text), xref="paper", yref="paper", x=0.0, y=-0.08,
            xanchor="left", showarrow=False, font=dict(color=th.COLOR_OVER))
    axis = [f"{projection.method.upper()} {k}" for k in (1, 2, 3)]
    if dim == 2:
        fig.update_xaxes(title=dict(text=axis[0]), zeroline=False)
        fig.update_yaxes(title=dict(text=axis[1]), zeroline=False, scaleanchor="x",
                         scaleratio=1)
    else:
        fig.update_layout(scene=dict(aspectmode="data", xaxis_title=axis[0],
                                     yaxis_title=axis[1], zaxis_title=axis[2]))
    return th.apply(fig, theme, height=height or 600, width=width, separators=num.separators)
