"""Playwright helpers shared by the browser tests (and the benchmarks that drive Chromium):
timeouts, waits that keep talking to the page, and readers of what plotly drew.

Headless Chromium left fully idle here was seen to hold incoming websocket messages until
the next DevTools command, so every wait below polls the page; never plain-sleep while
waiting for the app (use :func:`settle`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

# Screenshots go to SINKSCOPE_SCREENSHOTS (``make screenshots``: docs/screenshots) or to one
# temporary folder that each run writes over (``make test`` leaves the tree as it found it,
# and runs do not pile folders up in the temporary directory). Playwright makes the folders.
TMP_SHOTS = Path(tempfile.gettempdir()) / "sinkscope-screenshots"
SHOTS = Path(os.environ.get("SINKSCOPE_SCREENSHOTS") or TMP_SHOTS)
VIEWPORT = {"width": 1400, "height": 2000}
TIMEOUT = 90_000  # ms; the first page load includes the model load

# The charts' titles (and subplot titles), read from plotly's own divs.
JS_TITLES = """() => [...document.querySelectorAll('.js-plotly-plot')].map(g =>
    [(g.layout && g.layout.title && g.layout.title.text) || '',
     ...((g.layout && g.layout.annotations) || []).map(a => a.text || '')].join(' | '))"""
# Every chart's layout as JSON, one line per chart (tick labels name the tokens).
JS_LAYOUT = """() => [...document.querySelectorAll('.js-plotly-plot')].map(g =>
    JSON.stringify(g.layout || {})).join('\\n')"""
NOT_RUNNING = """() => !document.querySelector('[data-testid="stStatusWidget"]')"""

# The tests' Chromium runs with --process-per-site (tests/conftest.py), and each of its
# contexts holds a page at this address (answered by Playwright, never sent): then every
# page the context opens at 127.0.0.1 (any port) joins that one renderer process, which
# keeps what it compiled (Streamlit's frontend, plotly.js) from one page to the next. A
# fresh renderer per page cost Chromium about twice the CPU per page load.
SHARED_RENDERER_ARGS = ["--process-per-site"]
HOLD_URL = "http://127.0.0.1:1/sinkscope-holds-the-renderer"


class SharedRenderers:
    """``browser`` whose contexts are reused: ``new_context(**options)`` lends an idle
    context made earlier with the same options (a :class:`Lease`; its ``close`` closes the
    pages it opened and gives the context back), so Streamlit's frontend and plotly.js,
    compiled in the context's renderer and kept in its cache, are not compiled again for
    each test (a new context cost Chromium about twice the CPU of a page load in a used
    one). Each context holds its renderer open with a blank page at :data:`HOLD_URL`. A
    context given routes, init scripts or listeners is closed with its lease, never lent
    again. Everything else is ``browser``'s own."""

    KEEP = 4  # idle contexts kept (each holds a renderer)
    TAINT = frozenset({"route", "route_from_har", "add_init_script", "on", "once",
                       "expose_binding", "expose_function", "set_extra_http_headers",
                       "grant_permissions", "set_geolocation", "set_offline",
                       "add_cookies", "set_default_timeout", "set_default_navigation_timeout"})

    def __init__(self, browser) -> None:
        self._browser = browser
        self._idle: list[tuple[str, object]] = []  # (options key, context), oldest first

    def new_context(self, **kwargs) -> "Lease":
        key = repr(sorted(kwargs.items()))
        for k, (held_key, ctx) in enumerate(self._idle):
            if held_key == key:
                del self._idle[k]
                return Lease(self, key, ctx)
        ctx = self._browser.new_context(**kwargs)
        hold = ctx.new_page()
        hold.route(HOLD_URL, lambda route: route.fulfill(content_type="text/html", body=""))
        hold.goto(HOLD_URL)
        return Lease(self, key, ctx)

    def _give_back(self, key: str, ctx, tainted: bool) -> None:
        if tainted:
            ctx.close()
            return
        for pg in ctx.pages:  # pop-ups the pages opened, too; the hold page stays
            if pg.url != HOLD_URL:
                pg.close()
        ctx.clear_cookies()
        self._idle.append((key, ctx))
        while len(self._idle) > self.KEEP:
            self._idle.pop(0)[1].close()

    def __getattr__(self, name: str):
        return getattr(self._browser, name)


