"""Word-alignment figures: the plan a method read its links from, the links with gold drawn
over them, a bipartite graph of the links, and methods ranked by a corpus score with their
intervals.

Links are 0-based (i, j) pairs over whitespace words (i in text A, j in text B). With gold,
every cell is one of :data:`KINDS`, told apart by marker shape *and* colour (colour-blind
safe, and readable in grey): a predicted link in the sure gold is a filled square, in the
possible gold only a filled diamond, outside the gold an ×; a sure gold link that was
missed is an open circle, a missed possible one an open diamond. Words left without a link
are marked beside the matrix (▶ for a word of A, ▼ for a word of B) and drawn as open
nodes in the graph.

Every word a figure shows (titles, trace names, axis titles, hover words) is in
:data:`WORDS`, in English; each builder takes ``words`` over it (the page passes its
language's, ``text/align.<lang>.json`` "figure"), so a figure is written in one language.

Builders are pure: words, links and arrays in, ``go.Figure`` out (no streamlit, no torch).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.relation.summary import Numbers
from viz import theme as th

#: Cell kinds, in drawing order (misses under predictions).
KINDS = ("miss", "miss_possible", "link", "hit", "hit_possible", "false")
SYMBOLS = {"hit": "square", "hit_possible": "diamond", "false": "x", "miss": "circle-open",
           "miss_possible": "diamond-open", "link": "square"}
COLORS = {"hit": "#009E73", "hit_possible": "#009E73", "false": "#D55E00",
          "miss": "#0072B2", "miss_possible": "#56B4E9", "link": "#CC79A7"}
NAMES = {"hit": "link in sure gold", "hit_possible": "link in possible gold",
         "false": "link not in gold", "miss": "missed sure gold", "miss_possible":
         "missed possible gold", "link": "predicted link"}
METRIC_NAMES = {"f1": "F1", "null_f1": "null F1", "total_f1": "total F1", "aer": "AER",
                "precision": "precision", "recall": "recall"}
NULL_SYMBOLS = {"a": "triangle-right", "b": "triangle-down"}
NULL_NAMES = {"a": "unaligned word of A", "b": "unaligned word of B"}
#: The figures' words, in English: ``words=`` of every builder goes over these (nested
#: dicts key by key), e.g. ``{"names": {"hit": "enlace en la referencia segura"}}``.
WORDS = {
    "names": NAMES,  # kind → trace name
    "null_names": NULL_NAMES,
    "nodes": {"a": "words of A", "b": "words of B"},
    "text_a": "text A", "text_b": "text B",
    "unaligned": "unaligned",
    "matrix_title": "Word alignment",
    "plan": "plan",
    "links": "Links",
    "links_of": "Links of {method}",
    "note_gold": "■ sure hit · ◆ possible hit · × not in gold · ○ missed sure · ◇ missed "
                 "possible · ▶ ▼ unaligned",
    "note_plain": "■ predicted link · ▶ ▼ unaligned (no gold given)",
    "graph_title": "Links as a bipartite graph",
    "graph_note": "open nodes ∅: words left without a link",
    "ranking_title": "Which method wins: total F1, best first",
    "ranking_note": "95 % bootstrap intervals; the axis is zoomed to the methods' range",
    "ranking_axis": "total F1 (macro over pairs)",
    "best": "best",
    "others": "the others",
    "metrics": METRIC_NAMES,
}
DASH = {"hit": "solid", "hit_possible": "solid", "false": "solid", "link": "solid",
        "miss": "dot", "miss_possible": "dot"}


def words_of(words: Mapping | None = None) -> dict:
    """:data:`WORDS` with ``words`` over them (nested dicts merged key by key).

    Raises:
        ValueError: a word that is not a string (or a nested dict where one is expected).
    """
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in WORDS.items()}
    for k, v in (words or {}).items():
        if k not in WORDS:
            continue
        if isinstance(WORDS[k], dict):
            if not isinstance(v, Mapping):
                raise ValueError(f"words[{k!r}] must map names to words, got {type(v).__name__}.")
            out[k].update({x: str(y) for x, y in v.items() if x in WORDS[k]})
        elif isinstance(v, str):
            out[k] = v
        else:
            raise ValueError(f"words[{k!r}] must be a string, got {type(v).__name__}.")
    return out


def _links(links: Iterable, n: int, m: int, name: str = "links") -> set[tuple[int, int]]:
    out = set()
    for x in links:
        i, j = (int(v) for v in x)
        if not (0 <= i < n and 0 <= j < m):
            raise ValueError(f"{name}: link {i}-{j} is outside a {n} × {m} pair; links are "
                             "0-based word indices.")
        out.add((i, j))
    return out


def classify(links: Iterable, n: int, m: int, *, sure: Iterable | None = None,
             possible: Iterable | None = None) -> dict[str, list[tuple[int, int]]]:
    """Each cell's kind (:data:`KINDS`): predicted links against sure and possible gold.

    Without gold (``sure`` and ``possible`` None) every link is "link". Possible gold
    includes the sure links (P ⊇ S).

    Returns:
        kind → sorted (i, j) cells; kinds that do not apply are empty.
    """
    A = _links(links, n, m)
    out: dict[str, list[tuple[int, int]]] = {k: [] for k in KINDS}
    if sure is None and possible is None:
        out["link"] = sorted(A)
        return out
    S = _links(sure or (), n, m, "sure gold")
    P = _links(possible or (), n, m, "possible gold") | S
    out["hit"] = sorted(A & S)
    out["hit_possible"] = sorted((A & P) - S)
    out["false"] = sorted(A - P)
    out["miss"] = sorted(S - A)
    out["miss_possible"] = sorted((P - S) - A)
    return out


def unaligned(links: Iterable, n: int, m: int) -> tuple[list[int], list[int]]:
    """Words of A and of B without a link: (rows, columns)."""
    A = _links(links, n, m)
    ra, rb = {i for i, _ in A}, {j for _, j in A}
    return [i for i in range(n) if i not in ra], [j for j in range(m) if j not in rb]


def _check_words(words_a: Sequence[str], words_b: Sequence[str]) -> tuple[list[str], list[str]]:
    if not len(words_a) or not len(words_b):
        raise ValueError("Both texts need at least one word to draw an alignment.")
    return th.escape_all(words_a), th.escape_all(words_b)


#: The width a links panel is given at least (a 1,000-pixel chart): the words of B side
#: by side wider than this are turned, so no page width drops every other label.
PANEL_PX = 200


def _axis(labels: list[str], title: str, *, reverse: bool, rotate: bool,
          null_room: bool) -> dict:
    axis = th.token_axis(labels, title=title, rotate=rotate, reverse=reverse)
    widest = max(th.text_px(t) for t in axis["ticktext"]) + 0.5 * th.FONT_SIZE
    if rotate and "tickangle" not in axis and (len(labels) + 1) * widest > PANEL_PX:
        axis["tickangle"] = -45
    if null_room:  # room at −1 for the unaligned marks
        lo, hi = -1.5, len(labels) - 0.5
        axis["range"] = [hi, lo] if reverse else [lo, hi]
    return axis


def matrix(words_a: Sequence[str], words_b: Sequence[str], links: Iterable, *,
           plan: np.ndarray | None = None, plan_title: str | None = None,
           sure: Iterable | None = None, possible: Iterable | None = None,
           title: str | None = None, method: str = "", theme: str = "light",
           height: int | None = None, words: Mapping | None = None,
           num: Numbers | None = None) -> go.Figure:
    """The plan a method read its links from (left, a heatmap) beside the links (right),
    with gold drawn over them and unaligned words marked on both sides.

    Args:
        words_a, words_b: the n and m whitespace words (shown escaped).
        links: predicted (i, j) links, 0-based.
        plan: (n, m) values the links came from (e.g. the min-max scaled plan, V > θ);
            None draws the links alone.
        plan_title: the left panel's title.
        sure, possible: gold links (None: no gold).
        method: the method's name, for the right panel's title.
        words: the figure's words over :data:`WORDS` (None: English).
        num: how the plan's values are written (hover, colour bar; None: English).

    Returns:
        A figure; every scatter trace's ``meta`` is ``{"kind": k}`` with k in
        :data:`KINDS` or "null_a" / "null_b". Links: π̃_ij > θ.

    Raises:
        ValueError: no words, a plan of the wrong shape, a link outside the pair.
    """
    w, num = words_of(words), num or Numbers()
    la, lb = _check_words(words_a, words_b)
    n, m = len(la), len(lb)
    kinds = classify(links, n, m, sure=sure, possible=possible)
    pred = [c for k in ("link", "hit", "hit_possible", "false") for c in kinds[k]]
    null_a, null_b = unaligned(pred, n, m)
    cols = 2 if plan is not None else 1
    plan_title = w["plan"] if plan_title is None else plan_title
    title = w["matrix_title"] if title is None else title
    right = (w["links_of"].format(method=th.escape(method)) if method
             else th.escape(w["links"]))
    fig = make_subplots(rows=1, cols=cols, horizontal_spacing=0.2,
                        subplot_titles=[th.escape(plan_title), right][-cols:])
    if plan is not None:
        P = np.asarray(plan, dtype=np.float64)
        if P.shape != (n, m):
            raise ValueError(f"plan has shape {P.shape}, expected ({n}, {m}) (words of A × "
                             "words of B).")
        P = np.where(np.isfinite(P), P, np.nan)
        hover = [[f"{la[i]} → {lb[j]}: {num(P[i, j])}" for j in range(m)] for i in range(n)]
        fig.add_trace(go.Heatmap(z=P, x=list(range(m)), y=list(range(n)), colorscale=th.MASS_SCALE,
                                 text=hover, hoverinfo="text", showscale=True,
                                 colorbar=th.colorbar(x=0.41, xanchor="left", len=0.9,
                                                      thickness=12),
                                 meta=dict(kind="plan")), row=1, col=1)
    col = cols
    size = max(6, min(16, int(360 / max(n, m))))
    for k in KINDS:
        cells = kinds[k]
        if not cells and k != "link":
            continue
        if k == "link" and not cells and sure is not None:
            continue
        i = [c[0] for c in cells]
        j = [c[1] for c in cells]
        fig.add_trace(go.Scatter(
            x=j, y=i, mode="markers", name=w["names"][k], legendgroup=k,
            marker=dict(symbol=SYMBOLS[k], size=size, color=COLORS[k],
                        line=dict(width=2, color=COLORS[k])),
            text=[f"{la[a]} – {lb[b]}: {w['names'][k]}" for a, b in cells],
            hoverinfo="text",
            meta=dict(kind=k)), row=1, col=col)
    for side, idx in (("a", null_a), ("b", null_b)):
        if not idx:
            continue
        x, y = ([-1] * len(idx), idx) if side == "a" else (idx, [-1] * len(idx))
        names = la if side == "a" else lb
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="markers", name=w["null_names"][side],
            legendgroup="null_" + side,
            marker=dict(symbol=NULL_SYMBOLS[side], size=size,
                        color=th.text_color(side, theme)),
            text=[f"{names[t]}: {w['unaligned']}" for t in idx], hoverinfo="text",
            meta=dict(kind="null_" + side)), row=1, col=col)
    for c in range(1, cols + 1):
        links_panel = c == cols
        x_axis = _axis(lb, w["text_b"], reverse=False, rotate=True, null_room=links_panel)
        fig.update_xaxes(x_axis, row=1, col=c)
        fig.update_yaxes(_axis(la, w["text_a"], reverse=True, rotate=False,
                               null_room=links_panel), row=1, col=c)
    gold = sure is not None or possible is not None
    note = textwrap.wrap(w["note_gold"] if gold else w["note_plain"], 96)
    top = 96 + 18 * len(note)  # the title, its note (wrapped, never cut), the panels' titles
    # below the plot: the B labels (turned or not), the axis title, then the legend
    below = th.token_margins(x_axis, {})["b"]
    height = height or (max(420, 260 + 22 * max(n, m)) + max(0, below + 60 - 150)
                        + top - 110)
    fig.update_layout(title=th.title(th.escape(title), "<br>".join(note)), showlegend=True,
                      separators=num.separators,
                      legend=dict(orientation="h", x=0, yanchor="top",
                                  y=-below / max(height - top - (below + 60), 1)),
                      margin=dict(l=110, r=30, t=top, b=below + 60))
    return th.apply(fig, theme, height=height)


def graph(words_a: Sequence[str], words_b: Sequence[str], links: Iterable, *,
          sure: Iterable | None = None, possible: Iterable | None = None,
          title: str | None = None, theme: str = "light",
          height: int | None = None, words: Mapping | None = None) -> go.Figure:
    """Text A's words on the left, text B's on the right, one line per link (and, with
    gold, dotted lines for missed gold links); unaligned words are open nodes.

    ``words``: the figure's words over :data:`WORDS` (None: English).

    Returns:
        A figure; line traces have ``meta={"kind": k}`` (:data:`KINDS`), node traces
        ``meta={"kind": "nodes_a" | "nodes_b" | "null_a" | "null_b"}``.
    """
    w = words_of(words)
    title = w["graph_title"] if title is None else title
    la, lb = _check_words(words_a, words_b)
    n, m = len(la), len(lb)
    kinds = classify(links, n, m, sure=sure, possible=possible)
    pred = [c for k in ("link", "hit", "hit_possible", "false") for c in kinds[k]]
    null_a, null_b = unaligned(pred, n, m)
    span = max(n, m)
    ya = np.linspace(0, span - 1, n) if n > 1 else np.array([(span - 1) / 2])
    yb = np.linspace(0, span - 1, m) if m > 1 else np.array([(span - 1) / 2])
    fig = go.Figure()
    for k in KINDS:
        cells = kinds[k]
        if not cells:
            continue
        x: list = []
        y: list = []
        for i, j in cells:
            x += [0, 1, None]
            y += [float(ya[i]), float(yb[j]), None]
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=w["names"][k],
                                 hoverinfo="skip",
                                 line=dict(color=COLORS[k], width=2.5 if k != "false" else 2,
                                           dash=DASH[k]),
                                 meta=dict(kind=k)))
    for side, labels, ys, nulls in (("a", la, ya, null_a), ("b", lb, yb, null_b)):
        x0 = 0 if side == "a" else 1
        color = th.text_color(side, theme)
        keep = [t for t in range(len(labels)) if t not in set(nulls)]
        for kind, idx in (("nodes_" + side, keep), ("null_" + side, nulls)):
            if not idx:
                continue
            null = kind.startswith("null")
            fig.add_trace(go.Scatter(
                x=[x0] * len(idx), y=[float(ys[t]) for t in idx], mode="markers+text",
                text=[(labels[t] + " ∅" if side == "a" else "∅ " + labels[t]) if null
                      else labels[t] for t in idx],
                textposition="middle left" if side == "a" else "middle right",
                marker=dict(size=12, symbol="circle-open" if null else "circle",
                            color=color, line=dict(width=2, color=color)),
                name=w["null_names"][side] if null else w["nodes"][side],
                hovertext=[labels[t] + (": " + w["unaligned"] if null else "") for t in idx],
                hoverinfo="text", meta=dict(kind=kind)))
    fig.update_xaxes(range=[-0.6, 1.6], visible=False)
    fig.update_yaxes(range=[span - 0.5, -0.5], visible=False)
    note = textwrap.wrap(w["graph_note"], 34)  # the graph sits in a narrow column
    fig.update_layout(title=th.title(th.escape(title), "<br>".join(note)),
                      legend=dict(orientation="h", y=-0.05, x=0),
                      margin=dict(l=30, r=30, t=76 + 16 * len(note), b=60))
    return th.apply(fig, theme, height=height or max(360, 140 + 26 * span))


def zoomed(lows: Sequence[float], highs: Sequence[float], *, pad: float = 0.15,
           least: float = 0.01) -> tuple[float, float]:
    """An axis range around [min(lows), max(highs)], padded by ``pad`` of its span (at
    least ``least`` each side) and kept within [0, 1]: the scale that separates methods
    whose scores differ by thousandths."""
    lo, hi = float(min(lows)), float(max(highs))
    d = max(pad * (hi - lo), least)
    return max(0.0, lo - d), min(1.0, hi + d)


def ranking(ranked: Sequence, *, settings: Mapping[str, str] | None = None,
            title: str | None = None, theme: str = "light", height: int | None = None,
            words: Mapping | None = None, num: Numbers | None = None) -> go.Figure:
    """Methods ranked by a corpus score, best on top, each with its 95 % interval, on an
    axis zoomed to the range that separates them (:func:`zoomed`), not 0–1.

    Args:
        ranked: best first, each with ``method``, ``value``, ``ci95`` ((low, high) or
            None) and ``best`` (``engine.alignment.verdict.Ranked``).
        settings: method → its settings as the page writes them (shown on hover).
        words: the figure's words over :data:`WORDS` (None: English).
        num: how the values are written (axis, hover; None: English).

    Returns:
        One marker trace per group, ``meta={"kind": "best"}`` and ``{"kind": "others"}``,
        y the rank (0 at the top) with the methods as tick text, x the values with error
        bars; a dotted line at the best value.

    Raises:
        ValueError: no methods.
    """
    w, num = words_of(words), num or Numbers()
    if not ranked:
        raise ValueError("There is nothing to rank; score a corpus with gold first.")
    ci = [r.ci95 if r.ci95 is not None else (r.value, r.value) for r in ranked]
    fig = go.Figure()
    for kind, color, symbol in (("others", "#0072B2", "circle"), ("best", "#009E73", "star")):
        idx = [k for k, r in enumerate(ranked) if bool(r.best) == (kind == "best")]
        if not idx:
            continue
        hover = [f"{th.escape(ranked[k].method)}: {num.fixed(ranked[k].value, 3)} "
                 f"[{num.fixed(ci[k][0], 3)} – {num.fixed(ci[k][1], 3)}]"
                 + (f"<br>{th.escape((settings or {}).get(ranked[k].method, ''))}"
                    if settings else "") for k in idx]
        fig.add_trace(go.Scatter(
            x=[ranked[k].value for k in idx], y=idx, mode="markers",
            name=w["best"] if kind == "best" else w["others"],
            marker=dict(size=14 if kind == "best" else 10, symbol=symbol, color=color),
            error_x=dict(type="data", symmetric=False, visible=True, color=color,
                         array=[max(0.0, ci[k][1] - ranked[k].value) for k in idx],
                         arrayminus=[max(0.0, ranked[k].value - ci[k][0]) for k in idx]),
            text=hover, hoverinfo="text", meta=dict(kind=kind)))
    fig.add_vline(x=ranked[0].value, line=dict(dash="dot", width=1, color="#009E73"))
    x0, x1 = zoomed([c[0] for c in ci], [c[1] for c in ci])
    fig.update_xaxes(range=[x0, x1], title=dict(text=w["ranking_axis"]), zeroline=False)
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(ranked))),
                     ticktext=[th.escape(r.method) for r in ranked],
                     range=[len(ranked) - 0.5, -0.5], showgrid=False, zeroline=False)
    fig.update_layout(title=th.title(th.escape(w["ranking_title"] if title is None else title),
                                     w["ranking_note"]),
                      separators=num.separators, legend=dict(orientation="h", y=-0.25, x=0),
                      margin=dict(l=160, r=30, t=90, b=90))
    return th.apply(fig, theme, height=height or 180 + 34 * len(ranked))
