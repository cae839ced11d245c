"""One theme for every sinkscope figure: colours, fonts, light and dark templates.

Colour choices are colour-blind safe: text A and text B use the Okabe–Ito blue and
orange, mass uses viridis (sequential, perceptually uniform), differences use the
ColorBrewer red–blue diverging scale centred at 0. Token text is always escaped so a
user who types ``<b>`` sees ``<b>``, never bold text.
"""

from __future__ import annotations

import html
import math
import unicodedata
from collections.abc import Sequence

import plotly.graph_objects as go
import plotly.io as pio

from engine.relation.summary import fmt, half_steps_text  # one number format everywhere

# Okabe–Ito palette (Okabe & Ito, "Color Universal Design", 2008).
COLOR_A = "#0072B2"  # blue: text A, rows, queries
COLOR_B = "#E69F00"  # orange: text B, columns, keys
COLOR_OVER = "#D55E00"  # vermillion: a B token receives more than its weight b_j
COLOR_UNDER = "#56B4E9"  # sky blue: a B token receives less than b_j ("left alone")
COLOR_MATCH = "#999999"  # grey: marginal within tolerance of its target
COLOR_ZERO = "#BBBBBB"  # zero-weight (special) tokens
# Text in the texts' colours, at least 4.5:1 against each theme's background (WCAG AA):
# Okabe–Ito orange on white is only 2.25:1, and its blue on near-black 3.6:1.
TEXT_COLORS = {"light": {"a": "#0072B2", "b": "#9A6200"},
               "dark": {"a": "#56B4E9", "b": "#E69F00"}}
COLOR_ACCENT = "#CC79A7"  # reddish purple: selection, current step

MASS_SCALE = "Viridis"
DIFF_SCALE = "RdBu_r"  # blue < 0 < red; pair with zmid=0 and symmetric limits

FONT_FAMILY = "Inter, 'Helvetica Neue', Arial, sans-serif"
MONO_FAMILY = "'JetBrains Mono', Menlo, Consolas, monospace"

_BASE = {"light": "plotly_white", "dark": "plotly_dark"}
_FG = {"light": "#222222", "dark": "#E6E6E6"}
_EDGE = {"light": "#4D4D4D", "dark": "#D0D0D0"}
_BG = {"light": "#FFFFFF", "dark": "#111111"}


def _template(theme: str) -> go.layout.Template:
    """plotly's white/dark layout with our fonts and colours, without per-trace defaults.

    Trace defaults (every trace type's styling) made the full template ~7 kB, copied on
    every figure update and every ``to_dict``; every trace here sets its own styling.
    """
    layout = pio.templates[_BASE[theme]].layout.to_plotly_json()
    for unused in ("polar", "ternary", "geo", "mapbox", "map"):
        layout.pop(unused, None)
    tpl = go.layout.Template(layout=layout)
    tpl.layout.update(
        font=dict(family=FONT_FAMILY, size=13, color=_FG[theme]),
        title=dict(font=dict(size=16), x=0.01, xanchor="left"),
        paper_bgcolor=_BG[theme],
        plot_bgcolor=_BG[theme],
        margin=dict(l=70, r=30, t=80, b=60),
        hoverlabel=dict(font=dict(family=MONO_FAMILY, size=12)),
        colorway=[COLOR_A, COLOR_B, "#009E73", COLOR_OVER, COLOR_ACCENT, "#F0E442"],
    )
    # Tick labels are never hidden for overflowing the figure (margins are computed to fit
    # them): plotly's default check measures every label on every redraw, ~40 % of
    # redrawing the compare figure, which the live sliders do on every frame.
    for axis in (tpl.layout.xaxis, tpl.layout.yaxis):
        axis.ticklabeloverflow = "allow"
    tpl.layout.coloraxis.colorbar.ticklabeloverflow = "allow"
    return tpl


def colorbar(**kw) -> dict:
    """A trace's colour bar in our theme (labels never hidden: see :func:`_template`)."""
    return dict(ticklabeloverflow="allow", **kw)


TEMPLATES: dict[str, go.layout.Template] = {t: _template(t) for t in _BASE}


def check_theme(theme: str) -> str:
    """Return ``theme`` if it is known, else raise a ValueError naming the choices."""
    if theme not in TEMPLATES:
        raise ValueError(f"theme must be one of {sorted(TEMPLATES)}, got {theme!r}")
    return theme


def foreground(theme: str) -> str:
    """Text colour of ``theme``."""
    return _FG[check_theme(theme)]


