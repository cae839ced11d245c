"""The Lab page in headless Chromium against a real ``streamlit run`` server: Train shows a
progress bar while it trains, then the couplings of a held-out pair are drawn."""

from __future__ import annotations

import json

import pytest

from tests.support.browser import TIMEOUT, fresh_page, no_errors, wait_js

pytestmark = [pytest.mark.browser, pytest.mark.slow]

JS_COUPLINGS = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(g =>
    ((g.layout && g.layout.title && g.layout.title.text) || '').includes('Couplings of held-out'))
    .map(g => JSON.stringify((g._fullData || g.data)
        .map(t => [t.type, t.mode || '', (t.x || []).length])))"""


def test_train_shows_progress_then_draws_the_couplings(app_server, browser):
    with fresh_page(browser, f"{app_server}/lab?lang=en&target=quantile&models=sinkhorn"
                             "&width=8&steps=150", viewport={"width": 1400, "height": 2200}) as pg:
        pg.wait_for_selector(".st-key-lab_train button", timeout=TIMEOUT)
        pg.wait_for_selector("text=Nothing is trained yet", timeout=TIMEOUT)
        pg.locator(".st-key-lab_train button").click()
        bar = pg.locator('[data-testid="stProgress"]')
        bar.wait_for(state="visible", timeout=TIMEOUT)
        wait_js(pg, """() => [...document.querySelectorAll('[data-testid="stProgress"]')]
            .some(e => e.innerText.includes('Training Sinkhorn Transformer: step'))""", polling=20)
        wait_js(pg, f"() => ({JS_COUPLINGS})().length === 1")
        traces = json.loads(pg.evaluate(JS_COUPLINGS)[0])
        lines = [t for t in traces if t[0] == "scatter" and t[1] == "lines"]
        points = [t for t in traces if t[1] == "markers"]
        assert lines and all(n > 0 for _, _, n in lines)  # mass drawn as lines
        assert len(points) == 4 and all(n == 8 for _, _, n in points)  # μ, ν in two panels
        pg.wait_for_selector("text=Trained 1 model(s)", timeout=TIMEOUT)
        assert bar.count() == 0  # the bar goes once training is done
        no_errors(pg)
