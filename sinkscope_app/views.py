"""The main area's views. Each ``render_*`` draws its own small controls (fixed keys,
stored in the URL) and its figures, and returns the figures for the HTML report.

Only the selected view runs, so a slider move builds one view's figures, not seven.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from engine import settings
from engine.settings import MAX_CANDIDATES
from engine.relation.summary import numbers
from engine.types import Relation
from viz import bipartite, clouds, diagnostics, grid as vgrid, heatmaps
from viz import sentences as vsentences
from viz._axes import fill as _fill
from viz.theme import plotly_config as theme_config
from viz.theme import present as present_figure

from . import compute, examples, i18n, notices
from .about import about
from .live import FAILED, chart as live_chart
from . import state
from .state import (CSCALES, CVIEWS, EDGES_MAX, GRAPH_WHICH, GRID_PLANS, GRID_VALUES,
                    METHODS, SPACES, TOPK_MAX, cut_text)


@dataclass(frozen=True)
class Ctx:
    """What the sidebar decided (changes there re-run the whole page)."""

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
    chart_failed: str = FAILED  # what a live chart says when plotly.js fails, in ``lang``
    # What the views' own controls held when the run began (the app passes them in: a
    # view never reads the session): ε, the Graph's highlight, the Sentences view's
    # example set, candidates, plan picker and click count (a fresh scatter per click).
    eps: float = settings.DEFAULT_EPS
    hl: str = "none"
    sset: str = "custom"
    cands: str = ""
    scand: int = 0
    clicks: int = 0

    @property
    def w(self) -> dict:
        """The page's words in its language (read once per process)."""
        return i18n.texts("main", self.lang)

    @property
    def geometry(self) -> tuple:
        return (self.model, self.a, self.b, self.mode, self.layer, self.head, self.weights,
                self.pool)


PRESENT_COMPARE_HEIGHT = 720  # px: sliders and both maps on one 1920 × 1080 screen


def chart(fig: go.Figure, name: str, img: str, *, key: str, live: bool = True,
          bind: dict | None = None, present: bool = False,
          present_height: int | None = None, failed: str = FAILED, **kw):
    """A plotly chart in our theme (not Streamlit's), with a PNG/SVG download button.

    ``live`` charts update in place when a slider moves (:mod:`.live`), and a chart with
    ``bind`` (:func:`bind`) takes the live sliders' frames in the browser; charts that send
    selection events back (the All heads grid) or animate (ε path) use ``st.plotly_chart``.
    With ``present`` (the page's presentation mode, passed in: a chart never reads the
    session) the chart's text is scaled up (``viz.theme.present``), to ``present_height``
    pixels high when given. ``failed`` is what a live chart says when plotly.js fails (its
    ``{error}`` field the message), in the page's language.
    """
    if present:
        fig = present_figure(fig, height=present_height)
    config = theme_config(img, name)
    if live:
        return live_chart(fig, key=key, config=config, bind=bind, failed=failed)
    return st.plotly_chart(fig, theme=None, width="stretch", config=config, key=key, **kw)


@functools.lru_cache(maxsize=None)
def _phrases(lang: str) -> tuple[tuple[re.Pattern, str, bool], ...]:
    """(English phrase as a pattern, its ``lang`` words, whether it is more than one word),
    longest first; a phrase that starts or ends with a letter matches only whole words
    there."""
    en, there = i18n.texts("main", "en")["figures"], i18n.texts("main", lang)["figures"]
    out = []
    for old, new in sorted(((en[k], there[k]) for k in en), key=lambda p: -len(p[0])):
        head = r"(?<!\w)" if old[:1].isalnum() else ""
        tail = r"(?!\w)" if old[-1:].isalnum() else ""
        out.append((re.compile(head + re.escape(old) + tail), new.replace("\\", "\\\\"),
                    not old.isalpha()))
    return tuple(out)


