"""Load test (``make load``): many browser sessions against one server, each with its own
texts, moving sliders for a while. Prints errors, leaks, latency and server memory.

``python -m tests.load [--sessions 20] [--seconds 120] [--pause 1.0]``. Every session
(its own Playwright context, i.e. its own Streamlit session) types a text A and a text B
with its own rare words. Once every session has its texts drawn, all of them move the ε
and half-step sliders together for ``--seconds``, waiting for each move's charts. After
every move a session checks that its charts show its own words and no other session's
(no leakage through the shared caches) and that no exception or error is shown. Exit
status 1 on any error or leak.

Waits poll (``polling=100`` and short ``evaluate`` calls): headless Chromium left idle
here was seen to hold websocket messages until the next DevTools command.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from pathlib import Path

from tests.support.server import (CHROMIUM_ARGS, chromium_path, cpu_seconds, rss_mb,
                                  streamlit_server)

# Whole words that each stay one token (after joining word pieces) in the charts.
WORDS_B = ("zebra violin castle pepper rocket walrus tulip anchor glacier lantern "
           "saddle falcon cactus harbor piano orchid canyon beetle marble trumpet "
           "compass dragon velvet meadow").split()
WORDS_A = ("giraffe guitar palace ginger bicycle penguin daisy helmet volcano candle "
           "blanket parrot lemon island violet pumpkin desert spider crystal drum "
           "ladder tiger satin orchard").split()
ALL_WORDS = frozenset(WORDS_A + WORDS_B)
TIMEOUT = 180_000  # ms, for one visitor's page load and typing
ARRIVING = 3  # visitors setting up at once (20 page loads at once starve 2 cores)
BARRIER_TIMEOUT = 900  # s, for everyone to arrive before the moving phase
MOVE_TIMEOUT = 60_000  # ms, for one slider move's charts

# Every tick label of every chart, word pieces joined again ("wal ##rus" -> "walrus").
JS_TOKENS = """() => ' ' + [...document.querySelectorAll('.js-plotly-plot g[class$="tick"] text')]
    .map(e => e.textContent).join(' ').replaceAll(' ##', '') + ' '"""
JS_TITLES = """() => [...document.querySelectorAll('.js-plotly-plot')].map(g =>
    [(g.layout && g.layout.title && g.layout.title.text) || '',
     ...((g.layout && g.layout.annotations) || []).map(a => a.text || '')].join(' | '))
    .join(' || ')"""
JS_BAD = """() => document.querySelectorAll('[data-testid="stException"], '
    + '[data-testid="stAlertContentError"]').length"""


async def poll_sleep(page, seconds: float) -> None:
    """Pass time while talking to the page (never leave headless Chromium idle)."""
    end = time.monotonic() + seconds
    while True:
        await page.evaluate("1")
        left = end - time.monotonic()
        if left <= 0:
            return
        await asyncio.sleep(min(0.25, left))


def expected_title(slider: int, valuetext: str) -> str:
    """What the first chart's titles say once a slider's new value is drawn."""
    if slider == 0:
        return f"ε={valuetext},"
    return f"{valuetext.split(' ')[0]} half-steps"


class Barrier:
    """All sessions start moving together once each is ready (or has failed)."""

    def __init__(self, n: int):
        self.n, self.count, self.event = n, 0, asyncio.Event()
        self.t0 = 0.0

    def arrive(self) -> None:
        self.count += 1
        if self.count >= self.n and not self.event.is_set():
            self.t0 = time.monotonic()
            self.event.set()


async def session(browser, url: str, i: int, seconds: float, pause: float,
                  barrier: Barrier, gate: asyncio.Semaphore, out: dict) -> None:
    """One visitor: type its own texts, then move ε and the half-steps for ``seconds``."""
    wa, wb = WORDS_A[i % len(WORDS_A)], WORDS_B[i % len(WORDS_B)]
    foreign = ALL_WORDS - {wa, wb}
    errors: list[str] = []
    latencies: list[float] = []
    moves = 0
    arrived = False
    t_start = t_end = 0.0
    await asyncio.sleep(0.3 * i)  # people do not all arrive in the same millisecond
    ctx = await browser.new_context(viewport={"width": 1100, "height": 900})
    page = await ctx.new_page()
    page.on("pageerror", lambda e: errors.append(f"pageerror: {str(e)[:200]}"))
    page.on("dialog", lambda d: errors.append(f"dialog: {d.message}"))

    async def wait_js(expression: str, arg=None, timeout: float = TIMEOUT) -> None:
        await page.wait_for_function(expression, arg=arg, timeout=timeout, polling=100)

    async def check_own_texts(where: str) -> bool:
        tokens = await page.evaluate(JS_TOKENS)
        missing = [w for w in (wa, wb) if f" {w} " not in tokens]
        leaked = sorted(w for w in foreign if f" {w} " in tokens)
        if missing:
            errors.append(f"{where}: own words {missing} missing")
        if leaked:
            errors.append(f"{where}: saw other sessions' words {leaked}")
        if await page.evaluate(JS_BAD):
            errors.append(f"{where}: an exception or error is shown")
        return not (missing or leaked)

    try:
        async with gate:  # a few visitors arrive at a time; then all move together
            await page.goto(url, timeout=TIMEOUT)
            await page.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)
            for name, text, word in (
                    ("Text A (queries)",
                     f"The old fisherman walked along the bank with a {wa}.", wa),
                    ("Text B (keys)", f"A {wb} rested near the quiet water.", wb)):
                box = page.get_by_role("textbox", name=name)
                await box.fill(text)
                await box.press("Control+Enter")
                await wait_js(f"w => ({JS_TOKENS})().includes(' ' + w + ' ')", word)
            ok = await check_own_texts("after typing")
        barrier.arrive()
        arrived = True
        await asyncio.wait_for(barrier.event.wait(), timeout=BARRIER_TIMEOUT)
        if not ok:
            return
        sliders = page.get_by_role("slider")
        if await sliders.count() < 2:
            errors.append(f"found {await sliders.count()} sliders, expected 2")
            return
        t_start = time.monotonic()
        end = t_start + seconds
        while time.monotonic() < end:
            k = moves % 2
            s = sliders.nth(k)
            before = await s.get_attribute("aria-valuetext")
            await s.focus()
            t0 = time.perf_counter()
            await s.press("ArrowLeft" if (moves // 2) % 4 < 2 else "ArrowRight")
            moves += 1
            after = await s.get_attribute("aria-valuetext")
            if after == before:
                errors.append(f"move {moves}: slider {k} did not move from {before!r}")
                break
            want = expected_title(k, after or "")
            await wait_js(f"w => ({JS_TITLES})().includes(w)", want, timeout=MOVE_TIMEOUT)
            latencies.append(time.perf_counter() - t0)
            if not await check_own_texts(f"move {moves}"):
                break
            await poll_sleep(page, pause)
        t_end = time.monotonic()
        await poll_sleep(page, 1.0)
        await check_own_texts("at the end")
    except Exception as e:  # a timeout or a crash counts as an error of this session
        errors.append(f"{type(e).__name__} after {moves} moves: {str(e)[:200]}")
    finally:
        if not arrived:
            barrier.arrive()
        t_end = t_end or time.monotonic()
        try:
            await ctx.close()
        except Exception:
            pass
    out[i] = {"words": (wa, wb), "moves": moves, "errors": errors, "latencies": latencies,
              "start": t_start, "end": t_end}


async def run_sessions(url: str, n: int, seconds: float, pause: float,
                       holder: dict | None = None) -> tuple[dict, Barrier]:
    from playwright.async_api import async_playwright

    out: dict = {}
    barrier = Barrier(n)
    if holder is not None:
        holder["barrier"] = barrier
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        gate = asyncio.Semaphore(ARRIVING)
        await asyncio.gather(*(session(browser, url, i, seconds, pause, barrier, gate, out)
                               for i in range(n)))
        await browser.close()
    return out, barrier


def _group(cmdline: str) -> str | None:
    if "streamlit" in cmdline and "app.py" in cmdline:
        return "server"
    if "chromium" in cmdline:
        if "--type=renderer" in cmdline:
            return "chromium renderers"
        if "--type=gpu-process" in cmdline:
            return "chromium gpu/raster"
        return "chromium other"
    if "playwright" in cmdline and "node" in cmdline:
        return "playwright driver"
    return None


def cpu_by_group() -> dict[str, float]:
    """CPU seconds used so far by the live processes of each kind (server, Chromium's
    renderers, its GPU process, the rest of Chromium, Playwright's driver)."""
    out: dict[str, float] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        g = _group(cmd)
        if g:
            out[g] = out.get(g, 0.0) + cpu_seconds(int(d.name))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.load")
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=120,
                    help="how long all sessions move sliders together")
    ap.add_argument("--pause", type=float, default=1.0,
                    help="seconds each session waits after a move's charts are drawn")
    args = ap.parse_args(argv)
    if args.sessions > len(WORDS_B):
        ap.error(f"at most {len(WORDS_B)} sessions (one rare word each)")
    with streamlit_server() as (url, proc):
        samples: list[tuple[float, float]] = []
        stop = threading.Event()
        cpu_marks: dict[str, dict[str, float]] = {}
        holder: dict = {}

        def sample():
            while not stop.is_set():
                now = time.monotonic()
                samples.append((now, rss_mb(proc.pid)))
                b = holder.get("barrier")
                if b is not None and b.t0:  # CPU by process kind over the moving phase
                    if "start" not in cpu_marks:
                        cpu_marks["start"] = cpu_by_group()
                    elif "end" not in cpu_marks and now >= b.t0 + args.seconds - 2:
                        cpu_marks["end"] = cpu_by_group()
                        cpu_marks["span"] = {"s": now - b.t0}
                stop.wait(1.0)

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        t0 = time.monotonic()
        out, barrier = asyncio.run(run_sessions(url, args.sessions, args.seconds, args.pause,
                                                holder))
        wall = time.monotonic() - t0
        stop.set()
        th.join()
        cpu_total = cpu_seconds(proc.pid)
    errors = {i: r["errors"] for i, r in out.items() if r["errors"]}
    moves = sum(r["moves"] for r in out.values())
    lat = sorted(x for r in out.values() for x in r["latencies"])
    moving = [r for r in out.values() if r["start"]]
    together = (min(r["end"] for r in moving) - max(r["start"] for r in moving)
                if moving else 0.0)
    phase = [m for t, m in samples if barrier.t0 and barrier.t0 <= t <= barrier.t0 + args.seconds]
    third = max(1, len(phase) // 3)
    print(f"sessions: {args.sessions}, wall: {wall:.0f} s (setup: "
          f"{(barrier.t0 - t0) if barrier.t0 else 0:.0f} s); all {len(moving)} moving "
          f"together for {together:.0f} s (asked {args.seconds:g} s, pause "
          f"{args.pause:g} s after each move)")
    print(f"slider moves in all: {moves} ({moves / max(args.seconds, 1):.1f}/s, "
          f"{moves / max(len(out), 1):.0f} per session)")
    if lat:
        p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
        print(f"move → charts updated: median {statistics.median(lat) * 1000:.0f} ms, "
              f"p95 {p95 * 1000:.0f} ms, max {lat[-1] * 1000:.0f} ms")
    print(f"sessions with errors or leaks: {len(errors)}")
    for i, errs in sorted(errors.items()):
        print(f"  session {i}: {'; '.join(errs[:3])}")
    print(f"server CPU time: {cpu_total:.0f} s over {wall:.0f} s "
          f"({100 * cpu_total / max(wall, 1):.0f}% of one core on average)")
    if "end" in cpu_marks:
        span = cpu_marks["span"]["s"]
        used = {g: cpu_marks["end"].get(g, 0.0) - v for g, v in cpu_marks["start"].items()}
        print(f"CPU while moving ({span:.0f} s; {os.cpu_count()} cores = "
              f"{100 * (os.cpu_count() or 1)}%): " + ", ".join(
                  f"{g} {100 * v / span:.0f}%" for g, v in sorted(used.items(),
                                                                   key=lambda kv: -kv[1])))
    if samples:
        mems = [m for _, m in samples]
        line = f"server memory: start {mems[0]:.0f} MB, peak {max(mems):.0f} MB"
        if phase:
            first, last = statistics.median(phase[:third]), statistics.median(phase[-third:])
            line += (f"; while moving: median of first third {first:.0f} MB, of last third "
                     f"{last:.0f} MB ({100 * (last - first) / max(first, 1):+.0f}%)")
        print(line)
    return 1 if errors or len(out) < args.sessions else 0


if __name__ == "__main__":
    sys.exit(main())
