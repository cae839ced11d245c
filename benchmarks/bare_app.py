"""The benchmark's peer: a bare Streamlit app with one slider and one heatmap.

The ε slider has the app's own stops; each move re-runs the script, which draws softmax
attention at the new ε on fixed 30 × 30 scores with ``st.plotly_chart`` — the plain
Streamlit way. ``benchmarks/scrub.py`` runs it beside sinkscope in one Chromium.
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from sinkscope_app.main.params import EPS_OPTIONS

st.set_page_config(page_title="bare slider + heatmap", layout="wide")
S = np.random.default_rng(0).normal(0.0, 2.4, (30, 30))  # the spread of MiniLM's logits
eps = st.select_slider("ε", options=EPS_OPTIONS, value=1.0, format_func=lambda e: f"{e:g}")
P = np.exp((S - S.max(1, keepdims=True)) / eps)
P /= P.sum(1, keepdims=True)
fig = go.Figure(go.Heatmap(z=P, colorscale="Viridis"),
                layout=dict(title=dict(text=f"softmax at ε={eps:g}"), height=520))
st.plotly_chart(fig, theme=None)
