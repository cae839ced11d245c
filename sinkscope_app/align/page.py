"""Align (``/align``): word alignments from softmax and from transport, for one pair
(Pair) or a whole file of pairs (Corpus), scored on gold
(``/align?text_a=...&text_b=...&gold=0-0+1-1&method=unbalanced&tau=4.94``).

The frame has read the address (:data:`SCHEMA`) and drawn the language picker; this module
draws the view and tokenisation switches and the chosen view (:mod:`.pair`,
:mod:`.corpus_view`), from cached engine calls and ``viz.align`` figures. Every string is
in ``text/align.<lang>.json``, with the language's number format (decimal commas in
Spanish); exported files keep English column names.
"""

from __future__ import annotations

import logging

import streamlit as st

from engine import SinkscopeError

from .. import frame
from ..inputs import md_text
from .corpus_view import apply_pending, corpus_view
from .pair import pair_view
from .params import SCHEMA, VIEWS
from .words import file_error, ui

log = logging.getLogger("sinkscope.align")
# Streamlit cuts a button's or a checkbox's label to one line with an ellipsis; these name
# a method or a convention in full, so they wrap instead.
WRAP = ".st-key-align_csv, .st-key-align_links, .st-key-align_lower"
WRAP_CSS = (f"<style>:is({WRAP}) p {{white-space: normal; overflow: visible; "
            f"text-overflow: clip}} :is({WRAP}) button {{height: auto}}</style>")
KEEP = ("align_one_based", "align_sort", "align_desc")
SHORT_LINKS = True  # /align opens as it is: a missing parameter is its default


def context(fr: frame.Frame) -> bool:
    """What reading the address needs: whether Back or Forward brought it (then a
    parameter it lacks is its default, not what the session held)."""
    return fr.navigated


def show(fr: frame.Frame) -> None:
    """The Align page, in the frame ``fr``."""
    ss, t = st.session_state, ui(fr.lang)
    apply_pending()
    st.html(WRAP_CSS)
    st.markdown(f"### {t['heading']}")
    st.caption(t["subtitle"])
    top = st.columns([2, 5], vertical_alignment="center")
    top[0].segmented_control(t["view"], VIEWS, key="align_view", required=True,
                             format_func=lambda v: t["view_" + v], label_visibility="collapsed")
    top[1].checkbox(t["lower"], key="align_lower", help=t["lower_help"])
    frame.notices(fr)
    opened = ss.pop("_align_opened", None)
    if opened and ss["align_view"] == "pair":
        st.info(t["opened"].format(k=opened))
    try:
        if ss["align_view"] == "corpus":
            corpus_view(t, fr.theme)
        else:
            pair_view(t, fr.theme)
    except SinkscopeError as e:
        st.error(t["error"].format(error=md_text(file_error(e, t), 400)))
    except Exception as e:  # never a traceback for a visitor; the log has it for operators
        log.exception("align view failed")
        st.error(t["error"].format(error=md_text(f"{type(e).__name__}: {e}", 400)))


__all__ = ["SCHEMA", "show"]
