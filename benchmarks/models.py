"""Models and Sentences (part of ``make bench``): what loading models through
sentence-transformers costs, and the Sentences view's ranking time.

``python -m benchmarks.models [--quick] [--no-browser]`` prints, in one run:

- the import cost of sentence-transformers on top of what the app imports anyway
  (torch, transformers' BERT, POT), in fresh processes;
- the Sentences ranking for 20 candidates (encode 21 texts; rank at ε = 1 and 0.1; a
  slider move re-ranks without encoding);
- in Chromium: server start → first coupling visible, and ε slider key press → every chart
  redrawn, for sinkscope and for a bare Streamlit app (one slider, one plotly heatmap)
  measured in the same run, and the Sentences view's ε move → rankings redrawn.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from engine.io.bench import machine, p50, print_rows, timeit

ROOT = Path(__file__).resolve().parent.parent
BASE_IMPORTS = ("import torch, ot; import transformers; "
                "from transformers.models.bert import modeling_bert")

BARE_APP = '''
import plotly.graph_objects as go
import streamlit as st
from sinkscope_app.main.params import EPS_OPTIONS

eps = st.select_slider("ε", options=EPS_OPTIONS, value=1.0, format_func=lambda e: f"{e:g}")
z = [[(i * j) % 7 / (1 + eps) for j in range(12)] for i in range(12)]
fig = go.Figure(go.Heatmap(z=z))
fig.update_layout(title=f"bare Streamlit (ε={eps:g}, slider)")
st.plotly_chart(fig, key="bare")
'''


def import_cost(repeat: int) -> list[tuple[str, list[float]]]:
    """Seconds to import sentence-transformers after the app's other heavy imports, each
    in a fresh interpreter (the first-page cost it adds)."""
    code = (f"import time; {BASE_IMPORTS}; t = time.perf_counter(); "
            "import sentence_transformers; print(time.perf_counter() - t)")
    base = (f"import time; t = time.perf_counter(); {BASE_IMPORTS}; "
            "print(time.perf_counter() - t)")
    rows = {"import torch + transformers (BERT) + POT (fresh process)": [],
            "then import sentence_transformers": []}
    for _ in range(repeat):
        for name, c in zip(rows, (base, code)):
            out = subprocess.run([sys.executable, "-c", c], capture_output=True, text=True,
                                 check=True, cwd=ROOT)
            rows[name].append(float(out.stdout.strip().splitlines()[-1]))
    return list(rows.items())


def sentences_rows(quick: bool) -> list[tuple[str, list[float]]]:
    """The Sentences ranking for the 20-candidate example set, in this process."""
    from engine.relation.relate import default_encoder
    from engine.relation.sentences import measures, rank
    from sinkscope_app.examples import sentence_sets

    enc = default_encoder()
    s = sentence_sets()["guitar"]
    cands = "\n".join(s["candidates"])
    assert len(s["candidates"]) == 20
    rep = 3 if quick else 10
    ms, _ = measures(enc, s["a"], cands)
    kw = dict(pooling=enc.pooling, mean_pooled=enc.mean_pooled)
    return [
        ("Sentences, 20 candidates: encode 21 texts", timeit(lambda: measures(enc, s["a"], cands), rep)),
        ("Sentences, 20 candidates: rank at ε = 1 (slider move)", timeit(lambda: rank(ms, eps=1.0, **kw), rep)),
        ("Sentences, 20 candidates: rank at ε = 0.1 (slider move)", timeit(lambda: rank(ms, eps=0.1, **kw), rep)),
        ("Sentences, 20 candidates: encode + rank at ε = 1", timeit(
            lambda: rank(measures(enc, s["a"], cands)[0], eps=1.0, **kw), rep)),
    ]


def _server(app: Path, port: int, log, env: dict | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1",
           "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def browser_rows(quick: bool) -> list[tuple[str, list[float]]]:
    """Cold start and slider moves for sinkscope and a bare Streamlit app, in Chromium."""
    from playwright.sync_api import sync_playwright

    from benchmarks.browser import _settled
    from tests.support.server import CHROMIUM_ARGS, chromium_path, free_port, stop, wait_healthy

    tmp = Path(tempfile.mkdtemp(prefix="sinkscope-bench-"))
    bare = tmp / "bare_app.py"
    bare.write_text(BARE_APP)
    env = {"SINKSCOPE_WARM_UP": "0"}  # the same work for both: no background compile
    rows: dict[str, list[float]] = {}
    moves = 10 if quick else 30
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            for name, app, query in (("sinkscope", ROOT / "app.py", ""),
                                     ("bare Streamlit app", bare, "")):
                port = free_port()
                url = f"http://127.0.0.1:{port}"
                with open(tmp / f"{port}.log", "w") as log:
                    t0 = time.perf_counter()
                    proc = _server(app, port, log, env)
                    try:
                        wait_healthy(url, proc, tmp / f"{port}.log")
                        page = browser.new_page(viewport={"width": 1400, "height": 1800})
                        page.goto(url + query)
                        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
                        rows.setdefault("cold start → first chart: " + name, []).append(
                            time.perf_counter() - t0)
                        page.wait_for_timeout(1000)
                        slider = page.get_by_role("slider").first
                        ts = []
                        for i in range(moves):
                            slider.focus()
                            t = time.perf_counter()
                            slider.press("ArrowLeft" if (i // 3) % 2 == 0 else "ArrowRight")
                            _settled(page, slider.get_attribute("aria-valuetext") or "")
                            ts.append(time.perf_counter() - t)
                        rows["slider move → charts redrawn: " + name] = ts
                        if name == "sinkscope":
                            rows.update(_sentences_in_browser(page, url, moves))
                        page.close()
                    finally:
                        stop(proc)
        finally:
            browser.close()
    return list(rows.items())


def _sentences_in_browser(page, url: str, moves: int) -> dict[str, list[float]]:
    """Open the Sentences view (20 candidates, warm server) and move ε there."""
    t = time.perf_counter()
    page.goto(url + "/?view=sentences&sset=guitar")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot')].some(p => "
        "p.textContent.includes('One ranking against the other'))", timeout=120_000)
    opened = time.perf_counter() - t
    page.wait_for_timeout(1000)
    slider = page.get_by_role("slider").first
    ts = []
    for i in range(max(5, moves // 3)):
        slider.focus()
        t = time.perf_counter()
        slider.press("ArrowLeft" if (i // 3) % 2 == 0 else "ArrowRight")
        value = slider.get_attribute("aria-valuetext") or ""
        page.wait_for_function(
            "e => [...document.querySelectorAll('.js-plotly-plot')].filter(p => "
            "p.textContent.includes('S_ε')).length >= 2 && [...document.querySelectorAll("
            "'.js-plotly-plot')].filter(p => p.textContent.includes('S_ε')).every(p => "
            "p.textContent.includes('ε = ' + e))", arg=value, timeout=60_000, polling=20)
        ts.append(time.perf_counter() - t)
    return {"Sentences view opened (20 candidates, warm server)": [opened],
            "Sentences: ε move → rankings redrawn": ts}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.models")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"machine: {machine()}")
    print_rows("Import cost (fresh processes)", import_cost(2 if args.quick else 3), "s", 2)
    print_rows("Sentences view (in process, the packaged MiniLM)", sentences_rows(args.quick),
               digits=2)
    if not args.no_browser:
        rows = browser_rows(args.quick)
        print_rows("In Chromium (server started per app; same run, same machine)", rows, digits=2)
        d = dict(rows)
        cold = [p50(d[k]) for k in d if k.startswith("cold start")]
        slide = [p50(d[k]) for k in d if k.startswith("slider move")]
        if len(cold) == 2 and len(slide) == 2:
            print(f"sinkscope / bare Streamlit: cold start {cold[0] / cold[1]:.1f}×, "
                  f"slider move {slide[0] / slide[1]:.1f}× (target: cold start ≤ 10 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
