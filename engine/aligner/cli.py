"""``python -m engine train-aligner``, and the ``--aligner`` hook of ``python -m engine align``.

    python -m engine train-aligner --train FILE --dev FILE --out DIR [--final sinkhorn|softmax]
        [--top K] [--epochs E] [--model NAME] [--lowercase] [--transpose] [--seed S]
        [--device cpu|cuda] [--json]

trains an aligner (a progress bar per epoch on stderr, dev total F1 after each), keeps the
best epoch and writes ``DIR/model.safetensors`` and ``DIR/config.json``; ``--json`` prints
``{"dev_total_f1", "theta", "epochs", "seconds"}``. Settings out of range and an
unwritable ``--out`` fail before any work. ``python -m engine align --pairs FILE
--aligner DIR [--dev FILE]`` scores the aligner as the method ``trained`` beside the others
(θ re-tuned on ``--dev`` when given). Nothing heavy is imported until a command runs.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from ..settings import ALIGNER_FINALS, ALIGNER_WHOLE

FORMATS = ("auto", "table", "multimwa", "awesome")


def add_parser(sub) -> None:
    """Register ``train-aligner`` on the engine's sub-parsers."""
    d = {k: v[0] for k, v in ALIGNER_WHOLE.items()}
    p = sub.add_parser(
        "train-aligner", help="train a word aligner (Sinkhorn Transformer) on gold links",
        description="Fine-tune a sentence model's top layers with Q/K heads and a Sinkhorn "
        "final layer with a dustbin (or a softmax one) on the gold links of a training file; "
        "θ and the best epoch are chosen on a dev file by total F1. Formats: those of "
        "python -m engine align, with gold links.")
    p.add_argument("--train", required=True, help="training pairs with gold links")
    p.add_argument("--dev", required=True, help="dev pairs with gold links (θ, best epoch)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder to write the aligner to")
    p.add_argument("--final", default=ALIGNER_FINALS[0], choices=ALIGNER_FINALS,
                   help="final layer (default sinkhorn: with a dustbin)")
    for name, what in (("top", "layers fine-tuned"), ("layer", "hidden state read"),
                       ("epochs", "epochs, the most"), ("batch", "pairs per step"),
                       ("half-steps", "Sinkhorn half-steps"),
                       ("patience", "epochs without progress before stopping (0: never)"),
                       ("seed", "seed")):
        key = name.replace("-", "_")
        p.add_argument("--" + name, type=int, default=d[key], help=f"{what} (default {d[key]})")
    p.add_argument("--model", default=None, help="an allowed base model (default: the "
                   "packaged all-MiniLM-L6-v2)")
    p.add_argument("--lowercase", action="store_true", help="lower-case the texts")
    p.add_argument("--transpose", action="store_true", help="swap text A and text B")
    p.add_argument("--format", default="auto", choices=FORMATS, help="file format")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