_DECIMAL = re.compile(r"(?<=\d)\.(?=\d)")
_MAX_TEXTS = 5000  # hover arrays longer than this (the All heads grid) keep their words


def speak(fig: go.Figure, lang: str) -> go.Figure:
    """``fig`` with its words in ``lang`` (``figures`` of text/main.<lang>.json; the builders
    stay English and pure) and its numbers written the language's way: decimal marks in
    titles and notes, ``layout.separators`` for axes and hovers. Titles, axis and colour
    bar titles, legends, annotations, trace names and hovers, animation frames and
    buttons, and the templates the browser fills while a slider moves. English figures
    are returned as they are."""
    if lang == "en":
        return fig
    phrases, mark = _phrases(lang), numbers(lang).decimal

    def say(text, decimals: bool = True, words: bool = True):
        if not isinstance(text, str):
            return text
        for old, new, multi in phrases:
            if words or multi:
                text = old.sub(new, text)
        return _DECIMAL.sub(mark, text) if decimals else text

    def say_all(texts):  # hovers hold tokens too: only phrases of several words change
        if isinstance(texts, str):  # (word pieces never hold "1.5": the tokenizer splits it)
            return say(texts, words=False)
        if isinstance(texts, (list, tuple, np.ndarray)) and 0 < len(texts) <= _MAX_TEXTS \
                and all(isinstance(t, str) for t in texts):
            return [say(t, words=False) for t in texts]
        return texts

    def layout(lay):
        if lay.title.text:
            lay.title.text = say(lay.title.text)
        for ann in lay.annotations or ():
            ann.text = say(ann.text)
        for name in list(lay.to_plotly_json()):
            part = lay[name]
            if name[:5] in ("xaxis", "yaxis") and part.title.text:
                part.title.text = say(part.title.text)
            elif name.startswith("coloraxis") and part.colorbar.title.text:
                part.colorbar.title.text = say(part.colorbar.title.text)

    lay = fig.layout
    layout(lay)
    lay.separators = numbers(lang).separators
    if lay.legend.title.text:
        lay.legend.title.text = say(lay.legend.title.text)
    if isinstance(lay.meta, dict):  # the templates the browser fills while a slider moves
        lay.meta = {k: ([say(t) for t in v] if k == "titles" else say(v))
                    if k in ("titles", "title", "not_converged", "note", "identical") else v
                    for k, v in lay.meta.items()}
    for menu in lay.updatemenus or ():
        for button in menu.buttons or ():
            button.label = say(button.label)
    for slider in lay.sliders or ():  # the frames keep their names: only labels change
        for step in slider.steps or ():
            step.label = say(step.label)
    for frame in fig.frames or ():
        if frame.layout is not None and frame.layout.title.text:
            frame.layout.title.text = say(frame.layout.title.text)
    for trace in fig.data:
        if getattr(trace, "name", None):
            trace.name = say(trace.name, decimals=False)
        if isinstance(getattr(trace, "hovertemplate", None), str):
            trace.hovertemplate = say(trace.hovertemplate, decimals=False)
        if getattr(trace, "hovertext", None) is not None:  # labels (text) are tokens
            trace.hovertext = say_all(trace.hovertext)
        bar = getattr(trace, "colorbar", None)
        if bar is not None and bar.title.text:
            bar.title.text = say(bar.title.text)
    return fig


