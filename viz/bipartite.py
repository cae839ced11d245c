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
from viz._axes import axis_titles, fill
from viz.words import ENGLISH, WORDS, settings_text, steps_text, words_of

from engine.relation.summary import Numbers
from engine.types import Relation

N_BINS = 5
LABEL_PX = 13  # the least vertical room (pixels) a node label needs
MIN_EDGE = 1e-4  # edges lighter than this fraction of their plan's heaviest are not drawn
PLOT_MIN_PX = 420  # the least height of the plot area: nodes apart, labels readable
MARGIN_T, MARGIN_B = 130, 60  # title, its note and the panel titles; the side names
NODE_FILL = 0.8  # the heaviest node's diameter as a share of the room between two nodes
NOTE = WORDS["graph_note"]
_WHICH = ("both", "softmax", "sinkhorn")
# Panel titles; filled here and, for other frames of the ε × half-step lattice, in the
# browser (``layout.meta``).
TITLES = {"softmax": WORDS["graph_softmax"], "sinkhorn": WORDS["graph_sinkhorn"]}  # English


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


def _partners(plan: np.ndarray, index: int, axis: int, names: list[str], top: int = 5,
              words: dict = WORDS, num: Numbers = ENGLISH) -> str:
    """Hover lines naming the heaviest partners of one token and their masses."""
    row = plan[index] if axis == 0 else plan[:, index]
    order = [p for p in np.argsort(-row, kind="stable")[:top] if row[p] > 0]
    if not order:
        return words["no_mass"]
    return "<br>".join(f"  → {names[p]}  {num(row[p])}" for p in order)


def node_hover(k: int, side: str, tokens: list[str], partner_names: list[str], w: np.ndarray,
               plan: np.ndarray, words: dict = WORDS, num: Numbers = ENGLISH) -> str:
    """Hover text of node k on ``side``: its weight, what it sends or receives, and its
    heaviest partners with their masses (``words``' template ``node``, ``num``'s numbers;
    the browser writes the same on other frames)."""
    sums = plan.sum(axis=1 if side == "a" else 0)
    verb = words["sends" if side == "a" else "receives"]
    head = words["node"].format(SIDE=side.upper(), k=k, label=tokens[k], side=side,
                                weight=num(w[k]), verb=verb, sum=num(sums[k]))
    return head + _partners(plan, k, 0 if side == "a" else 1, partner_names, words=words,
                            num=num)


def _node_trace(y, w, tokens, partner_names, plan, side, highlight_index, theme, room, key="",
                label_every=1, words=WORDS, num=ENGLISH):
    """Markers and labels for one side; hover lists the top partners with masses.

    The heaviest node is at most :data:`NODE_FILL` of ``room`` (the pixels between two
    node centres) across, so neighbours never touch while there is room for 8 px. Only
    every ``label_every``-th token (and the highlighted one) is labelled, so labels never
    overlap on long texts; hover names every token. ``meta`` is {"part": "nodes", "plan":
    key, "side": side, "labels": tokens, "partners": partner_names} (what the browser
    needs to rewrite the hover).
    """
    w_max = float(w.max()) if w.max() > 0 else 1.0
    big = float(np.clip(NODE_FILL * room, 8, 30))
    size = np.where(w > 0, 5 + (big - 5) * np.sqrt(w / w_max), 5.0)
    base = th.COLOR_A if side == "a" else th.COLOR_B
    color = np.where(w > 0, base, th.COLOR_ZERO)
    line_w = np.zeros(len(w))
    if highlight_index is not None:
        line_w[highlight_index] = 3.0
    hover = [node_hover(k, side, tokens, partner_names, w, plan, words, num)
             for k in range(len(tokens))]
    return go.Scatter(
        x=np.full(len(w), 0.0 if side == "a" else 1.0), y=y, mode="markers+text",
        text=[th.shorten(t) if k % label_every == 0 or k == highlight_index else ""
              for k, t in enumerate(tokens)],
        textposition="middle left" if side == "a" else "middle right",
        marker=dict(size=size, color=color, opacity=1.0, line=dict(width=line_w, color=th.COLOR_ACCENT)),
        hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
        name=words["text_a"] if side == "a" else words["text_b"], showlegend=False,
        cliponaxis=False, textfont=dict(color=th.foreground(theme)),
        meta=dict(part="nodes", plan=key, side=side, labels=list(tokens),
                  partners=list(partner_names)))


