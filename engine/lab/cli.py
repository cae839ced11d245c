"""``python -m engine lab``: train one model to a coupling system and print its errors.

    python -m engine lab --target whitened --model sinkhorn --json

prints ``{"heldout_l1", "heldout_l1_double", "row_err", "col_err", "seconds"}``: the mean
L1 distance to the target plan on held-out pairs of the training size and of twice that
size, both marginal errors and the training time. Nothing heavy is imported until a run.
"""

from __future__ import annotations

import argparse
import json
import sys

# The page's defaults (engine.lab.training.LabSettings), repeated here so --help stays fast;
# tests check that they agree.
DEFAULTS = {"target": "whitened", "model": "sinkhorn", "width": 16, "depth": 2, "heads": 2,
            "eps": 0.5, "half_steps": 100, "points": 8, "steps": 400, "seed": 0}
TARGET_NAMES = ("sq-euclid", "exact", "whitened", "quantile")
MODEL_NAMES = ("sinkhorn", "softmax", "context-free")


def add_parser(sub) -> argparse.ArgumentParser:
    """Register the ``lab`` command on an argparse sub-parsers object."""
    d = DEFAULTS
    p = sub.add_parser(
        "lab", help="train a Sinkhorn Transformer (or a baseline) to a coupling system",
        description="Train one model on pairs of clouds in the plane to reproduce a target "
                    "coupling system, and print its held-out L1 distance to the target plan "
                    "(training size and twice that size), both marginal errors and seconds.")
    p.add_argument("--target", default=d["target"], choices=TARGET_NAMES,
                   help=f"coupling system to learn (default {d['target']})")
    p.add_argument("--model", default=d["model"], choices=MODEL_NAMES,
                   help=f"model to train (default {d['model']})")
    for name, kind, what in (("width", int, "encoder width D"), ("depth", int, "encoder layers L"),
                             ("heads", int, "attention heads"),
                             ("eps", float, "ε of the final layer"),
                             ("half_steps", int, "Sinkhorn half-steps of the final layer"),
                             ("points", int, "points per cloud"), ("steps", int, "training steps"),
                             ("seed", int, "seed")):
        p.add_argument("--" + name.replace("_", "-"), type=kind, default=d[name],
                       help=f"{what} (default {d[name]:g})")
    p.add_argument("--save", default=None, metavar="PATH",
                   help="write the trained model to PATH (.safetensors)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=run)
    return p


def run(args) -> int:
    """Train as the arguments say; print the result. Returns the exit status (engine
    errors go up to ``engine.io.cli.main``, which prints them and exits with status 2)."""
    from .training import LabSettings, save, train

    if args.save:  # before training: a long run never ends failing to write
        from ..io.paths import check_writable

        check_writable(args.save, "--save")
    settings = LabSettings(target=args.target, model=args.model, width=args.width,
                           depth=args.depth, heads=args.heads, eps=args.eps,
                           half_steps=args.half_steps, points=args.points,
                           steps=args.steps, seed=args.seed)
    r = train(settings)
    if args.save:
        save(r.model, args.save, settings)  # a LabError if it cannot be written
    out = r.summary()
    if args.json:
        json.dump(out, sys.stdout, allow_nan=False)
        print()
    else:
        print(f"{settings.model} on {settings.target} · width {settings.width} · depth "
              f"{settings.depth} · ε = {settings.eps:g} · {settings.points} points · "
              f"{r.steps_done} steps")
        rows = [("held-out L1 to the target plan", f"{out['heldout_l1']:.4f}"),
                (f"  on clouds of {2 * settings.points} points", f"{out['heldout_l1_double']:.4f}"),
                ("row marginal error ‖π1 − a‖₁", f"{out['row_err']:.2e}"),
                ("column marginal error ‖πᵀ1 − b‖₁", f"{out['col_err']:.2e}"),
                ("training time", f"{out['seconds']:.1f} s")]
        w = max(len(k) for k, _ in rows)
        for k, v in rows:
            print(f"{k:<{w}}  {v}")
    return 0
