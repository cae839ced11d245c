"""The eight steps of the Learn page. Each ``step_*`` writes its text and at most two
controls into the left column and its one live figure into the right one.

Numbers come from the engine (the toy clouds' plans through the engine interface's
``toy``, your texts through the cached :mod:`.compute`), figures from :mod:`viz.learn`;
nothing here computes mathematics itself (the clouds themselves and what a plan sends
and receives are :mod:`engine.lab.clouds`, numpy only). Widget keys are fixed (``learn_*``) and the text a step
shows is filled with the numbers its figure shows.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from engine import settings

from engine.lab import clouds as toy
from engine.settings import DEFAULT_HALF_STEPS, Settings
from engine.relation.summary import Numbers
from viz import learn as vl

from .. import compute, engines, locale, where
from ..charts import chart
from ..links import main_link
from .params import SHIFT_STEP
from .text import PRESETS, WORDS, WORDS_TEXT, Step

log = logging.getLogger("sinkscope.learn")
SPECIAL = ("[CLS]", "[SEP]", "<s>", "</s>")
STEP5_HALF_STEPS = (1, 2, 3, 4, 5, 10, 20, 50, 100)
STEP6_EPS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
TEXT_WEIGHTS = "content"  # steps 6 and 8: special tokens weigh 0, as on the main page
TEXT_HALF_STEPS = 1000  # steps 6 and 8: enough for the coupling at every ε offered
SINK_WEIGHTS = "uniform"  # step 7: every token weighs the same, [CLS] and [SEP] included
SETTLED = 1e-3  # both marginal errors below this: the plan "is" a coupling (step 3)
MAX_T = 500  # step 3's half-step counter
STEP6_LABELS = 4  # tokens labelled per text in step 6's plane (the rest on hover)


@dataclass(frozen=True)
class Ctx:
    """What every step needs: the language, its words, the look, and the texts."""

    lang: str
    ui: dict[str, str]
    step: Step
    theme: str
    scale: float
    img: str
    model: str
    text_a: str
    text_b: str
    n_layers: int = 6
    n_heads: int = 12

    @property
    def w(self) -> dict[str, str]:
        return self.step.words

    @property
    def num(self) -> Numbers:
        """Numbers for students, plain in every language: 0.00005 and "≈ 0", never
        4.78e-05 (0,00005 in Spanish)."""
        return locale.numbers(self.lang, plain=True)

    def settings(self, eps: float = 1.0, half_steps: int = 1, **kw) -> Settings:
        """The engine's settings of steps 6–8: the last layer, the head mean, content
        weights (``kw`` overrides them)."""
        base = dict(model=self.model, mode="separate", layer=self.n_layers - 1, head="mean",
                    weights=TEXT_WEIGHTS, pool_words=False, eps=float(eps),
                    half_steps=int(half_steps))
        return Settings(**{**base, **kw})


# --------------------------------------------------------------------------- cached numbers
@st.cache_data(show_spinner=False, max_entries=256)
def _clouds(preset: str, shift: float) -> toy.Clouds:
    return toy.clouds(preset, shift)


def _plan(preset: str, shift: float, plan: str, **kw) -> toy.ToyPlan:
    """One plan between the clouds, by the engine (``toy``; kept by :func:`_cached`)."""
    return _cached(engines.current().name, preset, float(shift), plan, tuple(sorted(kw.items())))


@st.cache_data(show_spinner=False, max_entries=1024)
def _cached(engine: str, preset: str, shift: float, plan: str, kw: tuple) -> toy.ToyPlan:
    return engines.current().toy(preset, shift, plan, **dict(kw))


def _softmax(preset: str, shift: float, cost: str = "distance") -> np.ndarray:
    return _plan(preset, shift, "softmax", cost=cost).plan


def _half(preset: str, shift: float, t: int, cost: str = "distance"):
    p = _plan(preset, shift, "half_steps", t=int(t), cost=cost)
    return p.plan, float(p.row_err), float(p.col_err)


def _coupling(preset: str, shift: float, eps: float, cost: str = "distance"):
    p = _plan(preset, shift, "coupling", eps=float(eps), cost=cost)
    return p.plan, bool(p.converged)


def _exact(preset: str, shift: float) -> np.ndarray:
    return _plan(preset, shift, "exact").plan


def _toy(ss) -> tuple[str, float, toy.Clouds]:
    preset, shift = ss["learn_cloud"], float(ss["learn_shift"])
    return preset, shift, _clouds(preset, shift)


# --------------------------------------------------------------------------- helpers
def _text(ctx: Ctx, **fields) -> None:
    st.markdown(ctx.step.body.format(**fields))


def _math(ctx: Ctx) -> None:
    with st.expander(ctx.ui["in_symbols"]):
        st.markdown(ctx.step.math)


def _draw(ctx: Ctx, fig: go.Figure, name: str) -> None:
    """The step's figure, in place of the last one (one live chart for every step)."""
    chart(fig, f"learn_{name}", ctx.img, key="learn_figure", failed=ctx.ui["chart_failed"])


