"""Benchmarks: ``python -m engine.io.bench [solver] [app] [--quick]`` (``make bench``).

Every figure is a median over repeats measured in this run, printed beside a peer measured
in the same run on the same inputs, so ratios stay meaningful on a noisy machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from typing import Callable

import numpy as np
import torch


def machine() -> str:
    """One line naming the machine the figures come from."""
    dev = "CPU"
    if torch.cuda.is_available():
        dev = f"CUDA {torch.cuda.get_device_name(0)}"
    cpu = platform.processor() or platform.machine()
    return (f"{os.cpu_count()} cores ({cpu}), {dev}, torch {torch.__version__}, "
            f"torch threads {torch.get_num_threads()}, python {platform.python_version()}")


def timeit(fn: Callable[[], object], repeat: int, warmup: int = 1) -> list[float]:
    """Wall times in seconds of ``repeat`` calls after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        out.append(time.perf_counter() - t)
    return out


def p50(xs: list[float]) -> float:
    return statistics.median(xs)


def p95(xs: list[float]) -> float:
    return float(np.percentile(xs, 95)) if len(xs) > 1 else xs[0]


def print_rows(title: str, rows, unit: str = "ms", digits: int = 1) -> None:
    """A table of (name, times in seconds) rows: p50, p95 and count, in ``unit`` (ms or s)."""
    rows = list(rows)
    print(f"\n{title}")
    w = max(len(n) for n, _ in rows)
    scale = 1e3 if unit == "ms" else 1.0
    print(f"{'':<{w}}  {'p50':>9}  {'p95':>9}  {'n':>3}")
    for name, ts in rows:
        print(f"{name:<{w}}  {p50(ts) * scale:>7.{digits}f}{unit:<2}  "
              f"{p95(ts) * scale:>7.{digits}f}{unit:<2}  {len(ts):>3}")


def solver_bench(quick: bool = False) -> list[dict]:
    """Our batched Sinkhorn against POT's ``ot.solve_batch``.

    Same scores (normal, std 2.4 like MiniLM's cross-text logits), uniform weights, ε = 1,
    100 full iterations (200 half-steps), no early stop, float32.
    """
    import ot

    from ..solver.core import sinkhorn

    device = "cuda" if torch.cuda.is_available() else "cpu"
    cases = [(72, 32), (72, 128), (1, 2048)]
    rows = []
    rng = np.random.default_rng(0)
    for B, n in cases:
        S = torch.tensor(rng.normal(size=(B, n, n)) * 2.4, dtype=torch.float32, device=device)
        a = torch.full((B, n), 1.0 / n, dtype=torch.float32, device=device)
        rep = (3 if quick else 7) if n <= 128 else (1 if quick else 3)

        def ours():
            return sinkhorn(S, a, a, 1.0, 200, check_inputs=False)

        def pot():
            return ot.solve_batch(-S, 1.0, a, a, max_iter=100, tol=0, reg_type="entropy")

        def ours_log():
            return sinkhorn(S, a, a, 1.0, 200, method="log", check_inputs=False)

        t_pot = timeit(pot, rep)
        t_ours = timeit(ours, rep)
        t_log = timeit(ours_log, rep)
        diff = float((ours().plan - pot().plan).abs().max())
        row = {"workload": f"{B} × {n}²", "pot_ms": p50(t_pot) * 1e3,
               "ours_ms": p50(t_ours) * 1e3, "log_ms": p50(t_log) * 1e3,
               "speedup": p50(t_pot) / p50(t_ours), "max_diff": diff}
        rows.append(row)
    return rows


def print_solver(rows: list[dict]) -> None:
    print("\nSinkhorn, 100 iterations (200 half-steps), float32, ε = 1 — medians")
    print(f"{'workload':<12} {'POT solve_batch':>16} {'ours (auto)':>12} {'ours (log)':>11} "
          f"{'speed-up':>9} {'max |Δplan|':>12}")
    for r in rows:
        print(f"{r['workload']:<12} {r['pot_ms']:>13.1f} ms {r['ours_ms']:>9.1f} ms "
              f"{r['log_ms']:>8.1f} ms {r['speedup']:>8.1f}× {r['max_diff']:>12.1e}")
    print("GeomLoss is not compared: its solvers take point clouds, not score matrices.")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m engine.io.bench")
    p.add_argument("sections", nargs="*", default=["solver"], help="solver")
    p.add_argument("--quick", action="store_true", help="fewer repeats")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"machine: {machine()}")
    if "solver" in args.sections:
        print_solver(solver_bench(args.quick))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
