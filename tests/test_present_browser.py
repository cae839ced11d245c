"""Presentation mode at 1920 × 1080 in headless Chromium: nothing a lecturer quotes is cut.

The metric strip's details ("exact OT -0.629 · softmax -0.71"), the sidebar's link to Learn
and every other label of the metric strip and the sidebar wrap instead of ending in "…",
in English and in Spanish. One server and one browser context serve the module.
"""

from __future__ import annotations

import pytest

from tests.support.browser import no_errors, open_page, wait_idle, wait_js

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SCREEN = {"width": 1920, "height": 1080}

# Elements under ``root`` whose text is cut with an ellipsis: text-overflow is ellipsis and
# the text is wider than the box (scrollWidth > clientWidth), so the end is not shown.
JS_CUT = """(root) => [...document.querySelectorAll(root)].flatMap(r => [r, ...r.querySelectorAll('*')])
  .filter(e => e.offsetParent !== null && getComputedStyle(e).textOverflow === 'ellipsis'
          && e.scrollWidth > e.clientWidth + 1 && e.innerText.trim())
  .map(e => e.innerText.trim().slice(0, 90))"""

# A long, quotable detail: the cost beside exact OT and softmax, and KL's weight-0 mass.
JS_DETAILS = """() => [...document.querySelectorAll('.sk-scrub .sk-mdetail')]
  .map(e => e.innerText.trim()).filter(t => t)"""


@pytest.fixture(scope="module")
def context(browser):
    ctx = browser.new_context(viewport=SCREEN, device_scale_factor=1)
    yield ctx
    ctx.close()


def present_on(pg, label: str) -> None:
    """Turn presentation mode on with the sidebar's toggle, as a lecturer does before the
    class (a presentation link opens with the sidebar folded away)."""
    pg.locator('[data-testid="stSidebar"] label', has_text=label).first.click()
    wait_js(pg, "() => new URLSearchParams(location.search).get('present') === 'true'")
    wait_idle(pg)


@pytest.mark.parametrize("lang, learn, toggle, cost", [
    ("en", "Learn", "Presentation mode", "exact OT"),
    ("es", "Aprender", "Modo presentación", "TO exacto")])
def test_presentation_mode_cuts_nothing_in_the_metrics_or_the_sidebar(context, app_server,
                                                                       lang, learn, toggle,
                                                                       cost):
    # Polysemy at ε = 1, 1 half-step: softmax, so KL's detail names the weight-0 mass too.
    pg = open_page(context, app_server, {"lang": lang, "ex": "bank", "eps": "1",
                                         "steps": "1"})
    try:
        present_on(pg, toggle)
        wait_js(pg, "() => document.querySelectorAll('.sk-scrub .sk-mdetail').length > 0")
        details = pg.evaluate(JS_DETAILS)
        assert any(d.startswith(cost) for d in details), details
        assert pg.evaluate(JS_CUT, ".sk-scrub .sk-metrics") == []
        link = pg.locator('[data-testid="stSidebar"] [data-testid="stPageLink"]').first
        assert learn in link.inner_text()
        assert pg.evaluate(JS_CUT, '[data-testid="stSidebar"]') == []
        no_errors(pg)
    finally:
        pg.close()
