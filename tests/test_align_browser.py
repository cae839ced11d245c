"""The Align page in headless Chromium against a real ``streamlit run`` server: a 50-pair
file uploaded in the Corpus view fills the table, and a click on a row opens that pair in
the Pair view (its texts in the boxes, its matrix drawn). ``make screenshots`` also writes
``align.png`` of that view."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.browser import TIMEOUT, fresh_page, no_errors, settle, shot, wait_idle, wait_js

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAIRS = Path(__file__).resolve().parent / "data" / "align" / "pairs.tsv"
HEADER_PX, ROW_PX = 35, 35  # the data grid's default header and row heights


def corpus_file(n: int = 50) -> bytes:
    lines = PAIRS.read_text(encoding="utf-8").splitlines()
    body = [lines[1 + k % (len(lines) - 1)] for k in range(n)]
    return ("\n".join([lines[0], *body]) + "\n").encode("utf-8")


def test_a_50_pair_file_fills_the_table_and_a_row_click_opens_the_pair(app_server, browser):
    with fresh_page(browser, f"{app_server}/align?view=corpus",
                    viewport={"width": 1400, "height": 1800}) as pg:
        pg.wait_for_selector("text=Upload a file of pairs", timeout=TIMEOUT)
        pg.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
            files=[{"name": "pairs.tsv", "mimeType": "text/tab-separated-values",
                    "buffer": corpus_file(50)}])
        pg.wait_for_selector("text=50 pairs, 50 with gold", timeout=TIMEOUT)
        wait_idle(pg)  # the corpus scores chart is drawn
        grid = pg.locator('.st-key-align_table [data-testid="stDataFrame"]')
        grid.wait_for(state="visible", timeout=TIMEOUT)
        no_errors(pg)
        box = grid.bounding_box()
        assert box and box["height"] > 5 * ROW_PX  # the table has rows
        # the row marker of the 4th row (checkbox column at the left edge)
        want = PAIRS.read_text(encoding="utf-8").splitlines()[4].split("\t")
        pg.mouse.click(box["x"] + 18, box["y"] + HEADER_PX + 3 * ROW_PX + ROW_PX / 2)
        wait_js(pg, """(want) => [...document.querySelectorAll('textarea')]
            .some(t => t.value === want)""", want[0])
        pg.wait_for_selector("text=Pair 4 of the corpus", timeout=TIMEOUT)
        wait_idle(pg)
        assert pg.evaluate("""(want) => [...document.querySelectorAll('textarea')]
            .map(t => t.value)""", want[0])[:2] == want[:2]
        assert "view=pair" in pg.url and "text_a=" in pg.url
        assert pg.locator(".js-plotly-plot").count() >= 2  # matrix and graph
        settle(pg, 0.3)
        no_errors(pg)
        if os.environ.get("SINKSCOPE_SCREENSHOTS"):  # make screenshots: the Pair view
            shot(pg, "align")