def _hs(ctx: Ctx, t: int) -> str:
    """"half-step" or "half-steps" (and so on) for a count t."""
    return ctx.ui["half_step" if t == 1 else "half_steps"]


def _names(ctx: Ctx, preset: str) -> str:
    return PRESETS[ctx.lang][preset]


# --------------------------------------------------------------------------- 1. clouds
def step_clouds(ctx: Ctx, left, right) -> None:
    ss = st.session_state
    with left:
        _text(ctx)
        names = PRESETS[ctx.lang]
        st.pills(ctx.w["shape"], list(names), format_func=names.get, key="learn_cloud",
                 required=True, wrap=True)
        _shift_slider(ctx)
        _math(ctx)
    preset, shift, c = _toy(ss)
    fig = vl.plane(c.xa, c.a, c.xb, c.b, ranges=toy.FRAME,
                   title=ctx.w["title"].format(preset=_names(ctx, preset), n=c.n, m=c.m),
                   words=WORDS[ctx.lang], num=ctx.num, theme=ctx.theme, scale=ctx.scale)
    with right:
        _draw(ctx, fig, "clouds")


SHIFTS = tuple(SHIFT_STEP * k for k in range(round(toy.SHIFT_MIN / SHIFT_STEP),
                                             round(toy.SHIFT_MAX / SHIFT_STEP) + 1))


def _shift_slider(ctx: Ctx) -> None:
    """Cloud B's shift on a slider of :data:`SHIFTS` written the language's way (+0,25):
    a plain slider's printf format knows only the decimal point."""
    ss = st.session_state
    shift = min(SHIFTS, key=lambda s: abs(s - float(ss.get("learn_shift", 0.0))))
    if ss.get("learn_shift") != shift:
        ss["learn_shift"] = shift
    st.select_slider(ctx.ui["shift"], options=list(SHIFTS), key="learn_shift",
                     help=ctx.ui["shift_help"],
                     format_func=lambda x: ("+" if x >= 0 else "") + ctx.num.fixed(x, 2))


# --------------------------------------------------------------------------- 2. softmax
def step_softmax(ctx: Ctx, left, right) -> None:
    ss = st.session_state
    preset, shift, c = _toy(ss)
    plan = _softmax(preset, shift)
    got = toy.received(plan)
    ratio = got / c.b
    over, under = int(np.argmax(ratio)), int(np.argmin(ratio))
    if ratio[over] < 1.1 and ratio[under] > 0.9:
        summary = ctx.w["summary_even"]
    else:
        summary = ctx.w["summary"].format(over=f"B{over + 1}", over_got=ctx.num(got[over]),
                                          over_w=ctx.num(c.b[over]), under=f"B{under + 1}",
                                          under_got=ctx.num(got[under]))
    with left:
        _text(ctx, summary=summary)
        _shift_slider(ctx)
        _math(ctx)
    fig = vl.plan_and_bars(c.xa, c.a, c.xb, c.b, plan, ranges=toy.FRAME, title=ctx.w["title"],
                           words=WORDS[ctx.lang], num=ctx.num, theme=ctx.theme, scale=ctx.scale)
    with right:
        _draw(ctx, fig, "softmax")


# --------------------------------------------------------------------------- 3. half-steps
def _next_half() -> None:
    st.session_state["learn_t"] = min(int(st.session_state.get("learn_t", 1)) + 1, MAX_T)


