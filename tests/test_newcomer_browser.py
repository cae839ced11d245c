"""What a new user trips on, in headless Chromium against a real ``streamlit run``: a paste
over the character limit, the browser's Back and Forward buttons on the main page (on
Learn: tests/test_learn_browser.py), own texts after an example, a link that names no
texts, and the Sentences view (its ranking's export, a candidate sent to Compare).

One server and one browser serve the module; each test opens its own page at the address
it starts from, so any test runs alone.
"""

from __future__ import annotations

import csv
import io

import pytest

from tests.support.browser import (JS_LAYOUT, VIEWPORT, no_errors, open_page, query, settle,
                                   shot, text_box, titles, wait_idle, wait_js, wait_query,
                                   wait_title)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIOLIN = "A man plays the violin on stage."


@pytest.fixture(scope="module")
def context(browser):
    ctx = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, accept_downloads=True)
    yield ctx
    ctx.close()


def choose_example(pg, ex: dict, key: str) -> None:
    """Pick example ``key`` in the sidebar's select box by its title, and wait until the
    address names it (the run has ended: right after the click the page can still look
    idle, before the run has started) and the page is idle."""
    pg.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
    pg.get_by_role("option", name=ex[key]["title"], exact=True).click()
    wait_query(pg, "ex", key)
    wait_idle(pg)


def shown_example(pg) -> str:
    """The title the sidebar's example box shows."""
    return pg.locator('[data-testid="stSidebar"] input[aria-label="Example"]').input_value()


def back(pg, forward: bool = False) -> None:
    (pg.go_forward if forward else pg.go_back)()
    settle(pg, 0.5)
    wait_idle(pg)


def test_back_and_forward_walk_through_examples_and_views(context, app_server):
    from sinkscope_app.examples import load

    ex = load()
    pg = open_page(context, app_server)
    start = pg.evaluate("history.length")
    choose_example(pg, ex, "paraphrase")
    choose_example(pg, ex, "negation")
    assert pg.evaluate("history.length") == start + 2
    eps = pg.get_by_role("slider", name="ε — entropy (log scale)")
    eps.focus()
    eps.press("ArrowLeft")  # a slider move rewrites the address in place: no new entry
    wait_query(pg, "eps", "0.8")
    wait_idle(pg)
    assert pg.evaluate("history.length") == start + 2
    pg.locator('[data-testid="stButtonGroup"] button', has_text="Graph").first.click()
    wait_query(pg, "view", "graph")
    wait_idle(pg)
    assert pg.evaluate("history.length") == start + 3

    back(pg)  # Graph → Compare, still Negation at the ε just chosen
    wait_query(pg, "view", "compare")
    assert (query(pg)["ex"], query(pg)["eps"]) == ("negation", "0.8")
    wait_js(pg, "() => document.querySelectorAll('.js-plotly-plot').length >= 2")  # both maps
    back(pg)
    wait_query(pg, "ex", "paraphrase")
    wait_js(pg, "t => document.querySelector('[data-testid=\"stSidebar\"] "
                "input[aria-label=\"Example\"]').value === t", ex["paraphrase"]["title"])
    assert float(query(pg)["eps"]) == ex["paraphrase"]["settings"]["eps"]
    back(pg)
    wait_query(pg, "ex", "bank")
    assert shown_example(pg).startswith("Polysemy")
    assert any("layer 4" in t for t in titles(pg))
    pg.go_back()  # the bare address was completed in place: one more Back leaves the page
    wait_js(pg, "() => location.href === 'about:blank'")
    pg.go_forward()
    wait_query(pg, "ex", "bank")
    wait_idle(pg)
    back(pg, forward=True)
    wait_query(pg, "ex", "paraphrase")
    assert shown_example(pg) == ex["paraphrase"]["title"]
    no_errors(pg)
    pg.close()