def default_height(span: int) -> int:
    """A figure height (px) whose plot area gives ``span`` nodes a column each of at
    least :data:`PLOT_MIN_PX` in all, 26 px per node while that fits 1100 px.

        height = clip(MARGIN_T + MARGIN_B + 26·span, MARGIN_T + MARGIN_B + PLOT_MIN_PX, 1100)
    """
    chrome = MARGIN_T + MARGIN_B
    return int(min(1100, max(chrome + PLOT_MIN_PX, chrome + 26 * span)))


def _plans(relation: Relation, which: str) -> tuple[dict[str, np.ndarray], list[str]]:
    """The plans to draw, by key, and their panel order."""
    if which not in _WHICH:
        raise ValueError(f"which must be one of {_WHICH}, got {which!r}")
    plans = {"softmax": as_plan(relation.softmax_plan, "relation.softmax_plan"),
             "sinkhorn": as_plan(relation.coupling.plan, "relation.coupling.plan")}
    return plans, (["softmax", "sinkhorn"] if which == "both" else [which])


def _check_highlight(highlight: tuple[str, int] | None, n: int, m: int) -> None:
    if highlight is None:
        return
    side, idx = highlight
    if side not in ("a", "b") or not 0 <= int(idx) < (n if side == "a" else m):
        raise ValueError(f"highlight must be ('a', 0..{n - 1}) or ('b', 0..{m - 1}), got {highlight!r}")


def edge_scale(plan: np.ndarray) -> float:
    """The mass an edge of ``plan`` is drawn at full width: the plan's own heaviest cell.

    Each panel is scaled to its own range, so a nearly flat coupling (ε = 1) still shows
    which of its pairs are heavier, instead of every edge at the faintest width of a scale
    set by softmax's peaks. ``js/patch.js`` (``patchGraph``) follows the same rule.
    """
    hi = float(np.max(plan)) if plan.size else 0.0
    return hi if hi > 0 else 1.0


def _panel_titles(relation: Relation, w: dict = WORDS, num: Numbers = ENGLISH
                  ) -> dict[str, str]:
    c = relation.coupling
    return {"softmax": fill(w["graph_softmax"], eps=num(relation.eps)),
            "sinkhorn": fill(w["graph_sinkhorn"], eps=num(c.eps),
                             steps=steps_text(w, c.half_steps_run, num))}


def _panel(plan: np.ndarray, key: str, *, a, b, la, lb, ya, yb, top_k, threshold, max_edges,
           highlight, theme, room, label_every, words=WORDS, num=ENGLISH) -> list[go.Scatter]:
    """One panel's traces: ``N_BINS`` edge traces, ``N_BINS`` highlight traces when a
    token is highlighted, then the A and B nodes."""
    scale = edge_scale(plan)
    i, j, mass = top_edges(plan, top_k=top_k, threshold=max(threshold, MIN_EDGE * scale),
                           max_edges=max_edges)
    fade = 0.3 if highlight is not None else 1.0
    traces = _edge_traces(i, j, mass, ya, yb, scale, th.edge_color(theme), fade, "edges",
                          False, key)
    hl = {"a": None, "b": None}
    if highlight is not None:
        side, idx = highlight[0], int(highlight[1])
        hl[side] = idx
        sel = (i == idx) if side == "a" else (j == idx)
        color = th.COLOR_A if side == "a" else th.COLOR_B
        traces += _edge_traces(i[sel], j[sel], mass[sel], ya, yb, scale, color, 1.0,
                               "highlight", False, key)
    traces.append(_node_trace(ya, a, la, lb, plan, "a", hl["a"], theme, room, key, label_every,
                              words, num))
    traces.append(_node_trace(yb, b, lb, la, plan, "b", hl["b"], theme, room, key, label_every,
                              words, num))
    return traces


def _rule(top_k: int | None, threshold: float, w: dict = WORDS, num: Numbers = ENGLISH) -> str:
    """Which edges are drawn, in words: "top 3 per A token, mass ≥ 0.01"."""
    rule = w["graph_top"].format(k=top_k) if top_k else w["graph_all"]
    if threshold > 0:
        rule += w["graph_threshold"].format(mass=num(threshold))
    return rule


