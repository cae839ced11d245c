"""Learn: a guided walk from clouds of points to the Sinkhorn Transformer, in eight steps,
in English or Spanish. Served at ``/learn`` (``/learn?step=3&lang=es&present=on``).

This file only wires the page: state from the URL (checked in ``learn_state``), the
language and presenter switches, Back / Next (buttons and the ← → keys), the texts in the
sidebar, and the current step, drawn by ``learn_steps`` from engine numbers and ``viz``
figures. The step and language are written back to the URL after every run.
"""

from __future__ import annotations

import logging

from engine import settings

settings.quiet_libraries()  # first: offline, no telemetry, before a library reads its environment

import streamlit as st  # noqa: E402

from engine import SinkscopeError
from sinkscope_app import compute, examples, history, learn_state, learn_steps
from sinkscope_app.learn_text import EXAMPLES_ES, LANGS, N_STEPS, STEPS, UI
from sinkscope_app.state import KEYS as MAIN_KEYS, parse_bool, valid_text

log = logging.getLogger("sinkscope.learn")
ss = st.session_state
# The tab's title in the page's language; a presenter link (?present=on) opens with the
# sidebar folded away, for a projector.
_lang = ss.get("learn_lang") or str(st.query_params.get("lang", ""))
_present_link = bool(parse_bool(st.query_params.get("present")))
st.set_page_config(page_title=UI.get(_lang, UI["en"])["page_title"], page_icon="🎓",
                   layout="wide", initial_sidebar_state="collapsed" if _present_link else "auto")

EXAMPLES = examples.load()
KEYS = (*learn_state.DEFAULTS, *learn_steps.KEYS, "learn_jump")

# Keys: the "learn_" prefix marks this page's; every key (the main page's too) is kept
# across runs, since Streamlit forgets the state of widgets a run does not draw.
for k in (*MAIN_KEYS, *KEYS):
    if k in ss:
        ss[k] = ss[k]
# A change of step or example is a browser history entry; Back and Forward re-read the
# state from the address (Streamlit reruns the page with that entry's query string).
history.track({"step": None, "ex": learn_state.MAIN_DEFAULTS["ex"]}, key="learn_history")
if "_learn_init" not in ss or history.navigated():
    try:
        locale = st.context.locale
    except Exception:
        locale = None
    params = st.query_params.to_dict()
    parsed = learn_state.parse(params, EXAMPLES, locale=locale)
    if "_learn_init" in ss:  # Back or Forward: what the entry leaves out is the default
        if "step" not in params:
            parsed.values["learn_step"] = learn_state.DEFAULTS["learn_step"]
        if "ex" not in params and "a" not in params and "b" not in params:
            ex = learn_state.MAIN_DEFAULTS["ex"]
            parsed.values.update(ex=ex, a=EXAMPLES[ex]["a"], b=EXAMPLES[ex]["b"])
    for k, v in learn_state.DEFAULTS.items():
        ss.setdefault(k, v)
    for k in ("ex", "a", "b"):
        ss.setdefault(k, learn_state.MAIN_DEFAULTS[k])
    ss.update(parsed.values)
    ss["_learn_warnings"] = parsed.warnings
    ss["_learn_init"] = True
for k, v in learn_state.DEFAULTS.items():
    ss.setdefault(k, v)

step = min(max(int(ss["learn_step"]), 1), N_STEPS)
lang = ss["learn_lang"] if ss["learn_lang"] in LANGS else "en"
ui = UI[lang]
present = bool(ss["learn_present"])
scale = 1.35 if present else 1.0
theme = "dark" if getattr(st.context.theme, "type", None) == "dark" else "light"


def go_to(k: int) -> None:
    ss["learn_step"] = min(max(int(k), 1), N_STEPS)


def on_jump() -> None:
    if ss.get("learn_jump"):
        go_to(ss["learn_jump"])


def on_example() -> None:
    ex = EXAMPLES.get(ss["ex"])
    if ex:
        ss["a"], ss["b"] = ex["a"], ex["b"]


def on_text() -> None:
    ex = EXAMPLES.get(ss.get("ex"))
    if ex and (ss["a"] != ex["a"] or ss["b"] != ex["b"]):
        ss["ex"] = "custom"


if present:  # larger type for a projector (figures are scaled by their builders)
    st.markdown("""<style>
    [data-testid="stMainBlockContainer"] { max-width: 100%; padding-top: 3.5rem; }
    [data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] p,
    [data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] li
        { font-size: 1.3rem; line-height: 1.45; }
    [data-testid="stMainBlockContainer"] h3 { font-size: 2.2rem; }
    [data-testid="stMainBlockContainer"] button p,
    [data-testid="stMainBlockContainer"] label p { font-size: 1.2rem; }
    </style>""", unsafe_allow_html=True)

