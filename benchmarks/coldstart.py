"""The first visit after a server start, beside a bare Streamlit app (part of ``make bench``).

``python -m benchmarks.coldstart [--rounds N] [--quick]`` starts, in each round and in turn,
a fresh server for: the bare one-slider, one-heatmap app (``benchmarks/bare_app.py``),
sinkscope as ``make run`` starts it (``python -m sinkscope_app.launch``: the model loads
from the server's start) and sinkscope as ``streamlit run app.py`` (no preload). One
headless Chromium, started before the first server, opens each page as soon as the server
answers its health check. From the server process's start it times: (a) the bare app's
first chart drawn; (b) sinkscope's sidebar controls visible; (c) sinkscope's first
coupling heatmap drawn; and the CPU time the server process had used by each of them (which
the machine's load does not stretch). It prints each median and the ratio (c)/(a) against
the target ≤ 2×.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.server import (CHROMIUM_ARGS, ROOT, chromium_path, command, cpu_seconds,
                                  free_port, stop, wait_healthy)

TARGET_RATIO = 2.0
# A plotly chart holding a heatmap trace, drawn (its SVG is on the page).
HEATMAP = ("() => [...document.querySelectorAll('.js-plotly-plot')].some(p => "
           "p.querySelector('.main-svg') && (p.data || []).some(t => t.type === 'heatmap'))")
# The sidebar's first text box (Text A) laid out and visible.
CONTROLS = ("() => { const t = document.querySelector('[data-testid=\"stSidebar\"] textarea');"
            " return !!t && t.offsetParent !== null && t.getBoundingClientRect().height > 0; }")


def bare_command(port: int) -> list[str]:
    """``streamlit run benchmarks/bare_app.py`` with the same options as the app's."""
    cmd = command(port)
    i = next(i for i, c in enumerate(cmd) if c.endswith("app.py"))
    return [*cmd[:i], str(ROOT / "benchmarks" / "bare_app.py"), *cmd[i + 1:]]


def visit(browser, cmd: list[str], waits: dict[str, str], log_dir: Path,
          env: dict) -> dict[str, float]:
    """Start a server with ``cmd``, open its page at once, and time each of ``waits``
    (name → JS condition, in order) from the server process's start; stop the server."""
    port = int(cmd[cmd.index("--server.port") + 1])
    url = f"http://127.0.0.1:{port}"
    log = log_dir / f"{port}.log"
    out: dict[str, float] = {}
    with open(log, "w") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        try:
            wait_healthy(url, proc, log, timeout=120)
            out["health"] = time.perf_counter() - t0
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            try:
                page.goto(url, wait_until="commit")
                for name, js in waits.items():
                    page.wait_for_function(js, timeout=120_000, polling=20)
                    out[name] = time.perf_counter() - t0
                    out[f"{name}, server CPU"] = cpu_seconds(proc.pid)
            finally:
                page.close()
        finally:
            stop(proc)
    return out


def run(rounds: int = 3, plain: bool = True) -> dict[str, list[float]]:
    """``rounds`` interleaved rounds; returns every timing by row name (seconds)."""
    from playwright.sync_api import sync_playwright

    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
           "PYTHONPATH": str(ROOT),
           # The same work for every server: no UMAP compile after the first page (it
           # starts after the first coupling is out and only delays the server's exit).
           "SINKSCOPE_WARM_UP": "0"}
    log_dir = Path(tempfile.mkdtemp(prefix="sinkscope-coldstart-"))
    apps = [("bare", bare_command, {"chart": HEATMAP}),
            ("sinkscope", lambda p: command(p, launcher=True),
             {"controls": CONTROLS, "coupling": HEATMAP})]
    if plain:
        apps.append(("sinkscope (streamlit run, no preload)", command,
                     {"controls": CONTROLS, "coupling": HEATMAP}))
    rows: dict[str, list[float]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            warm = browser.new_page()  # Chromium's own first paint, off the clock
            warm.set_content("<p>ready</p>")
            warm.close()
            for r in range(rounds):
                for name, cmd, waits in apps:
                    got = visit(browser, cmd(free_port()), waits, log_dir, env)
                    for k, v in got.items():
                        rows.setdefault(f"{name}: {k}", []).append(v)
                    print(f"round {r + 1} {name}: " + ", ".join(
                        f"{k} {v:.2f} s" for k, v in got.items()), flush=True)
        finally:
            browser.close()
    return rows


def report(rows: dict[str, list[float]]) -> float:
    """Print the medians and the ratio (c)/(a); returns the ratio."""
    labels = {
        "bare: health": "bare app: server answers /_stcore/health",
        "bare: chart": "(a) bare app: first chart drawn",
        "sinkscope: health": "sinkscope (make run): server answers /_stcore/health",
        "sinkscope: controls": "(b) sinkscope (make run): sidebar controls visible",
        "sinkscope: coupling": "(c) sinkscope (make run): first coupling heatmap drawn",
    }
    print("\nCold start: from the server process's start, first visitor in headless Chromium "
          "(seconds; fresh server per visit, rounds interleaved; \"server CPU\": CPU time the "
          "server process had used by then)")
    w = max(len(labels.get(k, k)) for k in rows)
    print(f"{'':<{w}}  {'median':>7}  {'min':>6}  {'max':>6}  {'n':>2}")
    for k, ts in rows.items():
        print(f"{labels.get(k, k):<{w}}  {statistics.median(ts):>7.2f}  {min(ts):>6.2f}  "
              f"{max(ts):>6.2f}  {len(ts):>2}")
    a = statistics.median(rows["bare: chart"])
    c = statistics.median(rows["sinkscope: coupling"])
    ratio = c / a
    verdict = "meets" if ratio <= TARGET_RATIO else "misses"
    print(f"first coupling / bare app's first chart: (c)/(a) = {c:.2f} / {a:.2f} = "
          f"{ratio:.2f}× ({verdict} the target ≤ {TARGET_RATIO:g}×)")
    cpu_a = statistics.median(rows["bare: chart, server CPU"])
    cpu_c = statistics.median(rows["sinkscope: coupling, server CPU"])
    print(f"server CPU to get there: {cpu_c:.2f} s against {cpu_a:.2f} s "
          f"({cpu_c / cpu_a:.2f}×)")
    return ratio


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.coldstart")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="2 rounds, without the plain row")
    p.add_argument("--no-plain", action="store_true",
                   help="skip sinkscope started by `streamlit run app.py` (no preload)")
    args = p.parse_args(argv)
    from engine.io.bench import machine

    print(f"machine: {machine()}")
    rows = run(2 if args.quick else args.rounds, plain=not (args.quick or args.no_plain))
    report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