def step_half_steps(ctx: Ctx, left, right) -> None:
    ss = st.session_state
    preset, shift, c = _toy(ss)
    t = int(ss.setdefault("learn_t", 1))
    plan, row_err, col_err = _half(preset, shift, t)
    if max(row_err, col_err) < SETTLED:
        status = ctx.w["settled"].format(t=t, tol=ctx.num.percent(SETTLED / 2))
    else:
        side = ctx.w["rows"] if t % 2 else ctx.w["columns"]
        status = ctx.w["status"].format(t=t, side=side, row_off=ctx.num.percent(row_err / 2),
                                        col_off=ctx.num.percent(col_err / 2))
    soft = _softmax(preset, shift)
    bar_max = 1.12 * float(max(toy.received(soft).max(), c.a.max(), c.b.max()))
    with left:
        _text(ctx, status=status)
        b1, b2 = st.columns(2, vertical_alignment="bottom")
        b1.button(ctx.w["next_half"], key="learn_next_half", on_click=_next_half,
                  type="primary", width="stretch", disabled=t >= MAX_T)
        b2.number_input(ctx.w["counter"], 1, MAX_T, step=1, key="learn_t",
                        help=ctx.w["counter_help"])
        _math(ctx)
    fig = vl.plan_and_bars(c.xa, c.a, c.xb, c.b, plan, ranges=toy.FRAME, bar_max=bar_max,
                           title=ctx.w["title"].format(t=t, hs=_hs(ctx, t)), words=WORDS[ctx.lang],
                           num=ctx.num, theme=ctx.theme, scale=ctx.scale)
    with right:
        _draw(ctx, fig, "half_steps")


# --------------------------------------------------------------------------- 4. ε
def step_eps(ctx: Ctx, left, right) -> None:
    ss = st.session_state
    preset, shift, c = _toy(ss)
    eps = float(ss.setdefault("learn_eps", 1.0))
    plan, _ = _coupling(preset, shift, eps)
    exact = _exact(preset, shift)
    status = ctx.w["status"].format(eps=ctx.num(eps),
                                    to_exact=ctx.num(np.abs(plan - exact).sum()),
                                    to_product=ctx.num(np.abs(plan - toy.product(c)).sum()))
    with left:
        _text(ctx, status=status)
        st.select_slider(ctx.w["eps"], options=list(toy.EPS_PATH), key="learn_eps",
                         format_func=ctx.num, help=ctx.w["eps_help"])
        _math(ctx)
    fig = vl.plan_and_bars(c.xa, c.a, c.xb, c.b, plan, exact=exact, ranges=toy.FRAME,
                           title=ctx.w["title"].format(eps=ctx.num(eps)), words=WORDS[ctx.lang],
                           num=ctx.num, theme=ctx.theme, scale=ctx.scale)
    with right:
        _draw(ctx, fig, "eps")


# --------------------------------------------------------------------------- 5. transformer
def step_transformer(ctx: Ctx, left, right) -> None:
    ss = st.session_state
    preset, shift, c = _toy(ss)
    cost = ss.setdefault("learn_cost", "distance")
    t = int(ss.setdefault("learn_t5", 1))
    soft = _softmax(preset, shift, cost)
    plan, _, _ = _half(preset, shift, t, cost)
    diff = float(np.max(np.abs(plan - soft)))
    cdiff = float(np.max(np.abs(_coupling(preset, shift, 1.0, "distance")[0]
                                - _coupling(preset, shift, 1.0, "inner")[0])))
    with left:
        _text(ctx, status=ctx.w["status"].format(diff=ctx.num(diff), cdiff=ctx.num(cdiff)))
        costs = {"distance": ctx.w["cost_distance"], "inner": ctx.w["cost_inner"]}
        st.radio(ctx.w["cost"], list(costs), format_func=costs.get, key="learn_cost",
                 horizontal=True)
        st.select_slider(ctx.w["steps"], options=list(STEP5_HALF_STEPS), key="learn_t5")
        _math(ctx)
    right_title = ctx.w["right"].format(t=t, hs=_hs(ctx, t))
    fig = vl.two_maps(soft, plan, titles=(ctx.w["left"], right_title),
                      title=ctx.w["title"].format(preset=_names(ctx, preset)),
                      zlabel=WORDS[ctx.lang]["mass"], num=ctx.num, theme=ctx.theme,
                      scale=ctx.scale)
    with right:
        _draw(ctx, fig, "transformer")


# --------------------------------------------------------------------------- your texts
def _relation(ctx: Ctx, eps: float = 1.0):
    with st.spinner(ctx.ui["loading"]):
        return compute.relation(ctx.text_a, ctx.text_b, ctx.settings(eps, TEXT_HALF_STEPS))


def main_page_link(ctx: Ctx, eps: float) -> str:
    """A relative link to the main page showing these texts at these settings."""
    ss = st.session_state
    return main_link({"ex": ss.get("ex", "custom"), "a": ctx.text_a, "b": ctx.text_b,
                      "mode": "separate", "layer": ctx.n_layers - 1, "head": "mean",
                      "weights": TEXT_WEIGHTS, "eps": float(eps),
                      "steps": min(TEXT_HALF_STEPS, settings.CONFIG.max_half_steps),
                      "view": "compare", "model": ctx.model}, ctx.lang)


