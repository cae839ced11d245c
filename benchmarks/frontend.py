"""The front end's memory on a served engine: one tour of every page and job, in Chromium.

``python -m benchmarks.frontend [--tree PATH]`` starts ``python -m engine serve`` and
``streamlit run app.py`` from a checkout (this one by default; ``--tree`` another, e.g. an
older commit in a ``git worktree``, run with its own code) with ``SINKSCOPE_ENGINE``
pointing the app at the engine, then drives one headless Chromium through the same tour:
the main page's Compare and Cloud views, Learn's steps 4 and 6, Align's Pair view, a
20-pair corpus, the Lab's training (20 steps, two models), its width sweep and its text
comparison (one epoch). It prints the Streamlit process's peak RSS (VmHWM) and whether
libtorch (or tokenizers, numba) was ever mapped into it (``/proc/<pid>/maps``), with the
tour's steps that ran.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.engine_server import EngineProcess
from tests.support.server import (CHROMIUM_ARGS, ROOT, chromium_path, free_port, stop,
                                  wait_healthy)

DATA = ROOT / "tests" / "data" / "align" / "pairs.tsv"
HEAVY_LIBS = ("libtorch", "/torch/", "/tokenizers/", "/safetensors/", "/numba/",
              "/llvmlite/")
TIMEOUT = 300_000  # ms


def chart(pg, needle: str) -> None:
    pg.wait_for_function("""(n) => [...document.querySelectorAll('.js-plotly-plot')].some(g =>
        ((g.layout && g.layout.title && g.layout.title.text) || '').includes(n))""",
                         arg=needle, timeout=TIMEOUT)


def upload(pg, where: str, raw: bytes) -> None:
    pg.locator(f'{where} [data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": "pairs.tsv", "mimeType": "text/tab-separated-values", "buffer": raw}])


def tour(pg, url: str) -> list[str]:
    """The tour's steps, in order; the names of those that ran to their end."""
    raw = DATA.read_bytes()

    def epochs(pg):
        box = pg.locator(".st-key-lab_text_epochs input")
        box.fill("1")
        box.press("Enter")
        pg.wait_for_timeout(1500)

    steps = [
        ("main", lambda: (pg.goto(f"{url}/"), chart(pg, "Sinkhorn"))),
        ("cloud", lambda: (pg.goto(f"{url}/?view=cloud"), chart(pg, "Joint "))),
        ("learn", lambda: (pg.goto(f"{url}/learn?step=4"), chart(pg, "Sinkhorn coupling"),
                           pg.goto(f"{url}/learn?step=6"), chart(pg, ""))),
        ("align", lambda: (pg.goto(f"{url}/align"), chart(pg, "Links of"))),
        ("corpus", lambda: (pg.goto(f"{url}/align?view=corpus"), upload(pg, "", raw),
                            pg.wait_for_selector("text=20 pairs, 20 with gold",
                                                 timeout=TIMEOUT))),
        ("lab train", lambda: (pg.goto(f"{url}/lab?lang=en&target=quantile&width=4&steps=20"
                                       "&models=sinkhorn,softmax"),
                               pg.locator(".st-key-lab_train button").click(),
                               pg.wait_for_selector("text=Trained 2 model(s)",
                                                    timeout=TIMEOUT))),
        ("lab sweep", lambda: (pg.locator(".st-key-lab_sweep button").first.click(),
                               chart(pg, "Held-out error against width"))),
        ("lab text", lambda: (upload(pg, ".st-key-lab_text_upload", raw), epochs(pg),
                              pg.locator(".st-key-lab_text_train button").click(),
                              pg.wait_for_selector("text=On 5 held-out pairs",
                                                   timeout=TIMEOUT))),
    ]
    done = []
    for name, step in steps:
        t0 = time.perf_counter()
        try:
            step()
            done.append(name)
            print(f"  {name}: {time.perf_counter() - t0:.1f} s", flush=True)
        except Exception as e:  # an older tree without this step: said, and the tour goes on
            print(f"  {name}: did not finish ({type(e).__name__}: {str(e)[:120]})",
                  flush=True)
    return done


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", type=Path, default=ROOT, help="the checkout to run (default: this)")
    a = p.parse_args(argv)
    tree = a.tree.resolve()
    env = {**os.environ, "PYTHONPATH": str(tree), "SINKSCOPE_WARM_UP": "0",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    engine = EngineProcess(free_port(), log=Path(tempfile.mkdtemp()) / "engine.log",
                           root=tree)
    port = free_port()
    log = Path(tempfile.mkdtemp()) / "streamlit.log"
    proc = None
    try:
        engine.start(timeout=600)
        cmd = [sys.executable, "-m", "streamlit", "run", str(tree / "app.py"),
               "--server.headless", "true", "--server.port", str(port), "--server.address",
               "127.0.0.1", "--browser.gatherUsageStats", "false",
               "--server.fileWatcherType", "none"]
        with open(log, "w") as fh:
            proc = subprocess.Popen(cmd, cwd=tree, env={**env, "SINKSCOPE_ENGINE": engine.url},
                                    stdout=fh, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc, log, timeout=120)
        from playwright.sync_api import sync_playwright

        print(f"tree {tree}, engine {engine.url}")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            try:
                ctx = browser.new_context(viewport={"width": 1400, "height": 2200})
                pg = ctx.new_page()
                pg.set_default_timeout(TIMEOUT)
                done = tour(pg, url)
            finally:
                browser.close()
        maps = Path(f"/proc/{proc.pid}/maps").read_text()
        mapped = [lib for lib in HEAVY_LIBS if lib in maps]
        print(f"steps run: {', '.join(done)}")
        print(f"front end peak RSS (VmHWM): {peak_mb(proc.pid):.0f} MB; "
              f"libtorch mapped: {'yes' if 'libtorch' in maps else 'no'} "
              f"({', '.join(mapped) or 'none of ' + ', '.join(HEAVY_LIBS)})")
    finally:
        if proc is not None:
            stop(proc)
        engine.stop()


if __name__ == "__main__":
    main()
