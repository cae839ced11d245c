"""The Align page in Spanish in headless Chromium: a clamped value in the address is said in
Spanish, the m slider of ``partial`` opens on the engine's default m, and a key press on it
redraws the figures in the browser with the Spanish words the payload carries (no English
trace name, no English hover word)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from sinkscope_app import align as ap, locale as i18n
from tests.support.browser import fresh_page, no_errors, wait_idle, wait_js

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ES = i18n.texts("align", "es")["figure"]
SHOWN = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .filter(g => g.__sk && g.__sk.bind && g.__sk.bind.align).map(g => ({
    chart: g.__sk.bind.chart, source: g.dataset.source,
    words: g.data.filter(t => t.meta && t.meta.kind !== 'plan')
      .flatMap(t => [t.name, ...[].concat(t.text || []), ...[].concat(t.hovertext || [])])
      .map(String)}))"""
PAIR = {"lang": "es", "text_a": "el gato se sentó en la alfombra",
        "text_b": "un gato estaba sentado en la alfombra",
        "gold": "0p0 1-1 2-2 3-3 4-4 5-5 6-6", "method": "partial",
        "tau": "-3"}  # τ (unbalanced's) out of range: clamped, and said in Spanish


def test_the_spanish_m_slider_redraws_the_figures_in_spanish(app_server, browser):
    with fresh_page(browser, f"{app_server}/align?{urlencode(PAIR)}",
                    viewport={"width": 1400, "height": 1800}) as pg:
        wait_js(pg, f"() => {{ const s = ({SHOWN})(); const K = window.__sinkscope, "
                    "A = K && K.align; return s.length === 2 && A && "
                    "[...A.payloads.values()].some(e => e.value) }")
        wait_idle(pg)
        no_errors(pg)
        notices = pg.locator('[data-testid="stAlertContentWarning"]').all_inner_texts()
        assert notices == ["En el enlace, τ = -3 queda fuera del intervalo 0,01–100; se usa "
                           "0,01."], notices  # issue 42: a clamp is never silent
        mass = pg.locator('.sk-align [role="slider"]').nth(1)
        default = ap.method_defaults("partial")["align_mass"]
        assert mass.get_attribute("aria-valuenow") == f"{default:g}" == "0.98"
        mass.focus()
        for _ in range(6):  # 0.98 → 0.75: fewer words of the shorter text moved
            mass.press("ArrowLeft")
        wait_js(pg, f"() => ({SHOWN})().every(c => c.source === 'browser')")
        assert mass.get_attribute("aria-valuenow") == "0.75"
        shown = pg.evaluate(SHOWN)
        words = [w for c in shown for w in c["words"]]
        names = set(words)
        assert ES["nodes"]["a"] in names and ES["nodes"]["b"] in names, names
        assert names & set(ES["names"].values()), names
        english = [w for w in words if any(e in w for e in (
            "unaligned", "words of", "link", "gold", "missed"))]
        assert not english, english
        no_errors(pg)
