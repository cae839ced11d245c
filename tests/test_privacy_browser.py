"""One walk through every view of the main page and every step of the Learn page, in
headless Chromium, with three watches kept the whole way:

- nothing leaves the machine: every request the page makes is intercepted, and any that
  goes beyond 127.0.0.1 fails the test (and is never sent). The walk clicks every kind of
  chart toolbar button the main page's views show, and the Learn page's steps, and opens
  the downloaded HTML report and clicks its toolbar buttons too;
- no page error and no console error or warning, with a key press on the live ε slider in
  every view (each view's charts redrawn from the lattice);
- Next goes through every Learn step: its address, heading and figure (one per step),
  each step's screenshot in a temporary folder.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import expect

from sinkscope_app.learn.text import N_STEPS
from sinkscope_app.main.params import VIEWS
from tests.support.browser import TMP_SHOTS, no_errors, query, settle
from tests.test_learn_browser import shot, wait_step

STEP_SHOTS = TMP_SHOTS / "learn-steps"
EPS_NAME = "ε — entropy (log scale)"

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TIMEOUT = 90_000
LOCAL_HOSTS = {"127.0.0.1", "localhost", ""}
LOCAL_SCHEMES = {"data", "blob", "about", "file"}

JS_TITLES = """() => [...document.querySelectorAll('.js-plotly-plot')].map(g =>
    (g.layout && g.layout.title && g.layout.title.text) || '')"""


class Egress:
    """Records (and aborts) every request that would leave 127.0.0.1."""

    def __init__(self) -> None:
        self.outside: list[str] = []
        self.local = 0

    def route(self, route) -> None:
        url = urlparse(route.request.url)
        if url.scheme in LOCAL_SCHEMES or url.hostname in LOCAL_HOSTS:
            self.local += 1
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()


def idle(pg) -> None:
    pg.wait_for_function("""() => !document.querySelector('[data-testid="stStatusWidget"]')""",
                         timeout=TIMEOUT, polling=100)
    settle(pg, 0.25)


def click_toolbars(pg, done: set[str]) -> list[str]:
    """Click every kind of mode-bar button on the page as a person would (trusted clicks: a
    synthetic click could not open a pop-up, so it would hide a share button's request):
    each button title not in ``done`` once, on the first chart that has it, since every
    chart of a page gets the same toolbar from one config (``done`` carries the titles
    clicked on the same page's other views or steps); returns the titles of every chart's
    buttons."""
    names = []
    charts = pg.locator(".js-plotly-plot")
    for c in range(charts.count()):
        chart = charts.nth(c)
        buttons = chart.locator(".modebar-btn")
        for k in range(buttons.count()):
            btn = buttons.nth(k)
            name = btn.get_attribute("data-title") or "?"
            names.append(name)
            if name in done:
                continue
            done.add(name)
            chart.scroll_into_view_if_needed()
            chart.hover(position={"x": 20, "y": 20}, force=True)
            btn.click(force=True)
            settle(pg, 0.05)  # the request a click makes is sent at once; the end waits more
            confirm = pg.locator(".plotly-cloud-dialog-btn--confirm")
            if confirm.count():  # plotly.js asks before it uploads: say yes, as a user might
                confirm.first.click()
                settle(pg, 0.5)
            pg.keyboard.press("Escape")  # leave fullscreen, if the button opened it
    settle(pg, 0.3)  # a click's request is sent at once (intercepted before it goes out)
    return names


def test_no_request_leaves_the_machine(app_server, browser, tmp_path):
    egress = Egress()
    ctx = browser.new_context(viewport={"width": 1400, "height": 1400}, accept_downloads=True)
    ctx.route("**/*", egress.route)
    popups: list[str] = []
    ctx.on("page", lambda p: popups.append(p.url))
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT)
    problems: list[str] = []
    pg.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    pg.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
          if m.type in ("error", "warning") else None)
    try:
        pg.goto(f"{app_server}/?eps=1&steps=20")
        pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)
        pg.wait_for_function("() => window.__sinkscope && window.__sinkscope.scrub && "
                             "window.__sinkscope.scrub.live()", timeout=TIMEOUT, polling=100)
        idle(pg)
        clicked: dict[str, list[str]] = {}
        done: dict[str, set[str]] = {"main": set(), "learn": set(), "report": set()}
        buttons_per_chart: list[int] = []
        for view, label in VIEWS.items():
            pg.locator('[data-testid="stButtonGroup"] button', has_text=label).first.click()
            pg.wait_for_function(f"() => new URLSearchParams(location.search).get('view') === "
                                 f"{view!r}", timeout=TIMEOUT, polling=100)
            idle(pg)
            if view != "about":
                pg.wait_for_selector(".js-plotly-plot .modebar-btn", timeout=TIMEOUT,
                                     state="attached")
            buttons_per_chart += pg.evaluate("""() => [...document.querySelectorAll(
                '.js-plotly-plot')].map(g => g.querySelectorAll('.modebar-btn').length)""")
            clicked[view] = click_toolbars(pg, done["main"])
            eps = pg.get_by_role("slider", name=EPS_NAME)  # a live redraw in this view
            before = eps.get_attribute("aria-valuenow")
            eps.press("ArrowRight")
            expect(eps).not_to_have_attribute("aria-valuenow", before, timeout=TIMEOUT)
            settle(pg, 0.3)
            idle(pg)
        assert all(clicked[v] for v in VIEWS if v != "about"), clicked
        assert pg.locator('[data-testid="stException"]').count() == 0
        # Every step of the Learn page (in English, its default), reached by the sidebar's
        # link as a person goes (opened at its own address, Streamlit's frontend first asks
        # /learn/_stcore/health: a 404 in the console), then Next after Next: pressed from
        # the keyboard, since plotly's note on the image just downloaded (it fades after a
        # few seconds) lies over the button
        pg.locator('[data-testid="stSidebar"] a', has_text="Learn").first.click()
        for step in range(1, N_STEPS + 1):
            if step > 1:
                pg.locator(".st-key-learn_next button").press("Enter")
            wait_step(pg, step)
            idle(pg)
            no_errors(pg)
            assert query(pg)["step"] == str(step)
            assert pg.locator(".js-plotly-plot").count() == 1  # one live figure per step
            shot(pg, STEP_SHOTS / f"learn_step{step}.png")
            pg.wait_for_selector(".js-plotly-plot .modebar-btn", timeout=TIMEOUT,
                                 state="attached")
            buttons_per_chart += pg.evaluate("""() => [...document.querySelectorAll(
                '.js-plotly-plot')].map(g => g.querySelectorAll('.modebar-btn').length)""")
            clicked[f"learn {step}"] = click_toolbars(pg, done["learn"])
        assert pg.locator(".st-key-learn_next button").is_disabled()
        pg.goto(f"{app_server}/?eps=1&steps=20&view=compare")
        pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)
        idle(pg)
        # The HTML report of the Compare view, opened from disk, with its toolbars clicked
        pg.get_by_text("⬇ Export").click()
        with pg.expect_download() as dl:
            pg.get_by_text("This view (HTML report)").click()
        report = Path(tmp_path) / "report.html"
        dl.value.save_as(report)
        rp = ctx.new_page()
        rp.goto(report.as_uri())
        rp.wait_for_selector(".js-plotly-plot .modebar-btn", timeout=TIMEOUT, state="attached")
        clicked["report"] = click_toolbars(rp, done["report"])
        rp.close()
    finally:
        ctx.close()
    assert not problems, problems
    assert egress.local > 10  # the interception really saw the page's own requests
    assert not egress.outside, f"requests left the machine: {egress.outside}"
    assert all(urlparse(u).hostname in LOCAL_HOSTS or urlparse(u).scheme in LOCAL_SCHEMES
               for u in popups), popups
    # a short Tab order: the image download, the reset and Streamlit's fullscreen at most
    assert max(buttons_per_chart) <= 3, buttons_per_chart
    names = {n.lower() for names in clicked.values() for n in names}
    assert clicked["report"] and not any(w in n for n in names
                                         for w in ("share", "cloud", "chart studio")), names