class Bar:
    """Progress on stderr: reading the texts, then one bar per epoch and its dev score."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet

    def __call__(self, p) -> None:
        if self.quiet:
            return
        w = 30
        k = int(w * p.step / max(p.steps, 1))
        bar = f"[{'#' * k}{' ' * (w - k)}] {p.step}/{p.steps}"
        if p.stage == "read":
            line = f"\rread     {bar} texts"
        elif p.stage == "train":
            line = f"\repoch {p.epoch}/{p.epochs} {bar} batches · loss {p.loss:.3f}"
        else:
            line = (f"\repoch {p.epoch}/{p.epochs}: dev total F1 {p.dev_total_f1:.4f} at "
                    f"θ = {p.theta:.2f} · {p.seconds:.0f} s\n")
        if p.stage != "dev" and p.step >= p.steps:
            line += "\n"
        sys.stderr.write(line)
        sys.stderr.flush()


def _read(path: str, args):
    from ..alignment.readers import read_pairs

    return read_pairs(path, fmt=args.format, lowercase=args.lowercase,
                      transpose=args.transpose)


def run(args) -> int:
    """Train and save as the arguments say; engine errors go up to ``engine.io.cli.main``
    (status 2, one line)."""
    from ..settings import DEFAULT_MODEL
    from .checkpoint import check_out
    from .config import AlignerError, AlignerSettings

    settings = AlignerSettings(model=args.model or DEFAULT_MODEL, final=args.final,
                               layer=args.layer, top=args.top, epochs=args.epochs,
                               batch=args.batch, half_steps=args.half_steps,
                               patience=args.patience, seed=args.seed,
                               lowercase=args.lowercase, transpose=args.transpose)
    if str(args.device).startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise AlignerError.of("device", device=args.device, reason="no CUDA GPU")
    elif args.device != "cpu":
        raise AlignerError.of("choice", name="--device", choices="cpu, cuda", value=args.device)
    check_out(args.out)
    train_pairs, dev_pairs = _read(args.train, args), _read(args.dev, args)
    from .checkpoint import save
    from .training import train

    from .. import settings as engine_settings

    r = train(train_pairs, dev_pairs, settings, device=args.device, progress=Bar(args.quiet),
              threads=engine_settings.CONFIG.torch_threads or None)
    save(r, args.out)
    if args.json:
        json.dump(r.summary(), sys.stdout, allow_nan=False)
        print()
        return 0
    print(f"{settings.final} aligner on {settings.model} · layers {settings.layer - settings.top}"
          f"–{settings.layer} fine-tuned · {len(train_pairs)} training pairs")
    for e in r.history:
        mark = "  (kept)" if e.epoch == r.best_epoch else ""
        print(f"epoch {e.epoch}: loss {e.loss:.4f} · dev total F1 {e.dev_total_f1:.4f} at "
              f"θ = {e.theta:.2f}{mark}")
    print(f"{r.stopped} after {r.epochs} epochs in {r.seconds:.1f} s; written to {args.out}")
    return 0


# ---- the align command's --aligner ---------------------------------------------------

@dataclass(frozen=True)
class TrainedMethod:
    """The settings entry of the ``trained`` method in ``align``'s table and JSON."""

    threshold: float
    final: str
    aligner: str
    name = "trained"

    def to_dict(self) -> dict:
        return {"method": "trained", "threshold": self.threshold, "final": self.final,
                "aligner": self.aligner}


def add_align_arguments(p) -> None:
    """``align``'s ``--aligner DIR``."""
    p.add_argument("--aligner", default=None, metavar="DIR|NAME",
                   help="a trained aligner's folder, or an aligner's name (SINKSCOPE_ALIGNERS; "
                        "with --engine, one of the engine's: GET /v1/aligners): score it as "
                        "the method 'trained' (θ tuned on --dev when given; set it with "
                        "--threshold or --set trained:threshold=θ)")


def load_for_align(args, encoder=None):
    """The aligner of ``align --aligner`` (None without it), checked before any work: its
    base model must be ``--model``'s when that is given."""
    if not getattr(args, "aligner", None):
        return None
    from pathlib import Path

    from . import registry
    from .checkpoint import allowed_aligners, load, read_config

    name = args.aligner
    named = name in registry.names()
    folder = allowed_aligners().get(name, Path(name))
    doc = None if named and name not in allowed_aligners() else read_config(folder)
    if encoder is None and doc is not None:
        from ..settings import DEFAULT_MODEL

        if doc["settings"].get("model") == DEFAULT_MODEL:
            from ..relation.relate import default_encoder

            encoder = default_encoder()
    if named:  # by name: the process's one lookup (registered, or listed and loaded once);
        # the base model given is the one it must be on (else it is refused, as a folder is)
        base = doc["settings"].get("model") if doc is not None else None
        return registry.lookup(name, encoders={base: encoder} if encoder and base else None)
    return load(folder, encoder=encoder, name=Path(str(name)).name)


def trained(aligner, pairs, dev, theta: float | None = None) -> tuple["TrainedMethod", list]:
    """The aligner's settings entry and its links on ``pairs`` as the method ``trained``:
    at ``theta`` when given, else θ tuned on ``dev`` when given, else the aligner's own."""
    from .data import prepare
    from .extract import align, plans, tune_theta

    if theta is not None:
        theta = float(theta)
    elif dev is None:
        theta = float(aligner.theta)
    else:
        dc = prepare(dev, aligner)
        theta = tune_theta(plans(aligner, dc), dc)[0]
    return (TrainedMethod(theta, aligner.settings.final, aligner.name),
            align(aligner, pairs, theta=theta))
