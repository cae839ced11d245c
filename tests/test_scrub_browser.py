"""The live sliders in real headless Chromium against a real server.

While a slider moves (keys or a pointer drag) the charts and the metric strip are redrawn
from the precomputed lattice, with no message to the server; on release the value goes to
the server once, which then draws the exact figure of the same frame — and the two must
agree. Values the lattice does not hold (here: half-steps above 1,000, the server allows
1,500) are computed on release; texts above the size budget fall back to the server path.
No page error and no console error (a key press in every view: tests/test_privacy_browser.py).
"""

from __future__ import annotations

from urllib.parse import urlencode

import re

import pytest

from tests.support.browser import query, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TIMEOUT = 90_000
EPS_NAME = "ε — entropy (log scale)"
STEPS_NAME = "half-steps (1 = softmax)"
LONG = " ".join(["river bank money water stone bridge"] * 14)  # > 64 tokens a text

# Every websocket message the page sends, with its time (performance.now()).
WS_SPY = """(() => {
  const send = WebSocket.prototype.send;
  window.__wsSent = [];
  WebSocket.prototype.send = function (d) {
    window.__wsSent.push(performance.now());
    return send.call(this, d);
  };
})()"""

# The bound charts as plotly holds them: their parts (from viz's meta) and numbers.
CAPTURE = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .filter(g => g.layout && g.layout.meta && g.isConnected).map(g => {
    const arr = (v) => v == null ? null : ArrayBuffer.isView(v) ? Array.from(v)
      : Array.isArray(v) ? v.map(r => ArrayBuffer.isView(r) ? Array.from(r) : r) : v;
    return {kind: g.layout.meta.kind, source: g.dataset.source, frame: g.dataset.frame,
      titles: [(g.layout.title || {}).text || '', ...(g.layout.annotations || []).map(a => a.text)],
      // colour limits: each colour axis's, and each trace's own (the difference map)
      limits: Object.fromEntries(Object.keys(g._fullLayout).filter(k => /^coloraxis\d*$/.test(k))
        .map(k => [k, [g._fullLayout[k].cmin, g._fullLayout[k].cmax]])),
      legend: g._fullData.filter(t => t.showlegend).map(t => [t.name, t.legendrank]),
      traces: g._fullData.filter(t => t.meta && t.meta.part).map(t => ({
        part: [t.meta.part, t.meta.plan, t.meta.cls, t.meta.bin, t.meta.side].join(':'),
        coloraxis: t.coloraxis || null, zlim: t.type === 'heatmap' && !t.coloraxis
          ? [t.zmin, t.zmax] : null,
        z: arr(t.z), x: arr(t.x), y: arr(t.y)}))};
  })"""


# The titles a person sees (SVG text), chart by chart.
SHOWN_TITLES = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .filter(g => g.layout && g.layout.meta && g.isConnected)
  .map(g => [...g.querySelectorAll('.gtitle, .annotation-text')].map(t => t.textContent).join(' | '))"""


def flat(v):
    out = []

    def rec(x):
        if isinstance(x, (list, tuple)):
            for y in x:
                rec(y)
        else:
            out.append(x)
    rec(v)
    return out


NUM = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]\d+)?")


def same_text(a: str, b: str) -> bool:
    """Equal up to numbers that differ only in rounding noise (|Δ| ≤ 1e-9 or 1 %)."""
    if NUM.sub("#", a) != NUM.sub("#", b):
        return False
    return all(abs(float(x) - float(y)) <= 1e-9 + 1e-2 * abs(float(y))
               for x, y in zip(NUM.findall(a), NUM.findall(b)))


