"""The real thing: ``streamlit run`` on a loopback port, driven by Playwright in Debian's
headless Chromium. Types a pair, moves ε with the keyboard, clicks a grid tile, visits
every view and takes a screenshot of each: into a temporary folder, or into the folder
named by ``SINKSCOPE_SCREENSHOTS`` (``make screenshots`` writes the README's there).

One server and one browser serve the whole test session (tests/conftest.py; a fresh
Chromium costs ~5 s, a fresh server plus model ~10 s on 2 cores); each test opens its own
page at the URL state it starts from, so any test runs alone. The helpers live in
tests/support/browser.py.
"""

from __future__ import annotations

import statistics
import time

import pytest

from tests.support.browser import (JS_LAYOUT, SHOTS, TIMEOUT, VIEWPORT, choose_view, no_errors,
                                   open_page, query, settle, shot, text_box, titles,
                                   wait_idle, wait_js, wait_query, wait_title)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TEXT_A = "The quick brown fox jumps over the lazy dog near the river bank."
TEXT_B = "A fast fox leaped across a sleepy hound by the water."

# The pair and view the README's screenshots show.
PAIR = {"a": TEXT_A, "b": TEXT_B, "layer": "2", "head": "7", "eps": "0.5", "steps": "100"}


@pytest.fixture(scope="module")
def context(browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    ctx = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context, app_server):
    """A fresh page on the typed pair at layer 2, head 7, ε = 0.5, 100 half-steps."""
    pg = open_page(context, app_server, PAIR)
    yield pg
    pg.close()


def test_01_bare_address_opens_the_default_example_with_charts(context, app_server):
    from sinkscope_app.examples import load

    page = open_page(context, app_server)
    bank = load()["bank"]["settings"]
    assert page.locator(".js-plotly-plot").count() >= 2
    assert page.locator(".sk-metric").count() == 8  # the compact metric strip
    assert any("How text A relates to text B · layer 4" in t for t in titles(page))
    q = query(page)
    assert (q["ex"], float(q["eps"]), int(q["steps"])) == ("bank", bank["eps"], bank["steps"])
    no_errors(page)
    page.close()


def test_02_type_a_pair(context, app_server):
    page = open_page(context, app_server, {"eps": "1", "steps": "100"})
    area_a = text_box(page, "a")
    area_b = text_box(page, "b")
    area_a.fill(TEXT_A)
    area_a.press("Control+Enter")
    wait_idle(page)
    area_b.fill(TEXT_B)
    area_b.press("Control+Enter")
    wait_js(page, f"() => ({JS_LAYOUT})().includes('leaped')")
    wait_js(page, f"() => ({JS_LAYOUT})().includes('fox')")
    wait_query(page, "b", TEXT_B)
    wait_idle(page)
    q = query(page)
    assert q["a"] == TEXT_A and q["b"] == TEXT_B and q["ex"] == "custom"
    no_errors(page)
    page.close()


def eps_slider(pg):
    return pg.get_by_role("slider", name="ε — entropy (log scale)")


def steps_slider(pg):
    return pg.get_by_role("slider", name="half-steps (1 = softmax)")


def test_03_move_eps_with_keyboard(context, app_server):
    page = open_page(context, app_server, {**PAIR, "eps": "1"})
    wait_js(page, "() => window.__sinkscope.scrub && window.__sinkscope.scrub.live()")
    eps = eps_slider(page)
    assert eps.get_attribute("aria-valuetext") == "1"
    # Mark the chart divs: a slider move must update them in place (Plotly.react), not
    # unmount and redraw them, which cost ~100 ms a move.
    marked = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .map((g, i) => (g.dataset.sinkscopeMark = String(i)))""")
    assert len(marked) >= 2
    latencies = []
    # 1 → 0.8 → 0.6 → 0.5 (ten log-spaced stops per decade); time each chart update.
    for expect in ("0.8", "0.6", "0.5"):
        eps.focus()
        t0 = time.perf_counter()
        eps.press("ArrowLeft")
        wait_title(page, f"Sinkhorn (ε={expect},")
        latencies.append(time.perf_counter() - t0)
    wait_query(page, "eps", "0.5")
    wait_idle(page)
    assert eps.get_attribute("aria-valuetext") == "0.5"
    assert any("Softmax (ε=0.5)" in t for t in titles(page))
    assert query(page)["eps"] == "0.5"
    assert page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .map(g => g.dataset.sinkscopeMark)""") == marked, "charts were redrawn, not updated"
    print(f"\nε key press → charts updated: median {statistics.median(latencies) * 1000:.0f} ms "
          f"(each: {', '.join(f'{x * 1000:.0f}' for x in latencies)} ms)")
    assert statistics.median(latencies) < 10, latencies
    no_errors(page)
    page.close()


def test_04_compare_screenshot_then_half_steps_to_one_is_softmax(page):
    wait_idle(page, pause=1.0)
    shot(page, "compare")  # the README's picture of the pair
    no_errors(page)
    steps = steps_slider(page)
    steps.focus()
    steps.press("Home")
    wait_title(page, "1 half-step)")
    wait_idle(page)
    values = page.locator(".sk-metric .sk-mvalue").all_inner_texts()
    assert values[0] == values[2], values  # softmax column error == Sinkhorn column error
    wait_query(page, "steps", "1")
    # Back up to 100, one key press (and one chart update) at a time.
    for expect in (2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100):
        steps.focus()
        steps.press("ArrowRight")
        wait_title(page, f"{expect} half-steps")
    wait_query(page, "steps", "100")
    wait_idle(page)
    no_errors(page)