def refill(fig: go.Figure, r: Relation, lang: str) -> go.Figure:
    """The frame-dependent titles of a Compare, difference or Graph figure of ``r`` filled
    with ``lang``'s numbers and words, exactly as the browser fills them while a slider
    moves (js/patch.js, from the templates in ``layout.meta``): the picture at rest and the
    one being dragged write "≈ 0" and "100 semipasos" alike. English is left as built."""
    meta = fig.layout.meta
    if lang == "en" or not isinstance(meta, dict) or meta.get("kind") not in (
            "compare", "difference", "graph"):
        return fig
    num, w = numbers(lang), ctx_words(lang)
    t = int(r.coupling.half_steps_run)
    soft, sink = np.asarray(r.softmax_plan), np.asarray(r.coupling.plan)
    vals = {"eps": num(float(r.eps)),
            "steps": w["half_step" if t == 1 else "half_steps"].format(n=num(t)),
            "softmax_col_err": num(float(np.abs(soft.sum(0) - r.b).sum())),
            "max_err": num(max(float(np.abs(sink.sum(1) - r.a).sum()),
                               float(np.abs(sink.sum(0) - r.b).sum()))),
            "not_converged": "" if bool(np.all(np.asarray(r.coupling.converged)))
            else meta.get("not_converged", "")}
    if meta["kind"] == "difference":
        same = bool(meta.get("identical")) and meta["identical"] in (fig.layout.title.text or "")
        fig.layout.title.text = _fill(meta["title"], **vals,
                                      identical=meta["identical"] if same else "")
        return fig
    for k, ann in enumerate(fig.layout.annotations or ()):
        if k < len(meta.get("titles", ())):
            ann.text = _fill(meta["titles"][k], **vals)
    return fig


def ctx_words(lang: str) -> dict:
    """The live sliders' words of ``lang`` (``sliders.words``: what the browser writes)."""
    return i18n.texts("main", lang)["sliders"]["words"]


def bind(r: Relation, ctx: Ctx) -> dict | None:
    """What a chart of ``r`` needs to take other frames of the live sliders' lattice."""
    if ctx.lattice is None:
        return None
    return {"lattice": ctx.lattice, "eps": float(r.eps), "steps": int(r.half_steps)}


def _radio(label: str, options: dict, key: str, **kw):
    return st.radio(label, list(options), format_func=options.get, key=key,
                    horizontal=True, **kw)


def render_compare(r: Relation, ctx: Ctx, theme: str, img: str) -> list[go.Figure]:
    w = ctx.w["compare"]
    c1, c2 = st.columns(2)
    with c1:  # the options' keys are CVIEWS' and CSCALES' (the URL's values)
        cview = _radio(w["show"], {k: w["cviews"][k] for k in CVIEWS}, "cview",
                       help=w["show_help"])
    with c2:
        cscale = _radio(w["scale"], {k: w["cscales"][k] for k in CSCALES}, "cscale",
                        help=w["scale_help"])
    figs = [refill(speak(heatmaps.compare(r, view=cview, scale=cscale, theme=theme), ctx.lang),
                   r, ctx.lang)]
    chart(figs[0], "compare", img, key="fig_compare", bind=bind(r, ctx),
          present_height=PRESENT_COMPARE_HEIGHT, present=ctx.present,
          failed=ctx.chart_failed)
    st.caption(w["bars"])
    figs.append(refill(speak(heatmaps.difference(r, view=cview, theme=theme), ctx.lang), r,
                       ctx.lang))
    chart(figs[1], "difference", img, key="fig_difference", bind=bind(r, ctx),
          present=ctx.present,
          failed=ctx.chart_failed)
    if r.model_attention is not None:
        with st.expander(w["model_attention"]):
            fig = speak(heatmaps.heatmap(r.model_attention, r.tokens_a, r.tokens_b,
                                         zlabel="attention", title=w["model_attention_title"],
                                         theme=theme, mode=r.mode), ctx.lang)
            chart(fig, "model_attention", img, key="fig_model_attention",
                  present=ctx.present,
                  failed=ctx.chart_failed)
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
        which = _radio(w["plans"], {k: w["plans_opts"][k] for k in GRAPH_WHICH}, "gwhich")
    with c2:
        top_k = st.slider(w["topk"], 0, TOPK_MAX, key="topk")
    with c3:
        thr = st.number_input(w["thr"], 0.0, 1.0, step=0.005, format="%.3f", key="thr")
    with c4:
        hl = st.selectbox(w["hl"], list(opts), format_func=opts.get, key="hl")
    highlight = None if hl in (None, "none") else (hl[0], int(hl[1:]))
    fig = refill(speak(bipartite.graph(r, which=which, top_k=int(top_k) or None,
                                       threshold=float(thr), highlight=highlight, theme=theme),
                       ctx.lang), r, ctx.lang)
    chart(fig, "graph", img, key="fig_graph", bind=bind(r, ctx), present=ctx.present,
          failed=ctx.chart_failed)
    return [fig]