def assert_same_figures(browser_side: list[dict], server_side: list[dict]) -> None:
    """The browser's frame from the lattice equals the server's exact figure: maps within
    16-bit quantisation, bars and edges within float32, titles up to rounding noise."""
    assert [c["kind"] for c in browser_side] == [c["kind"] for c in server_side]
    for c, s in zip(browser_side, server_side):
        assert [t["part"] for t in c["traces"]] == [t["part"] for t in s["traces"]], c["kind"]
        assert [t["coloraxis"] for t in c["traces"]] == [t["coloraxis"] for t in s["traces"]]
        assert c["legend"] == s["legend"], c["kind"]  # every entry, in its fixed place
        for title_c, title_s in zip(c["titles"], s["titles"]):
            assert same_text(title_c, title_s), (title_c, title_s)
        # plans travel as 16-bit integers scaled to each ε's largest mass
        top = max([abs(v) for t in s["traces"] for key in ("z", "x", "y")
                   for v in flat(t[key] or []) if isinstance(v, (int, float))] + [1e-300])
        # the colour limits follow one rule (viz.heatmaps.compare_limits / difference_limit)
        assert c["limits"].keys() == s["limits"].keys(), c["kind"]
        for axis, (lo, hi) in s["limits"].items():
            assert abs(c["limits"][axis][0] - lo) <= 1e-12, (c["kind"], axis)
            assert abs(c["limits"][axis][1] - hi) <= 2e-4 * hi, (c["kind"], axis, c["limits"], s["limits"])
        for tc, ts in zip(c["traces"], s["traces"]):
            if ts["zlim"]:
                assert all(abs(p - q) <= 2e-4 * abs(q) + 1e-300 for p, q in zip(tc["zlim"], ts["zlim"])), (
                    c["kind"], tc["zlim"], ts["zlim"])
        if c["kind"] == "graph":
            assert_same_edges(c, s)
            continue
        for tc, ts in zip(c["traces"], s["traces"]):
            for key in ("z", "x", "y"):
                if ts[key] is None:
                    continue
                vc, vs = flat(tc[key]), flat(ts[key])
                assert len(vc) == len(vs), (c["kind"], tc["part"], key)
                nums = [(p, q) for p, q in zip(vc, vs) if isinstance(q, (int, float))]
                assert all(p is not None for p, _ in nums), (tc["part"], key)
                worst = max([abs(p - q) for p, q in nums] + [0.0])
                assert worst <= 2e-4 * top + 1e-9, (c["kind"], tc["part"], key, worst, top)


def assert_same_edges(c: dict, s: dict) -> None:
    """Per panel, the same edges (segments A[i] → B[j]). Masses that tie to within the
    16-bit display precision may pick a different partner or bin: allow a few."""
    def edges(fig, plan):
        out = []
        for t in fig["traces"]:
            if t["part"].startswith(f"edges:{plan}:"):
                y = flat(t["y"])
                out += [(round(y[k], 6), round(y[k + 1], 6)) for k in range(0, len(y), 3)]
        return out

    for plan in ("softmax", "sinkhorn"):
        ec, es = edges(c, plan), edges(s, plan)
        assert abs(len(ec) - len(es)) <= max(1, len(es) // 20), (plan, len(ec), len(es))
        common = len(set(ec) & set(es))
        assert common >= 0.9 * len(set(es)), (plan, common, len(set(es)))


@pytest.fixture(scope="module")
def server(app_server):
    """The session's server: its half-step slider ends at 1,500 (tests/conftest.py)."""
    return app_server


@pytest.fixture(scope="module")
def context(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
    ctx.add_init_script(WS_SPY)
    yield ctx
    ctx.close()


def open_page(context, server: str, query: str, *, live: bool = True):
    """A fresh page at ``server/?query`` (each test states the sliders it starts from),
    with its page and console errors collected in ``pg.problems``; with ``live``, once its
    sliders draw from the lattice."""
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT)
    pg.problems = []
    pg.on("pageerror", lambda e: pg.problems.append(f"pageerror: {e}"))
    pg.on("console", lambda m: pg.problems.append(f"console {m.type}: {m.text}")
          if m.type in ("error", "warning") else None)
    pg.goto(f"{server}/?{query}")
    pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)
    if live:
        wait_js(pg, "() => window.__sinkscope && window.__sinkscope.scrub && "
                    "window.__sinkscope.scrub.live()")
    wait_js(pg, "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')")
    return pg


@pytest.fixture
def page(context, server):
    """A fresh page at ε = 1 and 100 half-steps."""
    pg = open_page(context, server, "eps=1&steps=100")
    yield pg
    pg.close()


@pytest.fixture
def page_half(context, server):
    """A fresh page at ε = 0.5 and 100 half-steps."""
    pg = open_page(context, server, "eps=0.5&steps=100")
    yield pg
    pg.close()


