"""What a person feels: encode, relate, figure and browser latencies, memory.

``python -m benchmarks.latency [--quick] [--no-browser]`` (part of ``make bench``) prints
medians and 95th percentiles, in one run, beside the machine they were measured on.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from engine.io.bench import machine, print_rows, timeit

SHORT_A = ("The old fisherman walked along the bank of the river at dawn, watching the "
           "mist rise slowly over the quiet water.")
SHORT_B = ("She went to the bank to deposit her salary and ask the clerk about a loan for "
           "the small house by the water.")


def long_text(seed: int) -> str:
    """A text of well over the model's token limit (cut to it)."""
    rng = np.random.default_rng(seed)
    words = ("river bank money water loan quiet house morning light people walk talk city "
             "market bridge boat stone tree wind rain field road school music story").split()
    return " ".join(rng.choice(words, 700))


def engine_rows(quick: bool) -> list[tuple[str, list[float]]]:
    """Encoding, relate with the encoding cached, and each figure, timed in this process."""
    from engine import encode_texts, project, relate_encodings
    from engine.relation.relate import default_encoder, eps_path
    import viz
    from viz import grid as vgrid

    rep = 5 if quick else 20
    enc = default_encoder()
    rows = []
    rows.append(("encode a pair of ~30-token texts",
                 timeit(lambda: encode_texts(enc, SHORT_A, SHORT_B, "separate"), rep)))
    la, lb = long_text(1), long_text(2)
    rows.append(("encode two texts at the token limit (256)",
                 timeit(lambda: encode_texts(enc, la, lb, "separate"), max(3, rep // 4))))
    e = encode_texts(enc, SHORT_A, SHORT_B, "separate")
    eps_values = list(np.geomspace(0.05, 5, 17))
    k = iter(range(10**9))

    def move():  # a slider move: a new ε each time, encoding cached
        return relate_encodings(e, layer=5, head=3, eps=eps_values[next(k) % 17],
                                half_steps=100)

    rows.append(("relate, slider move (one head, 100 half-steps)", timeit(move, rep * 2)))
    rows.append(("relate, slider move (6 × 12 grid)",
                 timeit(lambda: relate_encodings(e, layer="all", head="all",
                                                 eps=eps_values[next(k) % 17],
                                                 half_steps=100), rep)))
    r = relate_encodings(e, layer=5, head=3, eps=0.5, half_steps=100)
    g = relate_encodings(e, layer="all", head="all", eps=0.5, half_steps=100)
    pr = project(r)
    ev, plans = eps_path(r)
    figs = {
        "figure: compare heatmaps": lambda: viz.heatmaps.compare(r),
        "figure: difference map": lambda: viz.heatmaps.difference(r),
        "figure: bipartite graph": lambda: viz.bipartite.graph(r),
        "figure: point cloud (PCA)": lambda: viz.clouds.cloud(r, pr),
        "figure: convergence": lambda: viz.diagnostics.convergence(
            r.coupling, current=r.half_steps),
        "figure: 6 × 12 grid": lambda: vgrid.grid(g.coupling.plan, g.summary.softmax_col_err),
        "figure: ε path animation": lambda: viz.diagnostics.eps_path(
            ev, plans, r.exact_plan, r.tokens_a, r.tokens_b),
    }
    for name, fn in figs.items():
        rows.append((name, timeit(fn, rep)))
    rows.append(("projection: PCA", timeit(lambda: project(r), rep)))
    rows.append(("ε path (12 values, early stop)", timeit(lambda: eps_path(r), rep)))
    el, elb = encode_texts(enc, la, lb, "separate")
    rows.append(("relate two texts at the token limit (one head)",
                 timeit(lambda: relate_encodings((el, elb), layer=5, head=3, eps=0.5,
                                                 half_steps=100), max(3, rep // 4))))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.latency")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"machine: {machine()}")
    print_rows("Engine and figures (in process, encoding cached where said)",
               engine_rows(args.quick))
    if not args.no_browser:
        from benchmarks.browser import run as run_browser

        run_browser(quick=args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