def render_cloud(r: Relation, ctx: Ctx, theme: str, img: str) -> list[go.Figure]:
    w = ctx.w["graph_cloud"]
    c1, c2, c3, c4, c5 = st.columns([1.6, 1, 0.8, 1.3, 1.2])
    with c1:
        space = _radio(w["points"], {k: w["spaces"][k] for k in SPACES}, "space")
    with c2:
        method = _radio(w["projection"], METHODS, "method")
    with c3:
        dim = _radio(w["dimensions"], {2: "2-D", 3: "3-D"}, "dim")
    with c4:
        edges = st.slider(w["edges"], 1, EDGES_MAX, key="edges")
    with c5:
        which = _radio(w["edges_of"], {"sinkhorn": "Sinkhorn", "softmax": "softmax"}, "cwhich")
    if method == "umap" and compute.umap_warming():
        st.info(w["umap_warming"])
    label = w["fitting_umap"] if method == "umap" else w["projecting"]
    with st.spinner(label):
        proj = compute.projection(*ctx.geometry, space, method, int(dim))
    fig = speak(clouds.cloud(r, proj, which=which, top_edges=int(edges), theme=theme),
                ctx.lang)
    chart(fig, "cloud", img, key="fig_cloud", present=ctx.present,
          failed=ctx.chart_failed)
    if proj.note:
        st.caption(proj.note)
    return [fig]


def render_convergence(r: Relation, ctx: Ctx, theme: str, img: str) -> list[go.Figure]:
    c = r.coupling
    fig = speak(diagnostics.convergence(c, current=c.half_steps_run, theme=theme), ctx.lang)
    chart(fig, "convergence", img, key="fig_convergence", present=ctx.present,
          failed=ctx.chart_failed)
    st.caption(ctx.w["compare"]["convergence"])
    return [fig]


