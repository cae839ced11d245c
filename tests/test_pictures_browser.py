"""The Compare view's pictures in real headless Chromium: hover on long texts, presentation
mode on a 1920 × 1080 screen, and titles, legend and subplot titles that never overlap on
narrow or zoomed pages. Each test opens the page it needs from an explicit URL.

Screenshots go to SINKSCOPE_SCREENSHOTS (or a temporary folder) for a person to look at.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.support.browser import TMP_SHOTS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TIMEOUT = 120_000
SHOTS = Path(os.environ.get("SINKSCOPE_SCREENSHOTS") or TMP_SHOTS / "pictures")
WORDS = ("river bank money water stone bridge forest mountain valley window garden "
         "letter silver orange winter summer").split()
# about 250 tokens each: the model reads at most 256
LONG_A = " ".join(WORDS[k % len(WORDS)] + ("s" if k % 3 == 0 else "") for k in range(248))
LONG_B = " ".join(WORDS[(k * 7) % len(WORDS)] for k in range(248))

# Boxes (viewport pixels) of what must never overlap in a chart: its title, each line of
# its annotations (the maps' titles, the difference's note) and its legend.
BOXES = """g => {
  const box = (e) => { const r = e.getBoundingClientRect();
    return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
  const out = [];
  for (const e of g.querySelectorAll('.g-gtitle text.gtitle')) out.push(['title', box(e)]);
  g.querySelectorAll('.annotation-text').forEach((e, k) => {
    const lines = e.querySelectorAll('tspan.line');
    (lines.length ? [...lines] : [e]).forEach((t, q) => out.push([`annotation ${k}.${q}`, box(t)]));
  });
  for (const e of g.querySelectorAll('g.legend')) out.push(['legend', box(e)]);
  const c = box(g);
  return {chart: c, boxes: out.filter(([, b]) => b.r > b.l && b.b > b.t)};
}"""


@pytest.fixture(scope="module")
def scaled(browser):
    """``scaled(scale)``: the module's browser context at that device scale factor (made on
    first use, closed at the module's end); each test's page sets its own viewport."""
    made: dict[float, object] = {}

    def get(scale: float):
        if scale not in made:
            made[scale] = browser.new_context(device_scale_factor=scale)
        return made[scale]

    yield get
    for ctx in made.values():
        ctx.close()


def open_page(scaled, url: str, *, width: int, height: int, scale: float = 1.0):
    """A fresh page at ``url`` (viewport CSS pixels × scale), its charts drawn."""
    pg = scaled(scale).new_page()
    pg.set_viewport_size({"width": width, "height": height})
    pg.set_default_timeout(TIMEOUT)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(url)
    pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)
    wait_idle(pg)
    pg.errors = errors
    return pg


def wait_idle(pg) -> None:
    """No rerun in flight, every chart drawn from the server's figure."""
    pg.wait_for_function("""() => !document.querySelector('[data-testid="stStatusWidget"]')
        && [...document.querySelectorAll('.js-plotly-plot')].length >= 2
        && [...document.querySelectorAll('.js-plotly-plot')].every(g => g._fullLayout
            && (!g.layout.meta || g.dataset.source === 'server'))""",
                         timeout=TIMEOUT, polling=100)
    pg.evaluate("() => document.fonts.ready.then(() => 1)")


def chart(pg, kind: str):
    """The chart whose figure viz built as ``kind`` ("compare", "difference")."""
    return pg.locator(".js-plotly-plot").nth(kinds(pg).index(kind))


def kinds(pg) -> list[str]:
    return pg.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .map(g => (g.layout.meta && g.layout.meta.kind) || '')""")


def overlaps(a: dict, b: dict, pad: float = 0.5) -> bool:
    return (a["l"] < b["r"] - pad and b["l"] < a["r"] - pad
            and a["t"] < b["b"] - pad and b["t"] < a["b"] - pad)


def assert_no_overlap(pg, kind: str, where: str) -> None:
    got = chart(pg, kind).evaluate(BOXES)
    boxes, c = got["boxes"], got["chart"]
    names = [n for n, _ in boxes]
    assert "title" in names and (kind != "compare" or "legend" in names), (where, names)
    if kind == "compare":
        assert {"annotation 0.0", "annotation 0.1", "annotation 1.0",
                "annotation 1.1"} <= set(names)  # the maps' titles, two lines each
    for k, (n1, b1) in enumerate(boxes):
        # inside the chart, not cut off at its edges
        assert c["l"] - 1 <= b1["l"] and b1["r"] <= c["r"] + 1, (where, kind, n1, b1, c)
        assert c["t"] - 1 <= b1["t"] and b1["b"] <= c["b"] + 1, (where, kind, n1, b1, c)
        for n2, b2 in boxes[k + 1:]:
            assert not overlaps(b1, b2), (where, kind, n1, n2, b1, b2)


def test_hover_on_a_250_by_250_map_names_the_tokens(app_server, scaled):
    query = {"a": LONG_A, "b": LONG_B, "eps": 1, "steps": 100, "view": "compare"}
    url = f"{app_server}/?{urlencode(query)}"
    pg = open_page(scaled, url, width=1400, height=1400)
    try:
        hover = chart(pg, "compare").evaluate("g => g.layout.meta.hover")
        n, m = len(hover["rows"]), len(hover["cols"])
        assert n >= 240 and m >= 240 and hover["rows"][7].startswith("A[7] ")  # ~250 × 250
        g = chart(pg, "compare")
        g.scroll_into_view_if_needed()
        for plan_axes, (i, j) in ((("x", "y"), (37, 120)), (("x2", "y2"), (200, 9))):
            xy = g.evaluate("""(g, [ax, i, j]) => { const fl = g._fullLayout;
                const xa = fl['xaxis' + ax[0].slice(1)], ya = fl['yaxis' + ax[1].slice(1)];
                const r = g.getBoundingClientRect();
                return [r.left + xa._offset + xa.l2p(j), r.top + ya._offset + ya.l2p(i)]; }""",
                            [list(plan_axes), i, j])
            pg.mouse.move(xy[0] + 40, xy[1] + 40)
            pg.mouse.move(*xy)
            pg.wait_for_function(
                "([i, j]) => { const t = document.querySelector('.sk-hover');"
                " const m = t && t.style.display === 'block'"
                " && t.textContent.match(/^A\\[(\\d+)\\][^\\n]*\\nB\\[(\\d+)\\]/);"
                " return !!m && Math.abs(m[1] - i) <= 1 && Math.abs(m[2] - j) <= 1; }",
                arg=[i, j], timeout=TIMEOUT)
            tip = pg.evaluate("""() => { const t = document.querySelector('.sk-hover');
                const r = t.getBoundingClientRect();
                const own = [...document.querySelectorAll('.hoverlayer g.hovertext')];
                return {text: t.textContent, children: t.children.length, w: r.width,
                        h: r.height, font: parseFloat(getComputedStyle(t).fontSize),
                        plotly: own.map(e => e.textContent),
                        shown: own.filter(e => e.style.display !== 'none').length}; }""")
            lines = tip["text"].split("\n")
            # the cell under the pointer (within one cell of the aim: cells are ~2 px wide),
            # as plotly's own label (hidden) numbers it, with both its tokens named
            (label,) = tip["plotly"]
            i2, j2 = (int(x) for x in re.match(r"A\[(\d+)\] → B\[(\d+)\]", label).groups())
            assert abs(i2 - i) <= 1 and abs(j2 - j) <= 1, (label, i, j)
            assert lines[0] == hover["rows"][i2] and lines[0].startswith(f"A[{i2}] "), lines
            assert lines[1] == hover["cols"][j2] and lines[1].startswith(f"B[{j2}] "), lines
            assert lines[2].startswith("mass ") and lines[2] in label, (lines, label)
            assert tip["children"] == 0 and tip["shown"] == 0  # text only; one label shown
            assert tip["w"] > 0 and tip["h"] > 0 and tip["font"] >= 11
        pg.screenshot(path=str(SHOTS / "hover_250x250.png"))
        pg.mouse.move(5, 5)
        pg.wait_for_function("() => document.querySelector('.sk-hover').style.display === 'none'",
                             timeout=TIMEOUT)
        assert not pg.errors, pg.errors
    finally:
        pg.close()


# Every text a person reads on the main page, with its font size: SVG texts of the charts
# (not the hover layer) and every element with text of its own outside the charts.
TEXT_SIZES = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const seen = (e) => { const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.bottom > 0 && r.top < innerHeight
      && getComputedStyle(e).visibility !== 'hidden'; };
  const out = [];
  for (const e of main.querySelectorAll('.js-plotly-plot .main-svg text')) {
    if (e.closest('.hoverlayer') || !e.textContent.trim() || !seen(e)) continue;
    out.push([e.textContent.trim().slice(0, 40), parseFloat(getComputedStyle(e).fontSize)]);
  }
  for (const e of main.querySelectorAll('*')) {
    if (e.closest('svg') || e.closest('canvas') || !seen(e)) continue;
    const own = [...e.childNodes].some(c => c.nodeType === 3 && c.textContent.trim());
    if (own) out.push([e.textContent.trim().slice(0, 40), parseFloat(getComputedStyle(e).fontSize)]);
  }
  return out;
}"""


def test_presentation_mode_fits_one_1920_by_1080_screen(app_server, scaled):
    url = f"{app_server}/?eps=1&steps=1&view=compare&cscale=per_plan&present=on"
    pg = open_page(scaled, url, width=1920, height=1080)
    try:
        pg.screenshot(path=str(SHOTS / "presentation_1920x1080.png"))
        # both sliders and both maps are on the screen, nothing scrolled
        assert pg.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop") == 0
        for s in pg.get_by_role("slider").all():
            b = s.bounding_box()
            assert b and 0 <= b["y"] and b["y"] + b["height"] <= 1080, b
        # ... and their labels are not under the page's header (the sidebar is folded away)
        covered = pg.evaluate("""() => [...document.querySelectorAll('.sk-label')].filter(e => {
            const r = e.getBoundingClientRect();
            const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
            return !hit || !e.contains(hit); }).map(e => e.textContent)""")
        assert not covered, covered
        maps = chart(pg, "compare").evaluate("""g => ['xy', 'x2y2'].map(id => {
            const r = g.querySelector('.draglayer .' + id + ' .nsewdrag').getBoundingClientRect();
            return [r.left, r.top, r.right, r.bottom]; })""")
        for left, top, right, bottom in maps:
            assert 0 <= left < right <= 1920 and 0 <= top < bottom <= 1080, maps
            assert bottom - top >= 250, maps  # maps, not slivers
        sizes = pg.evaluate(TEXT_SIZES)
        small = [(t, px) for t, px in sizes if px < 18 - 1e-6]
        assert len(sizes) > 50 and not small, small
        # the toggle is in the sidebar and in the address
        assert pg.get_by_role("switch", name="Presentation mode").is_checked()
        assert "present=true" in pg.url
        assert_no_overlap(pg, "compare", "presentation 1920")
        assert not pg.errors, pg.errors
    finally:
        pg.close()


@pytest.mark.parametrize("width, height, scale, present", [
    (1280, 800, 1.0, False),   # a laptop
    (1920, 1080, 1.0, False),  # a projector
    (1280, 720, 1.5, True),    # a 1920 × 1080 projector at 150 % zoom, presentation mode
    (1280, 720, 1.5, False),
    (853, 900, 1.5, False),    # a 1280 px screen at 150 % zoom
])
def test_titles_legend_and_map_titles_never_overlap(app_server, scaled, width, height, scale,
                                                    present):
    where = f"{width}x{height}@{scale}{' present' if present else ''}"
    # ε = 0.01 and a count the lattice lacks: the longest titles (not converged)
    query = {"eps": "0.01", "steps": "9", "view": "compare", "present": str(present).lower()}
    pg = open_page(scaled, f"{app_server}/?{urlencode(query)}", width=width,
                        height=height, scale=scale)
    try:
        for kind in ("compare", "difference"):
            chart(pg, kind).scroll_into_view_if_needed()
            assert_no_overlap(pg, kind, where)
        titles = chart(pg, "compare").evaluate(
            "g => [...g.querySelectorAll('.annotation-text')].map(t => t.textContent)")
        assert any("not converged" in t for t in titles), titles
        chart(pg, "compare").screenshot(path=str(SHOTS / f"compare_{where.replace(' ', '_')}.png"))
        assert not pg.errors, pg.errors
    finally:
        pg.close()
