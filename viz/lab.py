"""Figures of the Lab: learning curves, couplings between two clouds, plans as matrices,
error against width. Pure builders: arrays in, ``go.Figure`` out (no streamlit, no torch).

Every builder takes ``words`` (the page's language) for its labels and ``num`` (an
``engine.relation.summary.Numbers``) for how axes and hovers write numbers; titles are
trusted text from the page's own texts, model names are escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.relation.summary import Numbers

from ._data import segments
from .theme import COLOR_A, COLOR_B, apply, edge_color, escape, title as make_title

ENGLISH = Numbers()

# One colour per model (Okabe–Ito: green, vermillion, reddish purple); the target in grey.
MODEL_COLORS = {"sinkhorn": "#009E73", "softmax": "#D55E00", "context-free": "#CC79A7"}
TARGET_COLOR = "#666666"
N_LINE_BINS = 6

WORDS = {"step": "training step", "heldout": "held-out L1 to the target",
         "width": "encoder width D", "target": "target", "mass": "mass",
         "row_err": "row error", "col_err": "column error", "row": "μ atom (row)",
         "col": "ν atom (column)"}


def _w(words: Mapping[str, str] | None) -> dict[str, str]:
    return {**WORDS, **(words or {})}


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
        One scatter (lines+markers) per model, on a log y axis, in the order given.
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
    fig.update_layout(title=make_title(title), xaxis_title=w["step"],
                      yaxis=dict(title=w["heldout"], type="log"),
                      legend=dict(orientation="h", y=-0.25), margin=dict(t=60, b=90))
    if total_steps:
        fig.update_xaxes(range=[0, total_steps])
    return apply(fig, theme, height=height, separators=num.separators)


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


def _line_traces(x, y, P, ref, color, row, col):
    i, j = np.nonzero(P > 0.01 * ref)
    rel = np.clip(P[i, j] / ref, 0, 1)
    k = np.minimum((rel * N_LINE_BINS).astype(int), N_LINE_BINS - 1)
    out = []
    for bin_ in range(N_LINE_BINS):
        sel = k == bin_
        if not sel.any():
            continue
        sx, sy = segments(x[i[sel], 0], x[i[sel], 1], y[j[sel], 0], y[j[sel], 1])
        level = (bin_ + 1) / N_LINE_BINS
        out.append((go.Scatter(x=sx, y=sy, mode="lines", hoverinfo="skip", showlegend=False,
                               line=dict(width=0.6 + 7 * level, color=color),
                               opacity=0.3 + 0.6 * level), row, col))
    return out


def couplings(x: object, a: object, y: object, b: object, plans: Mapping[str, object], *,
              labels: Mapping[str, str] | None = None, notes: Mapping[str, str] | None = None,
              title: str = "", words: Mapping[str, str] | None = None, theme: str = "light",
              height: int = 380, num: Numbers = ENGLISH) -> go.Figure:
    """Couplings of one pair of clouds, side by side: lines xᵢ–yⱼ as wide as πᵢⱼ is heavy.

    μ = Σ aᵢ δ_{xᵢ} (blue circles), ν = Σ bⱼ δ_{yⱼ} (orange diamonds), marker area ∝ mass.
    Widths are relative to max_ij min(aᵢ, bⱼ), so panels compare.

    Args:
        x: (n, 2), a: (n,), y: (m, 2), b: (m,). plans: panel name → (n, m) plan, in order
            (e.g. "target", then each model).
        labels: panel name → panel title. notes: panel name → a line under it (errors).
        title: trusted text. theme: "light" or "dark". height: pixels.

    Returns:
        One subplot per plan: line traces, then the points of μ, then those of ν.
    """
    x, a, y, b, plans = _check_pair(x, a, y, b, plans)
    names = list(plans)
    titles = []
    for name in names:
        t = escape((labels or {}).get(name, name))
        if notes and notes.get(name):
            t += f"<br><span style='font-size:11px'>{escape(notes[name])}</span>"
        titles.append(t)
    fig = make_subplots(rows=1, cols=max(1, len(names)), subplot_titles=titles,
                        horizontal_spacing=0.03)
    ref = float(np.minimum(a[:, None], b[None, :]).max()) if len(a) and len(b) else 1.0
    lo = np.minimum(x.min(0), y.min(0))
    hi = np.maximum(x.max(0), y.max(0))
    pad = 0.08 * (hi - lo).max() + 1e-9
    sa = 5 + 11 * np.sqrt(a / a.max())
    sb = 5 + 11 * np.sqrt(b / b.max())
    for c, name in enumerate(names, start=1):
        color = TARGET_COLOR if name == "target" else _color(name, c)
        for trace, r, cc in _line_traces(x, y, plans[name], ref, color, 1, c):
            fig.add_trace(trace, row=r, col=cc)
        fig.add_trace(go.Scatter(x=x[:, 0], y=x[:, 1], mode="markers", name="μ",
                                 marker=dict(size=sa, color=COLOR_A, line=dict(width=1,
                                             color=edge_color(theme))),
                                 showlegend=c == 1, legendgroup="mu",
                                 hovertemplate="μ · a = %{customdata:.3g}<extra></extra>",
                                 customdata=a), row=1, col=c)
        fig.add_trace(go.Scatter(x=y[:, 0], y=y[:, 1], mode="markers", name="ν",
                                 marker=dict(size=sb, color=COLOR_B, symbol="diamond",
                                             line=dict(width=1, color=edge_color(theme))),
                                 showlegend=c == 1, legendgroup="nu",
                                 hovertemplate="ν · b = %{customdata:.3g}<extra></extra>",
                                 customdata=b), row=1, col=c)
        fig.update_xaxes(range=[lo[0] - pad, hi[0] + pad], showticklabels=False, row=1, col=c)
        fig.update_yaxes(range=[lo[1] - pad, hi[1] + pad], showticklabels=False, row=1, col=c,
                         scaleanchor=f"x{'' if c == 1 else c}", scaleratio=1)
    fig.update_layout(title=make_title(title), margin=dict(t=100, l=20, r=20, b=40),
                      legend=dict(orientation="h", y=-0.02, x=0, yanchor="top"))
    return apply(fig, theme, height=height, separators=num.separators)


def matrices(plans: Mapping[str, object], *, labels: Mapping[str, str] | None = None,
             title: str = "", words: Mapping[str, str] | None = None, theme: str = "light",
             height: int = 260, num: Numbers = ENGLISH) -> go.Figure:
    """The same plans as matrices (rows μ's atoms, columns ν's), one shared colour scale.

    Args:
        plans: panel name → (n, m) plan; all of one shape. labels: panel titles.

    Returns:
        One heatmap per plan, z = πᵢⱼ, colour scale from 0 to the largest entry.
    """
    w = _w(words)
    names = list(plans)
    Ps = [np.asarray(plans[n], float) for n in names]
    if any(P.ndim != 2 or P.shape != Ps[0].shape for P in Ps):
        raise ValueError("every plan must be a matrix of the same shape (n, m).")
    zmax = max(float(P.max()) for P in Ps) if Ps else 1.0
    fig = make_subplots(rows=1, cols=max(1, len(names)), horizontal_spacing=0.03,
                        subplot_titles=[escape((labels or {}).get(n, n)) for n in names])
    for c, (name, P) in enumerate(zip(names, Ps), start=1):
        fig.add_trace(go.Heatmap(z=P, zmin=0, zmax=zmax, colorscale="Viridis",
                                 showscale=c == len(names), name=escape(name),
                                 hovertemplate=f"{w['row']} %{{y}}<br>{w['col']} %{{x}}<br>"
                                               f"{w['mass']} %{{z:.3g}}<extra></extra>"),
                      row=1, col=c)
        fig.update_yaxes(autorange="reversed", showticklabels=False, row=1, col=c)
        fig.update_xaxes(showticklabels=False, row=1, col=c)
    fig.update_layout(title=make_title(title), margin=dict(t=70, l=20, r=20, b=20))
    return apply(fig, theme, height=height, separators=num.separators)


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
                      yaxis=dict(title=w["heldout"], type="log"),
                      legend=dict(orientation="h", y=-0.25), margin=dict(t=60, b=90))
    return apply(fig, theme, height=height, separators=num.separators)
