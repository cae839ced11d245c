"""Live sliders against a bare Streamlit app, in one Chromium (part of ``make bench``).

``python -m benchmarks.scrub [--quick]`` starts sinkscope (two 30-token texts) and
``benchmarks/bare_app.py`` (one ``st.select_slider``, one ``st.plotly_chart`` heatmap) on
loopback ports and measures, in the same run:

- key press → heatmap redrawn: from the keydown event to the heatmap's new title in the
  page's SVG (timed in the page; p50 and p95). sinkscope redraws from the lattice in the
  browser; the bare app re-runs its script on the server and remounts the chart.
- redraws per second during a pointer drag on the ε slider (3 s of sweeps).
- the Align page: arrow key on θ → both figures and the two lines redrawn in the browser
  (40 × 40 words with gold; p50 and p95).
- the notebook widget (``sinkscope.show(A, B)`` in JupyterLab on loopback, the same texts
  and the app's own browser code): key press → heatmap redrawn, measured as for the app.
- the lattice for 30 × 30 tokens (solve + encode, in this process) and the payload size
  for about 64 × 64 tokens; the Align page's payload (every τ stop, with gold: its scores
  at every setting) for 6 × 6 to 64 × 64 words; the two pages' JavaScript bundles.

Targets: key press p50 ≤ 0.35 × the bare app's; ≥ 30 redraws/s while dragging; lattice
≤ 0.5 s; payload ≤ 3 MB.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import numpy as np

from engine.io.bench import machine, p50, p95, timeit
from tests.support.server import CHROMIUM_ARGS, ROOT, chromium_path, free_port, stop, wait_healthy

A = ("The old fisherman walked slowly along the muddy bank of the wide river at dawn, "
     "watching grey mist rise over the quiet water and reeds.")  # 30 tokens
B = ("She hurried to the bank downtown to deposit her weekly salary and to ask the patient "
     "clerk about a small loan for the old stone house today.")  # 30 tokens
TARGETS = {"ratio": 0.35, "redraws": 30.0, "lattice": 0.5, "payload": 3e6}

KEY_SPY = """() => { window.__kd = []; window.addEventListener('keydown',
    () => window.__kd.push(performance.now()), true); }"""
# The heatmap's title as drawn (SVG text), sinkscope's compare figure or the bare app's.
TITLE_JS = {
    "sinkscope": """() => { const g = [...document.querySelectorAll('.js-plotly-plot')].find(g =>
        g.layout && g.layout.meta && g.layout.meta.kind === 'compare');
        const t = g && g.querySelectorAll('.annotation-text');
        return t && t.length > 1 ? t[1].textContent : ''; }""",
    "bare": """() => { const t = document.querySelector('.js-plotly-plot .gtitle');
        return t ? t.textContent : ''; }""",
}
TITLE_JS["notebook"] = TITLE_JS["sinkscope"]  # the widget draws the app's compare figure


@contextlib.contextmanager
def serve(script: Path, env: dict | None = None):
    """``streamlit run script`` on a free loopback port; yields its URL."""
    port = free_port()
    log = Path(tempfile.mkdtemp(prefix="sinkscope-bench-")) / "streamlit.log"
    cmd = [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1",
           "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, proc, log, timeout=120)
            yield url
        finally:
            stop(proc)


def idle(page) -> None:
    """Wait until Streamlit has finished running (and talk to the page meanwhile)."""
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                           timeout=60_000, polling=50)
    for _ in range(4):
        page.evaluate("1")
        time.sleep(0.05)


def key_presses(page, app: str, n: int) -> list[float]:
    """Seconds from each arrow key's keydown to the heatmap's new title on screen."""
    page.evaluate(KEY_SPY)
    slider = page.get_by_role("slider").first
    out = []
    for i in range(n):
        slider.focus()
        commits = page.evaluate("window.__sinkscope ? window.__sinkscope.stats.commits : 0")
        page.evaluate("window.__kd = []")
        slider.press("ArrowLeft" if (i // 3) % 2 == 0 else "ArrowRight")
        value = slider.get_attribute("aria-valuetext") or ""
        want = f"ε={value}" if app == "bare" else f"ε={value},"
        t1 = page.wait_for_function(
            f"w => {{ const t = ({TITLE_JS[app]})(); if (t.includes(w) && (w.endsWith(',') "
            "|| t.endsWith(w))) return performance.now(); return false; }",
            arg=want, timeout=60_000, polling="raf").json_value()
        out.append((t1 - page.evaluate("window.__kd[0]")) / 1000)
        if app == "sinkscope":  # let the value reach the server and its figure be drawn
            page.wait_for_function(
                f"() => window.__sinkscope.stats.commits > {commits} && [...document"
                ".querySelectorAll('.js-plotly-plot')].every(g => !g.layout.meta || "
                "g.dataset.source === 'server')", timeout=60_000, polling=50)
        idle(page)
    return out


def drag(page, app: str, seconds: float) -> tuple[float, int, float, float]:
    """(redraws per second, messages to the server, pointer events per second, full
    figure redraws per second) while sweeping the ε slider back and forth."""
    if app == "sinkscope":
        track = page.locator(".sk-track").first.bounding_box()
        count = "window.__sinkscope.stats.redraws"
    else:
        track = page.locator('[data-testid="stSlider"] [role="group"] > div[data-rac]').first.bounding_box()
        page.evaluate(f"""() => {{ window.__titles = 0; let last = ({TITLE_JS['bare']})();
            new MutationObserver(() => {{ const t = ({TITLE_JS['bare']})();
              if (t && t !== last) {{ last = t; window.__titles++; }} }})
              .observe(document.body, {{subtree: true, childList: true, characterData: true}}); }}""")
        count = "window.__titles"
    page.evaluate("""() => { window.__ws = 0; if (!window.__wsWrapped) {
        const send = WebSocket.prototype.send; window.__wsWrapped = true;
        WebSocket.prototype.send = function (d) { window.__ws++; return send.call(this, d); }; } }""")
    y = track["y"] + track["height"] / 2
    x0, x1 = track["x"] + 6, track["x"] + track["width"] - 6
    page.mouse.move((x0 + x1) / 2, y)
    page.mouse.down()
    full = "(window.__sinkscope && window.__sinkscope.stats.full) || 0"
    r0, f0, t0, k = page.evaluate(count), page.evaluate(full), time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        frac = (k % 40) / 39
        page.mouse.move(x0 + (x1 - x0) * (frac if (k // 40) % 2 == 0 else 1 - frac), y)
        k += 1
    elapsed = time.perf_counter() - t0
    redraws, fulls = page.evaluate(count) - r0, page.evaluate(full) - f0
    sent = page.evaluate("window.__ws")
    page.mouse.up()
    idle(page)
    return redraws / elapsed, sent, k / elapsed, fulls / elapsed


def notebook_keys(browser, n: int) -> list[float]:
    """Key press → heatmap redrawn in the notebook widget: JupyterLab on loopback runs a
    one-cell notebook, ``sinkscope.show(A, B)``, and the ε slider is pressed as the app's."""
    import nbformat

    from tests.support.notebook import jupyter_lab

    folder = Path(tempfile.mkdtemp(prefix="sinkscope-bench-lab-"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"import sinkscope\nsinkscope.show({A!r}, {B!r})")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, folder / "widget.ipynb")
    with jupyter_lab(folder) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        try:
            page.goto(f"{url}/lab/tree/widget.ipynb", timeout=120_000)
            page.wait_for_selector("text=Python 3 (ipykernel) | Idle", timeout=120_000)
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_text("Run All Cells", exact=True).click()
            end = time.monotonic() + 180
            while not page.evaluate("() => !!document.querySelector('.sinkscope-widget "
                                    ".js-plotly-plot .main-svg')"):
                if time.monotonic() > end:
                    raise RuntimeError("the widget was not drawn within 180 s")
                dialog = page.locator(".jp-Dialog button.jp-mod-accept")
                if dialog.count():  # JupyterLab may ask which kernel to run it with
                    dialog.first.click()
                page.wait_for_timeout(250)
            key_presses(page, "notebook", 3)  # warm-up
            return key_presses(page, "notebook", n)
        finally:
            page.close()


