"""Layout helpers shared by the figure builders: axis titles, sizes, titles, domains.

Pure functions of strings and numbers (no data); :mod:`viz._traces` holds the trace
helpers. Every builder module imports from these two, never from another builder.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from viz import theme as th
from viz.words import WORDS


def axis_titles(mode: str = "separate", w: Mapping[str, str] = WORDS) -> tuple[str, str]:
    """(rows, columns) axis titles of a map in ``w``'s words: text A against text B, or in
    self mode text A's queries against text A's keys."""
    if mode == "self":
        return w["queries"], w["keys"]
    return w["text_a"], w["text_b"]


def hover_names(mode: str, w: Mapping[str, str] = WORDS) -> tuple[str, str]:
    """What a map's hover calls its row and column tokens: "A"/"B" ("query A"/"key A" in
    self mode), in ``w``'s words."""
    return (w["query_a"], w["key_a"]) if mode == "self" else (w["hover_a"], w["hover_b"])


def wrap(title: str, width: int) -> str:
    """``title`` broken into lines of at most ``width`` characters (plotly's ``<br>``);
    a word longer than ``width`` keeps a line of its own, whole."""
    lines: list[str] = []
    for word in title.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


def default_height(n: int, extra: int = 0) -> int:
    """A height in pixels that keeps n rows readable (clamped to 380..1000) plus extra."""
    return int(min(1000, max(380, 170 + 16 * n)) + extra)


def figure(data: list[dict], layout: dict, theme: str, height: int,
           width: int | None, separators: str = ".,") -> go.Figure:
    """One ``go.Figure`` from trace and layout dicts in our theme, its axes and hovers
    writing numbers with ``separators`` (plotly's: the decimal mark, then the group's).

    Building the whole figure in one call is several times faster than make_subplots and
    update_* calls, which re-validate the layout each time; it runs on every slider move.
    """
    layout = {**layout, "template": th.TEMPLATES[th.check_theme(theme)], "height": int(height)}
    if separators != ".,":  # plotly's own: English figures stay as they were
        layout["separators"] = separators
    if width is not None:
        layout["width"] = int(width)
    return go.Figure(data=data, layout=layout)


def map_layout(la: list[str], lb: list[str], title: str, *, top: int = 80,
                axes: tuple[str, str] = ("text A", "text B")) -> dict:
    """Layout of a single map: token axes titled ``axes`` (rows, columns), margins that
    fit their labels, a title."""
    xa = th.token_axis(lb, title=axes[1], rotate=True)
    ya = th.token_axis(la, title=axes[0], reverse=True)
    return dict(xaxis=xa, yaxis=ya, title=dict(text=title),
                margin=th.token_margins(xa, ya, top=top, right=40))


def domains(sizes: Sequence[float], spacing: float) -> list[list[float]]:
    """Paper-coordinate [start, end] of cells with relative ``sizes`` and a gap between."""
    free, total, out, at = 1.0 - spacing * (len(sizes) - 1), float(sum(sizes)), [], 0.0
    for size in sizes:
        out.append([round(at, 6), min(1.0, round(at + free * size / total, 6))])
        at = out[-1][1] + spacing
    return out


def fill(template: str, **values: str) -> str:
    """``template`` with its {name} fields replaced (unknown fields are left as they are)."""
    return re.sub(r"\{(\w+)\}", lambda mt: values.get(mt.group(1), mt.group(0)), template)


def top_title(text: str) -> dict:
    """A one-line figure title pinned to the top edge, whatever the figure's height.
    (plotly anchors a title's first line: more lines go here as annotations.)"""
    return dict(text=text, x=0.01, xanchor="left", y=1.0, yref="container", yanchor="top",
                pad=dict(t=10))


def round_tick(hi: float) -> float:
    """The largest 1, 2 or 5 × 10^k at most 0.8·hi: the one tick of a narrow bar axis."""
    if not hi > 0:
        return 0.0
    top = 0.8 * hi
    k = 10.0 ** np.floor(np.log10(top))
    return float(max(m * k for m in (1, 2, 5) if m * k <= top * (1 + 1e-12)))