def wait_js(pg, expression: str, arg=None) -> None:
    pg.wait_for_function(expression, arg=arg, timeout=TIMEOUT, polling=50)


def stats(pg) -> dict:
    return pg.evaluate("({...window.__sinkscope.stats, ws: window.__wsSent.length, "
                       "wsTimes: window.__wsSent})")


def slider(pg, name: str):
    """The one slider called ``name``, once a rerun in flight has replaced the sliders
    (while Streamlit swaps a component, the old copy can stay in the page for a moment)."""
    wait_js(pg, "() => document.querySelectorAll('.sk-scrub').length === 1")
    return pg.get_by_role("slider", name=name)


def wait_browser_frame(pg, frame: str) -> None:
    """Wait until every bound chart shows ``frame`` ("ε,t"), drawn by plotly in the browser
    from the lattice (not a canvas preview, not yet the server's figure)."""
    wait_js(pg, """f => { const g = [...document.querySelectorAll('.js-plotly-plot')]
        .filter(g => g.layout && g.layout.meta && g.isConnected);
        return g.length > 0 && g.every(x => x.dataset.source === 'browser' && x.dataset.frame === f); }""",
            frame)


def wait_server_frame(pg, frame: str) -> None:
    """Wait until every bound chart shows the server's own figure of ``frame`` ("ε,t") and
    the address bar says so (the server writes it at the end of its run)."""
    wait_js(pg, """f => { const g = [...document.querySelectorAll('.js-plotly-plot')]
        .filter(g => g.layout && g.layout.meta && g.isConnected);
        const q = new URLSearchParams(location.search);
        return g.length > 0 && g.every(x => x.dataset.source === 'server' && x.dataset.frame === f)
          && q.get('eps') + ',' + q.get('steps') === f
          && !document.querySelector('[data-testid="stStatusWidget"]'); }""", frame)


def metrics(pg) -> dict[str, str]:
    return dict(zip(pg.locator(".sk-metric .sk-mlabel").all_inner_texts(),
                    pg.locator(".sk-metric .sk-mvalue").all_inner_texts()))


def test_01_two_real_sliders_and_the_first_screen(page):
    eps, steps = slider(page, EPS_NAME), slider(page, STEPS_NAME)
    assert (eps.get_attribute("aria-valuenow"), eps.get_attribute("aria-valuetext")) == ("1", "1")
    assert eps.get_attribute("aria-valuemin") == "0.01" and eps.get_attribute("aria-valuemax") == "100"
    assert steps.get_attribute("aria-valuenow") == "100"
    assert steps.get_attribute("aria-valuetext") == "100 half-steps"
    assert steps.get_attribute("aria-valuemax") == "1500"
    assert eps.get_attribute("tabindex") == "0" and eps.get_attribute("aria-describedby")
    # in the page's own document (no iframe), next to plotly's charts
    assert page.evaluate("() => document.querySelector('[role=slider]').ownerDocument === document")
    # At 1400 × 1000 both heatmaps and all four marginal bar panels are on the first screen
    boxes = page.evaluate("""() => { const g = [...document.querySelectorAll('.js-plotly-plot')]
        .find(g => g.layout.meta && g.layout.meta.kind === 'compare');
        return ['xy', 'x2y2', 'x3y3', 'x4y4', 'x5y5', 'x6y6'].map(id => {
          const r = g.querySelector('.draglayer .' + id + ' .nsewdrag').getBoundingClientRect();
          return [r.top, r.bottom]; }); }""")
    assert len(boxes) == 6 and all(0 <= top and bottom <= 1000 for top, bottom in boxes), boxes
    assert page.locator(".sk-metric").count() == 8
    # every metric's help text is reachable (a tooltip named by aria-describedby)
    first = page.locator(".sk-metric").first
    tip = first.get_attribute("aria-describedby")
    assert "softmax" in page.locator(f"#{tip}").text_content()
    first.hover()
    assert page.locator(f"#{tip}").is_visible()
    # the browser writes numbers as the server does (engine.relation.summary.fmt)
    from engine.relation.summary import fmt

    values = [0.0, 1.0, -1.0, 0.5, 1 / 3, 2 / 3, 0.001, 0.000999, 0.0012345, 99950.0, 12345.6,
              1e5, -2.5e-17, 3e-17, 123.4, 999.5, 1000.0, 10.0, 0.1 + 0.2, 7.77e8,
              float("inf"), float("-inf"), float("nan")]
    got = page.evaluate("""xs => xs.map(x => window.__sinkscope.fmt(
        x === 'inf' ? Infinity : x === '-inf' ? -Infinity : x === 'nan' ? NaN : x))""",
                        [v if v == v and abs(v) != float("inf") else str(v) for v in values])
    assert got == [fmt(v) for v in values]


