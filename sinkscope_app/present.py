"""Presentation mode: the main page readable from the back of a lecture room.

A sidebar toggle (URL key ``present``). The figures scale their own text
(``viz.theme.present``, applied by ``views.chart``); this module holds the page's part:
CSS that sets every label of the main area to at least 18 px and trims the page's top
padding, so the sliders, the metric strip and both compare maps fit one 1920 × 1080
screen. Nothing a lecturer quotes is cut with an ellipsis: the metric strip's labels and
details, the sidebar's links and select boxes wrap instead.
"""

from __future__ import annotations

import streamlit as st

from .inputs import parse_bool

MIN_PX = 18  # the smallest text on the main page, as viz.theme.PRESENT_PX in the figures

CSS = f"""
[data-testid="stMain"] {{font-size:{MIN_PX}px}}
[data-testid="stMain"] :where(p, span, label, li, button, input, textarea, small, code, th,
  td, div[data-baseweb="select"] div):not(svg *) {{font-size:max({MIN_PX}px, 1em) !important}}
[data-testid="stMain"] [data-testid="stCaptionContainer"] {{font-size:{MIN_PX}px !important}}
[data-testid="stMainBlockContainer"] {{padding-top:2.4rem !important;
  padding-bottom:1rem !important}}
[data-testid="stHeader"], [data-testid="stHeader"] [data-testid="stToolbar"] {{
  background:transparent !important;pointer-events:none !important}}
[data-testid="stHeader"] :is(button, a, [role="button"]) {{pointer-events:auto !important}}
.sk-scrub .sk-head {{font-size:{MIN_PX + 2}px}}
.sk-scrub .sk-ends, .sk-scrub .sk-note, .sk-scrub .sk-mlabel, .sk-scrub .sk-mdetail,
.sk-scrub .sk-tip, .sk-scrub .sk-help {{font-size:{MIN_PX}px}}
.sk-scrub .sk-help {{width:1.3rem;height:1.3rem;line-height:1.3rem}}
.sk-scrub .sk-mvalue {{font-size:{MIN_PX + 6}px}}
.sk-scrub .sk-metrics {{grid-template-columns:repeat(auto-fit,minmax(9.5rem,1fr))}}
.sk-scrub .sk-mlabel, .sk-scrub .sk-mdetail {{white-space:normal !important;
  overflow:visible !important;text-overflow:clip !important;overflow-wrap:anywhere}}
[data-testid="stSidebar"] :where(p, span, label, a, div):not(svg *) {{
  text-overflow:clip !important}}
[data-testid="stSidebar"] :where([data-testid="stPageLink"], [data-baseweb="select"],
  [data-testid="stWidgetLabel"]) :where(p, span, div, a) {{white-space:normal !important;
  overflow:visible !important;overflow-wrap:anywhere}}
[data-testid="stMain"] [data-testid="stVerticalBlock"] {{gap:.55rem}}
[data-testid="stMain"] [data-testid="stButtonGroup"] > div {{flex-wrap:wrap}}
[data-testid="stMain"] [data-testid="stRadio"] {{display:flex;flex-flow:row wrap;
  align-items:center;column-gap:1rem}}
[data-testid="stMain"] [data-testid="stRadio"] > label {{margin-bottom:0}}
.sk-hover {{font-size:{MIN_PX}px !important}}
"""


def link(value: object) -> bool:
    """Whether a URL's ``present`` value turns presentation mode on (as state.parse_query
    reads it): then the page opens with its sidebar folded away."""
    return bool(parse_bool(value))


def style(on: bool) -> None:
    """Add the presentation CSS to the page when ``on`` (nothing otherwise)."""
    if on:
        st.html(f"<style>{CSS}</style>")
