"""Latency a person feels in Chromium against a running server (part of ``make bench``).

Measures: server start → first coupling visible (cold process, then a second visitor with
warm caches); ε slider keyboard move → every chart redrawn with the new ε; a new text B →
charts updated; two texts at the token limit → charts updated; the server's peak memory.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from engine.io.bench import p50, p95
from tests.support.server import (CHROMIUM_ARGS, ROOT, chromium_path, command, free_port,
                          peak_rss_mb, stop, wait_healthy)

PLOT_TEXTS = "() => [...document.querySelectorAll('.js-plotly-plot')].map(p => p.textContent)"
TARGETS = {
    "slider move → heatmaps updated": (0.250, 0.500),
    "new text B → charts updated": (1.0, None),
    "two texts at the token limit → charts updated": (2.0, None),
    "cold start → first coupling visible": (10.0, None),
}


def _settled(page, eps_text: str, timeout_ms: float = 30_000) -> None:
    """Wait until every chart on the page shows the new ε (both maps redrawn)."""
    page.wait_for_function(
        "e => { const p = [...document.querySelectorAll('.js-plotly-plot')];"
        " return p.length > 0 && p.every(x => x.textContent.includes('ε=' + e + ',')"
        " || x.textContent.includes('ε=' + e + ')')); }",
        arg=eps_text, timeout=timeout_ms, polling=20)


def _contains(page, word: str, timeout_ms: float = 60_000) -> None:
    """Wait until every chart shows ``word`` (all of them redrawn for the new text)."""
    page.wait_for_function(
        "w => { const p = [...document.querySelectorAll('.js-plotly-plot')];"
        " return p.length > 0 && p.every(x => x.textContent.includes(w)); }",
        arg=word, timeout=timeout_ms, polling=20)


def _all_changed(page, before: list[str], timeout_ms: float = 120_000) -> None:
    """Wait until every chart's text differs from ``before`` (one entry per chart)."""
    page.wait_for_function(
        "b => { const p = [...document.querySelectorAll('.js-plotly-plot')];"
        " return p.length === b.length && p.every((x, i) => x.textContent !== b[i]); }",
        arg=before, timeout=timeout_ms, polling=20)


def run(quick: bool = False) -> list[tuple[str, list[float]]]:
    """Start a server, drive it from Chromium, print and return the latency rows."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = Path(ROOT / ".bench-server.log")
    cmd = command(port)
    rows: list[tuple[str, list[float]]] = []
    with open(log, "w") as fh, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
        try:
            wait_healthy(url, proc, log)
            page = browser.new_page(viewport={"width": 1400, "height": 1800})
            page.goto(url)
            page.wait_for_selector(".js-plotly-plot", timeout=120_000)
            cold = time.perf_counter() - t0
            rows.append(("cold start → first coupling visible", [cold]))
            warm = []
            for _ in range(2 if quick else 3):
                other = browser.new_page(viewport={"width": 1400, "height": 1800})
                t = time.perf_counter()
                other.goto(url)
                other.wait_for_selector(".js-plotly-plot", timeout=120_000)
                warm.append(time.perf_counter() - t)
                other.close()
            rows.append(("second visitor (warm caches) → first coupling", warm))

            page.wait_for_timeout(1500)
            slider = page.get_by_role("slider").first
            moves = []
            for i in range(20 if quick else 40):
                slider.focus()
                t = time.perf_counter()
                slider.press("ArrowLeft" if (i // 3) % 2 == 0 else "ArrowRight")
                _settled(page, slider.get_attribute("aria-valuetext") or "")
                moves.append(time.perf_counter() - t)
            rows.append(("slider move → heatmaps updated", moves))

            box_b = page.get_by_role("textbox", name="Text B (keys)")
            new_text = []
            for i, word in enumerate(("violin", "glacier", "lantern", "orchid", "compass")):
                box_b.fill(f"A {word} waited by the bank of the quiet river.")
                t = time.perf_counter()
                box_b.press("Control+Enter")
                _contains(page, word)
                new_text.append(time.perf_counter() - t)
            rows.append(("new text B → charts updated", new_text))

            long_rows = []
            for k in range(2):
                words = " ".join([("river bank money water", "stone bridge over rain")[k]] * 150)
                box_a = page.get_by_role("textbox", name="Text A (queries)")
                box_a.fill(words)
                before = page.evaluate(PLOT_TEXTS)
                box_a.press("Control+Enter")  # A alone first (not timed)
                _all_changed(page, before)
                before = page.evaluate(PLOT_TEXTS)
                box_b.fill(words[::-1])
                t = time.perf_counter()
                box_b.press("Control+Enter")
                _all_changed(page, before)
                long_rows.append(time.perf_counter() - t)
            rows.append(("two texts at the token limit → charts updated", long_rows))
            peak = peak_rss_mb(proc.pid)
        finally:
            stop(proc)
            browser.close()
    print("\nIn Chromium against a running server (two ~20-token texts unless said)")
    w = max(len(n) for n, _ in rows)
    print(f"{'':<{w}}  {'p50':>9}  {'p95':>9}  {'n':>3}  target")
    for name, ts in rows:
        tgt = TARGETS.get(name)
        tt = "" if tgt is None else f"p50 ≤ {tgt[0] * 1e3:.0f} ms" + (
            f", p95 ≤ {tgt[1] * 1e3:.0f} ms" if tgt[1] else "")
        print(f"{name:<{w}}  {p50(ts) * 1e3:>7.0f}ms  {p95(ts) * 1e3:>7.0f}ms  "
              f"{len(ts):>3}  {tt}")
    print(f"server peak memory (VmHWM): {peak:.0f} MB (target ≤ 1536 MB)")
    log.unlink(missing_ok=True)
    return rows
