"""The browser's Back and Forward buttons for the pages' URL state.

Streamlit (1.67) writes ``st.query_params`` into the address bar with
``history.pushState``, a new history entry per change, and on Back or Forward reruns the
page with that entry's query string (the run's ``is_history_navigation``). Two things make
that usable here:

- :func:`track` mounts a tiny script that keeps only the entries a visitor means: an
  address change that moves one of the page's *navigation* parameters (the example, the
  view, the Learn step) stays a new entry; any other change (a slider released, a colour
  scale) replaces the current entry's address instead of flooding the history.
- :func:`correct` writes the page's first address over the one it was opened at, in place:
  a link completed, or corrected after a notice (Back never leads to a refused value).
- :func:`navigated` tells the page that this run came from Back or Forward, so it reads its
  state from the address again (it otherwise reads the address once per session).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode

import streamlit as st

from .live import sent

# A pushState of the same path whose navigation parameters are unchanged becomes a
# replaceState. A parameter missing from the current address counts as its default (none:
# the first write of a short link completes it, in place).
JS = """
export default function ({data}) {
  const d = Array.isArray(data) ? data[0] : data;  // sent as [payload] (live.sent)
  const reg = window.__sinkscopeHistory || (window.__sinkscopeHistory = {nav: {}});
  reg.nav[location.pathname] = (d && d.nav) || {};
  if (reg.push) return;
  reg.push = history.pushState.bind(history);
  history.pushState = function (state, unused, url) {
    try {
      const next = new URL(url, location.href);
      const nav = reg.nav[location.pathname];
      if (nav && next.pathname === location.pathname) {
        const now = new URLSearchParams(location.search), then = next.searchParams;
        const moved = Object.entries(nav).some(([k, dflt]) => {
          const a = now.has(k) ? now.get(k) : dflt;
          const b = then.has(k) ? then.get(k) : dflt;
          return a !== null && a !== undefined && a !== b;
        });
        if (!moved) return history.replaceState(state, unused, url);
      }
    } catch (e) { /* a URL this script does not understand: leave it to the browser */ }
    return reg.push(state, unused, url);
  };
}
"""


def track(nav: Mapping[str, str | None], *, key: str = "sinkscope_history") -> None:
    """Make changes of the ``nav`` query parameters browser history entries, and only
    those (call early in the run: the script must be in the page before the address is
    first written).

    Args:
        nav: query parameter → the value a missing parameter stands for (None: a missing
            parameter is no change), e.g. ``{"ex": None, "view": "compare"}``.
        key: the element's fixed key.
    """
    _script(key, JS, {"nav": dict(nav)})


def _script(key: str, js: str, data: dict) -> None:
    """Run ``js`` with ``data`` in the page, in an element that takes no room: hidden, so
    the page's layout (and its gaps) stay as they were; the script runs all the same."""
    component = st.components.v2.component(
        f"sinkscope_history_{key}", js=js, css=f".st-key-{key} {{display: none !important}}",
        isolate_styles=False)
    component(key=key, data=sent(data), height=0)


# Written from the page itself: Streamlit's own first write of the address can come before
# the script of :func:`track` is in the page, and would be an entry of its own.
FIX_JS = """
export default function ({data}) {
  const d = Array.isArray(data) ? data[0] : data;  // sent as [payload] (live.sent)
  if (d && typeof d.query === "string" && location.search !== d.query)
    history.replaceState(history.state, "", d.query || location.pathname);
}
"""


def correct(query: Mapping[str, str], *, key: str = "sinkscope_fix") -> None:
    """Write ``query`` (the page's state, read from the address it was opened at) over the
    current address, without a new history entry; Streamlit reads it back from the
    address on the next run."""
    qs = urlencode(dict(query))
    _script(key, FIX_JS, {"query": f"?{qs}" if qs else ""})
    _server_copy(dict(query), qs)


def _server_copy(query: dict[str, str], qs: str) -> None:
    """The server's copy of the address set to ``query`` as the browser's will be, without
    Streamlit's own write to the browser (Streamlit 1.67's internals; where they differ,
    its public write, which adds the entry this module avoids but loses nothing else)."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
        from streamlit.runtime.state.session_state_proxy import get_session_state
        with get_session_state().query_params() as qp:
            qp.clear_with_no_forward_msg(preserve_embed=True)
            for k, v in query.items():
                qp.set_with_no_forward_msg(k, v)
        get_script_run_ctx().query_string = qs
    except Exception:  # another Streamlit
        st.query_params.from_dict(query)


def navigated() -> bool:
    """Whether this run was started by the browser's Back or Forward button."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
        ctx = get_script_run_ctx(suppress_warning=True)
    except Exception:  # another Streamlit: no history navigation to follow
        return False
    return bool(getattr(ctx, "is_history_navigation", False))
