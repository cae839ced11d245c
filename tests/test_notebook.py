"""docs/notebook.ipynb: the saved file is the cells of tests/support/notebook.py with their
outputs, which hold the live widget with the static figures under a note for viewers
without widgets. JupyterLab serves it on loopback, headless Chromium runs all its cells
(no error, every cell's printed output, both widgets), and a key press on the ε slider
swaps the heatmaps' data for Python's frame at the next ε, with no request leaving
127.0.0.1 (the widget's code and plotly.js come from the kernel). The widget's mime bundle
itself: tests/test_package.py."""

from __future__ import annotations

import shutil
import time
from urllib.parse import urlparse

import numpy as np
import pytest

from tests.support import notebook

WIDGET = "application/vnd.jupyter.widget-view+json"


def outputs(nb) -> list:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def test_the_saved_notebook_is_the_cells_with_their_outputs_and_reads_without_widgets():
    import nbformat

    from sinkscope.notebook import STATIC_NOTE

    saved = nbformat.read(notebook.PATH, as_version=4)
    assert [c.source for c in saved.cells] == [c.source for c in notebook.build().cells]
    for c in saved.cells:
        if c.cell_type == "code":
            assert c.outputs and c.execution_count, c.source[:60]  # it reads without running
    assert not saved.metadata.get("widgets")  # no widget state saved: the figures show
    outs = outputs(saved)
    assert not [o for o in outs if o.output_type == "error"]
    views = [o for o in outs if WIDGET in o.get("data", {})]
    assert len(views) == 2  # the relation and the alignment
    for o in views:
        assert o["data"]["text/plain"] == STATIC_NOTE
        assert STATIC_NOTE in o["data"]["text/html"] and "plotly" in o["data"]["text/html"]
    text = "".join(o.get("text", "") for o in outs)
    assert "plans: (8, 9) (8, 9)" in text and "best:" in text


@pytest.mark.browser
@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(360)
def test_jupyterlab_scrubs_the_widget_with_the_app_s_frames_offline(tmp_path, browser):
    import sinkscope
    from engine.relation import frames
    from sinkscope.notebook import relation_parts

    folder = tmp_path / "lab"
    folder.mkdir()
    shutil.copy(notebook.PATH, folder / "notebook.ipynb")
    r = sinkscope.relate(notebook.TEXT_A, notebook.TEXT_B, layer=5, head=3, eps=0.5,
                         half_steps=50)
    parts = relation_parts(r)
    lat = frames.decode(parts["payload"])
    stops = parts["controls"]["eps_stops"]
    e = stops[stops.index(0.5) - 1]  # ArrowLeft: the next smaller ε stop
    i, k = list(lat["eps"]).index(e), list(lat["steps"]).index(50)
    outside, local = [], []

    def route(rt):
        u = urlparse(rt.request.url)
        if u.scheme in ("data", "blob", "about") or u.hostname in ("127.0.0.1", "localhost"):
            local.append(rt.request.url)
            rt.continue_()
        else:
            outside.append(rt.request.url)
            rt.abort()

    drawn = notebook.JS_WIDGET_MAPS.replace(
        "if (!gd || !gd.data) return null;",
        "if (!gd || !gd.data || gd.dataset.source !== 'server') return null;")
    with notebook.jupyter_lab(folder) as url:
        ctx = browser.new_context(viewport={"width": 1400, "height": 1600})
        try:
            page = ctx.new_page()
            page.route("**/*", route)
            page.goto(f"{url}/lab/tree/notebook.ipynb", timeout=120_000)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
            page.wait_for_selector("text=Python 3 (ipykernel) | Idle", timeout=120_000)
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_text("Run All Cells", exact=True).click()
            end = time.monotonic() + 180
            while not page.evaluate(drawn):  # the widget's chart, drawn from Python's figure
                assert time.monotonic() < end, "the widget was not drawn"
                dialog = page.locator(".jp-Dialog button.jp-mod-accept")
                if dialog.count():  # JupyterLab may ask which kernel to run it with
                    dialog.first.click()
                page.wait_for_timeout(250)
            # every cell ran: its printed output, both widgets, no error
            page.wait_for_selector(".jp-OutputArea-output >> text=best:", timeout=180_000)
            page.wait_for_function("() => document.querySelectorAll('.sinkscope-widget')"
                                   ".length === 2", timeout=60_000, polling=100)
            shown = page.inner_text(".jp-Notebook")
            assert "plans: (8, 9) (8, 9)" in shown and "ε =" in shown
            assert page.locator('.jp-OutputArea-output[data-mime-type='
                                '"application/vnd.jupyter.stderr"]').count() == 0
            assert "Traceback" not in shown
            before = page.evaluate(notebook.JS_WIDGET_MAPS)
            assert before["frame"] == "0.5,50"
            thumb = page.locator(".sinkscope-widget [role=slider]").first
            thumb.focus()
            t0 = time.perf_counter()
            thumb.press("ArrowLeft")
            page.wait_for_function(
                f"() => {{ const g = document.querySelector('.sinkscope-widget .sinkscope-chart');"
                f" return g && g.dataset.source === 'browser' && g.dataset.frame === '{e},50'; }}",
                timeout=30_000, polling=20)
            seconds = time.perf_counter() - t0
            after = page.evaluate(notebook.JS_WIDGET_MAPS)
            from_kernel = page.evaluate("() => !!window.Plotly && [...document.scripts]"
                                        ".some((s) => s.src.startsWith('blob:'))")
        finally:
            ctx.close()
    np.testing.assert_allclose(after["maps"]["softmax"], lat["plans"][i, 0].ravel(),
                               rtol=1e-12, atol=0)
    np.testing.assert_allclose(after["maps"]["sinkhorn"], lat["plans"][i, k].ravel(),
                               rtol=1e-12, atol=0)
    i0 = list(lat["eps"]).index(0.5)  # the frame shown before the key press differs
    assert not np.allclose(after["maps"]["sinkhorn"], lat["plans"][i0, k].ravel())
    assert seconds < 5  # a frame from the browser, not a trip to the kernel
    assert outside == [] and local and from_kernel  # plotly.js came from the kernel
    print(f"\nnotebook widget: key press to the next frame drawn {seconds * 1e3:.0f} ms")
