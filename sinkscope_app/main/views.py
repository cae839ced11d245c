"""The main area's views. Each ``render_*`` draws its own small controls (fixed keys,
stored in the URL) and its figures, and returns the figures for the HTML report.

Only the selected view runs, so a slider move builds one view's figures, not seven.
Every figure is built in the page's language: ``viz`` builders take the page's figure
words and number format (:attr:`Ctx.fw`, :attr:`Ctx.num`).
"""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go
import streamlit as st

from engine import settings
from engine.settings import Settings
from engine.types import Relation
from viz import bipartite, clouds, diagnostics, heatmaps

from .. import compute, locale
from ..about import about
from ..charts import chart  # noqa: F401  (the views' charts; heads and sentences too)
from ..live import FAILED
from . import calls
from .params import CSCALES, CVIEWS, EDGES_MAX, GRAPH_WHICH, METHODS, SPACES, THR_STOPS, TOPK_MAX


@dataclass(frozen=True)
class Ctx:
    """What the sidebar decided (changes there re-run the whole page), and what the
    views' own controls held when the run began (the page passes them in: a view never
    reads the session): ε, the Graph's highlight, the Sentences view's example set,
    candidates, plan picker and click count (a fresh scatter per click)."""

    model: str
    a: str
    b: str
    mode: str
    layer: int
    head: int | str
    weights: str
    pool: bool
    n_layers: int
    n_heads: int
    lattice: str | None = None  # id of the live sliders' frames, None when they are off
    present: bool = False  # presentation mode: the figures' text scaled up
    lang: str = "en"  # the page's language: its words are text/main.<lang>.json
    eps: float = settings.DEFAULT_EPS
    hl: str = "none"
    sset: str = "custom"
    cands: str = ""
    scand: int = 0
    clicks: int = 0

    @property
    def w(self) -> dict:
        """The page's words in its language (read once per process)."""
        return locale.words("main", self.lang)

    @property
    def fw(self) -> dict:
        """The figures' words (``figures``), in the page's language."""
        return self.w["figures"]

    @property
    def num(self):
        """How the page's language writes numbers."""
        return locale.numbers(self.lang)

    @property
    def chart_failed(self) -> str:
        """What a live chart says when plotly.js fails, in the page's language."""
        return self.w["notices"].get("chart_failed", FAILED)

    @property
    def settings(self) -> Settings:
        """The engine's settings of this view at ε = 1, one half-step (its geometry)."""
        return Settings(model=self.model, mode=self.mode, layer=self.layer, head=self.head,
                        weights=self.weights, pool_words=bool(self.pool))

    @property
    def geometry(self) -> tuple:
        return (self.model, self.a, self.b, self.mode, self.layer, self.head, self.weights,
                self.pool)


PRESENT_COMPARE_HEIGHT = 720  # px: sliders and both maps on one 1920 × 1080 screen


def bind(r: Relation, ctx: Ctx) -> dict | None:
    """What a chart of ``r`` needs to take other frames of the live sliders' lattice."""
    if ctx.lattice is None:
        return None
    return {"lattice": ctx.lattice, "eps": float(r.eps), "steps": int(r.half_steps)}


def radio(label: str, options: dict, key: str, **kw):
    return st.radio(label, list(options), format_func=options.get, key=key,
                    horizontal=True, **kw)


def render_compare(r: Relation, ctx: Ctx, theme: str, img: str) -> list[go.Figure]:
    w, say = ctx.w["compare"], dict(words=ctx.fw, num=ctx.num, theme=theme)
    c1, c2 = st.columns(2)
    with c1:  # the options' keys are CVIEWS' and CSCALES' (the URL's values)
        cview = radio(w["show"], {k: w["cviews"][k] for k in CVIEWS}, "cview",
                      help=w["show_help"])
    with c2:
        cscale = radio(w["scale"], {k: w["cscales"][k] for k in CSCALES}, "cscale",
                       help=w["scale_help"])
    figs = [heatmaps.compare(r, view=cview, scale=cscale, **say)]
    chart(figs[0], "compare", img, key="fig_compare", bind=bind(r, ctx),
          present_height=PRESENT_COMPARE_HEIGHT, present=ctx.present, failed=ctx.chart_failed)
    st.caption(w["bars"])
    figs.append(heatmaps.difference(r, view=cview, **say))
    chart(figs[1], "difference", img, key="fig_difference", bind=bind(r, ctx),
          present=ctx.present, failed=ctx.chart_failed)
    if r.model_attention is not None:
        with st.expander(w["model_attention"]):
            fig = heatmaps.heatmap(r.model_attention, r.tokens_a, r.tokens_b,
                                   zlabel=w["attention"], title=w["model_attention_title"],
                                   mode=r.mode, **say)
            chart(fig, "model_attention", img, key="fig_model_attention",
                  present=ctx.present, failed=ctx.chart_failed)
            figs.append(fig)
    return figs