def test_06_views(context, app_server):
    """Graph, Cloud, Convergence and the ε path in turn on one page, each with a screenshot
    (the ε path at a frame halfway along, not the product measure)."""
    page = open_page(context, app_server, PAIR)
    for label, needle, name in [("Graph", "Who sends mass", "graph"),
                                ("Cloud", "Joint PCA", "cloud"),
                                ("Convergence", "Sinkhorn convergence", "convergence"),
                                ("ε path", "Sinkhorn coupling at ε", "eps_path")]:
        choose_view(page, label)
        wait_title(page, needle)
        wait_query(page, "view", {"ε path": "path"}.get(label, label.lower()))
        wait_idle(page, pause=1.0)
        assert page.locator(".js-plotly-plot .main-svg").count() >= 1
        if name == "eps_path":
            rail = page.locator(".js-plotly-plot .slider-rail-rect").first.bounding_box()
            mid = page.locator(".js-plotly-plot .slider-label", has_text="ε=0.146").first
            box = mid.bounding_box()
            page.mouse.click(box["x"] + box["width"] / 2, rail["y"] + rail["height"] / 2)
            wait_title(page, "Sinkhorn coupling at ε = 0.146")
            settle(page, 0.5)
        shot(page, name)
        no_errors(page)
    page.close()


def test_07_click_a_grid_tile_selects_that_head(context, app_server):
    page = open_page(context, app_server, {**PAIR, "head": "mean"})
    choose_view(page, "All heads")
    wait_title(page, "Layers × heads")
    wait_idle(page, pause=1.0)
    target = (2, 7)
    xy = page.evaluate(
        """([layer, head]) => {
            const gd = [...document.querySelectorAll('.js-plotly-plot')]
                .find(g => g.layout.title.text.startsWith('Layers'));
            gd.scrollIntoView({block: 'center'});
            const tr = gd._fullData.find(t => t.name === 'tiles');
            let k = -1;
            for (let i = 0; i < tr.customdata.length; i++) {
                if (tr.customdata[i][0] === layer && tr.customdata[i][1] === head) k = i;
            }
            const fl = gd._fullLayout, box = gd.getBoundingClientRect();
            return [box.left + fl._size.l + fl.xaxis.d2p(tr.x[k]),
                    box.top + fl._size.t + fl.yaxis.d2p(tr.y[k])];
        }""", list(target))
    settle(page, 0.5)
    page.mouse.move(xy[0], xy[1])
    settle(page, 0.3)
    page.mouse.click(xy[0], xy[1])
    wait_query(page, "layer", "2")
    wait_query(page, "head", "7")
    wait_title(page, "Layers × heads")
    wait_idle(page, pause=1.0)
    q = query(page)
    assert (q["layer"], q["head"]) == ("2", "7")
    page.wait_for_selector("text=Currently: layer 2, head 7.", timeout=TIMEOUT)
    outlined = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .find(g => g.layout.title.text.startsWith('Layers')).layout.shapes.length""")
    assert outlined == 1  # the selected tile is outlined
    shot(page, "heads")
    no_errors(page)
    page.close()


def test_08_about_and_url_restores_view(page, app_server):
    choose_view(page, "About")
    page.wait_for_selector("text=Softmax is half a Sinkhorn step", timeout=TIMEOUT)
    wait_query(page, "view", "about")
    settle(page, 1.0)
    shot(page, "about")
    no_errors(page)
    # Open the page's own URL in a fresh tab: the same settings come back.
    choose_view(page, "Compare")
    wait_title(page, "How text A relates")
    wait_query(page, "view", "compare")
    wait_idle(page)
    url = page.url
    q = query(page)
    fresh = page.context.new_page()
    try:
        fresh.goto(url)
        fresh.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)
        wait_idle(fresh)
        wait_title(fresh, "layer 2, head 7")
        assert query(fresh) == q
        assert any("ε=0.5" in t for t in titles(fresh))
        no_errors(fresh)
    finally:
        fresh.close()


def test_09_bad_input_shows_message_not_traceback(context, app_server):
    fresh = context.new_page()
    try:
        fresh.goto(f"{app_server}/?a=%20%20&b=hello&eps=-1&layer=99")
        fresh.wait_for_selector('[data-testid="stAlertContentError"]', timeout=TIMEOUT)
        assert "Text A is empty" in fresh.locator('[data-testid="stAlertContentError"]').inner_text()
        warnings = fresh.locator('[data-testid="stAlertContentWarning"]').all_inner_texts()
        assert any("ε must be a positive number" in w for w in warnings), warnings
        assert fresh.locator('[data-testid="stException"]').count() == 0
        # HTML typed by a user is shown as text, never rendered.
        area_a = text_box(fresh, "a")
        wait_js(fresh, """() => !document.querySelector('[data-testid="stStatusWidget"]')""")
        area_a.fill("<b>bold</b> and <i>it</i>")
        area_a.press("Control+Enter")
        wait_js(fresh, "() => document.querySelectorAll('.js-plotly-plot .main-svg').length > 0")
        wait_idle(fresh)
        wait_js(fresh, """() => [...document.querySelectorAll('.js-plotly-plot .ytick text')]
            .some(e => e.textContent.includes('<'))""")
        assert fresh.locator(".js-plotly-plot svg b, .js-plotly-plot svg i").count() == 0
        no_errors(fresh)
    finally:
        fresh.close()
