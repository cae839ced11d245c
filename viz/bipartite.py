"""Bipartite graph of a plan: text A's tokens on the left, text B's on the right.

Node area is proportional to the token's weight (a_i or b_j); an edge i–j has width and
opacity proportional to its mass π_ij. Edges are grouped into a few traces by mass, so a
figure stays light however many edges it shows.
"""

from __future__ import annotations


import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz import theme as th
from viz._data import as_array, as_plan, bin_edges, bin_style, labels, segments, top_edges
from viz.heatmaps import axis_titles, fill

from engine.types import Relation

N_BINS = 5
LABEL_PX = 13  # the least vertical room (pixels) a node label needs
MIN_EDGE = 1e-4  # edges lighter than this fraction of the heaviest are not drawn
_WHICH = ("both", "softmax", "sinkhorn")
# Panel titles; filled here and, for other frames of the ε × half-step lattice, in the
# browser (``layout.meta``).
TITLES = {"softmax": "Softmax diag(a)·softmax(S/ε), ε={eps}",
          "sinkhorn": "Sinkhorn coupling, ε={eps}, {steps}"}


def _positions(size: int, span: int) -> np.ndarray:
    """y positions of ``size`` nodes spread evenly over 0..span-1 (token order kept)."""
    if size == 1:
        return np.array([(span - 1) / 2.0])
    return np.arange(size) * (span - 1) / (size - 1)


def _edge_traces(i, j, mass, ya, yb, scale, color, fade, name, show_legend, plan=""):
    """N_BINS line traces (lightest first) for edges (i, j) with the given masses.

    Each trace's ``meta`` is {"part": name, "plan": plan, "bin": k}.
    """
    traces = []
    for k, sel in enumerate(bin_edges(mass, scale, N_BINS)):
        w, op = bin_style(k, N_BINS)
        x, y = segments(np.zeros(sel.size), ya[i[sel]], np.ones(sel.size), yb[j[sel]])
        traces.append(go.Scatter(x=x, y=y, mode="lines", line=dict(width=w, color=color),
                                 opacity=op * fade, hoverinfo="skip", name=name,
                                 legendgroup=name, showlegend=show_legend and k == N_BINS - 1,
                                 meta=dict(part=name, plan=plan, bin=k)))
    return traces


def _partners(plan: np.ndarray, index: int, axis: int, names: list[str], top: int = 5) -> str:
    """Hover lines naming the heaviest partners of one token and their masses."""
    row = plan[index] if axis == 0 else plan[:, index]
    order = [p for p in np.argsort(-row, kind="stable")[:top] if row[p] > 0]
    if not order:
        return "no mass"
    return "<br>".join(f"  → {names[p]}  {th.fmt(row[p])}" for p in order)


def node_hover(k: int, side: str, tokens: list[str], partner_names: list[str], w: np.ndarray,
               plan: np.ndarray) -> str:
    """Hover text of node k on ``side``: its weight, what it sends or receives, and its
    heaviest partners with their masses."""
    sums = plan.sum(axis=1 if side == "a" else 0)
    verb = "sends" if side == "a" else "receives"
    head = (f"{side.upper()}[{k}] {tokens[k]}<br>weight {side} = {th.fmt(w[k])}, "
            f"{verb} {th.fmt(sums[k])}<br>heaviest partners:<br>")
    return head + _partners(plan, k, 0 if side == "a" else 1, partner_names)


def _node_trace(y, w, tokens, partner_names, plan, side, highlight_index, theme, span, key="",
                label_every=1):
    """Markers and labels for one side; hover lists the top partners with masses.

    Only every ``label_every``-th token (and the highlighted one) is labelled, so labels
    never overlap on long texts; hover names every token. ``meta`` is {"part": "nodes",
    "plan": key, "side": side, "labels": tokens, "partners": partner_names} (what the
    browser needs to rewrite the hover).
    """
    w_max = float(w.max()) if w.max() > 0 else 1.0
    big = float(np.clip(600 / span, 8, 30))
    size = np.where(w > 0, 5 + (big - 5) * np.sqrt(w / w_max), 5.0)
    base = th.COLOR_A if side == "a" else th.COLOR_B
    color = np.where(w > 0, base, th.COLOR_ZERO)
    line_w = np.zeros(len(w))
    if highlight_index is not None:
        line_w[highlight_index] = 3.0
    hover = [node_hover(k, side, tokens, partner_names, w, plan) for k in range(len(tokens))]
    return go.Scatter(
        x=np.full(len(w), 0.0 if side == "a" else 1.0), y=y, mode="markers+text",
        text=[th.shorten(t) if k % label_every == 0 or k == highlight_index else ""
              for k, t in enumerate(tokens)],
        textposition="middle left" if side == "a" else "middle right",
        marker=dict(size=size, color=color, opacity=1.0, line=dict(width=line_w, color=th.COLOR_ACCENT)),
        hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
        name="text A" if side == "a" else "text B", showlegend=False,
        cliponaxis=False, textfont=dict(color=th.foreground(theme)),
        meta=dict(part="nodes", plan=key, side=side, labels=list(tokens),
                  partners=list(partner_names)))


