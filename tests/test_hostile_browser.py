"""HTML, script and markdown payloads typed into the real app in headless Chromium: each
is shown literally (in the text box and as the charts' tick labels), no dialog opens, no
element the payload describes is created, and no script of its runs.

One server and one page serve every payload (a fresh Chromium costs ~5 s here). Waits
poll (headless Chromium left idle may hold websocket messages; see tests/support/browser.py).
"""

from __future__ import annotations

import re

import pytest

from tests.support.browser import TIMEOUT, settle, wait_idle, wait_js
from tests.support.hostile import CASES, HTML_PAYLOADS

pytestmark = [pytest.mark.browser]

# Payloads that would set window.__xss if any part of them ever ran.
FLAG_PAYLOADS = (
    '<img src=x onerror="window.__xss=1">',
    "<script>window.__xss=1</script>",
    '<svg onload="window.__xss=1"><circle r=5 /></svg>',
    '<iframe srcdoc="<script>parent.__xss=1</script>"></iframe>',
    '"><img src=x onerror=window.__xss=1>',
    "<details open ontoggle=\"window.__xss=1\">x</details>",
    '<a href="javascript:window.__xss=1">link</a>',
)
MARKDOWN = next(c.a for c in CASES if c.id == "markdown")
PAYLOADS = (*HTML_PAYLOADS, *FLAG_PAYLOADS, MARKDOWN)
# A distinct word per payload, so we know the charts show *this* payload.
MARKERS = ("zebra violin castle pepper rocket walrus tulip anchor glacier lantern saddle "
           "falcon cactus harbor").split()
assert len(MARKERS) >= len(PAYLOADS)

# Every y (text A) tick label of every chart; plotly names their groups ytick, y2tick, ...
JS_YTICKS = """() => [...document.querySelectorAll('.js-plotly-plot g[class$="tick"]')]
    .filter(g => /^y[0-9]*tick$/.test(g.getAttribute('class')))
    .map(g => g.querySelector('text')).filter(Boolean).map(e => e.textContent)"""
# Elements a payload would create if the browser parsed it as HTML, outside the text box.
JS_INJECTED = """() => {
    const sel = ['img[src="x"]', 'iframe', 'script:not([src])', 'svg[onload]',
                 'details[ontoggle]', 'a[href^="javascript:" i]', '[onerror]', '[onload]'];
    const hits = [];
    for (const s of sel) for (const e of document.querySelectorAll(s)) {
        if (e.closest('textarea')) continue;
        if (e.tagName === 'SCRIPT' && !/__xss|alert/.test(e.textContent)) continue;
        hits.push(s + ' -> ' + e.outerHTML.slice(0, 120));
    }
    return hits;
}"""


def words(text: str) -> list[str]:
    """The lowercase letter runs of a text (what the uncased tokenizer keeps as pieces)."""
    return re.findall(r"[a-z]+", text.lower())


@pytest.fixture(scope="module")
def page(app_server, browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1600})
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT)
    pg.dialogs = []
    pg.page_errors = []

    def on_dialog(d):
        pg.dialogs.append(f"{d.type}: {d.message}")
        d.dismiss()

    pg.on("dialog", on_dialog)
    pg.on("pageerror", lambda e: pg.page_errors.append(str(e)))
    pg.goto(app_server)
    pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)
    wait_idle(pg)
    yield pg
    ctx.close()


def test_payloads_display_literally_and_never_run(page):
    area_a = page.get_by_role("textbox", name="Text A (queries)")
    failures = []
    for payload, marker in zip(PAYLOADS, MARKERS):
        text = f"{payload} {marker}"
        area_a.fill(text)
        area_a.press("Control+Enter")
        # The charts have been redrawn for this payload once its marker is a tick label.
        wait_js(page, f"m => ({JS_YTICKS})().join(' ').replaceAll(' ##', '').includes(m)",
                marker)
        wait_idle(page)
        ticks = page.evaluate(JS_YTICKS)
        shown = " ".join(ticks).replace(" ##", "")  # word pieces joined again
        try:
            # Literal in the text box: exactly what was typed.
            assert area_a.input_value() == text
            # Literal in the chart: the tokens' letters and angle brackets as text,
            # never markup; no double escaping either.
            assert "&lt;" not in shown and "&gt;" not in shown and "&amp;" not in shown, ticks
            if "<" in payload:
                assert "<" in shown, ticks
            missing = [w for w in words(payload) if w not in shown.lower()]
            assert not missing, (missing, ticks)
            # Nothing ran and nothing was created.
            assert not page.dialogs, page.dialogs
            assert page.evaluate("() => typeof window.__xss") == "undefined"
            assert page.evaluate(JS_INJECTED) == []
            assert page.locator(".js-plotly-plot svg b, .js-plotly-plot svg i, "
                                ".js-plotly-plot svg a[href^='javascript']").count() == 0
            assert page.locator('[data-testid="stException"]').count() == 0
            errors = page.locator('[data-testid="stAlertContentError"]')
            assert errors.count() == 0, errors.all_inner_texts()
        except AssertionError as e:
            failures.append(f"{payload!r}: {e}")
    # Hover a heatmap cell: hover labels are text too.
    box = page.locator(".js-plotly-plot .nsewdrag").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    settle(page, 0.5)
    assert page.evaluate("() => typeof window.__xss") == "undefined"
    assert page.evaluate(JS_INJECTED) == []
    assert not page.dialogs, page.dialogs
    assert not [e for e in page.page_errors if "xss" in e.lower()], page.page_errors
    assert not failures, "\n".join(failures)
