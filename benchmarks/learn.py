"""How long the Learn page takes to show each step after Next, in Chromium (``make bench``).

``python -m benchmarks.learn [--passes N] [--read S]`` starts a fresh server, opens
``/learn`` and clicks Next through all eight steps: first as the server's first visitor,
pausing ``--read`` seconds on each step as a reader would (the model loads in the
background meanwhile), then ``--passes`` more times with warm caches. A step counts as
shown when the URL, the step's heading and its figure's title are all the new step's and
Streamlit has finished the run. Target: every step ≤ 1 s after Next.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from pathlib import Path

from engine.io.bench import machine
from sinkscope_app.learn.text import N_STEPS, STEPS, UI
from tests.support.server import CHROMIUM_ARGS, ROOT, chromium_path, command, free_port, stop, wait_healthy

TARGET_S = 1.0
TITLES = ["Two clusters", "Softmax at ε = 1", "After 1 half-step at ε = 1",
          "Sinkhorn coupling at ε", "Cloud A (rows)", "on your texts", "Text A reading itself",
          "F(μ, ν) for your pair"]
_SHOWN = """([step, heading, title]) =>
    new URLSearchParams(location.search).get('step') === String(step)
    && [...document.querySelectorAll('h3')].some(h => h.textContent.includes(heading))
    && [...document.querySelectorAll('.js-plotly-plot')].some(g => ((g.layout && g.layout.title
        && g.layout.title.text) || '').replaceAll('<br>', ' ').includes(title))
    && !document.querySelector('[data-testid="stStatusWidget"]')"""


def _wait_shown(page, step: int, timeout_ms: float = 120_000) -> None:
    heading = f"{UI['en']['step_of'].format(i=step, n=N_STEPS)} · {STEPS['en'][step - 1].title}"
    page.wait_for_function(_SHOWN, arg=[step, heading, TITLES[step - 1]], timeout=timeout_ms,
                           polling=10)


def _walk(page, url: str, read_s: float, *, open_page: bool = True) -> list[float]:
    """Open step 1 (unless it is open), then click Next to the end; seconds from each
    click to the step shown."""
    if open_page:
        page.goto(f"{url}/learn?step=1&lang=en")
        _wait_shown(page, 1)
    out = []
    for step in range(2, N_STEPS + 1):
        end = time.monotonic() + read_s
        while time.monotonic() < end:  # keep talking to the page while "reading"
            page.evaluate("1")
            time.sleep(0.05)
        t = time.perf_counter()
        page.locator(".st-key-learn_next button").click()
        _wait_shown(page, step)
        out.append(time.perf_counter() - t)
    return out


def run(passes: int = 3, read_s: float = 5.0) -> dict[str, list[float]]:
    """Start a server, walk the steps in Chromium, print and return the timings."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = Path(ROOT / ".bench-learn-server.log")
    with open(log, "w") as fh, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        t0 = time.perf_counter()
        proc = subprocess.Popen(command(port), cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
        try:
            wait_healthy(url, proc, log)
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(f"{url}/learn?step=1&lang=en")
            _wait_shown(page, 1)
            cold = time.perf_counter() - t0
            first = _walk(page, url, read_s, open_page=False)
            warm = [_walk(page, url, 0.0) for _ in range(passes)]
        finally:
            stop(proc)
            browser.close()
    log.unlink(missing_ok=True)
    print(f"\nLearn page: Next → step shown, in Chromium ({machine()})")
    print(f"{'step':<44}  {'first visit':>11}  {'warm p50':>9}  {'warm max':>9}  target")
    worst = 0.0
    for k in range(N_STEPS - 1):
        w = [pw[k] for pw in warm]
        worst = max(worst, first[k], *w)
        name = f"{k + 2}. {STEPS['en'][k + 1].title}"[:44]
        print(f"{name:<44}  {first[k]:>10.2f}s  {statistics.median(w):>8.2f}s  {max(w):>8.2f}s"
              f"  ≤ {TARGET_S:.0f} s")
    print(f"server start → step 1 shown (cold, first visitor): {cold:.2f} s")
    print(f"first visit: {read_s:g} s reading pause on each step (the model loads meanwhile); "
          f"warm: {passes} more walks. Slowest step: {worst:.2f} s "
          f"({'within' if worst <= TARGET_S else 'over'} the {TARGET_S:.0f} s target).")
    return {"cold": [cold], "first": first, **{f"warm{i}": w for i, w in enumerate(warm)}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.learn")
    ap.add_argument("--passes", type=int, default=3, help="warm walks after the first")
    ap.add_argument("--read", type=float, default=5.0,
                    help="seconds spent on each step during the first walk")
    args = ap.parse_args(argv)
    run(args.passes, args.read)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
