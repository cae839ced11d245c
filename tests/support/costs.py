"""What a browser-test module would pay for a server and a Chromium of its own, the cost
the session-scoped fixtures (tests/conftest.py) share: ``python -m tests.support.costs``.

Prints, per round: the server's boot (until /_stcore/health answers), Chromium's launch,
the first page of the fresh server (the model loads in the server's process) and the same
page again on the now warm server. Then, on the warm server, what a page load costs in CPU
seconds: Chromium's (all its processes, from /proc) and the server's, a fresh renderer per
page against one kept renderer (``SharedRenderers``, what the browser tests use).
"""

from __future__ import annotations

import argparse
import os
import time

from tests.support.browser import SHARED_RENDERER_ARGS, SharedRenderers, wait_idle
from tests.support.server import CHROMIUM_ARGS, chromium_path, streamlit_server, tree_cpu


def page_cpu(pages: int = 6) -> dict[str, tuple[float, float, float]]:
    """Per page load of the default example on a warm server: (Chromium's CPU s, the
    server's CPU s, wall s), a fresh renderer per page against one kept renderer."""
    from playwright.sync_api import sync_playwright

    out = {}
    with streamlit_server({"SINKSCOPE_WARM_UP": "0"}) as (url, proc):
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_path(),
                                        args=CHROMIUM_ARGS + SHARED_RENDERER_ARGS)
            try:
                for name, kept in (("a fresh renderer per page", False),
                                   ("one kept renderer", True)):
                    ctx = (SharedRenderers(browser) if kept else browser).new_context()

                    def load():
                        pg = ctx.new_page()
                        pg.goto(url, timeout=180_000)
                        pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=180_000)
                        wait_idle(pg)
                        pg.close()

                    load()  # the server's first visit, and the kept renderer's first page
                    c0, s0, t0 = (tree_cpu(os.getpid(), only="chrom"),
                                  tree_cpu(proc.pid), time.perf_counter())
                    for _ in range(pages):
                        load()
                    out[name] = ((tree_cpu(os.getpid(), only="chrom") - c0) / pages,
                                 (tree_cpu(proc.pid) - s0) / pages,
                                 (time.perf_counter() - t0) / pages)
                    ctx.close()
            finally:
                browser.close()
    return out


def measure() -> tuple[float, float, float, float]:
    """(server up, Chromium launch, first page, same page again) in seconds."""
    from playwright.sync_api import sync_playwright

    t0 = time.perf_counter()
    with streamlit_server({"SINKSCOPE_WARM_UP": "0"}) as (url, _proc):
        up = time.perf_counter() - t0
        with sync_playwright() as p:
            t1 = time.perf_counter()
            browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            launch = time.perf_counter() - t1
            try:
                pages = []
                for _ in range(2):
                    pg = browser.new_page()
                    t2 = time.perf_counter()
                    pg.goto(url)
                    pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=180_000)
                    pages.append(time.perf_counter() - t2)
            finally:
                browser.close()
    return up, launch, pages[0], pages[1]


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m tests.support.costs")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pages", type=int, default=6, help="page loads per renderer kind")
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    for _ in range(args.rounds):
        up, launch, first, again = measure()
        print(f"server up {up:.1f} s · Chromium launch {launch:.1f} s · first page of a fresh "
              f"server {first:.1f} s · the same page on the warm server {again:.1f} s",
              flush=True)
    for name, (chromium, server, wall) in page_cpu(args.pages).items():
        print(f"a page load, {name}: Chromium {chromium:.2f} s of CPU, the server "
              f"{server:.2f} s, {wall:.2f} s wall (mean of {args.pages})", flush=True)


if __name__ == "__main__":
    main()
