"""The main page's sidebar: the example and the texts, then the model and view settings;
and what choosing an example or typing your own texts changes."""

from __future__ import annotations

import streamlit as st

from engine import settings

from .. import compute, examples, frame, locale
from .params import DEFAULTS, IMAGE_FORMATS, MODES, example_differences, example_values

EXAMPLES = examples.load()


def describe(key: str, value, lang: str) -> str:
    """One setting in the page's words: "layer 4", "capa 4", "ε = 0,1"."""
    w, num = locale.words("main", lang)["settings"], locale.numbers(lang)
    if key == "head":
        return w["head_mean"] if value == "mean" else w["head"].format(value=value)
    if key == "pool":
        return w["pooled" if value else "pieces"]
    shown = num(float(value)) if key == "eps" else num.count(int(value)) if key == "steps" \
        else value
    return w[key].format(value=shown) if key in w else f"{key} {value}"


def on_example() -> None:
    ss = st.session_state
    ex = EXAMPLES.get(ss["ex"])
    if ex:
        ss.update(example_values(ex, ss["mode"]))
    elif ss["ex"] == "custom":
        own_texts(ss.get("_shown_ex"))


def on_text() -> None:
    ss = st.session_state
    ex = EXAMPLES.get(ss.get("ex"))
    if ex and (ss["a"] != ex["a"] or (ss["mode"] != "self" and ss["b"] != ex["b"])):
        ss["ex"] = "custom"
        own_texts(ex)


def own_texts(example) -> None:
    """Your own texts start from the model's own attention (ε = 1), and the page says which
    of the example's settings were kept (at ε = 0.1, softmax is the model's attention
    sharpened tenfold, not the model's own)."""
    ss = st.session_state
    example = EXAMPLES.get(example) if isinstance(example, str) else example
    if not example:
        return
    lang = ss.get("lang", "en")
    kept = [describe(k, ss[k], lang) for k in ("layer", "head", "steps", "pool")
            if k in example.get("settings", {}) and k in ss]
    was, own = float(ss["eps"]), DEFAULTS["eps"]
    ss["eps"] = own
    w, num = locale.words("main", lang)["notices"], locale.numbers(lang)
    ss.setdefault("_infos", []).append(
        w["own_texts"]
        + (w["eps_back"] if was != own else w["eps_same"]).format(own=num(own), was=num(was))
        + (w["kept"].format(kept=", ".join(kept)) if kept else ""))


def own_attention() -> None:
    """One click back to the model's own attention: ε = 1 (softmax is then the model's)."""
    st.session_state["eps"] = DEFAULTS["eps"]


def example_note(n_layers: int, lang: str) -> tuple[str, str] | None:
    """("note", text) while the page shows the chosen example at the settings its note
    describes; ("differs", what it describes) when other settings are shown; else None."""
    ss = st.session_state
    ex = EXAMPLES.get(ss.get("ex"))
    if not ex or not ex.get("note"):
        return None
    if not example_differences(ex, ss, n_layers=n_layers):
        return "note", locale.words("main", lang)["examples"].get(ss["ex"], {}).get(
            "note", ex["note"])
    want = ", ".join(describe(k, v, lang) for k, v in ex["settings"].items())
    return "differs", want


def _texts(fr: frame.Frame, shape) -> None:
    """The example picker, both texts and the example's note."""
    ss, side, w = st.session_state, fr.words["sidebar"], fr.words
    ex_opts = {**{k: w["examples"].get(k, {}).get("title", v["title"])
                  for k, v in EXAMPLES.items()}, "custom": side["custom"]}
    st.selectbox(side["example"], list(ex_opts), format_func=ex_opts.get, key="ex",
                 on_change=on_example)
    limit = side["limit"].format(chars=fr.num.count(settings.CONFIG.max_chars))
    st.text_area(side["text_a"], key="a", height=90, on_change=on_text,
                 help=side["text_a_help"].format(limit=limit))
    st.text_area(side["text_b"], key="b", height=90, on_change=on_text,
                 disabled=ss["mode"] == "self", help=side["text_b_help"].format(limit=limit))
    note = ss["_note_drawn"] = example_note(shape.n_layers, fr.lang)
    if note and note[0] == "note":
        st.caption(note[1])
    elif note:  # the note would describe another picture than the one shown
        st.caption(side["note_differs"].format(settings=note[1]))
        st.button(side["show_settings"], key="ex_settings", on_click=on_example,
                  width="stretch")


def sidebar(fr: frame.Frame, shape) -> None:
    """Everything the sidebar holds below the frame's head (presentation mode first)."""
    ss, side = st.session_state, fr.words["sidebar"]
    models = compute.model_names()
    with st.sidebar:
        st.toggle(side["present"], key="present", help=side["present_help"])
        _texts(fr, shape)
        st.subheader(side["model_view"])
        if len(models) > 1:
            st.selectbox(side["model"], models, key="model", format_func=compute.model_label,
                         help=side["model_help"])
        st.radio(side["mode"], list(MODES), format_func=side["modes"].get, key="mode",
                 help=side["mode_help"])
        c1, c2 = st.columns(2)
        last = shape.n_layers - 1
        c1.selectbox(side["layer"], list(range(shape.n_layers)), key="layer",
                     format_func=lambda l: side["last"].format(layer=l) if l == last
                     else str(l))
        c2.selectbox(side["head"], ["mean", *range(shape.n_heads)], key="head",
                     format_func=lambda h: side["mean"] if h == "mean" else str(h),
                     help=side["head_help"])
        st.radio(side["weights"], list(side["weight_opts"]),
                 format_func=side["weight_opts"].get, key="weights", help=side["weights_help"])
        st.toggle(side["pool"], key="pool", help=side["pool_help"])
        st.radio(side["img"], IMAGE_FORMATS, key="img", horizontal=True, format_func=str.upper,
                 help=side["img_help"])
