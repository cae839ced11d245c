"""Where the time goes when 5,000 short lines go into a text box (issue 42, item 16).

Three ways in, timed in Chromium: the keyboard's paste (Ctrl+V from the clipboard), the
editing command ``insertText`` (what Playwright's ``fill`` and CDP's ``Input.insertText``
use), and 5,000 words on one line by the same command; each into a bare ``<textarea>``
and into Align's Text A, then the page's run after Ctrl+Enter (the text cut to
``SINKSCOPE_MAX_CHARS`` with a notice). ``insertText`` grows with the square of the
number of lines in any textarea: the browser's editing, not Streamlit's box, our parsing
or a rerun loop.

    python -m benchmarks.paste [--lines 5000]
"""

from __future__ import annotations

import argparse
import time

from tests.support.browser import NOT_RUNNING, TIMEOUT, settle, wait_idle
from tests.support.server import CHROMIUM_ARGS, chromium_path, streamlit_server

BARE = "<textarea id=t rows=4 cols=60></textarea>"


def _timed(pg, insert) -> float:
    t0 = time.perf_counter()
    insert()
    pg.evaluate("1")  # the page has handled the input
    return time.perf_counter() - t0


def run(lines: int = 5000) -> list[tuple[str, float]]:
    """Each way in, in seconds: (what, seconds)."""
    from playwright.sync_api import sync_playwright

    text = "\n".join(f"line {k}" for k in range(lines))
    one = " ".join(f"word{k}" for k in range(lines))
    rows: list[tuple[str, float]] = []
    with streamlit_server() as (url, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            ctx = browser.new_context(viewport={"width": 1400, "height": 1400},
                                      permissions=["clipboard-read", "clipboard-write"])
            pg = ctx.new_page()
            pg.set_default_timeout(TIMEOUT * 4)
            pg.goto(url + "/_stcore/health")  # an origin with a clipboard
            for what, data, how in (("paste (Ctrl+V)", text, "paste"),
                                    ("insertText", text, "insert"),
                                    ("insertText, one line of words", one, "insert")):
                pg.set_content(BARE)
                pg.click("#t")
                rows.append((f"bare textarea, {lines:,} lines, {what}", _insert(pg, data, how)))
            pg.goto(url + "/align")
            pg.wait_for_selector(".sk-align [role='slider']", timeout=TIMEOUT)
            wait_idle(pg)
            box = pg.get_by_role("textbox", name="Text A").first
            for what, data, how in (("paste (Ctrl+V)", text, "paste"),
                                    ("insertText", text, "insert")):
                box.click()
                pg.keyboard.press("Control+A")
                rows.append((f"Align's Text A, {lines:,} lines, {what}", _insert(pg, data, how)))
                t0 = time.perf_counter()
                pg.keyboard.press("Control+Enter")
                settle(pg, 0.2)  # the run starts (the page then shows why it cannot align)
                pg.wait_for_function(NOT_RUNNING, timeout=TIMEOUT, polling=50)
                rows.append(("  then the page's run (cut, with a notice)",
                             time.perf_counter() - t0))
        finally:
            browser.close()
    for what, s in rows:
        print(f"{what:55s} {s:6.2f} s")
    return rows


def _insert(pg, data: str, how: str) -> float:
    if how == "paste":
        pg.evaluate("t => navigator.clipboard.writeText(t)", data)
        return _timed(pg, lambda: pg.keyboard.press("Control+V"))
    return _timed(pg, lambda: pg.keyboard.insert_text(data))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=5000)
    run(ap.parse_args().lines)
