"""The app against a served engine, in Chromium: ``streamlit run app.py`` with
SINKSCOPE_ENGINE pointing at ``python -m engine serve`` in its own process. The page is
opened before the engine answers, and the engine goes away mid-session and comes back on
the same address: each time the page says so, keeps what it can, and comes back by itself,
without a reload.

The engine's address is a loopback relay (``tests.support.outage``) that the test takes
down and brings back: while it is down nothing listens there and every open connection is
reset, which is what the app sees of an engine that has stopped, without paying for a
second start of Ray. Serve itself stopped and started again under a client and the page is
``tests/test_service.py::test_zz_stopped_service_is_unavailable_then_recovers``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.engine_server import EngineProcess
from tests.support.outage import Relay
from tests.support.server import free_port, streamlit_server
from tests.support.browser import (TIMEOUT, VIEWPORT, choose_view, no_errors, titles,
                                   wait_idle, wait_js, wait_title)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.service]

NOTICE = '[data-testid="stAlertContentWarning"]'


class Engine:
    """``python -m engine serve``, launched at once (it starts while the app and the page
    do), behind a relay that is down until :meth:`up` (the app is given the relay's
    address)."""

    def __init__(self, log: Path) -> None:
        self.process = EngineProcess(free_port(), log=log)
        self.relay = Relay(self.process.port, free_port())
        self.url = self.relay.url
        self.process.launch()

    def up(self) -> None:
        """Once the engine answers its health check, open the address."""
        self.process.wait_ready()
        self.relay.up()

    def down(self) -> None:
        self.relay.down()

    def stop(self) -> None:
        self.relay.down()
        self.process.stop()


@pytest.fixture(scope="module")
def engine(ray_lock, tmp_path_factory):
    e = Engine(tmp_path_factory.mktemp("engine") / "engine.log")
    try:
        yield e
    finally:
        e.stop()


@pytest.fixture(scope="module")
def served_app(engine):
    env = {"SINKSCOPE_ENGINE": engine.url, "SINKSCOPE_WARM_UP": "0"}
    with streamlit_server(env=env) as (url, _proc):
        yield url


@pytest.mark.timeout(420)  # the engine's start takes up to 180 s on a loaded machine
def test_app_waits_for_the_engine_and_survives_an_outage(served_app, engine, browser):
    ctx = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT)
    try:
        page.goto(f"{served_app}/?eps=1&steps=100")  # the engine is not up yet
        page.wait_for_selector(f"{NOTICE} >> text=is not available", timeout=TIMEOUT)
        assert engine.url in page.locator(NOTICE).first.inner_text()
        no_errors(page)
        page.evaluate("() => { window.sinkscopeNotReloaded = true; }")
        engine.up()
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

        engine.down()
        eps.focus()
        eps.press("ArrowLeft")  # a slider move while the engine is away
        page.wait_for_selector(f"{NOTICE} >> text=is not available", timeout=TIMEOUT)
        notice = page.locator(NOTICE).first.inner_text()
        assert engine.url in notice and "by itself" in notice, notice
        assert page.get_by_role("slider").count() == 2  # the controls stay
        assert page.locator('[data-testid="stSidebar"] textarea').count() == 2
        assert page.locator('[data-testid="stException"]').count() == 0
        assert "Traceback" not in page.inner_text("body")

        engine.up()  # the same address, as after an operator's restart
        wait_title(page, "Sinkhorn (ε=0.6,")  # the move made while it was away
        wait_js(page, f"""() => ![...document.querySelectorAll('{NOTICE}')]
            .some(e => e.innerText.includes('is not available'))""")
        wait_idle(page)
        assert page.evaluate("() => window.sinkscopeNotReloaded === true")
        assert any("ε=0.6" in t for t in titles(page))
        no_errors(page)
    finally:
        ctx.close()


def test_the_engine_listens_on_loopback_only(engine):
    """``python -m engine serve`` with its defaults: every socket its process group
    listens on (Ray's GCS, raylet, workers, agents, Serve's proxy and replicas) is on
    127.0.0.1, and its HTTP port is the one given."""
    from tests.support.engine_server import listeners, loopback
    from tests.support.server import descendants

    engine.process.wait_ready()
    leader = engine.process.proc.pid
    found = listeners(descendants(leader) | {leader} | group(leader))
    assert len(found) >= 10, found  # Ray's whole set, not an empty match
    assert [a for a, _ in found if not loopback(a)] == [], found
    assert f"127.0.0.1:{engine.process.port}" in {a for a, _ in found}


def group(pgid: int) -> set[int]:
    """The processes of the process group ``pgid``."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                found.add(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found
