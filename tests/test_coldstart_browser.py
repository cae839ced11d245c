"""The first visit to a fresh server started as ``make run`` starts it
(``python -m sinkscope_app.launch``), in headless Chromium: the server began loading the
model before anyone visited, and the sidebar's controls are on screen, with a note where
the charts go, before the first coupling is drawn.

A server of its own (the shared one is warm); the session's Chromium.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.browser import VIEWPORT, no_errors, text_box
from tests.support.server import ROOT, command, die_with_parent, free_port, stop, wait_healthy

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.model]

HEATMAPS = ("() => [...document.querySelectorAll('.js-plotly-plot')].filter(p => "
            "p.querySelector('.main-svg') && (p.data || []).some(t => t.type === 'heatmap'))"
            ".length")
CONTROLS = ("() => { const t = document.querySelector('[data-testid=\"stSidebar\"] textarea');"
            " return !!t && t.getBoundingClientRect().height > 0; }")
PLACEHOLDER = "Loading the model all-MiniLM-L6-v2"


@pytest.fixture
def fresh_server(tmp_path):
    """The launcher on a free loopback port, from cold; yields (url, log path)."""
    port = free_port()
    log = tmp_path / "server.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "SINKSCOPE_WARM_UP": "0"}
    env.pop("SINKSCOPE_ENGINE", None)  # embedded: the model loads in the server
    with open(log, "w") as fh:
        proc = subprocess.Popen(command(port, launcher=True), cwd=ROOT, env=env, stdout=fh,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=die_with_parent())
        try:
            wait_healthy(f"http://127.0.0.1:{port}", proc, log, timeout=120)
            yield f"http://127.0.0.1:{port}", log
        finally:
            stop(proc)


@pytest.mark.timeout(200)
def test_controls_show_before_the_first_coupling_and_the_model_loads_from_server_start(
        browser, fresh_server):
    url, log = fresh_server
    before_any_visit = log.read_text()
    assert "preloading all-MiniLM-L6-v2 in the background (server start)" in before_any_visit
    ctx = browser.new_context(viewport=VIEWPORT)
    try:
        pg = ctx.new_page()
        pg.goto(url, wait_until="commit")
        pg.wait_for_function(CONTROLS, timeout=120_000, polling=20)
        # The controls are out while the model is still loading: no heatmap yet, and the
        # charts' place says what is happening.
        assert pg.evaluate(HEATMAPS) == 0
        assert "preloaded in" not in log.read_text()
        pg.wait_for_function(f"() => document.body.innerText.includes({PLACEHOLDER!r})",
                             timeout=30_000, polling=20)
        assert text_box(pg, "a").is_visible() and text_box(pg, "a").is_editable()
        pg.wait_for_function(f"() => ({HEATMAPS})() >= 1", timeout=120_000, polling=50)
        # The note has gone with the first couplings, and the page holds the preloaded
        # model (loaded once: the page never loaded a second copy).
        pg.wait_for_function(f"() => !document.body.innerText.includes({PLACEHOLDER!r})",
                             timeout=30_000, polling=50)
        no_errors(pg)
        text = log.read_text()
        assert "all-MiniLM-L6-v2 preloaded in" in text, text[-2000:]
        assert "the page took the preloaded all-MiniLM-L6-v2" in text, text[-2000:]
        assert "preloading all-MiniLM-L6-v2 failed" not in text
    finally:
        ctx.close()
