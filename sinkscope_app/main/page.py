"""The main page (``/``): softmax attention beside Sinkhorn couplings for two texts.

The sidebar holds the texts and the model settings (a change re-runs the page); the ε and
half-step sliders, the metrics and the views live in one ``st.fragment``
(:func:`explore`). The sliders are live (``sinkscope_app.scrub``): while they move the
browser redraws from every precomputed frame; a release re-runs only the fragment, which
never re-encodes the texts. The frame (:mod:`sinkscope_app.frame`) has read the address
(:data:`SCHEMA`) and drawn the language picker before :func:`show` runs.
"""

from __future__ import annotations

import logging

import streamlit as st

from engine import SinkscopeError, settings
from engine.client import EngineUnavailable

from .. import compute, examples, frame, live, locale, outage, present
from ..inputs import valid_text
from . import calls
from .explore import explore
from .params import DEFAULTS, SCHEMA, Ctx as ParamsCtx, cut_text
from .sidebar import sidebar
from .views import Ctx

log = logging.getLogger("sinkscope.app")
EXAMPLES = examples.load()
KEEP = ("scand",)


def head(fr: frame.Frame) -> None:
    """The sidebar's title and what the page is."""
    st.title("sinkscope")
    st.caption(fr.words["sidebar"]["caption"])


def links(fr: frame.Frame) -> list[tuple[str, str]]:
    """Learn always (short in presentation mode); Align and Lab when not presenting."""
    w, ss = locale.words("frame", fr.lang), st.session_state
    if ss.get("present"):
        return [("learn", w["links_short"]["learn"])]
    return [(name, w["links"][name]) for name in ("learn", "align", "lab")]


def context(fr: frame.Frame) -> ParamsCtx:
    """What reading the address needs: the model's layers and heads (a file read; the
    model itself loads after the controls are out). A model that cannot be read ends the
    run with a message."""
    ss, models = st.session_state, compute.model_names()
    model = st.query_params.get("model", ss.get("model")) if fr.read else ss.get("model")
    model = model if model in models else DEFAULTS["model"]
    try:
        shape = compute.model_shape(model)
    except SinkscopeError as e:
        st.error(fr.words["notices"]["model_error"].format(error=locale.error(e, fr.lang)))
        st.stop()
    except EngineUnavailable as e:  # a served engine that has not answered yet
        outage.notice(e, fr.lang)
        st.stop()
    ss["_shape"] = shape
    return ParamsCtx(shape.n_layers, shape.n_heads, models, EXAMPLES)


def _settle(fr: frame.Frame) -> None:
    """The state this run starts from: the last layer for "-1", clicks of the last run
    applied, texts made valid and cut to the limit (with a notice), layer and head in
    the model's range."""
    ss, shape = st.session_state, ss_shape()
    for k, v in DEFAULTS.items():
        ss.setdefault(k, v)
    if ss["layer"] == -1:
        ss["layer"] = shape.n_layers - 1
    if fr.first and not st.query_params and calls.link_was_dropped():
        fr.warnings.append(fr.words["notices"]["link_too_long"].format(
            chars=fr.num.count(settings.CONFIG.max_chars)))
    if "_pending_lh" in ss:  # a click on the All heads grid
        ss["layer"], ss["head"] = ss.pop("_pending_lh")
    if "_pending_state" in ss:  # a view set sidebar controls (Sentences: text B, example set)
        ss.update(ss.pop("_pending_state"))
    # Texts that cannot be sent to a browser (lone surrogates) are mended, and a paste longer
    # than the limit is cut to it with a notice (the boxes have no max_chars: Streamlit's
    # browser side drops a whole paste that is too long, without a word).
    for k in ("a", "b"):
        clean, notice = cut_text(valid_text(ss.get(k)), f"text_{k}", "typed", lang=fr.lang)
        if ss.get(k) != clean:
            ss[k] = clean
        if notice:
            ss.setdefault("_notices", []).append(notice)
    ss["layer"] = min(max(int(ss["layer"]), 0), shape.n_layers - 1)
    if ss["head"] != "mean" and not 0 <= int(ss["head"]) < shape.n_heads:
        ss["head"] = "mean"


