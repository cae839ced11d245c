"""The Spanish Learn page as a Spanish-speaking student sees it on a 1400 × 1000 laptop, in
headless Chromium against a real ``streamlit run`` server: every step's figure keeps its
titles inside the figure (nothing cut at the edge, nothing shortened by plotly), no
point's marker covers another point's label, the numbers on the page and in the figures
are written with decimal commas and without "e-05" notation (step 5's values that agree to
rounding read "0" or "≈ 0"), and step 8's map names its axes texto A / texto B. A screenshot of each step goes to a temporary folder.
"""

from __future__ import annotations

import re

import pytest

from sinkscope_app.learn.text import N_STEPS, STEPS, UI
from tests.support.browser import TIMEOUT, TMP_SHOTS, no_errors, query, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIEWPORT = {"width": 1400, "height": 1000}
STEP_SHOTS = TMP_SHOTS / "learn-es-steps"

# Every text plotly drew in a figure (titles, annotations, legend, tick labels) with its
# box, and the figure's own box.
JS_TEXTS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(g => {
    const box = g.querySelector('.main-svg').getBoundingClientRect();
    const texts = [...g.querySelectorAll('.main-svg text')].filter(t => t.textContent.trim())
        .map(t => {
            const r = t.getBoundingClientRect();
            const kind = t.closest('.g-gtitle') ? 'title'
                : t.closest('.annotation') ? 'annotation'
                : t.closest('.legend') ? 'legend' : 'other';
            return {text: t.textContent, kind, left: r.left, right: r.right,
                    top: r.top, bottom: r.bottom};
        });
    return {left: box.left, right: box.right, top: box.top, bottom: box.bottom,
            width: box.width, texts};
})"""
# Each point's label and marker in the plane, as boxes on the page.
JS_LABELS = """() => {
    const g = document.querySelector('.js-plotly-plot');
    const out = {labels: [], markers: []};
    g.querySelectorAll('.scatterlayer .trace').forEach(tr => {
        tr.querySelectorAll('.textpoint text').forEach(t => {
            if (!t.textContent.trim()) return;
            const r = t.getBoundingClientRect();
            out.labels.push({text: t.textContent, left: r.left, right: r.right,
                             top: r.top, bottom: r.bottom});
        });
        tr.querySelectorAll('.points path.point').forEach(p => {
            // the marker's core: the square inside a circle, or inside a diamond's tips
            const r = p.getBoundingClientRect(), k = 0.35;
            const cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
            out.markers.push({left: cx - k * r.width, right: cx + k * r.width,
                              top: cy - k * r.height, bottom: cy + k * r.height});
        });
    });
    return out;
}"""
# What the step writes in the main column (the collapsed "En símbolos" LaTeX aside).
JS_PAGE_TEXT = """() => [...document.querySelectorAll(
    '[data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"],'
    + '[data-testid="stMainBlockContainer"] [data-testid="stCaptionContainer"],'
    + '[data-testid="stMainBlockContainer"] [data-testid="stSliderThumbValue"],'
    + '[data-testid="stMainBlockContainer"] [data-testid="stSliderTickBarMin"],'
    + '[data-testid="stMainBlockContainer"] [data-testid="stSliderTickBarMax"]')]
    .filter(e => !e.closest('[data-testid="stExpander"]')).map(e => e.innerText).join('\\n')"""
# Page links whose label the browser cuts (overflowing its box).
CUT_LINKS = """() => [...document.querySelectorAll('[data-testid="stPageLink-NavLink"] *')]
    .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"""
ARXIV = re.compile(r"arXiv[: ]?\d{4}\.\d{4,5}")
POINT_NUMBER = re.compile(r"\d\.\d")  # 0.5 in Spanish text (0,5 is right)
E_NOTATION = re.compile(r"\d[eE][-+−]?\d")  # 4.78e-05, 4,78e-5


@pytest.fixture(scope="module")
def page(app_server, browser):
    ctx = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, locale="es-ES")
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT)
    yield pg
    ctx.close()


def wait_step(pg, step: int) -> None:
    """Wait until the page shows ``step`` in Spanish with its figure drawn and the app idle."""
    heading = f"{UI['es']['step_of'].format(i=step, n=N_STEPS)} · {STEPS['es'][step - 1].title}"
    pg.wait_for_function(
        """([step, heading]) =>
            new URLSearchParams(location.search).get('step') === String(step)
            && [...document.querySelectorAll('h3')].some(h => h.textContent.includes(heading))
            && document.querySelector('.js-plotly-plot .main-svg')
            && !document.querySelector('[data-testid="stStatusWidget"]')""",
        arg=[step, heading], timeout=TIMEOUT, polling=50)
    settle(pg, 0.8)  # plotly's transition and the last messages


def _overlap(a: dict, b: dict) -> float:
    w = min(a["right"], b["right"]) - max(a["left"], b["left"])
    h = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
    return max(w, 0) * max(h, 0)


def check_titles(pg, step: int) -> list[str]:
    """Every title and annotation lies inside its figure, not ellipsised; returns the
    figures' texts."""
    seen = []
    for fig in pg.evaluate(JS_TEXTS):
        for t in fig["texts"]:
            seen.append(t["text"])
            if t["kind"] not in ("title", "annotation", "legend"):
                continue
            assert not t["text"].endswith("…"), (step, t["text"])
            assert t["left"] >= fig["left"] - 1 and t["right"] <= fig["right"] + 1, (
                f"step {step}: {t['kind']} {t['text']!r} spans {t['left']:.0f}–"
                f"{t['right']:.0f} px, the figure {fig['left']:.0f}–{fig['right']:.0f} px")
            assert t["top"] >= fig["top"] - 1, (step, t["text"])
    return seen


