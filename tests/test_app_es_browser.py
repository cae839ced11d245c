"""The live sliders of the Spanish page in real Chromium: while ε moves, the browser writes
the charts' titles, the sliders and the metric strip in Spanish, with decimal commas — the
words and the number format come from Python in the payload (scrub.py), nothing English is
written by the JavaScript; a switch to English relabels the sliders."""

from __future__ import annotations

import re

import pytest

from sinkscope_app import locale as i18n

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TIMEOUT = 90_000
ES = i18n.texts("main", "es")
WORDS = ES["sliders"]["words"]


def wait_js(pg, expression: str, arg=None) -> None:
    pg.wait_for_function(expression, arg=arg, timeout=TIMEOUT, polling=50)


def test_spanish_sliders_redraw_in_spanish_with_decimal_commas(app_server, browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        pg = ctx.new_page()
        pg.set_default_timeout(TIMEOUT)
        problems = []
        pg.on("pageerror", lambda e: problems.append(str(e)))
        pg.goto(f"{app_server}/?lang=es&ex=bank&eps=1&steps=100")
        pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)
        wait_js(pg, "() => window.__sinkscope && window.__sinkscope.scrub && "
                    "window.__sinkscope.scrub.live()")
        wait_js(pg, "() => document.querySelectorAll('.sk-scrub').length === 1")
        eps = pg.get_by_role("slider", name=WORDS["eps_label"])
        steps = pg.get_by_role("slider", name=WORDS["steps_label"])
        assert steps.get_attribute("aria-valuetext") == "100 semipasos"
        eps.press("ArrowLeft")  # 1 → 0,8: redrawn from the lattice, then by the server
        wait_js(pg, """() => [...document.querySelectorAll('.js-plotly-plot')].some(g =>
            (g.layout.annotations || []).some(a => (a.text || '').includes('ε=0,8,')))""")
        assert eps.get_attribute("aria-valuetext") == "0,8"
        # the address says 0.8, as links are read, not the label's 0,8
        wait_js(pg, "() => new URLSearchParams(location.search).get('eps') === '0.8'")
        titles = pg.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
            .flatMap(g => (g.layout.annotations || []).map(a => a.text || ''))""")
        shown = " ".join(titles)
        assert "100 semipasos" in shown and "half-step" not in shown, titles
        labels = pg.locator(".sk-metric .sk-mlabel").all_inner_texts()
        values = pg.locator(".sk-metric .sk-mvalue").all_inner_texts()
        details = " ".join(pg.locator(".sk-metric").all_inner_texts())
        assert labels == [ES["metrics"]["labels"][k] for k in ES["metrics"]["labels"]], labels
        numbers = [v for v in values if re.search(r"\d", v)]
        assert numbers and not [v for v in numbers if re.search(r"\d\.\d", v)], values
        assert any("," in v for v in numbers), values
        assert "TO exacto" in details and "exact OT" not in details, details
        # a switch to English relabels the sliders (issue 42: their titles stayed Spanish),
        # also when the click's blur sends a key's value in the same rerun (0,8 → 0,6)
        eps.press("ArrowLeft")
        pg.locator('[data-testid="stSidebar"] button', has_text="English").click()
        en = i18n.texts("main", "en")["sliders"]["words"]
        pg.get_by_role("slider", name=en["eps_label"]).wait_for(timeout=TIMEOUT)
        pg.get_by_role("slider", name=en["steps_label"]).wait_for(timeout=TIMEOUT)
        assert pg.locator(".sk-label").all_inner_texts() == [en["eps_label"], en["steps_label"]]
        assert not problems, problems
    finally:
        ctx.close()