def test_own_texts_after_an_example_start_at_the_model_s_own_attention_and_a_long_paste_is_cut(
        context, app_server):
    from engine.settings import CONFIG

    pg = open_page(context, app_server)  # Polysemy: layer 4 at ε = 0.1
    assert query(pg)["eps"] == "0.1"
    box = text_box(pg, "b")
    box.fill("A heron stood on the muddy shore.")
    box.press("Control+Enter")
    wait_query(pg, "ex", "custom")
    wait_query(pg, "eps", "1")
    wait_idle(pg)
    info = pg.locator('[data-testid="stAlertContentInfo"]', has_text="Your own texts")
    assert "Kept from the example: layer 4" in info.first.inner_text()
    assert any("Softmax (ε=1)" in t for t in titles(pg))
    no_errors(pg)
    # a paste over the character limit is cut to it, with a notice
    paste = ("The river bank was quiet after the flood, and the boats stayed moored. "
             * 400)[:24_285]
    box = text_box(pg, "a")
    box.click()
    pg.keyboard.press("Control+A")
    pg.keyboard.insert_text(paste)  # one input event with the whole text, as a paste
    box.press("Control+Enter")
    wait_js(pg, """() => [...document.querySelectorAll('[data-testid="stAlertContentWarning"]')]
        .some(e => e.innerText.includes('24,285 characters'))""")
    wait_idle(pg)
    assert len(box.input_value()) == CONFIG.max_chars
    wait_js(pg, "(a) => new URLSearchParams(location.search).get('a') === a",
            paste[: CONFIG.max_chars])
    no_errors(pg)
    pg.close()


def test_a_presentation_link_shows_the_example_its_note_describes(context, app_server):
    from sinkscope_app.examples import load

    bank = load()["bank"]
    pg = open_page(context, app_server, {"present": "true"})
    q = query(pg)
    assert (q["layer"], q["eps"], q["steps"]) == ("4", "0.1", "200")
    assert any("layer 4" in t for t in titles(pg))
    sidebar = pg.locator('[data-testid="stSidebar"]').inner_text()
    assert bank["note"][:60] in " ".join(sidebar.split())
    pg.close()
    pg = open_page(context, app_server, {"ex": "nope", "a": "My own sentence about a heron."})
    sidebar = " ".join(pg.locator('[data-testid="stSidebar"]').inner_text().split())
    assert bank["note"][:60] not in sidebar and "Polysemy" not in shown_example(pg)
    pg.close()


def test_the_sentences_ranking_downloads_as_csv_and_a_candidate_opens_in_compare(
        context, app_server):
    """The Sentences view opened from a link to a set: both rankings, the set in the
    address under its readable name, its ranking exported as CSV; then one click on a
    candidate's Compare makes it text B in the Compare view. (The model picker, with a
    second model's architecture: tests/test_app_models.py.)"""
    pg = open_page(context, app_server, {"view": "sentences", "sset": "guitar", "eps": "0.5"})
    wait_title(pg, "Two rankings of the candidates")
    wait_title(pg, "One ranking against the other")
    q = query(pg)  # the set stays in the address, under its readable name (old: sset)
    assert q.get("sentence_set", q.get("sset")) == "guitar" and q["view"] == "sentences"
    assert pg.get_by_role("button", name="Compare").count() == 20
    shot(pg, "sentences")
    pg.get_by_text("⬇ Export").click()
    with pg.expect_download() as dl:
        pg.get_by_text("Sentences ranking (CSV)").click()
    text = open(dl.value.path(), encoding="utf-8").read()
    assert "# eps: 0.5" in text
    rows = list(csv.DictReader(io.StringIO(
        "".join(line for line in text.splitlines(True) if not line.startswith("#")))))
    assert len(rows) == 20
    assert [int(r["rank_by_divergence"]) for r in rows] == list(range(1, len(rows) + 1))
    assert sorted(int(r["rank_by_similarity"]) for r in rows) == list(range(1, len(rows) + 1))
    assert all(float(r["cosine_similarity"]) <= 1 for r in rows)
    no_errors(pg)
    pg.keyboard.press("Escape")  # the export menu closes

    # one click: the violin candidate becomes text B, in the Compare view
    text_a = text_box(pg, "a").input_value()
    row = pg.locator('[data-testid="stHorizontalBlock"]').filter(has_text=VIOLIN).last
    row.get_by_role("button", name="Compare").click()
    wait_query(pg, "view", "compare")
    wait_js(pg, f"() => ({JS_LAYOUT})().includes('violin')")
    wait_idle(pg)
    no_errors(pg)
    assert text_box(pg, "b").input_value() == VIOLIN and query(pg)["b"] == VIOLIN
    assert text_box(pg, "a").input_value() == text_a  # text A stays
    pg.close()