def _highlight_options(r: Relation, nothing: str = "nothing") -> dict[str, str]:
    opts = {"none": nothing}
    opts.update({f"a{i}": f"A[{i}] {t}" for i, t in enumerate(r.tokens_a)})
    opts.update({f"b{j}": f"B[{j}] {t}" for j, t in enumerate(r.tokens_b)})
    return opts


def render_graph(r: Relation, ctx: Ctx, theme: str, img: str) -> list[go.Figure]:
    w = ctx.w["graph_cloud"]
    opts = _highlight_options(r, w["nothing"])
    if ctx.hl not in opts:
        st.session_state["hl"] = "none"
    c1, c2, c3, c4 = st.columns([1.2, 1.2, 1, 1.4])
    with c1:
        which = radio(w["plans"], {k: w["plans_opts"][k] for k in GRAPH_WHICH}, "gwhich")
    with c2:
        top_k = st.slider(w["topk"], 0, TOPK_MAX, key="topk")
    with c3:
        thr = st.select_slider(w["thr"], list(THR_STOPS), key="thr", format_func=ctx.num)
    with c4:
        hl = st.selectbox(w["hl"], list(opts), format_func=opts.get, key="hl")
    highlight = None if hl in (None, "none") else (hl[0], int(hl[1:]))
    fig = bipartite.graph(r, which=which, top_k=int(top_k) or None, threshold=float(thr),
                          highlight=highlight, theme=theme, words=ctx.fw, num=ctx.num)
    chart(fig, "graph", img, key="fig_graph", bind=bind(r, ctx), present=ctx.present,
          failed=ctx.chart_failed)
    return [fig]


def render_cloud(r: Relation, ctx: Ctx, theme: str, img: str) -> list[go.Figure]:
    w = ctx.w["graph_cloud"]
    c1, c2, c3, c4, c5 = st.columns([1.6, 1, 0.8, 1.3, 1.2])
    with c1:
        space = radio(w["points"], {k: w["spaces"][k] for k in SPACES}, "space")
    with c2:
        method = radio(w["projection"], METHODS, "method")
    with c3:
        dim = radio(w["dimensions"], {2: "2-D", 3: "3-D"}, "dim")
    with c4:
        edges = st.slider(w["edges"], 1, EDGES_MAX, key="edges")
    with c5:
        which = radio(w["edges_of"], {"sinkhorn": "Sinkhorn", "softmax": "softmax"}, "cwhich")
    if method == "umap" and compute.umap_warming():
        st.info(w["umap_warming"])
    with st.spinner(w["fitting_umap"] if method == "umap" else w["projecting"]):
        proj = compute.projection(ctx.a, ctx.b, ctx.settings, space, method, int(dim))
    fig = clouds.cloud(r, proj, which=which, top_edges=int(edges), theme=theme, words=ctx.fw,
                       num=ctx.num)
    chart(fig, "cloud", img, key="fig_cloud", present=ctx.present, failed=ctx.chart_failed)
    if proj.note_code:
        st.caption(ctx.fw.get("note_" + proj.note_code, proj.note))
    return [fig]


def render_convergence(r: Relation, ctx: Ctx, theme: str, img: str) -> list[go.Figure]:
    c = r.coupling
    fig = diagnostics.convergence(c, current=c.half_steps_run, theme=theme, words=ctx.fw,
                                  num=ctx.num)
    chart(fig, "convergence", img, key="fig_convergence", present=ctx.present,
          failed=ctx.chart_failed)
    st.caption(ctx.w["compare"]["convergence"])
    return [fig]


def render_path(r: Relation, ctx: Ctx, theme: str, img: str) -> list[go.Figure]:
    with st.spinner(ctx.w["path_view"]["solving"]):
        eps, plans, exact = calls.eps_path(ctx.a, ctx.b, ctx.settings)
    fig = diagnostics.eps_path(eps, plans, exact, r.tokens_a, r.tokens_b, theme=theme,
                               mode=r.mode, words=ctx.fw, num=ctx.num)
    chart(fig, "eps_path", img, key="fig_eps_path", live=False, present=ctx.present)
    st.caption(ctx.w["compare"]["path"])
    return [fig]


def render_about(r: Relation | None, ctx: Ctx | None, theme: str, img: str) -> list[go.Figure]:
    st.markdown(about(ctx.lang if ctx is not None else "en"))
    return []
