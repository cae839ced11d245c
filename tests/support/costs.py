"""What a browser-test module would pay for a server and a Chromium of its own, the cost
the session-scoped fixtures (tests/conftest.py) share: ``python -m tests.support.costs``.

Prints, per round: the server's boot (until /_stcore/health answers), Chromium's launch,
the first page of the fresh server (the model loads in the server's process) and the same
page again on the now warm server.
"""

from __future__ import annotations

import argparse
import os
import time

from tests.support.server import CHROMIUM_ARGS, chromium_path, streamlit_server


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
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    for _ in range(args.rounds):
        up, launch, first, again = measure()
        print(f"server up {up:.1f} s · Chromium launch {launch:.1f} s · first page of a fresh "
              f"server {first:.1f} s · the same page on the warm server {again:.1f} s",
              flush=True)


if __name__ == "__main__":
    main()
