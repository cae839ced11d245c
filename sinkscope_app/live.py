"""Plotly charts that update in place, and the components of the live sliders.

``st.plotly_chart`` derives a chart's identity from its figure, so every new ε gives the
chart a new identity: the browser unmounts it and draws a fresh one (``newPlot`` plus
React mounting), about 100 ms per move on two cores. :func:`chart` keeps one ``<div>`` per
key and calls ``Plotly.react`` on it, which redraws only what changed. A chart given a
``bind`` also takes frames of the ε × half-step lattice from the live sliders
(:mod:`.scrub`) without a server round trip.

The JavaScript lives in ``js/``, one ES module per job: ``format.js`` (numbers and text,
as the Python side writes them), ``lattice.js`` (decoding the frames), ``patch.js`` (a
frame swapped into a figure's data, no DOM), ``paint.js`` (canvases and Plotly.react),
``axes.js`` (token ticks and hover), ``chart.js`` (the chart component), ``slider.js``
(one slider) and ``scrub.js`` (the live sliders). What Python can compute once it ships
as data (the tick labels' widths here, the stops' indices and texts in :mod:`.scrub`); the
JavaScript that still follows a Python function is checked against it on fixtures.
:func:`bundle` joins them, in :data:`JS_FILES` order and without their
``import`` lines (:mod:`.browser`, which the notebook widget shares), into the one module the components share (``sinkscope_live_chart``,
``sinkscope_scrub``, ``sinkscope_lattice``, ``sinkscope_texts``); the tests import
the files one by one under Node (``tests/js``). plotly.js is the copy bundled with the
installed ``plotly`` package, served by Streamlit's component file route, so nothing is
fetched from the network.
"""

from __future__ import annotations

from pathlib import Path

import plotly
import plotly.graph_objects as go
import streamlit as st
import streamlit.components.v1 as components_v1

from .browser import FAILED, JS_DIR, JS_FILES, bundle, chart_data, label_widths  # noqa: F401

_PLOTLY_DIR = Path(plotly.__file__).resolve().parent / "package_data"


JS = bundle()


def component(name: str):
    """The mounting command of one of the bundle's components.

    Registering is cheap and idempotent; doing it on every call keeps it right for every
    server (and every AppTest runtime) in the process. The same JS text for every name
    makes the browser load the module once.
    """
    return st.components.v2.component(name, js=JS, isolate_styles=False)


def sent(data: dict) -> list:
    """``data`` as a sinkscope component is given it: in a one-element list.

    Streamlit scans the values of a dict given as a component's data for dataframes, and
    its first scan in a process imports pandas and pyarrow: ~0.3 s of the interpreter
    lock on the first visit, before the first coupling. A list goes to the browser as it
    is. The JavaScript entry points take the payload back out (``state.js``'s ``unwrap``).
    """
    return [data]


def _plotly_src() -> str:
    """URL of plotly.min.js, registered with the running server."""
    files = components_v1.declare_component("plotly_js", path=str(_PLOTLY_DIR))
    return f"./component/{files.name}/plotly.min.js"


def chart(fig: go.Figure, *, key: str, config: dict, bind: dict | None = None,
          failed: str = FAILED) -> None:
    """Draw ``fig`` full width under ``key``; later calls with the same key update it.

    Args:
        fig: the figure (its layout height is used; the width follows the page).
        key: a fixed widget key, one per chart on the page.
        config: plotly config (mode bar, image download options).
        bind: {"lattice": id, "eps": ε, "steps": t} when ``fig`` shows frame (ε, t) of
            that lattice and may be given other frames by the live sliders; None if not.
        failed: what the chart says when plotly.js fails, in the page's language (its
            ``{error}`` field is plotly.js's message); English by default.
    """
    data = chart_data(fig, src=_plotly_src(), config=config, bind=bind, failed=failed)
    component("sinkscope_live_chart")(key=key, data=sent(data))


def preload() -> None:
    """Start fetching plotly.js in the browser now (an empty element), before any chart."""
    component("sinkscope_live_chart")(key="sinkscope_plotly_preload",
                                      data=sent({"spec": "", "src": _plotly_src()}))