def ss_shape():
    """The model's shape the frame read (layers and heads)."""
    return st.session_state["_shape"]


def load_model(fr: frame.Frame, waiting, model: str, shape):
    """The model itself, awaited once the controls are out (they were drawn from ``shape``)."""
    from ..launch import Shape

    if not isinstance(shape, Shape):
        return shape
    waiting.info(fr.words["notices"]["loading_model"].format(model=model),
                 icon=":material/hourglass_top:")
    try:
        return compute.encoder(model)
    except SinkscopeError as e:
        waiting.error(fr.words["notices"]["model_error"].format(
            error=locale.error(e, fr.lang)))
        st.stop()


def _notices(fr: frame.Frame) -> None:
    ss = st.session_state
    frame.notices(fr)
    for w in ss.pop("_notices", []):
        st.warning(w)
    for i in ss.pop("_infos", []):
        st.info(i)
    ss["_shown_ex"] = ss["ex"]


def _encode(fr: frame.Frame, ctx: Ctx, enc) -> None:
    """Encode the texts before the sliders run (a spinner says so); a text the engine
    cannot relate ends the run with its message; a text mostly outside the model's
    vocabulary gets a notice."""
    w = fr.words["notices"]
    try:
        with st.spinner(w["encoding"].format(chars=fr.num.count(len(ctx.a) + len(ctx.b)),
                                             model=ctx.model)):
            compute.prepare(ctx.a, ctx.b, ctx.settings)
    except SinkscopeError as e:
        st.error(locale.error(e, fr.lang))
        fr.sync()
        st.stop()
    except EngineUnavailable:
        return  # the sliders' fragment says so below, and keeps the sliders
    for name, text in (("text_a", ctx.a), ("text_b", ctx.b)):
        notice = calls.vocabulary_notice(getattr(enc, "tokenizer", None), text, name,
                                         ctx.model)
        if notice:
            st.warning(locale.notice(notice, fr.lang))


def show(fr: frame.Frame) -> None:
    """The main page, in the frame ``fr``."""
    ss = st.session_state
    _settle(fr)
    present.style(bool(ss["present"]))
    shape = ss_shape()
    # The controls are drawn from the model's shape; the model is awaited after them, and
    # until the first coupling is out the charts' place says it is loading (`make run`
    # starts loading it when the server starts: sinkscope_app.launch).
    waiting = st.empty()
    sidebar(fr, shape)
    enc = load_model(fr, waiting, ss["model"], shape)
    with st.sidebar:
        live.preload()  # fetch plotly.js while the texts are encoded
        limits_caption(fr, enc)
    _notices(fr)
    text_a, mode = ss["a"], ss["mode"]
    ctx = Ctx(model=ss["model"], a=text_a, b="" if mode == "self" else ss["b"], mode=mode,
              layer=int(ss["layer"]), head=ss["head"], weights=ss["weights"],
              pool=bool(ss["pool"]), n_layers=enc.n_layers, n_heads=enc.n_heads,
              present=bool(ss["present"]), lang=fr.lang)
    _encode(fr, ctx, enc)
    explore(ctx, fr.theme)
    waiting.empty()  # the first coupling is out
    compute.umap_warmup()  # compiles UMAP in a background thread once per process, after
    # the first page is out (compiling during the first run slowed it by seconds)


def limits_caption(fr: frame.Frame, enc) -> None:
    """The operator's limits and which engine computes, under the sidebar's controls."""
    cfg, num, side = settings.CONFIG, fr.num, fr.words["sidebar"]
    engine = side["engine_served" if compute.served() else "engine_embedded"].format(
        engine=cfg.engine, device=enc.device, dtype=getattr(enc, "dtype", ""))
    st.caption(side["limits"].format(chars=num.count(cfg.max_chars), tokens=enc.max_tokens,
                                     eps_min=num(cfg.eps_min), eps_max=num(cfg.eps_max),
                                     steps=num.count(cfg.max_half_steps), engine=engine))


__all__ = ["SCHEMA", "context", "head", "links", "show"]
