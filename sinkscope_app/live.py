"""Plotly charts that update in place when a slider moves.

``st.plotly_chart`` derives a chart's identity from its figure, so every new ε gives the
chart a new identity: the browser unmounts it and draws a fresh one (``newPlot`` plus
React mounting), about 100 ms per move on two cores. :func:`chart` keeps one ``<div>`` per
key and calls ``Plotly.react`` on it, which redraws only what changed.

plotly.js is the copy bundled with the installed ``plotly`` package, served by Streamlit's
component file route, so nothing is fetched from the network.
"""

from __future__ import annotations

from pathlib import Path

import plotly
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
import streamlit.components.v1 as components_v1

_PLOTLY_DIR = Path(plotly.__file__).resolve().parent / "package_data"
_JS = """
const loadPlotly = (src) => {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__sinkscopePlotly) {
    window.__sinkscopePlotly = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src;
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => {
        window.__sinkscopePlotly = null;
        reject(new Error("plotly.js could not be loaded from the server"));
      };
      document.head.appendChild(s);
    });
  }
  return window.__sinkscopePlotly;
};

export default async function ({ parentElement, data }) {
  if (!data.spec) {  // preload: start fetching plotly.js, draw nothing
    loadPlotly(data.src).catch(() => {});
    return;
  }
  let gd = parentElement.querySelector(":scope > div.sinkscope-chart");
  if (!gd) {
    gd = document.createElement("div");
    gd.className = "sinkscope-chart";
    gd.style.width = "100%";
    parentElement.appendChild(gd);
    let queued = false;
    new ResizeObserver(() => {
      if (queued || !gd._fullLayout || !window.Plotly) return;
      queued = true;
      requestAnimationFrame(() => { queued = false; window.Plotly.Plots.resize(gd); });
    }).observe(gd);
  }
  gd.style.minHeight = data.height + "px";
  try {
    const Plotly = await loadPlotly(data.src);
    const fig = JSON.parse(data.spec);
    await Plotly.react(gd, { data: fig.data, layout: fig.layout, config: data.config });
  } catch (err) {
    gd.textContent = "This chart could not be drawn: " + err.message;
  }
}
"""


def _registered() -> tuple[str, object]:
    """(URL of plotly.min.js, the mounting command), registered with the running server.

    Registering is cheap and idempotent; doing it on every call keeps it right for every
    server (and every AppTest runtime) in the process.
    """
    files = components_v1.declare_component("plotly_js", path=str(_PLOTLY_DIR))
    mount = st.components.v2.component("sinkscope_live_chart", js=_JS, isolate_styles=False)
    return f"./component/{files.name}/plotly.min.js", mount


def chart(fig: go.Figure, *, key: str, config: dict) -> None:
    """Draw ``fig`` full width under ``key``; later calls with the same key update it.

    Args:
        fig: the figure (its layout height is used; the width follows the page).
        key: a fixed widget key, one per chart on the page.
        config: plotly config (mode bar, image download options).
    """
    src, mount = _registered()
    height = int(fig.layout.height or 450)
    mount(key=key, data={"spec": pio.to_json(fig, validate=False), "src": src,
                         "config": config, "height": height})


def preload() -> None:
    """Start fetching plotly.js in the browser now (an empty element), before any chart."""
    src, mount = _registered()
    mount(key="sinkscope_plotly_preload", data={"spec": "", "src": src})
