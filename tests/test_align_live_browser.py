"""The Align page's live θ slider in headless Chromium against a real server.

Arrow keys on the θ slider redraw the links (matrix and graph) and this pair's scores in the
browser from the shipped payload, with no message to the server and no script run; on
release the value goes to the server once, and the server's figures and its links and
scores lines (from the result its table's chosen row shows) then say what the browser showed.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from tests.support.browser import NOT_RUNNING, TIMEOUT, no_errors, settle, wait_idle, wait_js

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WS_SPY = """(() => {
  const send = WebSocket.prototype.send;
  window.__wsSent = 0;
  WebSocket.prototype.send = function (d) { window.__wsSent += 1; return send.call(this, d); };
})()"""
STATE = """() => {
  const A = window.__sinkscope && window.__sinkscope.align;
  const links = document.querySelector('[data-testid="skAlignLinks"]');
  const scores = document.querySelector('[data-testid="skAlignScores"]');
  const charts = [...document.querySelectorAll('.js-plotly-plot')]
    .filter(g => g.__sk && g.__sk.bind && g.__sk.bind.align).map(g => ({
      chart: g.__sk.bind.chart, source: g.dataset.source, theta: g.__sk.bind.theta,
      drawn: g.dataset.align,
      links: g.data.filter(t => ['hit', 'hit_possible', 'false', 'link'].includes(t.meta.kind))
        .reduce((s, t) => s + (g.__sk.bind.chart === 'matrix' ? t.x.length
                                                              : t.x.length / 3), 0)}));
  const m = charts.length && [...document.querySelectorAll('.js-plotly-plot')]
    .find(g => g.__sk && g.__sk.bind && g.__sk.bind.chart === 'matrix');
  const z = m ? m._fullData.find(t => t.type === 'heatmap').z : [];
  const plan = Array.from(z, r => Array.from(r, v => (v == null || isNaN(v) ? 0 : v)))
    .flat().reduce((s, v) => s + v, 0);
  return {ws: window.__wsSent, plan, redraws: A ? A.stats.redraws : 0, commits: A ? A.stats.commits : 0,
          ready: !!(A && [...A.payloads.values()].some(e => e.value)),
          count: links ? Number(links.dataset.count || -1) : -1,
          links: links ? links.textContent : '', scores: scores ? scores.textContent : '',
          running: !!document.querySelector('[data-testid="stStatusWidget"]'), charts};
}"""
PAIR = {"text_a": "the cat sat on the mat", "text_b": "a cat was sitting on the mat",
        "gold": "0p0 1-1 2-2 2-3 3-4 4-5 5-6", "method": "unbalanced", "threshold": "0.3",
        "tau": "1"}


def test_arrow_keys_redraw_links_and_scores_without_a_rerun(app_server, browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1800})
    ctx.add_init_script(WS_SPY)
    try:
        pg = ctx.new_page()
        pg.set_default_timeout(TIMEOUT)
        pg.goto(f"{app_server}/align?{urlencode(PAIR)}")
        wait_js(pg, f"() => {{ const s = ({STATE})(); return s.ready && s.charts.length === 2 "
                    "&& s.scores.includes('F1') }")
        wait_idle(pg)
        no_errors(pg)
        pg.evaluate("() => { window.__sinkscope.align.keyCommitMs = 1e9; }")  # keys alone
        before = pg.evaluate(STATE)
        assert before["count"] >= 1 and "precision" in before["scores"]
        assert [c["links"] for c in before["charts"]] == [before["count"]] * 2
        thumb = pg.locator('.sk-align [role="slider"]').first
        assert thumb.get_attribute("aria-valuenow") == "0.3"
        thumb.focus()
        for _ in range(25):  # θ 0.30 → 0.05: more links
            thumb.press("ArrowLeft")
        wait_js(pg, f"""(c) => {{ const s = ({STATE})();
            const want = window.__sinkscope.align.ctl.shownKey();  // the last key's frame, drawn
        return s.count > c && s.charts.every(x => x.source === 'browser' && x.drawn === want
                                                  && x.links === s.count)
        }}""", before["count"])
        moved = pg.evaluate(STATE)
        assert thumb.get_attribute("aria-valuenow") == "0.05"
        assert moved["ws"] == before["ws"] and moved["commits"] == before["commits"]
        assert not moved["running"]  # no script run: the browser redrew alone
        assert moved["redraws"] > before["redraws"]
        assert moved["scores"] != before["scores"] and "precision" in moved["scores"]
        wait_js(pg, "() => new URLSearchParams(location.search).get('threshold') === '0.05'")
        assert pg.evaluate("() => window.__wsSent") == before["ws"]  # the address follows

        thumb.blur()  # release: the value goes to the server once
        wait_js(pg, "(w) => window.__wsSent > w", moved["ws"])
        wait_js(pg, NOT_RUNNING)
        wait_js(pg, f"""() => {{ const s = ({STATE})();
            return s.charts.every(x => x.source === 'server' && x.theta === 0.05) }}""")
        wait_idle(pg)
        after = pg.evaluate(STATE)
        assert after["commits"] == moved["commits"] + 1
        assert after["count"] == moved["count"] and after["scores"] == moved["scores"]
        assert after["links"] == moved["links"]
        assert [c["links"] for c in after["charts"]] == [moved["count"]] * 2
        # the server's own numbers after the release: the lines it computed for this run
        # (the table's chosen row comes from the same result) and its figures' links
        server = pg.evaluate("() => window.__sinkscope.align.ctl.data")
        assert server["theta_stops"][server["theta"]] == 0.05
        assert server["lines"] == {"scores": moved["scores"], "links": moved["links"]}
        assert pg.locator('[data-testid="stTable"]').count() == 1  # the table is drawn

        # τ: every stop's plan is in the payload too; the heatmap follows the keys
        tau = pg.locator('.sk-align [role="slider"]').nth(1)
        assert tau.get_attribute("aria-valuenow") == "1"
        tau.focus()
        for _ in range(4):
            tau.press("ArrowRight")
        wait_js(pg, f"""(p) => {{ const s = ({STATE})();
            const want = window.__sinkscope.align.ctl.shownKey();
            return Math.abs(s.plan - p) > 1e-6 && s.charts.every(x => x.source === 'browser'
                                                                && x.drawn === want
                                                                && x.links === s.count) }}""",
                after["plan"])
        assert tau.get_attribute("aria-valuenow") == "2.51"
        moved_tau = pg.evaluate(STATE)
        assert moved_tau["commits"] == after["commits"]  # nothing sent while it moved
        tau.blur()
        wait_js(pg, "() => new URLSearchParams(location.search).get('tau') === '2.51'")
        wait_js(pg, NOT_RUNNING)
        wait_js(pg, f"""() => ({STATE})().charts.every(x => x.source === 'server')""")
        assert pg.evaluate(STATE)["scores"] == moved_tau["scores"]
        settle(pg, 0.2)
        no_errors(pg)
    finally:
        ctx.close()


AXES = """() => { const m = [...document.querySelectorAll('.js-plotly-plot')]
    .find(g => (g.layout.title.text || '').startsWith('Links of'));
  const ticks = (ax) => [...m.querySelectorAll(`.${ax}tick text`)];
  return {x: ticks('x').map(t => t.textContent), x2: ticks('x2').map(t => t.textContent),
          y: ticks('y').map(t => t.textContent), y2: ticks('y2').map(t => t.textContent),
          font: getComputedStyle(ticks('y')[0]).fontFamily, source: m.dataset.source || '',
          size: getComputedStyle(ticks('y')[0]).fontSize}; }"""
LINE = r"^{}: precision \d\.\d{{3}}, recall \d\.\d{{3}}, F1 \d\.\d{{3}}, AER \d\.\d{{3}}, " \
       r"null F1 \d\.\d{{3}}, total F1 \d\.\d{{3}}$"


def test_the_live_and_the_server_drawn_pair_view_show_the_same_labels_fonts_and_lines(
        app_server, browser):
    """The same pair drawn with the live sliders (unbalanced) and by the server alone (an
    argmax method has no threshold to slide): every word labels its row and column in
    both, before and after a slider move, in the same fonts, and both scores lines give
    precision and recall."""
    import re

    from sinkscope_app import align as ap

    words_a, words_b = ap.DEFAULTS["align_a"].split(), ap.DEFAULTS["align_b"].split()
    ctx = browser.new_context(viewport={"width": 1200, "height": 1600})
    try:
        shown = {}
        for method in ("unbalanced", "sinkhorn-argmax"):
            pg = ctx.new_page()
            pg.set_default_timeout(TIMEOUT)
            query = ap.to_query({**ap.DEFAULTS, "align_method": method})
            pg.goto(f"{app_server}/align?{urlencode(query)}")
            pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)
            wait_idle(pg)
            no_errors(pg)
            shown[method] = pg.evaluate(AXES)
            assert shown[method]["x"] == shown[method]["x2"] == words_b, shown[method]
            assert shown[method]["y"] == shown[method]["y2"] == words_a, shown[method]
            line = (pg.locator('[data-testid="skAlignScores"]') if method == "unbalanced" else
                    pg.locator(".st-key-align_lines p").first).inner_text()
            assert re.fullmatch(LINE.format(method), line), line
            if method == "unbalanced":  # a slider move: the browser redraws, same labels
                thumb = pg.locator('.sk-align [role="slider"]').first
                thumb.focus()
                thumb.press("ArrowLeft")
                wait_js(pg, f"() => ({AXES})().source === 'browser'")
                moved = pg.evaluate(AXES)
                assert (moved["x2"], moved["y2"], moved["font"]) == (
                    words_b, words_a, shown[method]["font"])
            pg.close()
        a, b = shown.values()
        assert (a["font"], a["size"]) == (b["font"], b["size"])
    finally:
        ctx.close()