class Lease:
    """A context lent by :class:`SharedRenderers`: ``close`` gives it back (its pages
    closed); anything else is the context's (calls that change the context for later
    pages, such as ``route`` or ``add_init_script``, keep it from being lent again)."""

    def __init__(self, owner: SharedRenderers, key: str, ctx) -> None:
        self._owner, self._key, self._ctx = owner, key, ctx
        self._tainted, self._closed = False, False

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._owner._give_back(self._key, self._ctx, self._tainted)

    def __getattr__(self, name: str):
        if name in SharedRenderers.TAINT:
            self._tainted = True
        return getattr(self._ctx, name)


@contextlib.contextmanager
def chromium():
    """Debian's headless Chromium through Playwright, as :class:`SharedRenderers`; closed
    after, whatever happens. Playwright's sync API marks this thread's event loop as running
    for as long as it is open. Missing Chromium fails the test with the command that
    installs it (``make test`` and .ci/run install it first)."""
    import pytest
    from playwright import sync_api

    from tests.support.server import CHROMIUM_ARGS, chromium_path

    if not Path(chromium_path()).exists():
        pytest.fail(f"Chromium not found at {chromium_path()}: run 'make chromium' "
                    "(apt-get install -y chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(),
                              args=CHROMIUM_ARGS + SHARED_RENDERER_ARGS)
        try:
            yield SharedRenderers(b)
        finally:
            b.close()


def open_page(context, server: str, query: dict | None = None):
    """A fresh page at ``server`` with the URL state ``query`` (each test states its own),
    its charts drawn and the app idle."""
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT)
    pg.goto(f"{server}/?{urlencode(query)}" if query else server)
    pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)
    wait_idle(pg)
    return pg


@contextlib.contextmanager
def fresh_page(browser, url: str, *, viewport: dict = VIEWPORT, **context_args):
    """A page at ``url`` in a browser context of its own (``viewport`` and any other
    ``new_context`` arguments), with the tests' time limit; the context is closed after,
    whatever happens inside."""
    ctx = browser.new_context(viewport=viewport, **context_args)
    try:
        pg = ctx.new_page()
        pg.set_default_timeout(TIMEOUT)
        pg.goto(url)
        yield pg
    finally:
        ctx.close()


def no_errors(pg) -> None:
    """No exception box, no error box and no traceback on the page."""
    assert pg.locator('[data-testid="stException"]').count() == 0, pg.content()[-3000:]
    errors = pg.locator('[data-testid="stAlertContentError"]')
    assert errors.count() == 0, errors.all_inner_texts()
    assert "Traceback" not in pg.inner_text("body")


def settle(pg, seconds: float) -> None:
    """Pass ``seconds`` while talking to the page (see the module's note)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pg.evaluate("1")
        time.sleep(0.05)


def wait_js(pg, expression: str, arg=None, *, polling: int = 100) -> None:
    """Wait until the JavaScript ``expression`` (called with ``arg``) is truthy."""
    pg.wait_for_function(expression, arg=arg, timeout=TIMEOUT, polling=polling)


def wait_idle(pg, pause: float = 0.4) -> None:
    """Wait until Streamlit's 'running' indicator has gone and charts have drawn."""
    wait_js(pg, NOT_RUNNING)
    pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)
    settle(pg, pause)


def text_box(pg, which: str):
    """The sidebar's Text A or Text B box, found by its label (not by position: the sidebar
    re-renders while the app writes the address bar)."""
    return pg.get_by_role("textbox", name="Text A (queries)" if which == "a" else "Text B (keys)",
                          exact=True)


def titles(pg) -> list[str]:
    """Each chart's title and subplot titles, joined by `` | ``."""
    return pg.evaluate(JS_TITLES)


def choose_view(pg, label: str) -> None:
    """Click the view selector's button named ``label``."""
    pg.locator('[data-testid="stButtonGroup"] button', has_text=label).first.click()


def wait_title(pg, needle: str) -> None:
    """Wait until some chart's title contains ``needle``."""
    wait_js(pg, f"""() => ({JS_TITLES})().some(t => t.includes({needle!r}))""")


def wait_query(pg, key: str, value: str) -> None:
    """Wait until the address bar says key=value (the app writes it at the end of a run)."""
    wait_js(pg, f"""() => new URLSearchParams(location.search).get({key!r}) === {value!r}""")


def query(pg) -> dict[str, str]:
    """The page's URL state: parameter → its last value."""
    return {k: v[-1] for k, v in parse_qs(urlparse(pg.url).query).items()}


def shot(pg, name: str) -> Path:
    """A screenshot of the viewport as ``SHOTS/name.png``; fails if it looks empty."""
    path = SHOTS / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(path))
    assert path.stat().st_size > 20_000, f"{name}.png looks empty"
    return path
