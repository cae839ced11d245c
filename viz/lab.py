"""Figures of the Lab: learning curves, couplings between two clouds, plans as matrices
with the second marginal as bars, error against width. Pure builders: arrays in,
``go.Figure`` out (no streamlit, no torch).

Every builder takes ``words`` (the page's language) for its labels and ``num`` (an
``engine.relation.summary.Numbers``) for how axes, ticks and hovers write numbers; titles
are trusted text from the page's own texts, model names are escaped and wrapped (never
cut).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.relation.summary import Numbers

from ._axes import wrap
from ._data import segments
from ._traces import CLASS_WORDS, class_bars, class_marker
from .theme import COLOR_A, COLOR_B, apply, escape, title as make_title
from . import theme as th

ENGLISH = Numbers()

# One colour per model (Okabe–Ito: green, vermillion, reddish purple); the target in grey.
MODEL_COLORS = {"sinkhorn": "#009E73", "softmax": "#D55E00", "context-free": "#CC79A7"}
TARGET_COLOR = "#666666"
N_LINE_BINS = 5
LINK_SHARE = 0.1  # a coupling picture links xᵢ, yⱼ where πᵢⱼ ≥ this share of min(aᵢ, bⱼ)
TITLE_CHARS = 34  # characters per line of a panel's title
NOTE_CHARS = 130  # characters per line of a figure's note (its subtitle)
UNDER_CHARS = 46  # characters per line of the small line under a panel's title
TITLE_PAD_PX = 10  # a figure's title below its top edge
MAX_TICKS = 12  # most ticks on a log axis (1, 2, 5 × 10ᵏ, else decades alone)

WORDS = {"step": "training step", "heldout": "held-out L1 to the target",
         "width": "encoder width D", "target": "target", "mass": "mass",
         "row_err": "row error", "col_err": "column error", "row": "μ atom (row)",
         "col": "ν atom (column)", "drawn": "{share} of the mass drawn",
         "above": "above its weight", "below": "below its weight", "on": "on its weight",
         "receives": "receives", "weight_b": "weight b"}


def _w(words: Mapping[str, str] | None) -> dict[str, str]:
    return {**WORDS, **(words or {})}


def _heading(title: str, note: str, panel_titles: Sequence[str]) -> tuple[dict, int]:
    """A figure's title with its note wrapped under it, pinned to the figure's top (plotly
    centres a title in the top margin, which put a two-line note on the panels' titles),
    and the top margin that holds both above the panels' titles (their tallest, in
    lines)."""
    note = wrap(note, NOTE_CHARS) if note else ""
    lines = max([t.count("<br>") + 1 for t in panel_titles] or [0])
    head = {**make_title(title, note), "y": 1, "yref": "container", "yanchor": "top",
            "pad": dict(t=TITLE_PAD_PX)}
    return head, heading_px(note.count("<br>") + bool(note), lines)


def heading_px(note_lines: int, panel_lines: int) -> int:
    """The top margin for a title, ``note_lines`` of note under it and panel titles of
    ``panel_lines`` lines under those, with a gap between each."""
    return TITLE_PAD_PX + 30 + 18 * note_lines + 12 + 20 * panel_lines + 8


def _color(name: str, k: int) -> str:
    return MODEL_COLORS.get(name, ("#0072B2", "#E69F00", "#56B4E9")[k % 3])


def loss_curves(curves: Mapping[str, tuple[Sequence[float], Sequence[float]]], *,
                labels: Mapping[str, str] | None = None, title: str = "",
                words: Mapping[str, str] | None = None, total_steps: int | None = None,
                theme: str = "light", height: int = 340, num: Numbers = ENGLISH) -> go.Figure:
    """Held-out L1 distance to the target against the training step, one line per model.

    Args:
        curves: model name → (steps, held-out L1) of equal lengths (may be empty).
        labels: model name → legend text (the name when absent). title: trusted text.
        total_steps: fixes the x axis to [0, total_steps] so a live curve grows into it.
        theme: "light" or "dark". height: pixels.

    Returns:
        One scatter (lines+markers) per model, on a log y axis (ticks of
        :func:`log_ticks`), in the order given.
    """
    w = _w(words)
    fig = go.Figure()
    for k, (name, (steps, err)) in enumerate(curves.items()):
        steps, err = np.asarray(steps, float), np.asarray(err, float)
        if steps.shape != err.shape:
            raise ValueError(f"curve {name!r}: steps {steps.shape} and errors {err.shape} "
                             "must have the same length.")
        label = escape((labels or {}).get(name, name))
        fig.add_trace(go.Scatter(x=steps, y=np.maximum(err, 1e-6), mode="lines+markers",
                                 name=label, line=dict(color=_color(name, k), width=2.5),
                                 marker=dict(size=5),
                                 hovertemplate=f"{label}<br>{w['step']} %{{x}}<br>"
                                               "L1 %{y:.3g}<extra></extra>"))
    ys = [np.asarray(e, float) for _, e in curves.values()]
    fig.update_layout(title=make_title(title), xaxis_title=w["step"],
                      yaxis=dict(title=w["heldout"], type="log",
                                 **log_ticks(np.concatenate(ys) if ys else [], num)),
                      legend=dict(orientation="h", y=-0.25), margin=dict(t=60, b=90))
    if total_steps:
        fig.update_xaxes(range=[0, total_steps])
    return apply(fig, theme, height=height, separators=num.separators)


def log_ticks(values: object, num: Numbers = ENGLISH) -> dict:
    """Ticks of a log axis over ``values``, each written in full by ``num`` ("0.02",
    "0,02"), never a bare minor digit.

    1, 2 and 5 × 10ᵏ inside the values' range (decades alone when those are more than
    :data:`MAX_TICKS`; every digit when fewer than three fall inside); ``{}`` (plotly's
    own ticks, written in full on so narrow a range) when fewer than two fall inside.

    Args:
        values: the axis's data, any shape; values ≤ 0 and NaN are left out.

    Returns:
        ``{"tickmode": "array", "tickvals": [...], "ticktext": [...]}`` or ``{}``.
    """
    v = np.asarray(values, float).ravel()
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return {}
    lo, hi = float(v.min()) * (1 - 1e-9), float(v.max()) * (1 + 1e-9)
    decades = range(math.floor(math.log10(lo)), math.floor(math.log10(hi)) + 1)

    def inside(mults) -> list[float]:
        return [m * 10.0 ** k for k in decades for m in mults if lo <= m * 10.0 ** k <= hi]

    ticks = inside((1, 2, 5))
    if len(ticks) > MAX_TICKS:
        ticks = inside((1,))
    elif len(ticks) < 3:
        ticks = inside(range(1, 10))
    if len(ticks) < 2:
        return {}
    return dict(tickmode="array", tickvals=ticks, ticktext=[num.general(t, "g") for t in ticks])


def _check_pair(x, a, y, b, plans):
    x, a, y, b = (np.asarray(v, float) for v in (x, a, y, b))
    if x.ndim != 2 or x.shape[1] != 2 or y.ndim != 2 or y.shape[1] != 2:
        raise ValueError(f"points must be (n, 2) and (m, 2), got {x.shape} and {y.shape}.")
    if a.shape != (len(x),) or b.shape != (len(y),):
        raise ValueError(f"weights must be ({len(x)},) and ({len(y)},), got {a.shape}, {b.shape}.")
    out = {}
    for name, P in plans.items():
        P = np.asarray(P, float)
        if P.shape != (len(x), len(y)):
            raise ValueError(f"plan {name!r} must be ({len(x)}, {len(y)}), got {P.shape}.")
        out[name] = P
    return x, a, y, b, out


def placed(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """A cloud as the couplings draw it: centred on its mean m = Σ aᵢxᵢ and scaled by its
    own spread s (s² = Σ aᵢ‖xᵢ − m‖²), the frame the context-dependent target matches
    clouds in. Both clouds then overlap at one size whatever their own, so a small cloud is
    never a blob, and a good coupling's lines are short.

    Args:
        x: (n, 2) points. a: (n,) weights (summing to 1).

    Returns:
        (n, 2) drawn positions.
    """
    w = a / max(float(a.sum()), 1e-300)
    m = w @ x
    s = math.sqrt(float(w @ ((x - m) ** 2).sum(1)))
    return (x - m) / (s if s > 0 else 1.0)


def links(P: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray, float]:
    """The entries a coupling picture draws: πᵢⱼ ≥ :data:`LINK_SHARE` · min(aᵢ, bⱼ).

    Returns:
        (i, j, level, drawn): the entries, each one's level πᵢⱼ / min(aᵢ, bⱼ) clipped to
        [0, 1] (its share of what the two points could carry), and the share of the
        plan's mass drawn.
    """
    cap = np.minimum(a[:, None], b[None, :])
    level = np.where(cap > 0, P / np.where(cap > 0, cap, 1.0), 0.0)
    i, j = np.nonzero(level >= LINK_SHARE)
    total = float(P.sum())
    drawn = float(P[i, j].sum()) / total if total > 0 else 0.0
    return i, j, np.clip(level[i, j], 0.0, 1.0), drawn


def _line_traces(x, y, i, j, level, color, axes):
    """Links in :data:`N_LINE_BINS` traces, wider and more opaque with their level."""
    k = np.minimum(((level - LINK_SHARE) / (1 - LINK_SHARE) * N_LINE_BINS).astype(int),
                   N_LINE_BINS - 1)
    out = []
    for bin_ in range(N_LINE_BINS):
        sel = k == bin_
        if not sel.any():
            continue
        sx, sy = segments(x[i[sel], 0], x[i[sel], 1], y[j[sel], 0], y[j[sel], 1])
        f = (bin_ + 1) / N_LINE_BINS
        out.append(go.Scatter(x=sx, y=sy, mode="lines", hoverinfo="skip", showlegend=False,
                              line=dict(width=0.8 + 5.2 * f, color=color),
                              opacity=0.25 + 0.65 * f, **axes))
    return out


def _cloud_trace(xy, w, num, *, name, symbol, color, theme, base, show, axes):
    """The points of one cloud: its marker, size growing with √mass from 0.55 to 1 × base."""
    size = base * (0.55 + 0.45 * np.sqrt(w / max(float(w.max()), 1e-300)))
    return go.Scatter(x=xy[:, 0], y=xy[:, 1], mode="markers", name=name,
                      marker=dict(size=size, color=color, symbol=symbol, opacity=0.95,
                                  line=dict(width=1.2, color=th.TEMPLATES[theme].layout
                                            .paper_bgcolor)),
                      showlegend=show, legendgroup=name, customdata=[num(v) for v in w],
                      hovertemplate=f"{name} %{{pointNumber}} · %{{customdata}}<extra></extra>",
                      **axes)


def couplings(x: object, a: object, y: object, b: object, plans: Mapping[str, object], *,
              labels: Mapping[str, str] | None = None, notes: Mapping[str, str] | None = None,
              title: str = "", note: str = "", words: Mapping[str, str] | None = None,
              theme: str = "light", height: int | None = None,
              num: Numbers = ENGLISH) -> go.Figure:
    """Couplings of one pair of clouds, a panel per plan: a line xᵢ–yⱼ wherever
    πᵢⱼ ≥ 10 % of min(aᵢ, bⱼ), wider and darker the more of it.

    Each cloud is centred and scaled by its own spread (:func:`placed`), so both are
    readable from 3 to 64 points; μ's atoms are blue circles, ν's orange diamonds, sized
    by mass. Under each panel's title: its note and the share of its mass the lines carry.

    Args:
        x: (n, 2), a: (n,), y: (m, 2), b: (m,). plans: panel name → (n, m) plan, in order
            (e.g. "target", then each model).
        labels: panel name → panel title (wrapped, never cut). notes: panel name → a line
            under it. title, note: trusted text (the note as a subtitle). words: "drawn"
            ("{share} of the mass drawn").
        theme: "light" or "dark". height: pixels (by the number of rows when None).

    Returns:
        Panels in one row (two rows of two for four): each panel's line traces, then
        μ's and ν's points.
    """
    x, a, y, b, plans = _check_pair(x, a, y, b, plans)
    w = _w(words)
    names = list(plans) or [""]
    cols = len(names) if len(names) <= 3 else 2
    rows = -(-len(names) // cols)
    titles = []
    drawn = {name: links(plans[name], a, b) for name in plans}
    for name in names:
        t = wrap(escape((labels or {}).get(name, name)), TITLE_CHARS)
        under = [escape(notes[name])] if notes and notes.get(name) else []
        if name in drawn:
            under.append(w["drawn"].format(share=num.percent(drawn[name][3])))
        # each line its own span: the panels' notes never run into each other
        small = wrap(" · ".join(under), UNDER_CHARS).split("<br>") if under else []
        titles.append("<br>".join([t, *(f"<span style='font-size:11px'>{x}</span>"
                                        for x in small)]))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.04,
                        vertical_spacing=0.5 / (rows + 3))
    xa, yb = placed(x, a), placed(y, b)
    lim = 1.08 * float(np.abs(np.concatenate([xa, yb])).max(initial=1.0))
    base = float(np.clip(30 / np.sqrt(max(len(a), len(b))), 6, 14))
    for k, name in enumerate(plans):
        r, c = k // cols + 1, k % cols + 1
        n_ax = "" if k == 0 else k + 1
        axes = dict(xaxis=f"x{n_ax}", yaxis=f"y{n_ax}")
        color = TARGET_COLOR if name == "target" else _color(name, k)
        i, j, level, _ = drawn[name]
        for trace in _line_traces(xa, yb, i, j, level, color, axes):
            fig.add_trace(trace)
        fig.add_trace(_cloud_trace(xa, a, num, name="μ", symbol="circle", color=COLOR_A,
                                   theme=theme, base=base, show=k == 0, axes=axes))
        fig.add_trace(_cloud_trace(yb, b, num, name="ν", symbol="diamond", color=COLOR_B,
                                   theme=theme, base=base * 1.15, show=k == 0, axes=axes))
        fig.update_xaxes(range=[-lim, lim], showticklabels=False,
                         showgrid=False, zeroline=False, row=r, col=c)
        fig.update_yaxes(range=[-lim, lim], showticklabels=False, showgrid=False,
                         zeroline=False, scaleanchor=f"x{n_ax}", scaleratio=1, row=r, col=c)
    heading, top = _heading(title, note, titles[:cols])
    fig.update_layout(title=heading, margin=dict(t=top, l=20, r=20, b=40),
                      legend=dict(orientation="h", y=-0.02, x=0, yanchor="top"))
    return apply(fig, theme, height=height or (120 + (330 if cols == 3 else 420) * rows),
                 separators=num.separators)


def _bar_traces(sums, b, num, w, fg, axes, seen: set) -> list:
    """What each ν atom receives (πᵀ1) as bars against its weight b (ticks), coloured as
    the main page colours a marginal: above, below (a box of the missing mass) or on."""
    out = []
    for k, key in enumerate(CLASS_WORDS):
        bars = class_bars(sums, b, k)
        pos = bars["pos"]
        show = key not in seen and len(pos) > 0
        seen.add(key) if show else None
        cd = np.stack([[num(v) for v in sums[pos]], [num(v) for v in b[pos]]], -1) \
            if len(pos) else np.zeros((0, 2))
        out.append(go.Bar(x=pos, y=bars["value"], base=bars["base"], marker=class_marker(k),
                          width=0.8, name=w[key], legendgroup=key, showlegend=show,
                          customdata=cd, meta=dict(part="cols", cls=k),
                          hovertemplate=f"{w['col']} %{{x}}<br>{w['receives']} "
                                        f"%{{customdata[0]}}<br>{w['weight_b']} "
                                        "%{customdata[1]}<extra></extra>", **axes))
    size = float(np.clip(240 / max(1, len(b)), 8, 26))
    out.append(go.Scatter(x=np.arange(len(b)), y=b, mode="markers", name=w["weight_b"],
                          legendgroup="tick", showlegend="tick" not in seen,
                          marker=dict(symbol="line-ew-open", size=size, color=fg,
                                      line=dict(width=2.5, color=fg)),
                          customdata=[num(v) for v in b], meta=dict(part="cols_target"),
                          hovertemplate=f"{w['weight_b']} %{{customdata}}<extra></extra>",
                          **axes))
    seen.add("tick")
    return out


def matrices(plans: Mapping[str, object], *, b: object = None,
             labels: Mapping[str, str] | None = None, title: str = "", note: str = "",
             words: Mapping[str, str] | None = None, theme: str = "light",
             height: int | None = None, num: Numbers = ENGLISH) -> go.Figure:
    """The same plans as matrices (rows μ's atoms, columns ν's), one shared colour scale,
    and above each matrix (with ``b``) what each ν atom receives, πᵀ1, against bⱼ.

    The bars are the proof's reason made visible: a coupling's bars sit on their ticks, a
    softmax layer's do not (vermillion above the tick, a sky-blue box of the missing mass
    below it, grey on it, as the main page draws a marginal).

    Args:
        plans: panel name → (n, m) plan; all of one shape. labels: panel titles.
        b: (m,) ν's weights, or None for the matrices alone. title, note: trusted text.
        height: pixels (by whether there are bars when None).

    Returns:
        With ``b``: each panel's bars (3 classes) and ticks on row 1, sharing one y range;
        then one heatmap per plan on row 2 (z = πᵢⱼ, from 0 to the largest entry).
    """
    w = _w(words)
    names = list(plans)
    Ps = [np.asarray(plans[n], float) for n in names]
    if any(P.ndim != 2 or P.shape != Ps[0].shape for P in Ps):
        raise ValueError("every plan must be a matrix of the same shape (n, m).")
    k = max(1, len(names))
    m = Ps[0].shape[1] if Ps else 0
    bars = b is not None
    if bars:
        b = np.asarray(b, float)
        if b.shape != (m,):
            raise ValueError(f"b must be ({m},) for plans with {m} columns, got {b.shape}.")
    label = [wrap(escape((labels or {}).get(n, n)), TITLE_CHARS) for n in names]
    fig = make_subplots(rows=2 if bars else 1, cols=k, horizontal_spacing=0.03,
                        vertical_spacing=0.03, row_heights=[0.36, 0.64] if bars else None,
                        subplot_titles=label + [""] * (k if bars else 0))
    zmax = max(float(P.max()) for P in Ps) if Ps else 1.0
    row = 2 if bars else 1
    fg = th.foreground(theme)
    seen: set = set()
    top = 1.15 * max([float(b.max())] + [float(P.sum(0).max()) for P in Ps]) if bars else 1
    for c, (name, P) in enumerate(zip(names, Ps), start=1):
        if bars:
            ax = c
            on = dict(xaxis=f"x{'' if ax == 1 else ax}", yaxis=f"y{'' if ax == 1 else ax}")
            for trace in _bar_traces(P.sum(0), b, num, w, fg, on, seen):
                fig.add_trace(trace)
            fig.update_yaxes(range=[0, top], showticklabels=c == 1, nticks=4, row=1, col=c)
            fig.update_xaxes(range=[-0.5, m - 0.5], showticklabels=False, row=1, col=c)
        fig.add_trace(go.Heatmap(z=P, x=np.arange(m), zmin=0, zmax=zmax, colorscale="Viridis",
                                 showscale=c == len(names), name=escape(name),
                                 colorbar=dict(len=0.62 if bars else 1, y=0, yanchor="bottom"),
                                 hovertemplate=f"{w['row']} %{{y}}<br>{w['col']} %{{x}}<br>"
                                               f"{w['mass']} %{{z:.3g}}<extra></extra>"),
                      row=row, col=c)
        fig.update_yaxes(autorange="reversed", showticklabels=False, row=row, col=c)
        fig.update_xaxes(range=[-0.5, m - 0.5], showticklabels=False, row=row, col=c)
    heading, top = _heading(title, note, label)
    fig.update_layout(title=heading, margin=dict(t=top, l=20, r=20, b=20),
                      barmode="overlay", legend=dict(orientation="h", y=-0.04, x=0,
                                                     yanchor="top"))
    return apply(fig, theme, height=height or (430 if bars else 260),
                 separators=num.separators)


def error_vs_width(widths: Sequence[int], errors: Mapping[str, Sequence[float]], *,
                   labels: Mapping[str, str] | None = None, title: str = "",
                   words: Mapping[str, str] | None = None, theme: str = "light",
                   height: int = 340, num: Numbers = ENGLISH) -> go.Figure:
    """Held-out L1 against the encoder width, one line per model (log–log).

    Args:
        widths: the widths D swept. errors: model name → held-out L1 per width (NaN for a
            width not yet run; the line stops there).

    Returns:
        One scatter per model over x = widths, on log axes.
    """
    w = _w(words)
    widths = np.asarray(widths, float)
    fig = go.Figure()
    for k, (name, err) in enumerate(errors.items()):
        err = np.asarray(err, float)
        if err.shape != widths.shape:
            raise ValueError(f"errors of {name!r} must have one value per width "
                             f"({len(widths)}), got {err.shape}.")
        label = escape((labels or {}).get(name, name))
        fig.add_trace(go.Scatter(x=widths, y=err, mode="lines+markers", name=label,
                                 line=dict(color=_color(name, k), width=2.5),
                                 hovertemplate=f"{label}<br>D = %{{x}}<br>L1 %{{y:.3g}}"
                                               "<extra></extra>"))
    fig.update_layout(title=make_title(title),
                      xaxis=dict(title=w["width"], type="log", tickvals=widths.tolist()),
                      yaxis=dict(title=w["heldout"], type="log", **log_ticks(
                          [np.asarray(e, float) for e in errors.values()] or [], num)),
                      legend=dict(orientation="h", y=-0.25), margin=dict(t=60, b=90))
    return apply(fig, theme, height=height, separators=num.separators)