def step_texts(ctx: Ctx, left, right) -> None:
    ss = st.session_state
    which = ss.setdefault("learn_plan6", "softmax")
    eps = float(ss.setdefault("learn_eps6", 1.0))
    r = _relation(ctx, eps)
    with st.spinner(ctx.ui["loading"]):
        proj = compute.projection(ctx.text_a, ctx.text_b, ctx.settings(), "qk", "pca", 2)
    plan = r.softmax_plan if which == "softmax" else r.coupling.plan
    moved = 0.5 * float(np.abs(r.softmax_plan.sum(0) - r.b).sum())
    off = max(float(r.coupling.row_err[-1]), float(r.coupling.col_err[-1]))
    with left:
        _text(ctx, status=ctx.w["status"].format(moved=ctx.num.percent(moved),
                                                 coupling_off=ctx.num(off)))
        plans = {"softmax": ctx.w["softmax"], "coupling": ctx.w["coupling"]}
        st.segmented_control(ctx.w["plan"], list(plans), format_func=plans.get,
                             key="learn_plan6", required=True)
        st.select_slider(ctx.w["eps"], options=list(STEP6_EPS), key="learn_eps6",
                         format_func=ctx.num)
        st.link_button(ctx.w["link"], main_page_link(ctx, eps))
        _math(ctx)
    title = ctx.w["title_softmax" if which == "softmax" else "title_coupling"].format(
        eps=ctx.num(eps), layer=ctx.n_layers - 1)
    fig = vl.plan_and_bars(proj.xy_a, r.a, proj.xy_b, r.b, plan, labels_a=r.tokens_a,
                           labels_b=r.tokens_b, title=title, words=WORDS_TEXT[ctx.lang],
                           num=ctx.num, theme=ctx.theme, scale=ctx.scale, height=560,
                           label_top=STEP6_LABELS)
    with right:
        _draw(ctx, fig, "texts")
        st.caption(ctx.w["pca_note"].format(explained=ctx.num.percent(proj.explained or 0.0),
                                            rho=ctx.num(proj.distance_cost_corr)))


# --------------------------------------------------------------------------- 7. sink
def step_sink(ctx: Ctx, left, right) -> None:
    ss = st.session_state
    layer = int(ss.setdefault("learn_layer7", ctx.n_layers - 1))
    head = ss.setdefault("learn_head7", "mean")
    with st.spinner(ctx.ui["loading"]):
        n = len(compute.relation(ctx.text_a, "", ctx.settings(mode="self")).tokens_a)
    most = int(settings.CONFIG.grid_max_cells ** 0.5)
    if n > most:  # every layer and head of an n × n text at once: keep it bounded
        with left:
            _text(ctx, layer=layer, heads=ctx.w["heads_mean"].format(h=ctx.n_heads), status="")
        right.info(ctx.ui["too_long"].format(n=n, most=most))
        return
    with st.spinner(ctx.ui["loading"]):
        g = compute.grid(ctx.text_a, "", ctx.settings(1.0, DEFAULT_HALF_STEPS, mode="self",
                                                      weights=SINK_WEIGHTS))
    per_head = g.softmax_plan[layer].sum(-2)  # (H, n): attention each token receives
    coupled = g.coupling.plan[layer].sum(-2)  # (H, n): what the coupling gives it
    got = per_head.mean(0) if head == "mean" else per_head[int(head)]
    fair = coupled.mean(0) if head == "mean" else coupled[int(head)]
    special = np.array([t in SPECIAL for t in g.tokens_a])
    h = per_head.shape[0]
    heads = (ctx.w["heads_mean"].format(h=h) if head == "mean"
             else ctx.w["heads_one"].format(head=head))
    heads_short = (ctx.w["heads_short_mean"].format(h=h) if head == "mean"
                   else ctx.w["heads_short_one"].format(head=head))
    status = ctx.w["status"].format(sink=ctx.num.percent(got[special].sum()),
                                    fair=ctx.num.percent(fair[special].sum()))
    with left:
        _text(ctx, layer=layer, heads=heads, status=status)
        c1, c2 = st.columns(2)
        c1.select_slider(ctx.w["layer"], options=list(range(ctx.n_layers)), key="learn_layer7")
        heads_opts = ["mean", *range(ctx.n_heads)]
        c2.selectbox(ctx.w["head"], heads_opts, key="learn_head7",
                     format_func=lambda x: ctx.w["mean_heads"] if x == "mean" else str(x))
        _math(ctx)
    fig = vl.sink(g.tokens_a, got, g.b, per_head=per_head if head == "mean" else None,
                  title=ctx.w["title"].format(layer=layer, heads_short=heads_short),
                  words=WORDS_TEXT[ctx.lang], num=ctx.num, theme=ctx.theme, scale=ctx.scale)
    with right:
        _draw(ctx, fig, "sink")


