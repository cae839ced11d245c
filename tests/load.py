"""Load test (``make load``): many browser sessions against one server, each with its own
texts, moving sliders for a while. Prints errors, leaks and server memory.

``python -m tests.load [--sessions 20] [--seconds 120]``. Every session types a text B
with its own rare word; at the end each page must show its own word in the charts and
no other session's word (no leakage through caches). Exit status 1 on any error or leak.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time

from tests.server import CHROMIUM_ARGS, chromium_path, rss_mb, streamlit_server

WORDS = ("zebra violin castle pepper rocket walrus tulip anchor glacier lantern "
         "saddle falcon cactus harbor piano orchid canyon beetle marble trumpet "
         "compass dragon velvet meadow").split()
TEXT_A = "The old fisherman walked along the bank of the river at dawn."


async def session(browser, url: str, i: int, seconds: float, out: dict) -> None:
    """One visitor: type its own text B, then move ε and the half-steps for ``seconds``."""
    word = WORDS[i % len(WORDS)]
    errors: list[str] = []
    ctx = await browser.new_context(viewport={"width": 1300, "height": 1400})
    page = await ctx.new_page()
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("dialog", lambda d: errors.append(f"dialog: {d.message}"))
    moves = 0
    try:
        await page.goto(url, timeout=120_000)
        await page.wait_for_selector(".js-plotly-plot", timeout=180_000)
        box = page.get_by_role("textbox", name="Text B (keys)")
        await box.fill(f"A {word} rested near the quiet water.")
        await box.press("Control+Enter")
        await page.wait_for_function(
            "w => [...document.querySelectorAll('.js-plotly-plot')].some("
            "p => p.textContent.includes(w))", arg=word, timeout=180_000)
        sliders = page.get_by_role("slider")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            s = sliders.nth(moves % 2)
            await s.focus()
            await s.press("ArrowLeft" if (moves // 2) % 4 < 2 else "ArrowRight")
            moves += 1
            await page.wait_for_timeout(700)
            if await page.locator('[data-testid="stException"]').count():
                errors.append("exception shown")
                break
        await page.wait_for_timeout(2500)
        text = " ".join(await page.locator(".js-plotly-plot").all_text_contents())
        if word not in text:
            errors.append(f"own word {word!r} missing at the end")
        leaked = [w for w in WORDS if w != word and w in text]
        if leaked:
            errors.append(f"saw other sessions' words: {leaked}")
    except Exception as e:  # a timeout or a crash counts as an error of this session
        errors.append(f"{type(e).__name__}: {str(e)[:200]}")
    finally:
        await ctx.close()
    out[i] = {"word": word, "moves": moves, "errors": errors}


async def run_sessions(url: str, n: int, seconds: float) -> dict:
    from playwright.async_api import async_playwright

    out: dict = {}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        await asyncio.gather(*(session(browser, url, i, seconds, out) for i in range(n)))
        await browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.load")
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=120)
    args = ap.parse_args(argv)
    with streamlit_server() as (url, proc):
        samples: list[float] = []
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                samples.append(rss_mb(proc.pid))
                stop.wait(1.0)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        t0 = time.monotonic()
        out = asyncio.run(run_sessions(url, args.sessions, args.seconds))
        wall = time.monotonic() - t0
        stop.set()
        th.join()
    errors = {i: r["errors"] for i, r in out.items() if r["errors"]}
    moves = sum(r["moves"] for r in out.values())
    third = max(1, len(samples) // 3)
    print(f"sessions: {args.sessions}, seconds of slider moves each: {args.seconds:g}, "
          f"wall: {wall:.0f} s")
    print(f"slider moves in all: {moves} ({moves / max(wall, 1):.1f}/s)")
    print(f"sessions with errors or leaks: {len(errors)}")
    for i, errs in sorted(errors.items()):
        print(f"  session {i}: {'; '.join(errs)}")
    if samples:
        print(f"server memory: start {samples[0]:.0f} MB, peak {max(samples):.0f} MB, "
              f"median of first third {statistics.median(samples[:third]):.0f} MB, "
              f"of last third {statistics.median(samples[-third:]):.0f} MB")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
