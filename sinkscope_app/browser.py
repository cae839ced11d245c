"""What the browser code needs, without Streamlit: the JavaScript bundle and a chart's data.

The app's components (:mod:`.live`, :mod:`.scrub`, :mod:`.align_live`) and the notebook
widget (:mod:`sinkscope.notebook`) load the same files of ``js/`` joined by :func:`bundle`,
and give a chart the same data (:func:`chart_data`), so a notebook scrubs frames with the
app's own code.
"""

from __future__ import annotations

import re
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio

from viz.theme import text_px

JS_DIR = Path(__file__).with_name("js")
# Each file only uses what an earlier one defines at its top level (or, inside functions,
# any): state, then pure helpers, then the DOM, then the entry point.
JS_FILES = ("state", "format", "lattice", "patch", "paint", "axes", "chart", "slider", "scrub",
            "main")
# The notebook widget's module: the app's files, the Align page's, and the widget's entry.
WIDGET_FILES = ("state", "format", "lattice", "patch", "paint", "axes", "chart", "slider",
                "scrub", "align", "widget")
FAILED = "This chart could not be drawn: {error}"  # what a chart says when plotly.js fails
_IMPORT = re.compile(r'^import\s*\{[^}]*\}\s*from\s*"\./[\w-]+\.js";[ \t]*\n', re.M)
_COMMENT = re.compile(r"^[ \t]*//[^\n]*\n", re.M)  # a line that is only a comment
_DEFAULT = re.compile(r"^export default function\b", re.M)
_AXIS = re.compile(r"[xy]axis\d*")


def bundle(names: tuple[str, ...] = JS_FILES) -> str:
    """The files of ``js/`` as one ES module: each file's text without its imports of the
    others (they are all in the bundle) and without its comment lines (the files keep
    them), in order, each under a ``// ---- js/<name>.js`` line. Its only default export
    is the last file's (an earlier file's default export becomes a plain function)."""
    parts = []
    for k, name in enumerate(names):
        text = _COMMENT.sub("", _IMPORT.sub("", (JS_DIR / f"{name}.js").read_text(
            encoding="utf-8")))
        if k < len(names) - 1:
            text = _DEFAULT.sub(f"function default_{name}", text)
        parts.append(f"// ---- js/{name}.js\n" + text)
    return "\n".join(parts)


def label_widths(fig: go.Figure) -> dict[str, float]:
    """The widest tick label of each axis of ``fig`` that names its ticks (``ticktext``),
    in font sizes (``viz.theme.text_px`` at size 1): the browser keeps every k-th label of
    a token axis where the chart's real size leaves too little room (js/axes.js)."""
    out = {}
    for name, axis in fig.layout.to_plotly_json().items():
        text = axis.get("ticktext") if _AXIS.fullmatch(name) else None
        if text is not None and len(text):
            out[name] = max(text_px(str(t), 1) for t in text)
    return out


def chart_data(fig: go.Figure, *, src: str, config: dict, bind: dict | None = None,
               failed: str = FAILED) -> dict:
    """What ``js/chart.js`` draws a figure from: the figure as JSON, where plotly.js is
    (``src``), the plotly config, the height, the words of a failure, the tick labels'
    widths, and ``bind`` ({"lattice" or "payload": id, …}) when the live sliders may give
    it other frames."""
    data = {"spec": pio.to_json(fig, validate=False), "src": src, "config": config,
            "height": int(fig.layout.height or 450), "failed": failed,
            "tick_em": label_widths(fig)}
    if bind:
        data["bind"] = bind
    return data
