"""A plotly chart in the app's theme, with its download button: what every page draws its
figures with (the main page's views, Learn's steps)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from viz.theme import plotly_config as theme_config
from viz.theme import present as present_figure

from .live import FAILED, chart as live_chart


def chart(fig: go.Figure, name: str, img: str, *, key: str, live: bool = True,
          bind: dict | None = None, present: bool = False,
          present_height: int | None = None, failed: str = FAILED, **kw):
    """A plotly chart in our theme (not Streamlit's), with a PNG/SVG download button.

    ``live`` charts update in place when a slider moves (:mod:`sinkscope_app.live`), and
    a chart with ``bind`` (:func:`bind`) takes the live sliders' frames in the browser;
    charts that send selection events back (the All heads grid) or animate (ε path) use
    ``st.plotly_chart``. With ``present`` (the page's presentation mode, passed in: a
    chart never reads the session) the chart's text is scaled up (``viz.theme.present``),
    to ``present_height`` pixels high when given. ``failed`` is what a live chart says when
    plotly.js fails (its ``{error}`` field the message), in the page's language.
    """
    if present:
        fig = present_figure(fig, height=present_height)
    config = theme_config(img, name)
    if live:
        return live_chart(fig, key=key, config=config, bind=bind, failed=failed)
    return st.plotly_chart(fig, theme=None, width="stretch", config=config, key=key, **kw)