def text_color(side: str, theme: str) -> str:
    """Colour for text A's ("a") or text B's ("b") labels on ``theme``'s background."""
    return TEXT_COLORS[check_theme(theme)][side]


def edge_color(theme: str) -> str:
    """Neutral colour for coupling edges on ``theme``'s background."""
    return _EDGE[check_theme(theme)]


def apply(fig: go.Figure, theme: str = "light", *, height: int | None = None,
          width: int | None = None, separators: str = ".,") -> go.Figure:
    """Apply the light or dark template (and an optional size) to ``fig`` in place.

    Args:
        fig: the figure to style.
        theme: "light" or "dark".
        height, width: figure size in pixels; None leaves it to the container.
        separators: how axes and hovers write numbers (plotly's: the decimal mark, then
            the group's; ``Numbers.separators``).

    Returns:
        The same figure, for chaining.
    """
    fig.update_layout(template=TEMPLATES[check_theme(theme)])
    if separators != ".,":
        fig.update_layout(separators=separators)
    if height is not None:
        fig.update_layout(height=int(height))
    if width is not None:
        fig.update_layout(width=int(width))
    return fig


def escape(token: object) -> str:
    """Token text made safe to show literally in plotly text, ticks and hover.

    Plotly renders a subset of HTML (``<b>``, ``<br>``, ``<a href>``) in every text
    field, so ``<``, ``>`` and ``&`` become entities, which plotly shows as the
    characters themselves. Newlines and tabs become visible escapes.

    Args:
        token: a token string (anything else is converted with ``str``).

    Returns:
        The escaped string, e.g. ``"<b>x</b>"`` -> ``"&lt;b&gt;x&lt;/b&gt;"``.
    """
    text = html.escape(str(token), quote=False)
    return text.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


def escape_gl(token: object, max_chars: int = 14) -> str:
    """Token text for WebGL labels (``Scatter3d`` text), shortened to ``max_chars``.

    3-D text renders tags such as ``<b>`` but does not decode entities, so
    :func:`escape` would show ``&lt;``; angle brackets become the look-alikes ‹ ›.
    """
    text = str(token).replace("\n", "\\n").replace("\t", "\\t")
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return text.replace("<", "\u2039").replace(">", "\u203a")


def escape_all(tokens: Sequence[object]) -> list[str]:
    """:func:`escape` applied to every token."""
    return [escape(t) for t in tokens]


def thin_ticks(labels: Sequence[str], max_ticks: int = 40) -> tuple[list[int], list[str]]:
    """Tick positions and texts for a numeric token axis, thinned to ``max_ticks``.

    Every token keeps its own position 0..n-1 (repeated tokens never collapse); when
    there are more than ``max_ticks`` labels only every k-th is shown. Long labels are
    shortened (hover shows them in full).

    Args:
        labels: n already-escaped labels.
        max_ticks: the most ticks to show (>= 1).

    Returns:
        (tickvals, ticktext), each of length min(n, about max_ticks).
    """
    n = len(labels)
    step = max(1, math.ceil(n / max(1, max_ticks)))
    vals = list(range(0, n, step))
    return vals, [shorten(labels[i]) for i in vals]


def shorten(label: str, max_chars: int = 16) -> str:
    """An escaped label cut to ``max_chars`` visible characters with an ellipsis.

    Cuts the unescaped text, then escapes again, so an entity is never split.
    """
    raw = html.unescape(label)
    if len(raw) <= max_chars:
        return label
    return escape(raw[: max_chars - 1]) + "…"


def token_axis(labels: Sequence[str], *, title: str, max_ticks: int = 40,
               rotate: bool = False, reverse: bool = False) -> dict:
    """Layout dict for a numeric token axis with tick text (use with update_xaxes/yaxes).

    Args:
        labels: n already-escaped labels.
        title: the axis title, e.g. "text A".
        max_ticks: see :func:`thin_ticks`.
        rotate: rotate labels (for the horizontal axis when there are many tokens).
        reverse: put token 0 at the top (for text A on the vertical axis).
    """
    vals, text = thin_ticks(labels, max_ticks)
    axis = dict(tickmode="array", tickvals=vals, ticktext=text, title=dict(text=title),
                showgrid=False, zeroline=False, automargin=False)
    lo, hi = -0.5, len(labels) - 0.5
    axis["range"] = [hi, lo] if reverse else [lo, hi]
    if rotate:
        n = len(labels)
        if n > 10 or max((len(t) for t in labels), default=0) > 8:
            axis["tickangle"] = -90 if n > 30 else -45
    return axis