def align_keys(browser, app_url: str, n: int) -> list[float]:
    """Seconds from each arrow key on the Align page's θ slider to both figures and the
    links and scores lines redrawn in the browser (40 × 40 words with gold; the value is
    held in the page, so no script runs on the server)."""
    words = (A + " " + B).lower().replace(",", "").replace(".", "").split()
    rng = np.random.default_rng(5)
    q = {"text_a": " ".join(rng.choice(words, 40)), "text_b": " ".join(rng.choice(words, 40)),
         "gold": " ".join(f"{i}-{i}" for i in range(0, 40, 2)), "method": "unbalanced",
         "threshold": "0.3", "tau": "1"}
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(f"{app_url}/align?{urlencode(q)}")
    page.wait_for_function(
        "() => { const A = window.__sinkscope && window.__sinkscope.align; return A && "
        "[...A.payloads.values()].some(e => e.value) && [...document.querySelectorAll("
        "'.js-plotly-plot')].filter(g => g.__sk && g.__sk.bind && g.__sk.bind.align)"
        ".length === 2; }", timeout=180_000)
    idle(page)
    page.evaluate("window.__sinkscope.align.keyCommitMs = 600000")
    page.evaluate(KEY_SPY)
    thumb = page.locator('.sk-align [role="slider"]').first
    thumb.focus()
    out = []
    for i in range(n + 3):  # the first three warm plotly.js up
        r0 = page.evaluate("window.__sinkscope.align.stats.redraws")
        page.evaluate("window.__kd = []")
        thumb.press("ArrowLeft" if (i // 3) % 2 == 0 else "ArrowRight")
        page.wait_for_function(f"() => window.__sinkscope.align.stats.redraws > {r0}",
                               timeout=60_000, polling="raf")
        if i >= 3:
            out.append(page.evaluate("window.__sinkscope.align.stats.last - window.__kd[0]")
                       / 1000)
    page.close()
    return out


def engine_rows(quick: bool) -> list[tuple[str, float, str]]:
    """The lattice for 30 × 30 tokens (solve + encode) and the payload for ~64 × 64."""
    from engine import encode_texts, relate_encodings
    from engine.relation.lattice import grid, relation_lattice
    from engine.relation.relate import default_encoder
    from sinkscope_app import scrub
    from sinkscope_app.main.params import EPS_OPTIONS, HALF_STEP_OPTIONS

    import torch

    from engine import settings

    if settings.CONFIG.torch_threads > 0:  # as the app runs it (SINKSCOPE_TORCH_THREADS)
        torch.set_num_threads(settings.CONFIG.torch_threads)
    enc = default_encoder()
    eps, steps = grid(EPS_OPTIONS, HALF_STEP_OPTIONS, max_half_steps=1000)
    r = relate_encodings(encode_texts(enc, A, B, "separate"), layer=5, head="mean",
                         eps=1.0, half_steps=1)
    times = timeit(lambda: scrub.encode(relation_lattice(r, eps, steps), "x",
                                        max_bytes=10**8), 3 if quick else 7)
    rows = [(f"lattice {r.scores.shape[0]} × {r.scores.shape[1]} tokens "
             f"({len(eps)} ε × {len(steps)} half-steps): solve + encode, p50",
             p50(times), f"≤ {TARGETS['lattice']} s")]
    data, bits = scrub.encode(relation_lattice(r, eps, steps), "x", max_bytes=10**8)
    page = scrub.build(lambda: (data, bits), "x", max_bytes=10**8)
    rows.append(("  the engine's payload (the frames' metric numbers, no texts), kB",
                 len(data) / 1e3, "-"))
    for lang in ("en", "es"):  # what the page gets: the frames, then their texts
        rows.append((f"  as the page gets it ({lang}): frames + texts, kB",
                     (len(page.data) + len(scrub.texts_payload(page, lang))) / 1e3, "-"))
    words = (A + " " + B).lower().replace(",", "").replace(".", "").split()
    rng = np.random.default_rng(3)
    for k in range(8):
        ta, tb = (" ".join(rng.choice(words, 60 - k)) for _ in range(2))
        r64 = relate_encodings(encode_texts(enc, ta, tb, "separate"), layer=5, head="mean",
                               eps=1.0, half_steps=1)
        if r64.scores.size <= 64 * 64:
            break
    data, bits = scrub.encode(relation_lattice(r64, eps, steps), "x", max_bytes=10**8)
    rows.append((f"payload {r64.scores.shape[0]} × {r64.scores.shape[1]} tokens "
                 f"({bits}-bit plans, compressed), MB", len(data) / 1e6,
                 f"≤ {TARGETS['payload'] / 1e6:.0f} MB"))
    return rows


def align_rows(quick: bool) -> list[tuple[str, float, str]]:
    """The Align page's live-slider payload (V at every τ stop, one batched solve, packed)
    for n × m words up to the budget (random word scores: the solve does not depend on
    where they come from)."""
    from engine.alignment.api import method_of
    from engine.alignment.readers import make_pair
    from sinkscope_app import align_live
    from sinkscope_app.align import MASS_OPTIONS, TAU_OPTIONS

    rng = np.random.default_rng(4)
    rows = []
    for n in (6, 30, 64):
        gold = " ".join(f"{i}-{i}" for i in range(0, n, 2))  # sure links on every other word
        pair = make_pair(" ".join(["w"] * n), " ".join(["v"] * n), gold)
        S, ones = rng.normal(size=(n, n)), np.ones(n, bool)
        key, grid = align_live.grid_of("unbalanced", TAU_OPTIONS, MASS_OPTIONS)

        def pack():
            return align_live.build(S, ones, ones, method_of("unbalanced"), pair,
                                    grid_key=key, grid=grid, id_="x").encode()
        times = timeit(pack, 3 if quick else 7)
        rows.append((f"align payload {n} × {n} words ({len(grid)} τ): solve + encode, p50",
                     p50(times), f"≤ {TARGETS['lattice']} s"))
        rows.append((f"align payload {n} × {n} words, MB", len(pack()) / 1e6,
                     f"≤ {TARGETS['payload'] / 1e6:.0f} MB"))
    from sinkscope_app import live
    rows += [("JavaScript bundle of the main page, kB", len(live.JS.encode()) / 1e3, "-"),
             ("JavaScript bundle of the Align page, kB",
              len(live.bundle(align_live._JS_FILES).encode()) / 1e3, "-")]
    return rows


def run(quick: bool = False) -> dict:
    from playwright.sync_api import sync_playwright

    n = 12 if quick else 30
    res: dict = {}
    env = {"SINKSCOPE_WARM_UP": "0"}  # no background compile competing for the cores
    with serve(ROOT / "app.py", env) as app_url, serve(ROOT / "benchmarks" / "bare_app.py") as bare_url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            pages = {}
            for app, url in (("sinkscope", f"{app_url}/?{urlencode({'a': A, 'b': B})}"),
                             ("bare", bare_url)):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(url)
                page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
                pages[app] = page
            pages["sinkscope"].wait_for_function(
                "() => window.__sinkscope.scrub && window.__sinkscope.scrub.live()",
                timeout=120_000)
            res["tokens"] = pages["sinkscope"].evaluate(
                "() => { const L = window.__sinkscope.scrub.lattice(); return [L.n, L.m]; }")
            for app in ("sinkscope", "bare"):
                idle(pages[app])
                key_presses(pages[app], app, 3)  # warm-up (plotly's first redraws)
            for rnd in range(2):  # interleaved, so both see the same machine
                for app in ("sinkscope", "bare"):
                    res.setdefault(app, []).extend(key_presses(pages[app], app, n // 2))
            for app in ("sinkscope", "bare"):
                res[f"{app}_drag"] = drag(pages[app], app, 3.0)
            res["align"] = align_keys(browser, app_url, n)
            res["notebook"] = notebook_keys(browser, n)
        finally:
            browser.close()
    res["engine"] = engine_rows(quick) + align_rows(quick)
    return res


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    args = ap.parse_args(argv)
    res = run(args.quick)
    s, b = res["sinkscope"], res["bare"]
    print(f"\nLive sliders vs a bare one-slider, one-heatmap Streamlit app, same Chromium and run\n"
          f"machine: {machine()}; load average {os.getloadavg()[0]:.1f} (shared machine: "
          "absolute times move with the load; the ratio is what the target is about)")
    print(f"sinkscope texts: {res['tokens'][0]} × {res['tokens'][1]} tokens")
    w = 50
    print(f"{'key press → heatmap redrawn':<{w}}  {'p50':>8}  {'p95':>8}  {'n':>3}")
    for name, ts in (("sinkscope (frames from the lattice, in the browser)", s),
                     ("bare app (server re-run + st.plotly_chart)", b)):
        print(f"{name:<{w}}  {p50(ts) * 1e3:>6.0f}ms  {p95(ts) * 1e3:>6.0f}ms  {len(ts):>3}")
    nb = res["notebook"]
    print(f"{'notebook widget (JupyterLab, the same frames)':<{w}}  {p50(nb) * 1e3:>6.0f}ms  "
          f"{p95(nb) * 1e3:>6.0f}ms  {len(nb):>3}")
    ratio = p50(s) / p50(b)
    print(f"{'p50 ratio sinkscope / bare':<{w}}  {ratio:>8.2f}  target ≤ {TARGETS['ratio']}"
          f"  {'met' if ratio <= TARGETS['ratio'] else 'NOT met'}")
    for app in ("sinkscope", "bare"):
        rate, sent, events, fulls = res[f"{app}_drag"]
        tgt = f"target ≥ {TARGETS['redraws']:.0f}" if app == "sinkscope" else ""
        print(f"{'heatmap redraws/s while dragging ε: ' + app:<{w}}  {rate:>8.1f}  {tgt}")
        print(f"{'':<{w}}  ({events:.0f} pointer moves/s, {sent} messages to the server "
              "during the drag" + (f", whole figure redrawn {fulls:.1f}/s)" if app == "sinkscope"
                                   else ")"))
    a = res["align"]
    print(f"{'Align: key on θ → figures and lines redrawn':<{w}}  {p50(a) * 1e3:>6.0f}ms  "
          f"{p95(a) * 1e3:>6.0f}ms  {len(a):>3}")
    for name, value, tgt in res["engine"]:
        unit = "s" if "solve" in name else ""
        print(f"{name:<{w + 10}}  {value:>8.3f}{unit}  target {tgt}")


if __name__ == "__main__":
    main()