def render_heads(r: Relation, ctx: Ctx, theme: str, img: str) -> list[go.Figure]:
    w, num = ctx.w["heads"], numbers(ctx.lang)
    names = {k: w["values"][k] for k in GRID_VALUES}
    c1, c2 = st.columns(2)
    with c1:
        kind = st.selectbox(w["tiles"], list(GRID_PLANS), format_func=w["plans"].get,
                            key="gplan")
    with c2:
        gval = st.selectbox(w["value"], list(GRID_VALUES), format_func=names.get, key="gval")
    eps, steps = float(r.eps), int(r.half_steps)
    n, m = len(r.tokens_a), len(r.tokens_b)
    heads = ctx.n_layers * ctx.n_heads
    if n * m > settings.CONFIG.grid_max_cells:
        st.info(w["too_many"].format(n=n, m=m, heads=heads,
                                     cells=num(settings.CONFIG.grid_max_cells)
                                     if ctx.lang != "en"
                                     else f"{settings.CONFIG.grid_max_cells:,}"))
        return []
    with st.spinner(w["relating"].format(heads=heads)):
        g = compute.grid(ctx.model, ctx.a, ctx.b, ctx.mode, eps, steps, ctx.weights, ctx.pool)
    plans = {"sinkhorn": g.coupling.plan, "softmax": g.softmax_plan,
             "difference": g.coupling.plan - g.softmax_plan}[kind]
    values = np.asarray(getattr(g.summary, gval), dtype=float)
    selected = (ctx.layer, ctx.head) if isinstance(ctx.head, int) else None
    fig = speak(vgrid.grid(plans, values, value_name=names[gval], selected=selected,
                           scale="diverging" if kind == "difference" else "mass",
                           theme=theme), ctx.lang)
    # The key names the selected head: a new selection gets a fresh, empty widget, so an
    # old click can never fight a head chosen in the sidebar.
    event = chart(fig, "heads", img, key=f"fig_heads_{ctx.layer}_{ctx.head}",
                  live=False, on_select="rerun", selection_mode="points", present=ctx.present)
    head = (w["current_head"].format(head=ctx.head) if isinstance(ctx.head, int)
            else w["current_mean"])
    st.caption(w["caption"].format(layer=ctx.layer, head=head))
    pick = _picked_head(event, ctx.n_layers, ctx.n_heads)
    c1, c2 = st.columns([1, 2], vertical_alignment="bottom")
    with c1:
        order = _radio(w["rank_by"].format(value=names[gval]), w["ranks"], "grank")
    ranked = ranked_heads(values, lowest_first=order == "low")
    with c2:  # the keyboard's way to a head: a select box, ranked
        options = [None, *[(l, h) for l, h, _ in ranked]]
        value_of = {(l, h): v for l, h, v in ranked}
        chosen = st.selectbox(
            w["open"], options, key=f"head_pick_{gval}_{ctx.layer}_{ctx.head}",
            format_func=lambda o: w["choose"] if o is None else w["option"].format(
                layer=o[0], head=o[1], value=names[gval], number=num(value_of[o])))
    st.dataframe({w["col_rank"]: list(range(1, len(ranked) + 1)),
                  w["col_layer"]: [l for l, _, _ in ranked],
                  w["col_head"]: [h for _, h, _ in ranked],
                  names[gval]: [num(v) for _, _, v in ranked]},
                 hide_index=True, height=247, width="stretch")
    pick = pick or chosen
    if pick is not None and pick != (ctx.layer, ctx.head):
        st.session_state["_pending_lh"] = pick
        st.rerun(scope="app")
    return [fig]