def test_02_keys_redraw_from_the_lattice_without_a_server_request(page):
    eps = slider(page, EPS_NAME)
    marks = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .map((g, i) => (g.dataset.skMark = String(i)))""")
    before = metrics(page)
    page.evaluate("window.__sinkscope.keyCommitMs = 600000")  # hold the value until blur
    ws_start = stats(page)["ws"]
    for value in ("0.8", "0.6", "0.5"):
        s0 = stats(page)
        t_key = page.evaluate("performance.now()")
        eps.press("ArrowLeft")
        wait_js(page, f"() => window.__sinkscope.stats.redraws > {s0['redraws']}")
        s1 = stats(page)
        # drawn from the lattice before any message left for the server
        sent = [t for t in s1["wsTimes"] if t > t_key]
        assert all(t > s1["last"] for t in sent), (sent, s1["last"])
        assert eps.get_attribute("aria-valuetext") == value
        compare = page.evaluate(SHOWN_TITLES)[0]  # the maps in view are redrawn at once
        assert f"Sinkhorn (ε={value}, 100 half-steps)" in compare, compare
        # the maps' titles keep their two lines, also while painted on canvases
        lines = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
            .find(g => g.layout.meta && g.layout.meta.kind === 'compare')
            .querySelectorAll('.annotation-text')[1].querySelectorAll('tspan.line').length""")
        assert lines == 2 and "<br>" not in compare, (lines, compare)
    assert metrics(page) != before
    # once the keys rest, plotly redraws every chart from the lattice, and the address bar
    # follows; one message goes to the server when the slider lets go (blur; normally a
    # pause of 450 ms), and the server draws the same frame exactly
    wait_browser_frame(page, "0.5,100")
    wait_js(page, "() => new URLSearchParams(location.search).get('eps') === '0.5'")
    assert all("ε=0.5" in t for t in page.evaluate(SHOWN_TITLES))
    assert stats(page)["ws"] == ws_start, "a message went to the server before the release"
    browser_side = page.evaluate(CAPTURE)
    strip = page.locator(".sk-metric").all_inner_texts()
    assert {c["source"] for c in browser_side} == {"browser"}
    assert stats(page)["commits"] == 0
    page.evaluate("window.__sinkscope.keyCommitMs = 450")
    eps.evaluate("e => e.blur()")
    wait_server_frame(page, "0.5,100")
    assert stats(page)["commits"] == 1
    assert_same_figures(browser_side, page.evaluate(CAPTURE))
    # the metric strip the browser computed is the one the server computes
    wait_js(page, "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')")
    for mine, theirs in zip(strip, page.locator(".sk-metric").all_inner_texts()):
        assert same_text(mine, theirs), (mine, theirs)
    assert page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .map(g => g.dataset.skMark)""") == marks, "charts were replaced, not updated"


def test_03_a_pointer_drag_redraws_while_moving_and_sends_once(page_half):
    page = page_half
    track = page.locator(".sk-track").nth(1).bounding_box()  # half-steps
    y = track["y"] + track["height"] / 2
    x0, x1 = track["x"] + 12, track["x"] + track["width"] - 12
    s0 = stats(page)
    page.mouse.move(x0 + 0.6 * (x1 - x0), y)
    page.mouse.down()
    seen = set()
    for k in range(12):  # from about 40 half-steps down to 2, one stop at a time
        page.mouse.move(x0 + (0.6 - 0.05 * k) * (x1 - x0), y)
        seen.add(slider(page, STEPS_NAME).get_attribute("aria-valuetext"))
        settle(page, 0.05)
    s1 = stats(page)
    assert s1["ws"] == s0["ws"], "a message went to the server during the drag"
    assert s1["redraws"] - s0["redraws"] >= len(seen) // 2 >= 3, (s1["redraws"], seen)
    page.mouse.up()
    value = slider(page, STEPS_NAME).get_attribute("aria-valuenow")
    wait_server_frame(page, f"0.5,{value}")
    s2 = stats(page)
    assert s2["commits"] == s0["commits"] + 1 and s2["ws"] >= s0["ws"] + 1


def test_04_half_step_one_is_softmax_in_the_browser(page_half):
    page = page_half
    steps = slider(page, STEPS_NAME)
    s0 = stats(page)
    steps.press("Home")
    wait_js(page, f"() => window.__sinkscope.stats.redraws > {s0['redraws']}")
    shown = metrics(page)
    assert shown["Softmax column error"] == shown["Sinkhorn column error"]
    assert "Half-step 1" in page.inner_text(".sk-note")
    wait_js(page, """() => [...document.querySelectorAll('.js-plotly-plot')].some(g =>
        g.layout.meta && g.layout.meta.kind === 'compare' && g.dataset.frame === '0.5,1'
        && g.dataset.source !== 'preview')""")
    browser_side = page.evaluate(CAPTURE)
    compare = next(c for c in browser_side if c["kind"] == "compare")
    soft, sink = (flat(t["z"]) for t in compare["traces"] if t["part"].startswith("map"))
    assert max(abs(p - q) for p, q in zip(soft, sink)) <= 1e-12  # Sinkhorn's map is softmax's
    # ... so the difference says "identical" on a scale fixed by the largest mass
    wait_js(page, """() => [...document.querySelectorAll('.js-plotly-plot')].some(g =>
        g.layout.meta && g.layout.meta.kind === 'difference' && g.dataset.frame === '0.5,1')""")
    diff = next(c for c in page.evaluate(CAPTURE) if c["kind"] == "difference")
    assert "1 half-step · identical" in diff["titles"][0], diff["titles"]
    (lim,) = [t["zlim"] for t in diff["traces"]]
    assert lim[1] == -lim[0] and abs(lim[1] - max(soft)) <= 2e-4 * max(soft)
    wait_server_frame(page, "0.5,1")
    server_diff = next(c for c in page.evaluate(CAPTURE) if c["kind"] == "difference")
    assert "identical" in server_diff["titles"][0]


def test_05_a_value_the_lattice_lacks_is_computed_on_release(page_half):
    page = page_half
    steps = slider(page, STEPS_NAME)
    steps.press("End")  # 1,500 half-steps: above the 1,000 the lattice holds
    wait_js(page, "() => document.querySelector('.sk-note').textContent.includes('when you let go')")
    assert "1,000 half-steps" in page.inner_text(".sk-note")
    wait_server_frame(page, "0.5,1500")
    titles = " ".join(t for c in page.evaluate(CAPTURE) for t in c["titles"])
    assert "1,500 half-steps" in titles
    assert query(page)["steps"] == "1500"


def test_06_the_graph_follows_the_sliders(context, server):
    page = open_page(context, server, "eps=0.5&steps=1500")
    page.locator('[data-testid="stButtonGroup"] button', has_text="Graph").first.click()
    wait_js(page, """() => [...document.querySelectorAll('.js-plotly-plot')]
        .some(g => g.layout && g.layout.meta && g.layout.meta.kind === 'graph'
                   && g.dataset.source === 'server')""")
    wait_server_frame(page, "0.5,1500")
    # the run that drew it ends by removing the heatmap it replaced
    wait_js(page, f"() => ({CAPTURE})().length === 1")
    s0 = stats(page)
    slider(page, STEPS_NAME).press("Home")
    wait_js(page, f"() => window.__sinkscope.stats.redraws > {s0['redraws']}")
    (graph,) = page.evaluate(CAPTURE)
    assert graph["kind"] == "graph" and graph["source"] == "browser"
    assert "ε=0.5, 1 half-step" in " ".join(graph["titles"])
    for key in ("ArrowRight", "ArrowRight"):  # 3 half-steps
        slider(page, STEPS_NAME).press(key)
    wait_js(page, "() => document.querySelector('.js-plotly-plot').dataset.frame === '0.5,3'")
    browser_side = page.evaluate(CAPTURE)
    wait_server_frame(page, "0.5,3")
    assert_same_figures(browser_side, page.evaluate(CAPTURE))
    page.close()


def test_07_a_shared_link_restores_both_values(page_half):
    page = page_half
    page.locator('[data-testid="stButtonGroup"] button', has_text="Graph").first.click()
    steps = slider(page, STEPS_NAME)
    steps.press("Home")
    for _ in range(2):
        steps.press("ArrowRight")
    wait_server_frame(page, "0.5,3")
    url = page.url
    q = query(page)
    assert (q["eps"], q["steps"], q["view"]) == ("0.5", "3", "graph")
    fresh = page.context.new_page()
    try:
        fresh.goto(url)
        fresh.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)
        assert slider(fresh, EPS_NAME).get_attribute("aria-valuetext") == "0.5"
        assert slider(fresh, STEPS_NAME).get_attribute("aria-valuenow") == "3"
        wait_js(fresh, "() => [...document.querySelectorAll('.js-plotly-plot')].some(g => "
                       "(g.layout.annotations || []).some(a => a.text.includes('ε=0.5, 3 half-steps')))")
    finally:
        fresh.close()


def test_09_long_texts_fall_back_to_the_server(context, server):
    """Texts over the live budget (here from a shared link; typing them is
    ``test_newcomer_browser``'s long paste): the sliders say why they are not live, and a
    key goes to the server at once."""
    page = open_page(context, server, urlencode(
        {"a": LONG, "b": LONG.replace("river", "forest"), "eps": 1, "steps": 100}), live=False)
    problems = page.problems
    wait_js(page, "() => (document.querySelector('.sk-note') || {textContent: ''})"
                  ".textContent.includes('whose frames are precomputed')")  # it may be redrawn
    assert page.evaluate("window.__sinkscope.scrub.live()") is False
    eps = slider(page, EPS_NAME)
    start = float(eps.get_attribute("aria-valuenow"))
    s0 = stats(page)
    eps.press("ArrowLeft")  # no lattice: the key goes to the server at once
    wait_js(page, f"() => window.__wsSent.length > {s0['ws']}")
    new = eps.get_attribute("aria-valuetext")
    assert float(eps.get_attribute("aria-valuenow")) < start
    wait_js(page, """e => [...document.querySelectorAll('.js-plotly-plot')].some(g =>
        (g.layout.annotations || []).some(a => a.text.includes('ε=' + e + ',')))""", new)
    wait_js(page, "e => new URLSearchParams(location.search).get('eps') === e", new)
    assert not problems, problems
    page.close()


def test_11_per_plan_scales_in_the_browser_equal_the_server(context, server):
    """Each map on its own colour scale: the frames drawn from the lattice carry the same
    two colour axes and limits as the server's figure of the same frame."""
    pg = open_page(context, server, "eps=1&steps=100&view=compare&cscale=per_plan")
    try:
        wait_server_frame(pg, "1,100")
        pg.evaluate("window.__sinkscope.keyCommitMs = 600000")  # hold the value until blur
        eps = slider(pg, EPS_NAME)
        for _ in range(3):  # 1 → 0.8 → 0.6 → 0.5
            eps.press("ArrowLeft")
        wait_browser_frame(pg, "0.5,100")
        browser_side = pg.evaluate(CAPTURE)
        compare = next(c for c in browser_side if c["kind"] == "compare")
        assert set(compare["limits"]) == {"coloraxis", "coloraxis2"}
        assert compare["limits"]["coloraxis"][1] != compare["limits"]["coloraxis2"][1]
        assert [t["coloraxis"] for t in compare["traces"] if t["part"].startswith("map")] == [
            "coloraxis", "coloraxis2"]
        eps.evaluate("e => e.blur()")
        wait_server_frame(pg, "0.5,100")
        assert_same_figures(browser_side, pg.evaluate(CAPTURE))
        assert not pg.problems, pg.problems
    finally:
        pg.close()
