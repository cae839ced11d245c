"""Helpers for driving the main page in-process with Streamlit's AppTest."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def run(query: dict | None = None, *, page: str | None = None, timeout: float = 120,
        **state) -> AppTest:
    """A fresh session of the main page (or of ``page``, e.g. "sinkscope_app/pages/align.py"), opened at
    ``query`` with ``state`` set, run once."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    if page:
        at.switch_page(page)
    if query:
        at.query_params.update(query)
    for k, v in state.items():
        at.session_state[k] = v
    return at.run()


def ok(at: AppTest) -> None:
    """No exception, no error box, and the page actually rendered."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.sidebar.text_area, "nothing rendered: a syntax error?"


def data(element) -> dict:
    """What a sinkscope component element was given (its ``[payload]`` unwrapped:
    ``sinkscope_app.live.sent``); ``element`` is an AppTest element or its proto."""
    proto = getattr(element, "proto", element)
    got = json.loads(proto.json)
    return got[0] if isinstance(got, list) and len(got) == 1 else got


def figures(at: AppTest) -> list[dict]:
    """Every figure on the page: live charts (updated in place) then st.plotly_chart ones."""
    specs = [data(el)["spec"] for el in at.get("bidi_component")
             if el.proto.component_name == "sinkscope_live_chart"]
    live = [json.loads(spec) for spec in specs if spec]  # "" is plotly.js's preload
    return live + [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
