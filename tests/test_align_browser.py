"""The Align page in headless Chromium against a real ``streamlit run`` server: a 50-pair
file uploaded in the Corpus view fills the table, a file that cannot be read replaces
nothing (in English and Spanish), and a click on a row opens that pair in the Pair view
(its texts in the boxes, its matrix drawn); Back and Forward walk the views, methods and
settings one press each, and a clamped value in the address is said. ``make screenshots``
also writes ``align.png`` of the Pair view."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.browser import (TIMEOUT, choose_view, fresh_page, no_errors, settle, shot,
                                   wait_idle, wait_js, wait_query)

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
        rejected_files_replace_nothing(pg, grid)
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


def _upload(pg, name: str, raw: bytes, mime: str = "text/tab-separated-values") -> None:
    pg.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": name, "mimeType": mime, "buffer": raw}])


def _language(pg, label: str, shown: str) -> None:
    """Switch the page's language with the sidebar's picker; wait for ``shown``."""
    pg.locator('[data-testid="stSidebar"] button', has_text=label).click()
    pg.wait_for_selector(f"text={shown}", timeout=TIMEOUT)
    wait_idle(pg)


def rejected_files_replace_nothing(pg, grid) -> None:
    """Issue 42, in English then Spanish: p is explained, the uploader's limits are said in
    the page's words, and a file that cannot be read (a bad header, an image) is refused
    with its name while the good file's table, verdict and caption stay; removing it
    shows the good file's results as before."""
    body = pg.inner_text("body")
    assert "p = min(1, 2·min(k₋, k₊)/B)" in body and "p < 0.05 exactly when" in body
    assert "At most 2 MB and 2,000 pairs per file" in body
    _upload(pg, "missing_col.tsv", b"text_a\tgold\nx\t0-0\n")
    pg.wait_for_selector("text=The results below are still those of pairs.tsv", timeout=TIMEOUT)
    wait_idle(pg)
    error = pg.locator('[data-testid="stAlertContentError"]').inner_text()
    assert "missing_col.tsv, line 1: the header needs both text_a and text_b" in error, error
    assert "50 pairs, 50 with gold" in pg.inner_text("body") and grid.is_visible()
    _language(pg, "Español", "Los resultados de abajo siguen siendo los de pairs.tsv")
    body = pg.inner_text("body")
    assert "missing_col.tsv, línea 1: la cabecera necesita text_a y text_b" in body
    assert "p < 0,05 justo cuando" in body and "Como máximo 2 MB y 2000 pares" in body
    _upload(pg, "img.png", b"\x89PNG\r\n\x1a\n\x00\x00", "image/png")
    pg.wait_for_selector("text=img.png no es un archivo de texto", timeout=TIMEOUT)
    wait_idle(pg)
    assert "50 pares, 50 con referencia" in pg.inner_text("body") and grid.is_visible()
    pg.locator('[data-testid="stFileChipDeleteBtn"] button').click()  # the bad file removed
    pg.wait_for_selector("text=Alineado: pairs.tsv", timeout=TIMEOUT)
    _language(pg, "English", "Aligned: pairs.tsv")
    no_errors(pg)
    assert "50 pairs, 50 with gold" in pg.inner_text("body") and grid.is_visible()


# What the page shows: the view chosen, the method, θ's live slider, the address.
SHOWN = """() => ({
  view: [...document.querySelectorAll('[aria-label="View"] [role="radio"]')]
    .filter(b => b.getAttribute('aria-checked') === 'true').map(b => b.innerText).join(),
  method: (document.querySelector('.st-key-align_method input') || {}).value || null,
  theta: (document.querySelector('.sk-align [role="slider"]') || {getAttribute: () => null})
    .getAttribute('aria-valuenow'),
  query: location.search, path: location.pathname, entries: history.length})"""


def _step(pg, go) -> dict:
    """Back or Forward, then what the page shows once it has drawn."""
    go()
    settle(pg, 0.5)
    if "/align" in pg.url:
        wait_idle(pg)
    return pg.evaluate(SHOWN)


def test_back_and_forward_walk_views_methods_and_settings_one_press_each(app_server, browser):
    """Opened at a short link, the page adds no history entry of its own; a new method and a
    new view are one entry each, a slider release changes the entry it is in, and Back
    restores each entry as it was, without the page writing its state over it: three
    presses leave the page, as on the main page."""
    with fresh_page(browser, f"{app_server}/align",
                    viewport={"width": 1200, "height": 1400}) as pg:
        pg.wait_for_selector(".sk-align [role='slider']", timeout=TIMEOUT)
        wait_idle(pg)
        first = pg.evaluate(SHOWN)
        assert (first["view"], first["method"], first["theta"]) == ("Pair", "unbalanced", "0.42")
        assert first["query"] == ""  # the link as it was opened: it says this state
        pg.locator(".st-key-align_method").click()
        pg.get_by_role("option", name="exact", exact=True).click()
        wait_query(pg, "method", "exact")
        wait_idle(pg)
        thumb = pg.locator('.sk-align [role="slider"]').first
        wait_js(pg, "() => document.querySelector('.sk-align [role=\"slider\"]')"
                    ".getAttribute('aria-valuenow') === '0.94'")
        thumb.focus()
        for _ in range(2):
            thumb.press("ArrowLeft")
        thumb.blur()
        wait_query(pg, "threshold", "0.92")
        wait_idle(pg)
        choose_view(pg, "Corpus")
        wait_query(pg, "view", "corpus")
        settle(pg, 1.0)
        assert pg.evaluate(SHOWN)["entries"] == first["entries"] + 2
        back = _step(pg, pg.go_back)  # the Pair view with exact, as it was left
        assert (back["view"], back["method"], back["theta"]) == ("Pair", "exact", "0.92")
        assert "threshold=0.92" in back["query"] and "method=exact" in back["query"]
        back = _step(pg, pg.go_back)  # the page as it opened
        assert (back["view"], back["method"], back["theta"]) == ("Pair", "unbalanced", "0.42")
        assert back["path"] == "/align" and back["entries"] == first["entries"] + 2
        ahead = _step(pg, pg.go_forward)
        assert (ahead["method"], ahead["theta"]) == ("exact", "0.92")
        _step(pg, pg.go_back)
        gone = _step(pg, pg.go_back)  # the third press leaves the page
        assert gone["path"] != "/align", gone
        # A refused value: the page's corrected address replaces it, so Back leaves too;
        # every refused or clamped value is said (issue 42: θ and τ were clamped silently).
        pg.goto(f"{app_server}/align?method=bogus&threshold=5&tau=-3")
        wait_js(pg, "() => location.search.includes('method=') && "
                    "!location.search.includes('bogus')")
        wait_idle(pg)
        fixed = pg.evaluate(SHOWN)
        assert fixed["method"] == "unbalanced" and "bogus" in pg.inner_text("body")
        notices = " ".join(pg.locator('[data-testid="stAlertContentWarning"]').all_inner_texts())
        assert "the threshold θ = 5 is outside 0–0.99; using 0.99." in notices, notices
        assert "τ = -3 is outside 0.01–100; using 0.01." in notices, notices
        left = _step(pg, pg.go_back)  # not to the refused address: out of the page
        assert left["path"] != "/align", left
