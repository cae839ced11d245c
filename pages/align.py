"""Align: word alignments from softmax and from transport, for one pair (Pair) or a whole
file of pairs (Corpus), scored on gold. Served at ``/align``
(``/align?text_a=...&text_b=...&gold=0-0+1-1&method=unbalanced&tau=1``).

This file only wires the page: state from the URL (checked in ``align_page``), the view and
tokenisation switches, and the chosen view, drawn by ``align_page`` from cached engine
calls and ``viz.align`` figures. The state is written back to the URL after every run.
"""

from __future__ import annotations

import logging

from engine import settings

settings.quiet_libraries()  # first: offline, no telemetry, before a library reads its environment

import streamlit as st  # noqa: E402

from engine import SinkscopeError  # noqa: E402
from sinkscope_app import align_page as ap  # noqa: E402
from sinkscope_app.views import md_text  # noqa: E402

log = logging.getLogger("sinkscope.align")
ss = st.session_state


def lang() -> str:
    """The page's language: the picker's, else the address's (``?lang=es``), else English."""
    value = ss.get("align_lang") or st.query_params.get("lang")
    return value if value in ap.LANGS else "en"


t = ap.ui(lang())
st.set_page_config(page_title=t["page_title"], page_icon="🔗", layout="wide")

# Streamlit forgets the state of widgets a run does not draw: keep this page's.
for k in (*ap.DEFAULTS, "align_one_based"):
    if k in ss:
        ss[k] = ss[k]
if "_align_init" not in ss:
    values, warnings = ap.parse_query(st.query_params.to_dict())
    for k, v in ap.DEFAULTS.items():
        ss.setdefault(k, v)
    ss.update(values)
    ss["_align_warnings"] = warnings
    ss["_align_init"] = True
ap.apply_pending()
theme = "dark" if getattr(st.context.theme, "type", None) == "dark" else "light"

with st.sidebar:  # the language travels with every link between the pages
    st.segmented_control(t["language"], list(ap.LANGS), key="align_lang", required=True,
                         format_func={"en": "English", "es": "Español"}.get)
    st.page_link("app.py", label=t["main_link"], icon=":material/arrow_back:",
                 query_params={"lang": lang()})
    st.page_link("pages/learn.py", label=t["learn_link"], icon=":material/school:",
                 query_params={"lang": lang()})
    st.page_link("pages/lab.py", label=t["lab_link"], icon=":material/model_training:",
                 query_params={"lang": lang()})

st.markdown(f"### {t['heading']}")
st.caption(t["subtitle"])
top = st.columns([2, 5], vertical_alignment="center")
top[0].segmented_control(t["view"], ap.VIEWS, key="align_view", required=True,
                         format_func=lambda v: t["view_" + v], label_visibility="collapsed")
top[1].checkbox(t["lower"], key="align_lower", help=t["lower_help"])
for w in ss.pop("_align_warnings", []):
    st.warning(w)
opened = ss.pop("_align_opened", None)
if opened and ss["align_view"] == "pair":
    st.info(t["opened"].format(k=opened))
try:
    if ss["align_view"] == "corpus":
        ap.corpus_view(t, theme)
    else:
        ap.pair_view(t, theme)
except SinkscopeError as e:
    st.error(t["error"].format(error=md_text(str(e), 400)))
except Exception as e:  # never a traceback for a visitor; the log has it for operators
    log.exception("align view failed")
    st.error(t["error"].format(error=md_text(f"{type(e).__name__}: {e}", 400)))

q = ap.to_query(ss)
if st.query_params.to_dict() != q:
    st.query_params.from_dict(q)