# --------------------------------------------------------------------------- 8. the paper
def step_paper(ctx: Ctx, left, right) -> None:
    r = _relation(ctx)
    with left:
        _text(ctx)
        _math(ctx)
        st.caption(ctx.w["refs"])
        st.page_link(where.page("lab"), label=ctx.w["lab_link"], icon=":material/model_training:",
                     query_params={"target": "whitened", "lang": ctx.lang})
    fig = vl.coupling_map(r.coupling.plan, r.tokens_a, r.tokens_b,
                          title=ctx.w["title"].format(layer=ctx.n_layers - 1),
                          zlabel=WORDS[ctx.lang]["mass"], words=WORDS[ctx.lang], num=ctx.num,
                          theme=ctx.theme, scale=ctx.scale)
    with right:
        _draw(ctx, fig, "paper")


STEPS: tuple[Callable[[Ctx, object, object], None], ...] = (
    step_clouds, step_softmax, step_half_steps, step_eps, step_transformer, step_texts,
    step_sink, step_paper)
MODEL_STEPS = (6, 7, 8)  # steps that read the model (1-based)
KEYS = ("learn_t", "learn_eps", "learn_cost", "learn_t5", "learn_plan6", "learn_eps6",
        "learn_layer7", "learn_head7")


# --------------------------------------------------------------------------- page helpers
_KEYS_JS = (Path(__file__).parents[1] / "js" / "learn_keys.js").read_text(encoding="utf-8")


def arrow_keys() -> None:
    """← and → click Back and Next, unless the focus is in a field or on a slider.

    A listener on the page's document (added once; it does nothing on other pages,
    which have no Back / Next buttons).
    """
    mount = st.components.v2.component("sinkscope_learn_keys", js=_KEYS_JS,
                                       isolate_styles=False)
    mount(key="learn_keys", data={})


@st.cache_resource(show_spinner=False)
def warm_up(model: str, _text_a: str, _text_b: str) -> threading.Thread | None:
    """Prepare the later steps in a background thread, once per process, so that each
    shows at once after Next: the toy steps' numbers and figure types first (plotly loads
    each trace type's validators on first use), then POT (step 4's exact transport, about
    1.5 s to import here), then the model and the texts of steps 6–8 (several seconds).
    Results land in the same caches the steps read. Keyed by the model alone (the
    underscore keeps the texts out of the cache key): the first visitor's texts are
    prepared, later texts are computed when their step opens."""
    if not settings.CONFIG.warm_up:  # SINKSCOPE_WARM_UP=0
        return None
    text_a, text_b = _text_a, _text_b

    def work() -> None:
        try:
            preset, shift = toy.PRESETS[0], 0.0
            c = _clouds(preset, shift)
            soft = _softmax(preset, shift)
            _half(preset, shift, 1)
            _half(preset, shift, 2)
            vl.plan_and_bars(c.xa, c.a, c.xb, c.b, soft, words=WORDS["en"])
            vl.two_maps(soft, soft, titles=("", ""))
            vl.sink(["a"], [1.0], [1.0], per_head=[[1.0]], words=WORDS["en"])
            _coupling(preset, shift, 1.0)
            _exact(preset, shift)  # imports POT
            _coupling(preset, shift, 1.0, "inner")
            _half(preset, shift, 1, "inner")
            L = compute.encoder(model).n_layers
            ctx = Ctx("en", {}, None, "light", 1.0, "png", model, text_a, text_b, L)
            compute.relation(text_a, text_b, ctx.settings(1.0, TEXT_HALF_STEPS))
            compute.projection(text_a, text_b, ctx.settings(), "qk", "pca", 2)
            n = len(compute.relation(text_a, "", ctx.settings(mode="self")).tokens_a)
            if n * n <= settings.CONFIG.grid_max_cells:
                compute.grid(text_a, "", ctx.settings(1.0, DEFAULT_HALF_STEPS, mode="self",
                                                      weights=SINK_WEIGHTS))
        except Exception as e:  # an optimisation only: each step computes what it needs
            log.warning("Learn warm-up stopped: %s", e)

    return compute.background("sinkscope-learn-warmup", work)
