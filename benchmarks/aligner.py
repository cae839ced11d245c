"""Trained aligners on MTRef: ``python -m benchmarks.aligner [--quick] [--seeds 0 1 2]``.

Trains the Sinkhorn (dustbin) aligner and the softmax (null column) aligner with the
default settings on the 2,398 MTRef training pairs, θ and the best epoch chosen on the 800
MTRef dev pairs (both read transposed and lower-cased, as OTAlign reads them), and prints
beside them, in the same run:

1. the best untrained method on MTRef dev (every method of ``engine.alignment`` with its
   threshold and τ/m tuned on dev, hidden states of layer 3): dev total F1, each trained
   aligner's paired difference with it (95 % paired-bootstrap interval), and Sinkhorn
   minus softmax, per seed;
2. training time (wall and CPU seconds, reading included) and the time to align the 800
   dev pairs with a trained aligner against the untrained best method (model loaded,
   texts not yet read);
3. transfer, without tuning: the MTRef-trained Sinkhorn aligner (θ from MTRef) on Wiki dev
   and Edinburgh++ dev beside the untrained best method at its MTRef settings.

Targets: Sinkhorn ≥ untrained best + 0.030 and ≥ softmax + 0.015 total F1, each interval
excluding 0, over every seed; training ≤ 300 s on 2 cores; aligning ≤ 2× the untrained
method's time. ``--quick`` trains one seed (``make bench`` runs three). Data from
``$SINKSCOPE_ALIGN_DATA`` or ``../shared/data/align`` (skipped with a message when absent).
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from benchmarks.align import data_dir

TARGETS = {"untrained": 0.030, "softmax": 0.015, "train_s": 300.0, "align_ratio": 2.0}
TRANSFER = (("Wiki", "wiki-dev.tsv", False),
            ("Edinburgh++", "edinburgh-sure-and-possible-dev.txt", False))


def untrained_best(dev, encoder):
    """(method, its settings, CorpusScore on dev, seconds to align dev) of the untrained
    method with the best dev total F1, every method tuned on dev."""
    from engine.alignment import api

    scored = api.score_corpus(dev, encoder=encoder)
    tuned = api.tune_scored(scored, bootstrap=0)
    name = max(tuned.dev, key=lambda k: tuned.dev[k].macro["total_f1"])
    method = tuned.settings[name]
    t = time.perf_counter()
    links = api.align_pairs(dev, method=method, encoder=encoder)
    seconds = time.perf_counter() - t
    return name, method, api.score(links, dev, bootstrap=0), seconds


def paired(x, y, name: str, vs: str):
    from engine.alignment.score import paired_bootstrap

    return paired_bootstrap(x.counts, y.counts, method=name, vs=vs, bootstrap=2000)


def verdict(p, target: float) -> str:
    ok = p.delta >= target and p.ci95[0] > 0
    return (f"{p.delta:+.4f} [{p.ci95[0]:+.4f}, {p.ci95[1]:+.4f}] "
            f"(target ≥ {target:+.3f}, interval > 0: {'yes' if ok else 'NO'})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one seed instead of three")
    ap.add_argument("--seeds", type=int, nargs="+", default=None,
                    help="the seeds to train (default 0 1 2; --quick: 0)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--pairs", type=int, default=None, help="first N pairs of each file (a "
                    "smoke test; the targets are for all pairs)")
    args = ap.parse_args(argv)
    d = data_dir()
    if d is None or not (d / "mtref-train.tsv").is_file():
        print("benchmarks.aligner: skipped: no MTRef training pairs found (set "
              "SINKSCOPE_ALIGN_DATA or put them in ../shared/data/align).")
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(args.threads)
    from engine.aligner import AlignerSettings, align, train
    from engine.alignment.readers import read_pairs
    from engine.alignment.score import score
    from engine.io.bench import machine
    from engine.models.encoder import Encoder

    seeds = args.seeds or ([0] if args.quick else [0, 1, 2])
    print(f"benchmarks.aligner · {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · "
          f"{machine()}")
    train_p = read_pairs(d / "mtref-train.tsv", lowercase=True, transpose=True)[:args.pairs]
    dev = read_pairs(d / "mtref-dev.tsv", lowercase=True, transpose=True)[:args.pairs]
    enc = Encoder.default(device="cpu")
    base = AlignerSettings(lowercase=True, transpose=True)
    print(f"MTRef: {len(train_p)} training pairs, {len(dev)} dev pairs · {base}")
    name, method, best_sc, t_untrained = untrained_best(dev, enc)
    f_best = best_sc.macro["total_f1"]
    print(f"\n1. untrained best on MTRef dev: {name} {method.to_dict()}: total F1 {f_best:.4f}")
    print(f"{'seed':<5}{'final':<10}{'dev total F1':>13}{'θ':>6}{'epochs':>7}{'train s':>9}"
          f"{'CPU s':>8}  paired difference")
    runs, ok = {}, True
    for seed in seeds:
        for final in ("softmax", "sinkhorn"):
            r = train(train_p, dev, AlignerSettings(**{**base.to_dict(), "final": final,
                                                       "seed": seed}), encoder=enc)
            sc = score(align(r.aligner, dev), dev, bootstrap=0)
            runs[seed, final] = (r, sc)
            lines = [verdict(paired(sc, best_sc, final, name), TARGETS["untrained"])
                     + f" vs {name}"]
            if final == "sinkhorn":
                lines.append(verdict(paired(sc, runs[seed, "softmax"][1], final, "softmax"),
                                     TARGETS["softmax"]) + " vs softmax")
                ok &= all("interval > 0: yes" in x for x in lines)
                ok &= r.seconds <= TARGETS["train_s"]
            print(f"{seed:<5}{final:<10}{sc.macro['total_f1']:>13.4f}{r.theta:>6.2f}"
                  f"{r.epochs:>7}{r.seconds:>9.1f}{r.cpu_seconds:>8.1f}  {lines[0]}")
            for x in lines[1:]:
                print(f"{'':<58}{x}")
    r0 = runs[seeds[0], "sinkhorn"][0]
    t = time.perf_counter()
    align(r0.aligner, dev)
    t_trained = time.perf_counter() - t
    ratio = t_trained / t_untrained
    ok &= ratio <= TARGETS["align_ratio"]
    print(f"\n2. aligning the {len(dev)} dev pairs: trained {t_trained:.1f} s, untrained "
          f"{name} {t_untrained:.1f} s: ratio {ratio:.2f} (target ≤ {TARGETS['align_ratio']:g})")
    print(f"   training (target ≤ {TARGETS['train_s']:.0f} s): "
          + ", ".join(f"{k[1]} seed {k[0]} {v[0].seconds:.0f} s ({v[0].cpu_seconds:.0f} s CPU)"
                      for k, v in runs.items()))
    transfer(d, r0, method, name, enc, args.pairs)
    print(f"\ntargets met: {'yes' if ok else 'NO'}")
    return 0


def transfer(d, r0, method, name: str, enc, limit: int | None = None) -> None:
    """The MTRef-trained aligner on other sets, beside the untrained best at its settings."""
    from engine.aligner import align
    from engine.alignment import api
    from engine.alignment.readers import read_pairs

    print(f"\n3. transfer, no tuning (Sinkhorn seed {r0.settings.seed}, θ = {r0.theta:.2f}; "
          f"{name} at its MTRef settings)")
    for label, file, transpose in TRANSFER:
        if not (d / file).is_file():
            print(f"{label}: {file} missing, skipped")
            continue
        pairs = read_pairs(d / file, lowercase=True, transpose=transpose)[:limit]
        tr = api.score(align(r0.aligner, pairs), pairs, bootstrap=0)
        un = api.score(api.align_pairs(pairs, method=method, encoder=enc), pairs, bootstrap=0)
        p = paired(tr, un, "trained", name)
        print(f"{label:<12} {len(pairs):>4} pairs: trained {tr.macro['total_f1']:.4f}, "
              f"{name} {un.macro['total_f1']:.4f}: {p.delta:+.4f} [{p.ci95[0]:+.4f}, "
              f"{p.ci95[1]:+.4f}]")


if __name__ == "__main__":
    raise SystemExit(main())
