"""The Lab page in headless Chromium against a real ``streamlit run`` server: Train shows a
progress bar while it trains (Stop is enabled only then), then the couplings of a held-out
pair are drawn, and above each matrix its second marginal as bars: on their ticks for the
target and the Sinkhorn Transformer, off them for the softmax layer. A file of gold links
that does not read is said in the page's words."""

from __future__ import annotations

import json

import pytest

from tests.support.browser import TIMEOUT, fresh_page, no_errors, wait_js

pytestmark = [pytest.mark.browser, pytest.mark.slow]

JS_COUPLINGS = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(g =>
    ((g.layout && g.layout.title && g.layout.title.text) || '').includes('Couplings of held-out'))
    .map(g => JSON.stringify((g._fullData || g.data)
        .map(t => [t.type, t.mode || '', (t.x || []).length])))"""
# The matrices' bars as plotly drew them: [x axis, class, bars] per bar trace, and how many
# bar shapes the page holds.
JS_BARS = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(g =>
    ((g.layout && g.layout.title && g.layout.title.text) || '').includes('second marginals'))
    .map(g => JSON.stringify({traces: g._fullData.filter(t => t.type === 'bar')
        .map(t => [t.xaxis, t.meta.cls, t.x.length]),
        drawn: g.querySelectorAll('.barlayer .point path').length}))"""


def test_train_shows_progress_then_draws_the_couplings_and_marginals(app_server, browser):
    with fresh_page(browser, f"{app_server}/lab?lang=en&target=quantile"
                             "&models=sinkhorn,softmax&width=8&steps=100",
                    viewport={"width": 1400, "height": 2200}) as pg:
        pg.wait_for_selector(".st-key-lab_train button", timeout=TIMEOUT)
        pg.wait_for_selector("text=Nothing is trained yet", timeout=TIMEOUT)
        stop = pg.locator(".st-key-lab_stop button")
        assert stop.is_disabled()  # nothing runs: nothing to stop
        pg.locator(".st-key-lab_train button").click()
        bar = pg.locator('[data-testid="stProgress"]')
        bar.wait_for(state="visible", timeout=TIMEOUT)
        wait_js(pg, """() => [...document.querySelectorAll('[data-testid="stProgress"]')]
            .some(e => e.innerText.includes('Training Sinkhorn Transformer: step'))""", polling=20)
        assert stop.is_enabled()
        wait_js(pg, f"() => ({JS_COUPLINGS})().length === 1")
        traces = json.loads(pg.evaluate(JS_COUPLINGS)[0])
        lines = [t for t in traces if t[0] == "scatter" and t[1] == "lines"]
        points = [t for t in traces if t[1] == "markers"]
        assert lines and all(n > 0 for _, _, n in lines)  # mass drawn as lines
        assert len(points) == 6 and all(n == 8 for _, _, n in points)  # μ, ν in three panels
        pg.wait_for_selector("text=Trained 2 model(s)", timeout=TIMEOUT)
        assert bar.count() == 0  # the bar goes once training is done
        wait_js(pg, "() => document.querySelector('.st-key-lab_stop button').disabled")
        wait_js(pg, f"() => ({JS_BARS})().length === 1")
        got = json.loads(pg.evaluate(JS_BARS)[0])
        per = {}
        for axis, cls, n in got["traces"]:
            per.setdefault(axis, [0, 0, 0])[cls] += n
        # target, Sinkhorn Transformer: every ν atom receives its weight; softmax: not
        assert per["x"] == per["x2"] == [0, 0, 8]
        assert per["x3"][0] > 0 and per["x3"][1] > 0 and sum(per["x3"]) == 8
        assert got["drawn"] == 3 * 8  # and every bar is on the page
        no_errors(pg)
        # a file of gold links that does not read: said in the page's words, file named
        bad_gold_file(pg, "Could not run: badgold.tsv, line 2: link 9-9 is out of range",
                      "At most 2 MB and 2,000 pairs per file")


BAD_GOLD = b"text_a\ttext_b\tgold\nthe cat\tel gato\t9-9\n"


def bad_gold_file(pg, error: str, limits: str) -> None:
    """Issue 42: the Lab's file errors were English inside Spanish sentences."""
    pg.locator('.st-key-lab_text_upload [data-testid="stFileUploaderDropzoneInput"]') \
        .set_input_files(files=[{"name": "badgold.tsv", "buffer": BAD_GOLD,
                                 "mimeType": "text/tab-separated-values"}])
    pg.wait_for_selector('[data-testid="stAlertContentError"]', timeout=TIMEOUT)
    shown = pg.locator('[data-testid="stAlertContentError"]').inner_text()
    assert error in shown, shown
    assert limits in pg.inner_text("body")