def graph(relation: Relation, *, which: str = "both", top_k: int | None = 3,
          threshold: float = 0.0, highlight: tuple[str, int] | None = None,
          max_edges: int = 600, height: int | None = None, width: int | None = None,
          theme: str = "light", words: dict | None = None, num: Numbers = ENGLISH) -> go.Figure:
    """Bipartite graph of softmax's joint measure and/or the Sinkhorn coupling.

    An edge i–j is drawn when π_ij ≥ ``threshold``, π_ij ≥ :data:`MIN_EDGE` times the
    heaviest mass of its plan (a lighter edge would be a line for no mass: at small ε
    softmax gives most pairs 1e-80) and j is among the ``top_k`` heaviest partners of A's
    token i. Width and opacity grow with π_ij / max π, each panel on its own scale
    (:func:`edge_scale`). Softmax piles edges onto a few B tokens and leaves others bare;
    the coupling reaches every B token in proportion to b.

    Args:
        relation: a single-layer, single-head Relation; plans are (n, m).
        which: "both" (two panels side by side), "softmax" or "sinkhorn".
        top_k: edges kept per token of A; None or 0 keeps all (above ``threshold``).
        threshold: the least mass an edge needs to be drawn.
        highlight: ("a", i) or ("b", j): emphasise that token's edges in its colour and
            fade the rest (the app drives this from a selection or a select box).
        max_edges: the most edges per panel (the heaviest are kept).
        height, width: size in pixels; height defaults to :func:`default_height`.
        theme: "light" or "dark".
        words, num: the figure's words over :data:`viz.words.WORDS` and the page's number
            format (English by default).

    Returns:
        Per panel, ``N_BINS`` edge traces (lightest first), ``N_BINS`` highlight traces
        when ``highlight`` is set, then the A and B node traces.
    """
    w = words_of(words)
    plans, keys = _plans(relation, which)
    n, m = plans[keys[0]].shape
    la, lb = labels(relation.tokens_a, n, "tokens_a"), labels(relation.tokens_b, m, "tokens_b")
    a, b = as_array(relation.a, "relation.a", 1), as_array(relation.b, "relation.b", 1)
    _check_highlight(highlight, n, m)
    span = max(n, m)
    height = height or default_height(span)
    room = max(1e-9, (height - MARGIN_T - MARGIN_B) / span)  # px between node centres
    panel = dict(a=a, b=b, la=la, lb=lb, ya=_positions(n, span), yb=_positions(m, span),
                 top_k=top_k, threshold=threshold, max_edges=max_edges, highlight=highlight,
                 theme=theme, room=room, label_every=max(1, int(np.ceil(LABEL_PX / room))),
                 words=w, num=num)
    titles = _panel_titles(relation, w, num)
    fig = make_subplots(rows=1, cols=len(keys), subplot_titles=[titles[k] for k in keys],
                        horizontal_spacing=0.14)
    for col, key in enumerate(keys, start=1):
        for tr in _panel(plans[key], key, **panel):
            fig.add_trace(tr, row=1, col=col)
    sides = axis_titles(relation.mode, w)  # text A (queries) and (keys) in self mode
    if relation.mode == "self":
        fig.for_each_trace(lambda t: t.update(name=sides[0] if t.name == w["text_a"]
                                              else sides[1]),
                           selector=dict(type="scatter", mode="markers+text"))
    fig.update_xaxes(range=[-0.55, 1.55], tickvals=[0, 1], ticktext=list(sides),
                     showgrid=False, zeroline=False, fixedrange=True)
    fig.update_yaxes(range=[span - 0.5, -0.5], visible=False, fixedrange=True)
    fig.update_layout(
        # the title and its note pinned to the top; the panel titles sit on the plots,
        # MARGIN_T leaves a clear gap between the note and them
        title=dict(th.title(w["graph_title"].format(
            rule=_rule(top_k, threshold, w, num),
            settings=settings_text(w, relation.layer, relation.head)), w["graph_note"]),
                   y=1.0, yref="container", yanchor="top", pad=dict(t=10)),
        hovermode="closest", showlegend=False, margin=dict(t=MARGIN_T, b=MARGIN_B),
        meta=dict(kind="graph", plans=keys,
                  titles=[w["graph_" + ("softmax" if k == "softmax" else "sinkhorn")]
                          for k in keys], top_k=top_k or 0,
                  threshold=float(threshold), min_edge=MIN_EDGE, max_edges=int(max_edges),
                  highlight=None if highlight is None else [highlight[0], int(highlight[1])]))
    return th.apply(fig, theme, height=height, width=width, separators=num.separators)