def check_labels(pg, step: int) -> None:
    """No marker's core covers a quarter of a label's box (a label may touch the tip of a
    diamond, not sit under a marker), and no label lies on another (step 6 piled them up:
    issue 42)."""
    found = pg.evaluate(JS_LABELS)
    for k, label in enumerate(found["labels"]):
        area = (label["right"] - label["left"]) * (label["bottom"] - label["top"])
        for m in found["markers"]:
            assert _overlap(label, m) < 0.25 * area, (
                f"step {step}: a marker covers the label {label['text']!r}")
        for other in found["labels"][k + 1:]:
            assert _overlap(label, other) < 0.05 * area, (
                f"step {step}: the labels {label['text']!r} and {other['text']!r} overlap")


def check_numbers(step: int, texts: list[str]) -> None:
    text = ARXIV.sub("", "\n".join(texts))
    assert not E_NOTATION.findall(text), (step, E_NOTATION.findall(text), text[:2000])
    points = [m.start() for m in POINT_NUMBER.finditer(text)]
    assert not points, (step, [text[max(0, k - 30):k + 10] for k in points])


def test_spanish_steps_fit_and_write_numbers_the_spanish_way(page, app_server):
    page.goto(f"{app_server}/learn?lang=es")
    commas = 0
    for step in range(1, N_STEPS + 1):
        wait_step(page, step)
        no_errors(page)
        assert query(page)["lang"] == "es"
        page.screenshot(path=str(STEP_SHOTS / f"learn_es_step{step}.png"))
        figure_texts = check_titles(page, step)
        if step in (1, 2, 3, 4, 6):  # the planes with labelled points
            check_labels(page, step)
        page_text = page.evaluate(JS_PAGE_TEXT)
        check_numbers(step, [page_text, *figure_texts])
        if step == 5:
            # at 1 half-step the two maps agree to rounding (~1e-17), and the couplings of
            # the two costs to ~1e-10: a student reads "0" or "≈ 0", not 1.2e-10
            assert re.search(r"mapas: (≈ 0|0)\. ", page_text), page_text
            assert re.search(r"difieren como mucho en (≈ 0|0|0,0+\d)\.", page_text), page_text
        commas += len(re.findall(r"\d,\d", page_text + " ".join(figure_texts)))
        if step == N_STEPS:
            axes = page.evaluate("""() => [...document.querySelectorAll(
                '.js-plotly-plot .xtitle, .js-plotly-plot .ytitle')].map(t => t.textContent)""")
            assert sorted(axes) == ["texto A", "texto B"], axes
            # the link to the Lab wraps, never cut mid-word ("…cualquier acop": issue 42)
            assert page.locator('[data-testid="stMain"] [data-testid="stPageLink"]').count()
            assert not page.evaluate(CUT_LINKS), page.evaluate(CUT_LINKS)
        else:
            page.locator(".st-key-learn_next button").click()
    assert commas >= 8  # numbers with decimals were shown, and written with commas
    print(f"\nscreenshots of the Spanish steps in {STEP_SHOTS}")


@pytest.mark.parametrize("step", [2, 6])
def test_spanish_presenter_mode_keeps_titles_inside(page, app_server, step):
    # larger type for a projector: the bars' titles wrap shorter, nothing is cut
    page.goto(f"{app_server}/learn?lang=es&step={step}&present=on")
    wait_step(page, step)
    check_titles(page, step)
    no_errors(page)