def graph(relation: Relation, *, which: str = "both", top_k: int | None = 3,
          threshold: float = 0.0, highlight: tuple[str, int] | None = None,
          max_edges: int = 600, height: int | None = None, width: int | None = None,
          theme: str = "light") -> go.Figure:
    """Bipartite graph of softmax's joint measure and/or the Sinkhorn coupling.

    An edge i–j is drawn when π_ij ≥ ``threshold``, π_ij ≥ :data:`MIN_EDGE` times the
    heaviest mass shown (a lighter edge would be a line for no mass: at small ε softmax
    gives most pairs 1e-80) and j is among the ``top_k`` heaviest partners of A's token i. Width and opacity grow with π_ij on one
    scale shared by both panels. Softmax piles edges onto a few B tokens and leaves
    others bare; the coupling reaches every B token in proportion to b.

    Args:
        relation: a single-layer, single-head Relation; plans are (n, m).
        which: "both" (two panels side by side), "softmax" or "sinkhorn".
        top_k: edges kept per token of A; None or 0 keeps all (above ``threshold``).
        threshold: the least mass an edge needs to be drawn.
        highlight: ("a", i) or ("b", j): emphasise that token's edges in its colour and
            fade the rest (the app drives this from a selection or a select box).
        max_edges: the most edges per panel (the heaviest are kept).
        height, width: size in pixels; height defaults to one that fits the tokens.
        theme: "light" or "dark".

    Returns:
        Per panel, ``N_BINS`` edge traces (lightest first), ``N_BINS`` highlight traces
        when ``highlight`` is set, then the A and B node traces.
    """
    if which not in _WHICH:
        raise ValueError(f"which must be one of {_WHICH}, got {which!r}")
    plans = {"softmax": as_plan(relation.softmax_plan, "relation.softmax_plan"),
             "sinkhorn": as_plan(relation.coupling.plan, "relation.coupling.plan")}
    keys = ["softmax", "sinkhorn"] if which == "both" else [which]
    n, m = plans[keys[0]].shape
    la, lb = labels(relation.tokens_a, n, "tokens_a"), labels(relation.tokens_b, m, "tokens_b")
    a, b = as_array(relation.a, "relation.a", 1), as_array(relation.b, "relation.b", 1)
    if highlight is not None:
        side, idx = highlight
        if side not in ("a", "b") or not 0 <= int(idx) < (n if side == "a" else m):
            raise ValueError(f"highlight must be ('a', 0..{n - 1}) or ('b', 0..{m - 1}), got {highlight!r}")
    span = max(n, m)
    ya, yb = _positions(n, span), _positions(m, span)
    scale = max(float(plans[k].max()) for k in keys)
    c = relation.coupling
    titles = {"softmax": fill(TITLES["softmax"], eps=th.fmt(relation.eps)),
              "sinkhorn": fill(TITLES["sinkhorn"], eps=th.fmt(c.eps),
                               steps=th.half_steps_text(c.half_steps_run))}
    fig = make_subplots(rows=1, cols=len(keys), subplot_titles=[titles[k] for k in keys],
                        horizontal_spacing=0.14)
    height = height or int(min(1100, max(380, 150 + 18 * span)))
    label_every = max(1, int(np.ceil(LABEL_PX / max(1e-9, (height - 150) / span))))
    fade = 0.3 if highlight is not None else 1.0
    edge_col = th.edge_color(theme)
    for col, key in enumerate(keys, start=1):
        plan = plans[key]
        i, j, mass = top_edges(plan, top_k=top_k, threshold=max(threshold, MIN_EDGE * scale),
                               max_edges=max_edges)
        for tr in _edge_traces(i, j, mass, ya, yb, scale, edge_col, fade, "edges", False, key):
            fig.add_trace(tr, row=1, col=col)
        if highlight is not None:
            side, idx = highlight[0], int(highlight[1])
            sel = (i == idx) if side == "a" else (j == idx)
            color = th.COLOR_A if side == "a" else th.COLOR_B
            for tr in _edge_traces(i[sel], j[sel], mass[sel], ya, yb, scale, color, 1.0,
                                   "highlight", False, key):
                fig.add_trace(tr, row=1, col=col)
        hl_a = int(highlight[1]) if highlight is not None and highlight[0] == "a" else None
        hl_b = int(highlight[1]) if highlight is not None and highlight[0] == "b" else None
        fig.add_trace(_node_trace(ya, a, la, lb, plan, "a", hl_a, theme, span, key,
                                  label_every), row=1, col=col)
        fig.add_trace(_node_trace(yb, b, lb, la, plan, "b", hl_b, theme, span, key,
                                  label_every), row=1, col=col)
    sides = axis_titles(relation.mode)  # text A (queries) and text A (keys) in self mode
    if relation.mode == "self":
        fig.for_each_trace(lambda t: t.update(name=sides[0] if t.name == "text A" else sides[1]),
                           selector=dict(type="scatter", mode="markers+text"))
    fig.update_xaxes(range=[-0.55, 1.55], tickvals=[0, 1], ticktext=list(sides),
                     showgrid=False, zeroline=False, fixedrange=True)
    fig.update_yaxes(range=[span - 0.5, -0.5], visible=False, fixedrange=True)
    rule = f"top {top_k} per A token" if top_k else "all edges"
    if threshold > 0:
        rule += f", mass ≥ {th.fmt(threshold)}"
    fig.update_layout(
        title=th.title(f"Who sends mass to whom · {rule} · layer {relation.layer}, head "
                       f"{relation.head}", "node area ∝ weight, edge width ∝ mass; grey nodes "
                       "carry no weight"),
        hovermode="closest", showlegend=False, margin=dict(t=100),  # t: title and its note
        meta=dict(kind="graph", plans=keys, titles=[TITLES[k] for k in keys], top_k=top_k or 0,
                  threshold=float(threshold), min_edge=MIN_EDGE, max_edges=int(max_edges),
                  highlight=None if highlight is None else [highlight[0], int(highlight[1])]))
    return th.apply(fig, theme, height=height, width=width)
