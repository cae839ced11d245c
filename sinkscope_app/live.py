"""Plotly charts that update in place, and the components of the live sliders.

``st.plotly_chart`` derives a chart's identity from its figure, so every new ε gives the
chart a new identity: the browser unmounts it and draws a fresh one (``newPlot`` plus
React mounting), about 100 ms per move on two cores. :func:`chart` keeps one ``<div>`` per
key and calls ``Plotly.react`` on it, which redraws only what changed. A chart given a
``bind`` also takes frames of the ε × half-step lattice from the live sliders
(:mod:`.scrub`) without a server round trip.

All of it is one JavaScript module, ``live.js``, shared by the three components
(``sinkscope_live_chart``, ``sinkscope_scrub``, ``sinkscope_lattice``). plotly.js is the
copy bundled with the installed ``plotly`` package, served by Streamlit's component file
route, so nothing is fetched from the network.
"""

from __future__ import annotations

from pathlib import Path

import plotly
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
import streamlit.components.v1 as components_v1

_PLOTLY_DIR = Path(plotly.__file__).resolve().parent / "package_data"
JS = Path(__file__).with_name("live.js").read_text(encoding="utf-8")


def component(name: str):
    """The mounting command of one of live.js's components.

    Registering is cheap and idempotent; doing it on every call keeps it right for every
    server (and every AppTest runtime) in the process. The same JS text for every name
    makes the browser load the module once.
    """
    return st.components.v2.component(name, js=JS, isolate_styles=False)


def _plotly_src() -> str:
    """URL of plotly.min.js, registered with the running server."""
    files = components_v1.declare_component("plotly_js", path=str(_PLOTLY_DIR))
    return f"./component/{files.name}/plotly.min.js"


def chart(fig: go.Figure, *, key: str, config: dict, bind: dict | None = None) -> None:
    """Draw ``fig`` full width under ``key``; later calls with the same key update it.

    Args:
        fig: the figure (its layout height is used; the width follows the page).
        key: a fixed widget key, one per chart on the page.
        config: plotly config (mode bar, image download options).
        bind: {"lattice": id, "eps": ε, "steps": t} when ``fig`` shows frame (ε, t) of
            that lattice and may be given other frames by the live sliders; None if not.
    """
    height = int(fig.layout.height or 450)
    data = {"spec": pio.to_json(fig, validate=False), "src": _plotly_src(), "config": config,
            "height": height}
    if bind:
        data["bind"] = bind
    component("sinkscope_live_chart")(key=key, data=data)


def preload() -> None:
    """Start fetching plotly.js in the browser now (an empty element), before any chart."""
    component("sinkscope_live_chart")(key="sinkscope_plotly_preload",
                                      data={"spec": "", "src": _plotly_src()})