FONT_SIZE = 13  # the template's font size; tick labels use it
PRESENT_PX = 18  # the smallest text of a figure in presentation mode (a projector)


def title(text: str, note: str | None = None) -> dict:
    """A figure's title, with ``note`` as plotly's subtitle: a line under it at the tick
    labels' size, which :func:`present` scales with every other font (a ``<sup>`` line
    would stay at 70 % of the title, under 18 px on a projector)."""
    out: dict = dict(text=text)
    if note:
        out["subtitle"] = dict(text=note, font=dict(size=FONT_SIZE))
    return out


def _fonts(node: object, out: list[tuple[bool, dict]], hover: bool = False
           ) -> list[tuple[bool, dict]]:
    """Every font dict with a size under ``node`` (a figure's dict), the template aside,
    each with whether it belongs to a hover label."""
    if isinstance(node, dict):
        for key, val in node.items():
            if key == "template":
                continue
            inside = hover or key == "hoverlabel"
            if key.endswith("font") and isinstance(val, dict) and "size" in val:
                out.append((inside, val))
            _fonts(val, out, inside)
    elif isinstance(node, (list, tuple)):
        for val in node:
            _fonts(val, out, hover)
    return out


def _scaled(size: object, k: float) -> object:
    if isinstance(size, (list, tuple)) or hasattr(size, "tolist"):
        return [float(x) * k for x in list(size)]
    return float(size) * k


PRESENT_WIDTH = 1400  # px: the main area's width on a 1920 px screen, when a figure has none


def _thin_axis(axis: dict, length_px: float, font_px: float, *, horizontal: bool) -> None:
    """Keep every k-th tick of a token axis (tick text at fixed values) so that labels of
    ``font_px`` do not overlap along ``length_px`` pixels of a horizontal or vertical axis."""
    vals, text, rng = axis.get("tickvals"), axis.get("ticktext"), axis.get("range")
    if vals is None or text is None or not rng or length_px <= 0 or len(vals) < 2:
        return
    vals, text = list(vals), list(text)
    if not all(isinstance(v, (int, float)) for v in (*vals[:2], *rng[:2])):
        return  # categories, not token positions
    gap = abs(vals[1] - vals[0]) * length_px / max(1e-9, abs(rng[1] - rng[0]))
    angle = abs(axis.get("tickangle") or 0) % 180
    if angle == 0 and horizontal:  # labels side by side: each needs its own width
        need = max(text_px(t, font_px) for t in text) + 0.5 * font_px
    else:
        need = font_px / (max(0.3, abs(math.sin(math.radians(angle)))) if horizontal else 1.0)
    k = math.ceil(need / gap) if gap > 0 else 1
    if k > 1:
        axis["tickvals"], axis["ticktext"] = vals[::k], text[::k]


def present(fig: go.Figure, *, min_px: float = PRESENT_PX, height: int | None = None) -> go.Figure:
    """A copy of ``fig`` for a projector: no text smaller than ``min_px`` pixels.

    Every font size, set on the figure or inherited from its template (text, titles,
    hover labels), is multiplied by k = min_px / (the smallest label's), and so are the
    margins, which were sized for the labels: k ≈ 1.4 for our 13 px tick labels. Token
    axes (tick text at fixed values) keep every k-th label where the larger ones would
    overlap (the width is taken as :data:`PRESENT_WIDTH` when the figure has none).

    Args:
        fig: a built figure (left unchanged).
        min_px: the smallest font size wanted.
        height: the new height in pixels; None scales the figure's height by k.

    Returns:
        A new figure.
    """
    d = fig.to_dict()
    layout = d.setdefault("layout", {})
    tpl = (layout.get("template") or {}).get("layout", {})
    base = float((layout.get("font") or {}).get("size")
                 or (tpl.get("font") or {}).get("size") or 12)
    # what each part inherits from the template when the figure does not set it
    inherited = {"title": (tpl.get("title") or {}).get("font", {}).get("size"),
                 "hoverlabel": (tpl.get("hoverlabel") or {}).get("font", {}).get("size")}
    fonts = _fonts(d, [])
    sizes = [base] + ([float(inherited["title"])] if inherited["title"] else [])
    for hover, f in fonts:
        sz = f["size"]
        if not hover:  # a hover label is not a label on the screen
            sizes += [float(x) for x in (list(sz) if isinstance(sz, (list, tuple))
                                         or hasattr(sz, "tolist") else [sz])]
    k = max(1.0, min_px / min(sizes))
    for _, f in fonts:
        f["size"] = _scaled(f["size"], k)
    layout.setdefault("font", {})
    layout["font"]["size"] = base * k
    for part, size in inherited.items():
        if size:
            font = layout.setdefault(part, {}).setdefault("font", {})
            if "size" not in font:
                font["size"] = float(size) * k
    margin = {**(tpl.get("margin") or {}), **(layout.get("margin") or {})}
    layout["margin"] = {key: (val * k if key in "lrtb" and isinstance(val, (int, float)) else val)
                        for key, val in margin.items()}
    if height is not None:
        layout["height"] = int(height)
    elif layout.get("height"):
        layout["height"] = int(round(layout["height"] * k))
    m = layout["margin"]
    plot_h = (layout.get("height") or 450) - m.get("t", 0) - m.get("b", 0)
    plot_w = (layout.get("width") or PRESENT_WIDTH) - m.get("l", 0) - m.get("r", 0)
    font = base * k
    for name, axis in layout.items():
        if not (name.startswith(("xaxis", "yaxis")) and isinstance(axis, dict)):
            continue
        if axis.get("showticklabels") is False or axis.get("tickmode") != "array":
            continue
        lo, hi = axis.get("domain") or (0.0, 1.0)
        is_x = name.startswith("x")
        _thin_axis(axis, (hi - lo) * (plot_w if is_x else plot_h), font, horizontal=is_x)
    return go.Figure(d)


