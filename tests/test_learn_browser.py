"""The Learn page in headless Chromium against a real ``streamlit run`` server: the ← → keys,
the half-step button, presenter mode in Spanish, and the links between the Learn page and
the main page. Next through every step (a screenshot of each into a temporary folder) is
part of the one walk in tests/test_privacy_browser.py.

``make screenshots`` sets ``SINKSCOPE_SCREENSHOTS=docs/screenshots``; then the two pictures
the README shows (``learn.png``, ``learn_es.png``) are written there, and only those.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import pytest

from sinkscope_app.learn.text import N_STEPS, STEPS, UI
from tests.support.browser import SHOTS, no_errors, query, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIEWPORT = {"width": 1500, "height": 1000}
TIMEOUT = 90_000  # ms; step 6 may wait for the model on a cold server

JS_TITLE = """() => [...document.querySelectorAll('.js-plotly-plot')].map(g =>
    ((g.layout && g.layout.title && g.layout.title.text) || '')
    .replaceAll('<br>', ' ')).join(' | ')"""
FIGURE_TITLES = {"en": ["Two clusters", "Softmax at ε = 1", "After 1 half-step at ε = 1",
                        "Sinkhorn coupling at ε", "Cloud A (rows)", "on your texts",
                        "Text A reading itself", "F(μ, ν) for your pair"],
                 "es": ["Dos grupos", "Softmax con ε = 1", "Tras 1 medio paso con ε = 1",
                        "Acoplamiento de Sinkhorn con ε", "Nube A (filas)", "sobre tus textos",
                        "El texto A leyéndose", "F(μ, ν) para tu par"]}


@pytest.fixture(scope="module")
def page(app_server, browser):
    ctx = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT)
    yield pg
    ctx.close()


def wait_step(pg, step: int, lang: str = "en") -> None:
    """Wait until the page shows ``step``: the URL, its heading and its figure's title."""
    heading = f"{UI[lang]['step_of'].format(i=step, n=N_STEPS)} · {STEPS[lang][step - 1].title}"
    try:
        _wait_step(pg, step, heading, lang)
    except Exception as e:
        seen = pg.evaluate("""(js) => [location.search,
            [...document.querySelectorAll('h3')].map(h => h.textContent), eval(js)(),
            !!document.querySelector('[data-testid="stStatusWidget"]')]""", JS_TITLE)
        raise AssertionError(f"step {step} not shown; the page shows {seen}") from e


def _wait_step(pg, step: int, heading: str, lang: str) -> None:
    pg.wait_for_function(
        """([step, heading, title, js]) =>
            new URLSearchParams(location.search).get('step') === String(step)
            && [...document.querySelectorAll('h3')].some(h => h.textContent.includes(heading))
            && eval(js)().includes(title)
            && !document.querySelector('[data-testid="stStatusWidget"]')""",
        arg=[step, heading, FIGURE_TITLES[lang][step - 1], JS_TITLE], timeout=TIMEOUT,
        polling=50)


def shot(pg, path: Path) -> Path:
    settle(pg, 0.6)  # let plotly finish its transition
    pg.screenshot(path=str(path))
    assert path.stat().st_size > 20_000, f"{path.name} looks empty"
    return path


def test_02_arrow_keys_back_and_forward_move_between_steps(page, app_server):
    page.goto(f"{app_server}/learn?step={N_STEPS}&lang=en")
    wait_step(page, N_STEPS)
    # the keys script is mounted with the page's components, possibly after the step shows
    page.wait_for_function("() => document.__sinkscopeLearnKeys === true", timeout=TIMEOUT)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press("ArrowLeft")
    wait_step(page, N_STEPS - 1)
    page.keyboard.press("ArrowRight")
    wait_step(page, N_STEPS)
    # The browser's Back and Forward go through the steps walked (each one an entry)
    page.go_back()
    wait_step(page, N_STEPS - 1)
    page.go_forward()
    wait_step(page, N_STEPS)
    # In a text field the arrows move the cursor, not the walk.
    area = page.locator('[data-testid="stSidebar"] textarea').first
    area.click()
    page.keyboard.press("ArrowLeft")
    settle(page, 1.0)
    assert query(page)["step"] == str(N_STEPS)
    no_errors(page)


def test_03_half_step_button_alternates(page, app_server):
    page.goto(f"{app_server}/learn?step=3&lang=en")
    wait_step(page, 3)
    page.locator(".st-key-learn_next_half button").click()
    page.wait_for_function(f"() => ({JS_TITLE})().includes('After 2 half-steps')", timeout=TIMEOUT)
    page.wait_for_selector("text=columns just fixed", timeout=TIMEOUT)
    no_errors(page)
    if os.environ.get("SINKSCOPE_SCREENSHOTS"):
        shot(page, SHOTS / "learn.png")


def test_04_spanish_presenter_mode(page, app_server):
    page.goto(f"{app_server}/learn?step=7&lang=es&present=on")
    wait_step(page, 7, "es")
    size = page.evaluate("""() => parseFloat(getComputedStyle(document.querySelector(
        '[data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] p')).fontSize)""")
    assert size >= 20, size  # presenter type, not the usual 16 px
    assert page.locator("text=sumidero de atención").count() >= 1
    no_errors(page)
    if os.environ.get("SINKSCOPE_SCREENSHOTS"):
        shot(page, SHOTS / "learn_es.png")


def test_05_links_between_the_pages(page, app_server):
    page.goto(f"{app_server}/learn?step=6&lang=en")
    wait_step(page, 6)
    href = page.locator('[data-testid="stLinkButton"] a').first.get_attribute("href")
    assert href.startswith("./?") and "mode=separate" in href
    # (the main page's sidebar link back to Learn: tests/test_privacy_browser.py's walk)
    main = page.context.new_page()
    try:  # the relative link resolved against the step's address, as a click does
        main.goto(urlparse(page.url)._replace(path="/", query=href[3:]).geturl())
        main.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)
        q = query(main)
        assert q["a"].startswith("I sat on the bank") and q["mode"] == "separate"
        no_errors(main)
    finally:
        main.close()