# --------------------------------------------------------------------------- sidebar
with st.sidebar:
    st.page_link("app.py", label=ui["main_link"], icon=":material/arrow_back:",
                 query_params={"lang": lang})
    st.page_link("pages/align.py", label=ui["align_link"], icon=":material/link:",
                 query_params={"lang": lang})
    st.subheader(ui["sidebar_texts"])
    titles = {k: (EXAMPLES_ES.get(k, v["title"]) if lang == "es" else v["title"])
              for k, v in EXAMPLES.items()}
    titles["custom"] = ui["custom"]
    if ss.get("ex") not in titles:
        ss["ex"] = "custom"
    st.selectbox(ui["example"], list(titles), format_func=titles.get, key="ex",
                 on_change=on_example)
    # No max_chars: Streamlit's browser side drops a whole paste that is too long, without
    # a word; the text is cut here instead, with a notice.
    for key in ("a", "b"):
        text = valid_text(ss.get(key))
        limit = settings.CONFIG.max_chars
        if len(text) > limit:
            note = ui.get("text_pasted_cut", ui["text_cut"])
            ss.setdefault("_learn_warnings", []).append(
                note.format(name=key.upper(), n=f"{len(text):,}", kept=f"{limit:,}"))
            text = text[:limit]
        if ss.get(key) != text:
            ss[key] = text
    st.text_area(ui["text_a"], key="a", height=90, on_change=on_text, help=ui["text_help"])
    st.text_area(ui["text_b"], key="b", height=90, on_change=on_text, help=ui["text_help"])
    st.caption(ui["model_note"])

# --------------------------------------------------------------------------- header
top = st.columns([5.5, 2, 2.5], vertical_alignment="center")
if not present:  # a projector needs the room more than the page's title
    top[0].markdown(f"### {ui['heading']}")
    top[0].caption(ui["subtitle"])
top[1].segmented_control(ui["language"], list(LANGS), format_func=LANGS.get,
                         key="learn_lang", required=True, label_visibility="collapsed")
top[2].toggle(ui["presenter"], key="learn_present", help=ui["presenter_help"])
for w in ss.pop("_learn_warnings", []):
    st.warning(w)

nav = st.columns([1.4, 5, 1.4], vertical_alignment="center")
nav[0].button(ui["back"], key="learn_back", on_click=go_to, args=(step - 1,),
              disabled=step == 1, width="stretch")
ss["learn_jump"] = step
nav[1].segmented_control(ui["jump"], list(range(1, N_STEPS + 1)), key="learn_jump",
                         on_change=on_jump, label_visibility="collapsed", width="stretch")
nav[2].button(ui["next"], key="learn_next", on_click=go_to, args=(step + 1,),
              disabled=step == N_STEPS, type="primary", width="stretch")

# --------------------------------------------------------------------------- the step
s = STEPS[lang][step - 1]
st.markdown(f"### {ui['step_of'].format(i=step, n=N_STEPS)} · {s.title}")
text_a = valid_text(ss.get("a"))
ex = EXAMPLES.get(ss.get("ex"), {})
# a text with itself: the "self" example, or the main page left in self mode
self_mode = ex.get("mode") == "self" or ss.get("mode") == "self"
text_b = text_a if self_mode else valid_text(ss.get("b"))
model = ss.get("model") if ss.get("model") in compute.model_names() else compute.model_names()[0]
left, right = st.columns([2, 3], gap="large")
try:
    n_layers = n_heads = None
    if step in learn_steps.MODEL_STEPS:
        with st.spinner(ui["loading"]):
            enc = compute.encoder(model)
        n_layers, n_heads = enc.n_layers, enc.n_heads
    ctx = learn_steps.Ctx(lang=lang, ui=ui, step=s, theme=theme, scale=scale,
                          img=ss.get("img", "png"), model=model, text_a=text_a, text_b=text_b,
                          n_layers=n_layers or 6, n_heads=n_heads or 12)
    learn_steps.STEPS[step - 1](ctx, left, right)
except SinkscopeError as e:
    right.error(ui["error"].format(error=e))
except Exception as e:  # never show a traceback to a visitor; log it for operators
    log.exception("learn step %s failed", step)
    right.error(ui["error"].format(error=f"{type(e).__name__}: {e}"))
if step == N_STEPS:
    st.success(ui["done"])

learn_steps.arrow_keys()
q = learn_state.to_query(ss)
if st.query_params.to_dict() != q:
    st.query_params.from_dict(q)
learn_steps.warm_up(model, text_a, text_b)  # once per process: the later steps, ready
