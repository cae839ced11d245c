"""While a served engine is away: a notice where the charts were, and a probe that brings
the page back by itself.

The page keeps its controls (the sidebar is drawn from what the engine said about its
model, which the app keeps). A small fragment asks the engine's health every
:data:`PROBE_S` seconds; as soon as it answers, the whole page re-runs — no reload, no
click — and the charts come back.
"""

from __future__ import annotations

import time

import streamlit as st

from engine.client import EngineBusy, EngineUnavailable

from . import engines, locale

PROBE_S = 2.0


def notice(e: EngineUnavailable, lang: str = "en") -> None:
    """Say the engine is away (its URL and what to check, in the page's language ``lang``)
    and start probing for it.

    An engine that answered with an error of its own (HTTP 500 on this request) is not
    probed: the page tries again on the next change instead of re-running every few
    seconds.
    """
    away = e.status is None or e.status in (502, 503, 504)
    w = locale.words("frame", lang)
    if isinstance(e, EngineBusy):  # it answered: busy with others' work, not gone
        said = w["engine_busy"].format(url=e.url)
    else:
        said = str(e) if lang == locale.DEFAULT_LANG else w["engine_away"].format(
            url=e.url, reason=e.reason)
    st.warning(f"{said} " + w["engine_back" if away else "engine_retry"], icon="⚠️")
    if away:
        st.session_state["_engine_away_since"] = time.monotonic()
        _probe()


@st.fragment(run_every=PROBE_S)
def _probe() -> None:
    """Re-run the page once the engine answers (never on the run that drew the notice)."""
    since = st.session_state.get("_engine_away_since", time.monotonic())
    if time.monotonic() - since >= 0.9 * PROBE_S and engines.current().answers():
        st.session_state.pop("_engine_away_since", None)
        st.rerun(scope="app")
