"""Layers × heads small multiples: one tiled heatmap, a number per tile, clickable tiles.

All tiles live in ONE ``Heatmap`` over a big matrix with empty (NaN) gaps between
tiles, so 72 heads × 30 × 30 tokens build in milliseconds. Heatmaps emit no selection
events, so an invisible ``Scatter`` marker sits on each tile centre with
``customdata = [layer, head, value]`` for the app to read from a click.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from engine.relation.summary import Numbers
from viz import theme as th
from viz._data import labels
from viz.words import ENGLISH, WORDS, words_of

_SCALES = ("auto", "mass", "diverging")


def _tile(plans: np.ndarray, gy: int, gx: int, fill) -> np.ndarray:
    """(L, H, n, m) -> (L(n+gy)-gy, H(m+gx)-gx) with ``fill`` between tiles."""
    L, H, n, m = plans.shape
    big = np.full((L, H, n + gy, m + gx), fill, dtype=plans.dtype)
    big[:, :, :n, :m] = plans
    big = big.transpose(0, 2, 1, 3).reshape(L * (n + gy), H * (m + gx))
    return big[: L * (n + gy) - gy, : H * (m + gx) - gx]


def _cell_text(tokens_a, tokens_b, L, H, n, m, gy, gx, w=WORDS) -> np.ndarray:
    """Per-cell hover text "layer l · head h<br>A[i] tok → B[j] tok", tiled like the plans."""
    la, lb = labels(tokens_a, n, "tokens_a"), labels(tokens_b, m, "tokens_b")
    pair = np.char.add(np.array([f"<br>A[{i}] {t} → " for i, t in enumerate(la)])[:, None],
                       np.array([f"B[{j}] {t}" for j, t in enumerate(lb)])[None, :])
    prefix = np.array([[w["grid_cell"].format(layer=l, head=h) for h in range(H)]
                       for l in range(L)])
    return _tile(np.char.add(prefix[:, :, None, None], pair[None, None]), gy, gx, "")


def grid(plans: object, values: object, *, value_name: str = "col. err",
         tokens_a: Sequence[str] | None = None, tokens_b: Sequence[str] | None = None,
         selected: tuple[int, int] | None = None, scale: str = "auto",
         normalise: bool = False, title: str | None = None, height: int | None = None,
         width: int | None = None, theme: str = "light", words: dict | None = None,
         num: Numbers = ENGLISH) -> go.Figure:
    """Every layer and head as a small heatmap, each labelled with one number.

    Args:
        plans: (L, H, n, m) one matrix per head: Sinkhorn plans, softmax plans, or their
            difference.
        values: (L, H) the number written above each tile (e.g. softmax's column
            marginal error ‖πᵀ1 − b‖₁ or the coupling's entropy), to pick a head by;
            +inf (a KL where π has mass on weight-0 tokens) is written ∞.
        value_name: what ``values`` are, for the title and hover.
        tokens_a, tokens_b: n and m tokens; when given, hovering a cell names the pair
            (this adds one string per cell to the figure, so leave them out for speed).
        selected: (layer, head) to outline.
        scale: "mass" (0..max, sequential), "diverging" (±max|z|, centred at 0) or
            "auto" (diverging when any value is negative).
        normalise: divide each tile by its own max |z|, to compare patterns rather than
            magnitudes.
        title: figure title; a default names ``value_name``.
        height, width: size in pixels; height defaults to keep cells square.
        theme: "light" or "dark".
        words, num: the figure's words over :data:`viz.words.WORDS` and the page's number
            format (English by default).

    Returns:
        A figure with exactly three traces: the tiled ``Heatmap`` (NaN in the gaps),
        a text ``Scatter`` with the L·H values, and an invisible marker ``Scatter`` on
        the tile centres with ``customdata`` rows [layer, head, value].
    """
    z, v = _check(plans, values, scale)
    w = words_of(words)
    if normalise:
        peak = np.abs(z).max(axis=(2, 3), keepdims=True)
        z = np.divide(z, peak, out=np.zeros_like(z), where=peak > 0)
    L, H, n, m = z.shape
    side = max(n, m)
    gx, gy = max(1, round(0.15 * side)), max(2, round(0.3 * side))  # room for labels above
    big = _tile(z, gy, gx, np.nan)
    rows_of = np.arange(L) * (n + gy) + (n - 1) / 2.0  # tile centres in cell units
    cols_of = np.arange(H) * (m + gx) + (m - 1) / 2.0
    heat = _heat(z, big, scale=scale, normalise=normalise, w=w)
    if tokens_a is not None and tokens_b is not None:
        heat.update(text=_cell_text(tokens_a, tokens_b, L, H, n, m, gy, gx, w),
                    hovertemplate=f"%{{text}}<br>{w['grid_value']} %{{z:.4g}}<extra></extra>")
    else:
        heat.update(hoverinfo="skip")
    data = [go.Heatmap(**heat), *_tile_traces(v, rows_of, cols_of, n, value_name=value_name,
                                               fg=th.foreground(theme), w=w, num=num)]
    shapes = [] if selected is None else [_outline(selected, L, H, n, m, gy, gx)]
    n_rows, n_cols = big.shape
    layout = dict(
        title=th.title(title or w["grid_title"].format(value=value_name), w["grid_click"]),
        xaxis=dict(tickmode="array", tickvals=cols_of, ticktext=[f"h{h}" for h in range(H)],
                   title=dict(text=w["head_word"]), showgrid=False, zeroline=False,
                   range=[-0.5 - gx * 0.5, n_cols - 0.5 + gx * 0.5], side="top"),
        yaxis=dict(tickmode="array", tickvals=rows_of, ticktext=[f"L{l}" for l in range(L)],
                   title=dict(text=w["layer_word"]), showgrid=False, zeroline=False,
                   range=[n_rows - 0.5 + gy * 0.5, -0.5 - gy], scaleanchor="x", scaleratio=1),
        shapes=shapes, hovermode="closest", clickmode="event+select", dragmode=False,
        margin=dict(l=60, r=30, t=110, b=30))
    fig = go.Figure(data=data, layout=layout)
    return th.apply(fig, theme, height=height or square_height(n_rows, n_cols, width),
                    width=width, separators=num.separators)


def _check(plans: object, values: object, scale: str) -> tuple[np.ndarray, np.ndarray]:
    """(L, H, n, m) finite plans and (L, H) values (±inf kept: an infinite KL is ∞)."""
    z = np.asarray(plans, dtype=np.float64)
    if z.ndim != 4:
        raise ValueError(f"plans must be (L, H, n, m), got shape {z.shape}")
    z = np.nan_to_num(z, nan=0.0, posinf=0.0, neginf=0.0)
    L, H = z.shape[:2]
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.shape != (L, H):
        raise ValueError(f"values must be (L, H) = {(L, H)}, got {v.shape}")
    if scale not in _SCALES:
        raise ValueError(f"scale must be one of {_SCALES}, got {scale!r}")
    return z, v


def _heat(z: np.ndarray, big: np.ndarray, *, scale: str, normalise: bool,
          w: dict = WORDS) -> dict:
    """The tiled heatmap's settings: diverging (±max|z|, centred at 0) when asked or, for
    "auto", when any value is negative; else 0..max."""
    diverging = scale == "diverging" or (scale == "auto" and bool((z < 0).any()))
    top = float(np.abs(z).max()) if z.size else 0.0
    top = top if top > 0 else 1.0
    return dict(z=big, colorscale=th.DIFF_SCALE if diverging else th.MASS_SCALE,
                zmin=-top if diverging else 0.0, zmax=top, zmid=0.0 if diverging else None,
                hoverongaps=False, colorbar=dict(thickness=12, title=dict(
                    text=(w["grid_value_max"] if normalise else w["grid_value"]),
                    side="right")))


def _tile_traces(v: np.ndarray, rows_of: np.ndarray, cols_of: np.ndarray, n: int, *,
                 value_name: str, fg: str, w: dict = WORDS,
                 num: Numbers = ENGLISH) -> list[go.Scatter]:
    """The number above each tile, and an invisible marker on each tile's centre whose
    ``customdata`` is [layer, head, value] (what a click selects)."""
    L, H = v.shape
    cl, ch = np.meshgrid(np.arange(L), np.arange(H), indexing="ij")
    cx, cy = cols_of[ch.ravel()], rows_of[cl.ravel()]
    value_text = [num(x) for x in v.ravel()]
    custom = np.stack([cl.ravel(), ch.ravel(), np.where(np.isfinite(v), v, np.nan).ravel()],
                      axis=-1)
    return [
        # each number sits on its own tile's top edge, in the gap above it
        go.Scatter(x=cx, y=cy - n / 2.0, mode="text", text=value_text,
                   textposition="top center", textfont=dict(size=11, color=fg),
                   hoverinfo="skip", showlegend=False, name=value_name),
        go.Scatter(x=cx, y=cy, mode="markers", customdata=custom, showlegend=False,
                   name="tiles", marker=dict(size=max(8, min(40, 300 // max(H, L))),
                                             opacity=0.0, symbol="square"),
                   text=value_text,
                   hovertemplate=(w["grid_tile"].format(layer="%{customdata[0]}",
                                                        head="%{customdata[1]}")
                                  + f"<br>{value_name} %{{text}}<extra></extra>")),
    ]


def _outline(selected: tuple[int, int], L: int, H: int, n: int, m: int, gy: int,
             gx: int) -> dict:
    """A rectangle around the selected (layer, head) tile."""
    sl, sh = int(selected[0]), int(selected[1])
    if not (0 <= sl < L and 0 <= sh < H):
        raise ValueError(f"selected must be (layer 0..{L - 1}, head 0..{H - 1}), got {selected}")
    px, py = 0.5 + 0.3 * gx, 0.5 + 0.15 * gy
    x0, y0 = sh * (m + gx) - px, sl * (n + gy) - py
    return dict(type="rect", x0=x0, x1=x0 + m - 1 + 2 * px, y0=y0, y1=y0 + n - 1 + 2 * py,
                line=dict(color=th.COLOR_ACCENT, width=3))


def square_height(n_rows: int, n_cols: int, width: int | None = None) -> int:
    """A height (px) that keeps the tiled matrix's cells square at ``width`` (1100 when
    None), clamped to 300..1400: height = n_rows / n_cols · (width − 160) + 160."""
    plot_w = (width or 1100) - 160
    return int(np.clip(n_rows / n_cols * plot_w + 160, 300, 1400))