def ranked_heads(values: np.ndarray, *, lowest_first: bool = False
                 ) -> list[tuple[int, int, float]]:
    """(layer, head, value) for every head of an (L, H) array, highest value first (or
    lowest); ties keep layer-then-head order."""
    v = np.asarray(values, dtype=float)
    key = v.ravel() if lowest_first else -v.ravel()
    order = np.argsort(key, kind="stable")
    H = v.shape[1]
    return [(int(k // H), int(k % H), float(v.ravel()[k])) for k in order]


def _picked_head(event, n_layers: int, n_heads: int) -> tuple[int, int] | None:
    """(layer, head) from a grid selection event, or None.

    Reads the tile marker's ``customdata`` [layer, head, value]; plotly sends a typed-array
    row as {"0": l, "1": h, ...}, so both lists and index-keyed dicts are accepted.
    """
    try:
        points = list(event["selection"]["points"])
    except (KeyError, TypeError, AttributeError):
        return None
    for p in points:
        cd = p.get("customdata") if isinstance(p, dict) else None
        if isinstance(cd, dict):
            cd = [cd.get(k, cd.get(str(k))) for k in range(2)]
        try:
            layer, head = int(round(float(cd[0]))), int(round(float(cd[1])))
        except (TypeError, ValueError, IndexError):
            continue
        if 0 <= layer < n_layers and 0 <= head < n_heads:
            return layer, head
    return None


def render_path(r: Relation, ctx: Ctx, theme: str, img: str) -> list[go.Figure]:
    with st.spinner(ctx.w["path_view"]["solving"]):
        eps, plans, exact = compute.eps_path(*ctx.geometry)
    fig = speak(diagnostics.eps_path(eps, plans, exact, r.tokens_a, r.tokens_b, theme=theme,
                                     mode=r.mode), ctx.lang)
    chart(fig, "eps_path", img, key="fig_eps_path", live=False, present=ctx.present)
    st.caption(ctx.w["compare"]["path"])
    return [fig]


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$&])")


def md_text(text: str, max_chars: int = 200) -> str:
    """A user's text for st.markdown, shown literally: Markdown and HTML characters are
    escaped (no links, images or formatting), cut to ``max_chars`` with an ellipsis."""
    text = " ".join(str(text).split())
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return _MD_SPECIAL.sub(r"\\\1", text)


def _load_set() -> None:
    """The example set picker: load its text A (sidebar) and candidates on the next run."""
    s = examples.sentence_sets().get(st.session_state["sset"])
    if s:
        st.session_state["_pending_state"] = {"a": s["a"], "cands": "\n".join(s["candidates"]),
                                               "ex": "custom"}


def _edited_cands() -> None:
    s = examples.sentence_sets().get(st.session_state.get("sset"))
    if s and st.session_state["cands"] != "\n".join(s["candidates"]):
        st.session_state["sset"] = "custom"


def _open_candidate(text: str, ctx: Ctx) -> None:
    """Text B := this candidate, and the Compare view, on a fresh run of the whole page."""
    ss = st.session_state
    ss["_pending_state"] = {"b": text, "view": "compare", "ex": "custom",
                            "mode": "separate" if ctx.mode == "self" else ctx.mode}
    ss["_sent_clicks"] = ctx.clicks + 1  # a fresh scatter: no stale click
    st.rerun(scope="app")


def _picked_candidate(event, K: int) -> int | None:
    """The candidate index (customdata) of the first clicked point, or None."""
    try:
        points = list(event["selection"]["points"])
    except (KeyError, TypeError, AttributeError):
        return None
    for pt in points:
        cd = pt.get("customdata") if isinstance(pt, dict) else None
        if isinstance(cd, (list, tuple)):
            cd = cd[0] if cd else None
        try:
            k = int(round(float(cd)))
        except (TypeError, ValueError):
            continue
        if 0 <= k < K:
            return k
    return None


def render_sentences(r: Relation, ctx: Ctx, theme: str, img: str) -> list[go.Figure]:
    w, num, lang = ctx.w["sentences"], numbers(ctx.lang), ctx.lang
    sets, set_words = examples.sentence_sets(), ctx.w.get("sentence_sets", {})
    opts = {**{k: set_words.get(k, {}).get("title", v["title"]) for k, v in sets.items()},
            "custom": w["own"]}
    c1, c2 = st.columns([2, 3])
    with c1:
        st.selectbox(w["set"], list(opts), format_func=opts.get, key="sset",
                     on_change=_load_set, help=w["set_help"])
        note = set_words.get(ctx.sset, {}).get("note", sets.get(ctx.sset, {}).get("note"))
        if note:
            st.caption(note)
        st.caption(w["about"])
    with c2:
        cands, notice = cut_text(ctx.cands, "The candidates", "as typed or pasted", lang=lang)
        if notice:
            st.session_state["cands"] = cands
            st.warning(notice)
        chars = (f"{settings.CONFIG.max_chars:,}" if lang == "en"
                 else num(settings.CONFIG.max_chars))
        st.text_area(w["cands"].format(max=MAX_CANDIDATES), key="cands",
                     height=170, on_change=_edited_cands,
                     help=w["cands_help"].format(chars=chars))
    eps = float(ctx.eps)
    with st.spinner(w["ranking"]):
        rk = compute.ranking(ctx.model, ctx.a, cands, eps)
    for level, text in notices.say_all(rk.notices, lang):
        (st.warning if level == "warning" else st.info)(text)
    m1, m2, m3 = st.columns(3)
    rho = (w["na"] if not np.isfinite(rk.spearman) else
           f"{rk.spearman:.2f}".replace(".", num.decimal))
    m1.metric(w["agree"], rho, border=True, help=w["agree_help"])
    m2.metric(w["same_top"], w["yes"] if rk.by_similarity[0] == rk.by_divergence[0]
              else w["no"], border=True, help=w["same_top_help"])
    m3.metric(w["barycenter"], w["na"] if rk.barycenter_gap is None
              else f"± {rk.barycenter_gap:.0e}".replace(".", num.decimal), border=True,
              help=w["barycenter_help"])
    figs = [speak(vsentences.rankings(rk, theme=theme), lang)]
    chart(figs[0], "rankings", img, key="fig_rankings", present=ctx.present,
          failed=ctx.chart_failed)
    figs.append(speak(vsentences.scatter(rk, theme=theme), lang))
    event = chart(figs[1], "similarity_vs_divergence", img,
                  key=f"fig_sentences_{ctx.clicks}", live=False,
                  on_select="rerun", selection_mode="points", present=ctx.present)
    st.caption(w["click"])
    pick = _picked_candidate(event, len(rk.candidates))
    if pick is not None:
        _open_candidate(rk.candidates[pick], ctx)
    head = st.columns([0.5, 6, 1.6, 1.6, 1.3], vertical_alignment="center")
    for col, label in zip(head, ("#", w["col_candidate"], w["col_cosine"],
                                 w["col_divergence"], "")):
        col.markdown(f"**{label}**" if label else "")
    for place, k in enumerate(rk.by_divergence, 1):
        row = st.columns([0.5, 6, 1.6, 1.6, 1.3], vertical_alignment="center")
        row[0].markdown(f"{k + 1}")
        row[1].markdown(md_text(rk.candidates[k]))
        row[2].markdown(f"{rk.similarity[k]:.3f}".replace(".", num.decimal)
                        + f" · {rk.rank_similarity[k]}")
        row[3].markdown(f"{num(float(rk.divergence[k]))} · {place}")
        if row[4].button(w["compare"], key=f"cmp_{k}", width="stretch",
                         help=w["compare_help"]):
            _open_candidate(rk.candidates[k], ctx)
    K = len(rk.candidates)
    if not 0 <= int(ctx.scand or 0) < K:
        st.session_state["scand"] = 0
    with st.expander(w["plan"]):
        k = st.selectbox(w["candidate"], list(range(K)), key="scand",
                         format_func=lambda i: f"{i + 1}. {rk.candidates[i][:80]}")
        eps_text = f"{eps:g}" if lang == "en" else num(eps)
        fig = speak(heatmaps.heatmap(rk.plans[k], rk.tokens_a, rk.tokens[k], zlabel="mass",
                                     title=w["plan_title"].format(k=k + 1, eps=eps_text),
                                     theme=theme), lang)
        chart(fig, "sentence_plan", img, key="fig_sentence_plan", present=ctx.present,
              failed=ctx.chart_failed)
        figs.append(fig)
    return figs


def render_about(r: Relation | None, ctx: Ctx | None, theme: str, img: str) -> list[go.Figure]:
    st.markdown(about(ctx.lang if ctx is not None else "en"))
    return []


RENDER = {"compare": render_compare, "graph": render_graph, "cloud": render_cloud,
          "convergence": render_convergence, "heads": render_heads, "path": render_path,
          "sentences": render_sentences, "about": render_about}
FRAGMENT_KEYS = state.FRAGMENT_KEYS  # derived from the URL schema
SLIDER_HELP = {
    "eps": "Softmax temperature and Sinkhorn's entropy weight. Small ε: sharp plans close "
           "to exact optimal transport (needs more half-steps). Large ε: everything "
           "spreads towards the product a⊗b. ε = 1 is the model's own softmax.",
    "steps": "Sinkhorn alternates a row normalisation (odd) and a column normalisation "
             "(even). One half-step is exactly diag(a)·softmax(S/ε); two is one full "
             "Sinkhorn iteration; many converge to the coupling."}
