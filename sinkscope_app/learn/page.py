"""Learn (``/learn``): a guided walk from clouds of points to the Sinkhorn Transformer, in
eight steps, in English or Spanish (``/learn?step=3&lang=es&present=on``).

The frame has read the address (:data:`SCHEMA`) and drawn the language picker; this module
draws the presenter switch, Back / Next (buttons and the ← → keys), the texts in the
sidebar, and the current step, drawn by :mod:`.steps` from engine numbers and ``viz``
figures.
"""

from __future__ import annotations

import logging

import streamlit as st

from engine import SinkscopeError, settings

from .. import compute, examples, frame, locale
from ..inputs import cut, valid_text
from . import steps as learn_steps
from .params import DEFAULTS, SCHEMA, Ctx as ParamsCtx
from .text import EXAMPLES as EXAMPLE_TITLES, N_STEPS, STEPS, UI

log = logging.getLogger("sinkscope.learn")
EXAMPLES = examples.load()
KEEP = (*learn_steps.KEYS, "learn_jump")
PRESENT_CSS = """<style>
[data-testid="stMainBlockContainer"] { max-width: 100%; padding-top: 3.5rem; }
[data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] p,
[data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] li
    { font-size: 1.3rem; line-height: 1.45; }
[data-testid="stMainBlockContainer"] h3 { font-size: 2.2rem; }
[data-testid="stMainBlockContainer"] button p,
[data-testid="stMainBlockContainer"] label p { font-size: 1.2rem; }
</style>"""


def context(fr: frame.Frame) -> ParamsCtx:
    return ParamsCtx(EXAMPLES, fr.navigated)


def go_to(k: int) -> None:
    st.session_state["learn_step"] = min(max(int(k), 1), N_STEPS)


def on_jump() -> None:
    if st.session_state.get("learn_jump"):
        go_to(st.session_state["learn_jump"])


def on_example() -> None:
    ss = st.session_state
    ex = EXAMPLES.get(ss["ex"])
    if ex:
        ss["a"], ss["b"] = ex["a"], ex["b"]


def on_text() -> None:
    ss = st.session_state
    ex = EXAMPLES.get(ss.get("ex"))
    if ex and (ss["a"] != ex["a"] or ss["b"] != ex["b"]):
        ss["ex"] = "custom"


def sidebar(fr: frame.Frame, ui: dict) -> None:
    """The texts of steps 6–8: an example or your own (cut to the limit, with a notice)."""
    ss = st.session_state
    with st.sidebar:
        st.subheader(ui["sidebar_texts"])
        titles = {k: EXAMPLE_TITLES.get(fr.lang, {}).get(k, v["title"])
                  for k, v in EXAMPLES.items()}
        titles["custom"] = ui["custom"]
        if ss.get("ex") not in titles:
            ss["ex"] = "custom"
        st.selectbox(ui["example"], list(titles), format_func=titles.get, key="ex",
                     on_change=on_example)
        # No max_chars: Streamlit's browser side drops a whole paste that is too long,
        # without a word; the text is cut here instead, with a notice.
        limit = settings.CONFIG.max_chars
        for key in ("a", "b"):
            text, chars = cut(ss.get(key), limit)
            if chars is not None:
                st.warning(ui["text_pasted_cut"].format(name=key.upper(), n=fr.num.count(chars),
                                                        kept=fr.num.count(limit)))
            if ss.get(key) != text:
                ss[key] = text
        st.text_area(ui["text_a"], key="a", height=90, on_change=on_text, help=ui["text_help"])
        st.text_area(ui["text_b"], key="b", height=90, on_change=on_text, help=ui["text_help"])
        st.caption(ui["model_note"])


def header(fr: frame.Frame, ui: dict, step: int, present: bool) -> None:
    """The title, the presenter switch, the address's notices, Back / jump / Next."""
    top = st.columns([7.5, 2.5], vertical_alignment="center")
    if not present:  # a projector needs the room more than the page's title
        top[0].markdown(f"### {ui['heading']}")
        top[0].caption(ui["subtitle"])
    top[1].toggle(ui["presenter"], key="learn_present", help=ui["presenter_help"])
    frame.notices(fr)
    nav = st.columns([1.4, 5, 1.4], vertical_alignment="center")
    nav[0].button(ui["back"], key="learn_back", on_click=go_to, args=(step - 1,),
                  disabled=step == 1, width="stretch")
    st.session_state["learn_jump"] = step
    nav[1].segmented_control(ui["jump"], list(range(1, N_STEPS + 1)), key="learn_jump",
                             on_change=on_jump, label_visibility="collapsed", width="stretch")
    nav[2].button(ui["next"], key="learn_next", on_click=go_to, args=(step + 1,),
                  disabled=step == N_STEPS, type="primary", width="stretch")


def texts_and_model() -> tuple[str, str, str]:
    """Text A, text B (text A itself for the "self" example or a main page in self mode)
    and the model of steps 6–8."""
    ss = st.session_state
    text_a = valid_text(ss.get("a"))
    ex = EXAMPLES.get(ss.get("ex"), {})
    self_mode = ex.get("mode") == "self" or ss.get("mode") == "self"
    models = compute.model_names()
    model = ss.get("model") if ss.get("model") in models else models[0]
    return text_a, text_a if self_mode else valid_text(ss.get("b")), model


def draw_step(fr: frame.Frame, ui: dict, step: int, scale: float) -> tuple[str, str, str]:
    """The step itself: its text, its controls and its figure."""
    s = STEPS[fr.lang][step - 1]
    st.markdown(f"### {ui['step_of'].format(i=step, n=N_STEPS)} · {s.title}")
    text_a, text_b, model = texts_and_model()
    left, right = st.columns([2, 3], gap="large")
    try:
        n_layers = n_heads = None
        if step in learn_steps.MODEL_STEPS:
            with st.spinner(ui["loading"]):
                enc = compute.encoder(model)
            n_layers, n_heads = enc.n_layers, enc.n_heads
        ctx = learn_steps.Ctx(lang=fr.lang, ui=ui, step=s, theme=fr.theme, scale=scale,
                              img=st.session_state.get("img", "png"), model=model,
                              text_a=text_a, text_b=text_b, n_layers=n_layers or 6,
                              n_heads=n_heads or 12)
        learn_steps.STEPS[step - 1](ctx, left, right)
    except SinkscopeError as e:
        right.error(ui["error"].format(error=locale.error(e, fr.lang)))
    except Exception as e:  # never show a traceback to a visitor; log it for operators
        log.exception("learn step %s failed", step)
        right.error(ui["error"].format(error=f"{type(e).__name__}: {e}"))
    return text_a, text_b, model


def show(fr: frame.Frame) -> None:
    """The Learn page, in the frame ``fr``."""
    ss = st.session_state
    for k, v in DEFAULTS.items():
        ss.setdefault(k, v)
    step = min(max(int(ss["learn_step"]), 1), N_STEPS)
    ui, present = UI[fr.lang], bool(ss["learn_present"])
    if present:  # larger type for a projector (figures are scaled by their builders)
        st.markdown(PRESENT_CSS, unsafe_allow_html=True)
    sidebar(fr, ui)
    header(fr, ui, step, present)
    text_a, text_b, model = draw_step(fr, ui, step, 1.35 if present else 1.0)
    if step == N_STEPS:
        st.success(ui["done"])
    learn_steps.arrow_keys()
    fr.sync()
    learn_steps.warm_up(model, text_a, text_b)  # once per process: the later steps, ready