def text_px(label: str, size: int = FONT_SIZE) -> float:
    """Rough rendered width in pixels of an escaped label (wide CJK characters count double)."""
    raw = html.unescape(label)
    return sum(size * (1.0 if unicodedata.east_asian_width(ch) in "WF" else 0.62) for ch in raw)


def token_margins(x_axis: dict, y_axis: dict, *, top: int = 80, right: int = 30) -> dict:
    """Margins that fit the tick labels of two :func:`token_axis` dicts, computed here.

    Token axes turn plotly's ``automargin`` off: measuring every label in the browser and
    drawing twice made each redraw about twice as slow. Labels are at most 16 characters
    (:func:`shorten`), so the margins stay bounded.

    Args:
        x_axis: the horizontal token axis (bottom labels, maybe rotated).
        y_axis: the vertical token axis (left labels).
        top, right: margins for what sits there (titles, legend, colour bar).
    """
    widest_y = max((text_px(t) for t in y_axis.get("ticktext", ())), default=0.0)
    widest_x = max((text_px(t) for t in x_axis.get("ticktext", ())), default=0.0)
    angle = abs(x_axis.get("tickangle", 0) or 0)
    below = {0: FONT_SIZE * 1.4, 45: 0.71 * (widest_x + FONT_SIZE), 90: widest_x}.get(angle, widest_x)
    title = 2.2 * FONT_SIZE if (y_axis.get("title") or {}).get("text") else 0
    return dict(l=int(max(50, widest_y + title + 14)), b=int(below + 2.2 * FONT_SIZE + 14),
                t=int(top), r=int(right), autoexpand=True)




# Mode-bar buttons that never appear. plotly.js's "Share chart…" (``sendChartToCloud``, on
# by default in plotly.js 3) and its older names open plotly's cloud with the chart's
# data: nothing in sinkscope may leave the machine. The rest are plotly.js 3 <button>s that
# sit in the keyboard's Tab order, eight per chart: dragging still zooms (double-click
# resets) and the mode bar keeps the image download and the reset.
MODEBAR_REMOVE = ("sendChartToCloud", "sendDataToCloud", "editInChartStudio", "lasso2d",
                  "select2d", "zoom2d", "pan2d", "zoomIn2d", "zoomOut2d", "autoScale2d",
                  "zoom3d", "pan3d", "orbitRotation", "tableRotation",
                  "resetCameraLastSave3d", "hoverClosest3d", "hoverClosestCartesian",
                  "hoverCompareCartesian", "toggleSpikelines")


def plotly_config(image_format: str = "png", name: str = "figure") -> dict:
    """The plotly.js config of every sinkscope chart (app, live charts, report, Learn).

    No cloud button, no plotly logo or link; the camera button saves ``image_format``
    ("png" at twice the size, or "svg") as ``sinkscope_<name>``.
    """
    return {"displaylogo": False, "showSendToCloud": False, "showEditInChartStudio": False,
            "showLink": False, "plotlyServerURL": "",
            "modeBarButtonsToRemove": list(MODEBAR_REMOVE),
            "toImageButtonOptions": {"format": image_format, "filename": f"sinkscope_{name}",
                                     "scale": 2 if image_format == "png" else 1}}
