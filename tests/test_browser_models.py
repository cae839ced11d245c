"""The real thing with two models: a server whose operator allows the packaged MiniLM and a
tiny MPNet, driven by Playwright in Debian's headless Chromium. Opens the Sentences view
from a link, sends a candidate to Compare with one click, then changes the model with the
picker and checks the texts stay."""

from __future__ import annotations

import pytest

from tests.support.server import streamlit_server
from tests.support.browser import (JS_LAYOUT, VIEWPORT, fresh_page, no_errors, query, shot,
                                   wait_idle, wait_js, wait_query, wait_title)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIOLIN = "A man plays the violin on stage."


@pytest.fixture(scope="module")
def server(tiny_models):
    env = {"SINKSCOPE_MODELS": f"tiny-mpnet={tiny_models['mpnet']}", "SINKSCOPE_WARM_UP": "0"}
    with streamlit_server(env) as (url, _proc):
        yield url


def test_sentences_to_compare_and_model_picker(server, browser):
    with fresh_page(browser, f"{server}/?view=sentences&sset=guitar", viewport=VIEWPORT,
                    device_scale_factor=1) as pg:
        wait_title(pg, "Two rankings of the candidates")
        wait_title(pg, "One ranking against the other")
        wait_idle(pg)
        no_errors(pg)
        q = query(pg)  # the set stays in the address, under its readable name (old: sset)
        assert q.get("sentence_set", q.get("sset")) == "guitar" and q["view"] == "sentences"
        assert pg.get_by_role("button", name="Compare").count() == 20
        shot(pg, "sentences")

        # one click: the violin candidate becomes text B, in the Compare view
        row = pg.locator('[data-testid="stHorizontalBlock"]').filter(has_text=VIOLIN).last
        row.get_by_role("button", name="Compare").click()
        wait_query(pg, "view", "compare")
        wait_js(pg, f"() => ({JS_LAYOUT})().includes('violin')")
        wait_idle(pg)
        no_errors(pg)
        text_b = pg.get_by_role("textbox", name="Text B (keys)", exact=True)
        assert text_b.input_value() == VIOLIN and query(pg)["b"] == VIOLIN
        text_a = pg.get_by_role("textbox", name="Text A (queries)", exact=True).input_value()

        # the picker: each model with its size; changing it keeps both texts
        picker = pg.get_by_role("combobox", name="Model")
        assert picker.input_value() == "all-MiniLM-L6-v2 · BERT · 6 layers × 12 heads · 256 tokens"
        picker.click()
        options = pg.get_by_role("option")
        options.first.wait_for()
        assert options.all_inner_texts() == [
            "all-MiniLM-L6-v2 · BERT · 6 layers × 12 heads · 256 tokens",
            "tiny-mpnet · MPNet · 2 layers × 4 heads · 24 tokens"]
        options.nth(1).click()
        wait_query(pg, "model", "tiny-mpnet")
        wait_idle(pg)
        no_errors(pg)
        assert pg.get_by_role("textbox", name="Text A (queries)", exact=True).input_value() == text_a
        assert pg.get_by_role("textbox", name="Text B (keys)", exact=True).input_value() == VIOLIN
        assert "relative position bias" in pg.inner_text("body")  # separate mode says so
        assert query(pg)["layer"] == "1"  # the tiny model's last layer
