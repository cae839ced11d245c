"""The app against a served engine, in Chromium: ``streamlit run app.py`` with
SINKSCOPE_ENGINE pointing at ``python -m engine serve`` in its own process. The page is
opened before the engine is up, and the engine is stopped and started again mid-session:
each time the page says so, keeps what it can, and comes back by itself, without a reload.
"""

from __future__ import annotations

import pytest

from tests.support.engine_server import EngineProcess
from tests.support.server import free_port, streamlit_server
from tests.support.browser import (TIMEOUT, VIEWPORT, choose_view, no_errors, titles,
                                   wait_idle, wait_js, wait_title)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.service]

NOTICE = '[data-testid="stAlertContentWarning"]'


@pytest.fixture(scope="module")
def engine(ray_lock):
    """The engine's process, not started yet (the test starts and stops it)."""
    e = EngineProcess(free_port())
    try:
        yield e
    finally:
        e.stop()


@pytest.fixture(scope="module")
def served_app(engine):
    env = {"SINKSCOPE_ENGINE": engine.url, "SINKSCOPE_WARM_UP": "0"}
    with streamlit_server(env=env) as (url, _proc):
        yield url


@pytest.mark.timeout(600)  # the engine starts twice (up to 180 s each on a loaded machine)
def test_app_waits_for_the_engine_and_survives_its_restart(served_app, engine, browser):
    ctx = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT)
    try:
        page.goto(f"{served_app}/?eps=1&steps=100")  # the engine is not up yet
        page.wait_for_selector(f"{NOTICE} >> text=is not available", timeout=TIMEOUT)
        assert engine.url in page.locator(NOTICE).first.inner_text()
        no_errors(page)
        page.evaluate("() => { window.sinkscopeNotReloaded = true; }")
        engine.start()
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)  # by itself
        wait_idle(page)
        assert page.evaluate("() => window.sinkscopeNotReloaded === true")
        sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
        assert f"served by {engine.url}, on cpu (float64)" in sidebar, sidebar[-600:]
        eps = page.get_by_role("slider", name="ε — entropy (log scale)")
        eps.focus()
        eps.press("ArrowLeft")
        wait_title(page, "Sinkhorn (ε=0.8,")
        choose_view(page, "All heads")  # the 6 × 12 grid, through the client
        wait_title(page, "Layers × heads")
        choose_view(page, "Compare")
        wait_title(page, "How text A relates")
        wait_idle(page)
        no_errors(page)

        engine.stop()
        eps.focus()
        eps.press("ArrowLeft")  # a slider move while the engine is away
        page.wait_for_selector(f"{NOTICE} >> text=is not available", timeout=TIMEOUT)
        notice = page.locator(NOTICE).first.inner_text()
        assert engine.url in notice and "by itself" in notice, notice
        assert page.get_by_role("slider").count() == 2  # the controls stay
        assert page.locator('[data-testid="stSidebar"] textarea').count() == 2
        assert page.locator('[data-testid="stException"]').count() == 0
        assert "Traceback" not in page.inner_text("body")

        engine.start()  # same port, as after an operator's restart
        wait_title(page, "Sinkhorn (ε=0.6,")  # the move made while it was away
        wait_js(page, f"""() => ![...document.querySelectorAll('{NOTICE}')]
            .some(e => e.innerText.includes('is not available'))""")
        wait_idle(page)
        assert page.evaluate("() => window.sinkscopeNotReloaded === true")
        assert any("ε=0.6" in t for t in titles(page))
        no_errors(page)
    finally:
        ctx.close()
