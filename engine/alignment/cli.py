"""``python -m engine align --pairs FILE [--gold FILE] [--dev FILE] [--method M] ...``.

Scores every method (or the one named) on the pairs' gold and prints a table with the
settings used; ``--dev`` tunes each method's threshold and τ/m on a dev file first;
``--out`` writes the named method's links (0-based Pharaoh, one line per pair, in input
order); ``--json`` prints the whole result as JSON. Nothing heavy is imported until the
command runs.
"""

from __future__ import annotations

import json
import sys

from ..aligner import cli as aligner_cli

METHOD_NAMES = ("softmax-argmax", "softmax-both", "similarity-threshold", "sinkhorn-argmax",
                "sinkhorn-threshold", "exact", "partial", "unbalanced")


def _head(x: str):
    return x if x == "mean" else int(x)


def add_parser(sub) -> None:
    """Register ``align`` on the engine's sub-parsers."""
    p = sub.add_parser(
        "align", help="word alignments of a file of pairs, scored on gold",
        description="Align the whitespace words of every pair with each method, score them "
        "against gold (precision, recall, F1, AER, null and total F1; macro over pairs as "
        "OTAlign, and micro) and print the table. Formats: TSV/CSV/JSONL with text_a, "
        "text_b[, gold]; MultiMWA TSV; awesome-align 'src ||| tgt' with --gold.")
    p.add_argument("--pairs", required=True, help="file of pairs (gold links optional)")
    p.add_argument("--gold", default=None,
                   help="gold links, one Pharaoh line per pair ('0-0 1-2 3p4')")
    p.add_argument("--dev", default=None,
                   help="a dev file with gold: tune each method's threshold and τ/m on it")
    p.add_argument("--method", default=None, choices=METHOD_NAMES,
                   help="score only this method (default: every method); --out writes its "
                        "links")
    p.add_argument("--source", default=None, choices=("attention", "hidden"),
                   help="what relates the words: attention logits QKᵀ/√d or hidden-state "
                        "cosine (default: the benchmark's best, hidden)")
    p.add_argument("--layer", type=int, default=None,
                   help="layer (hidden: state index 0…L; attention: layer 0…L−1; default: "
                        "the benchmark's best)")
    p.add_argument("--head", type=_head, default=None, help="head index or 'mean' (attention)")
    p.add_argument("--center", action="store_true",
                   help="centre hidden states over the corpus before the cosine")
    p.add_argument("--tau", type=float, default=None, help="τ of unbalanced transport")
    p.add_argument("--mass", type=float, default=None,
                   help="m of partial transport: the share of the shorter text's words "
                   "moved, in (0, 1]")
    p.add_argument("--eps", type=float, default=None, help="ε of the transport methods")
    p.add_argument("--threshold", type=float, default=None,
                   help="threshold θ on the min-max scaled plan or similarity (softmax-both: "
                        "on the probabilities)")
    p.add_argument("--direction", default=None,
                   choices=("intersection", "forward", "backward", "union"),
                   help="softmax-argmax's direction (default intersection)")
    p.add_argument("--lowercase", action="store_true",
                   help="lower-case the texts (the gold sets' convention)")
    p.add_argument("--one-based", action="store_true", help="gold links count words from 1")
    p.add_argument("--transpose", action="store_true", help="swap text A and text B")
    p.add_argument("--format", default="auto", choices=("auto", "table", "multimwa", "awesome"),
                   help="file format (default: guessed)")
    p.add_argument("--model", default=None, help="an allowed model (default: the packaged one)")
    p.add_argument("--bootstrap", type=int, default=1000,
                   help="bootstrap resamples for the 95 %% intervals (0: none)")
    p.add_argument("--out", default=None, help="write the method's links here (Pharaoh, 0-based)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    aligner_cli.add_align_arguments(p)
    p.set_defaults(run=run)


class Progress:
    """A progress bar on stderr: ``align [#####     ] 120/800 texts``."""

    def __init__(self, label: str, quiet: bool = False):
        self.label, self.quiet, self.shown = label, quiet, False

    def __call__(self, done: int, total: int) -> None:
        if self.quiet:
            return
        w = 30
        k = int(w * done / max(total, 1))
        sys.stderr.write(f"\r{self.label} [{'#' * k}{' ' * (w - k)}] {done}/{total} texts")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _read(args, path, gold=None):
    from .readers import read_links, read_pairs

    if gold is not None and args.format in ("auto", "awesome"):
        with open(path, "rb") as fh:
            head = fh.read(4096)
        if b"|||" in head:
            return read_pairs(path, fmt="awesome", gold=gold, one_based=args.one_based,
                              lowercase=args.lowercase, transpose=args.transpose)
    pairs = read_pairs(path, fmt=args.format, one_based=args.one_based,
                       lowercase=args.lowercase, transpose=False)
    if gold is not None:
        pairs = read_links(gold, pairs, one_based=args.one_based)
    if args.transpose:
        pairs = tuple(p.transposed() for p in pairs)
    return pairs


def run(args) -> int:
    """Align and score as the arguments say; print the result. Returns the exit status
    (engine errors and unreadable files go up to ``engine.io.cli.main``: status 2)."""
    from dataclasses import replace

    from . import api
    from .extract import Method

    pairs = _read(args, args.pairs, args.gold)
    dev = _read(args, args.dev) if args.dev else None
    if dev is not None and not all(p.has_gold for p in dev):
        from ..errors import SettingsError

        raise SettingsError("the dev file needs gold links for every pair.")
    encoder = None
    if args.model:
        from ..models.encoder import Encoder

        encoder = Encoder.load(args.model)
    aligner = aligner_cli.load_for_align(args, encoder)
    source = api.source_of(args.source, args.layer, args.head, args.center or None)
    methods = [args.method] if args.method else list(METHOD_NAMES)
    scored = api.score_corpus(pairs, encoder=encoder, source=source,
                              progress=Progress("pairs", args.quiet))
    source = scored.source
    over = {"threshold": args.threshold, "tau": args.tau, "mass": args.mass,
            "eps": args.eps, "direction": args.direction}
    settings: dict[str, Method] = {}
    if dev is not None:
        sd = api.score_corpus(dev, encoder=encoder, source=source,
                              progress=Progress("dev", args.quiet))
        tuned = api.tune_scored(sd, methods=methods, bootstrap=0)
        settings = dict(tuned.settings)
    for name in methods:
        m = settings.get(name) or api.method_of(name, source.kind)
        settings[name] = replace(m, **{k: v for k, v in over.items() if v is not None})
    gold = all(p.has_gold for p in pairs)
    results = {}
    for name in methods:
        al = api.extract_links(scored, settings[name])
        sc = api.score(al, pairs, bootstrap=args.bootstrap) if gold else None
        results[name] = (al, sc)
    if aligner is not None:
        aligner_cli.add_trained(aligner, pairs, dev, args, settings, results)
    out_method = "trained" if aligner is not None else args.method or api.DEFAULT_METHOD
    if args.out:
        al = results[out_method][0] if out_method in results else api.extract_links(
            scored, api.method_of(out_method, source.kind))
        with open(args.out, "w", encoding="utf-8") as fh:
            for a in al:
                fh.write(a.pharaoh + "\n")
    if args.json:
        doc = {"source": source.to_dict(), "n_pairs": len(pairs), "tuned_on_dev": dev is not None,
               "methods": {name: {"settings": settings[name].to_dict(),
                                  "scores": None if sc is None else sc.to_dict()}
                           for name, (al, sc) in results.items()},
               "alignments": {"method": out_method,
                              "pairs": [a.to_dict(values=False)
                                        for a in results.get(out_method, (None,))[0] or []]}}
        json.dump(doc, sys.stdout, ensure_ascii=False, allow_nan=False)
        print()
        return 0
    print(_table(source, pairs, settings, results, dev is not None))
    return 0


def _table(source, pairs, settings, results, tuned: bool) -> str:
    src = f"source {source.kind}, layer {source.layer}"
    if source.kind == "attention":
        src += f", head {source.head}"
    if source.center:
        src += ", centred"
    lines = [f"{len(pairs)} pairs · {src} · settings "
             f"{'tuned on dev' if tuned else 'defaults'} · macro over pairs (OTAlign); "
             "micro in brackets", ""]
    head = f"{'method':<21} {'P':>5} {'R':>5} {'F1':>13} {'AER':>13} {'null F1':>7} " \
           f"{'total F1':>15}  settings"
    lines.append(head)
    for name, (al, sc) in results.items():
        st = settings[name].to_dict()
        st.pop("method")
        sets = " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in st.items())
        if sc is None:
            n_links = sum(len(a.links) for a in al)
            nulls = sum(len(a.null_a) + len(a.null_b) for a in al)
            words = sum(len(a.words_a) + len(a.words_b) for a in al)
            lines.append(f"{name:<21} {n_links:>6} links, {nulls / max(words, 1):.1%} words "
                         f"unaligned  {sets}")
            continue
        M, U = sc.macro, sc.micro
        ci = sc.macro_ci.get("total_f1")
        ci_s = f" ±{(ci[1] - ci[0]) / 2:.3f}" if ci else ""
        lines.append(f"{name:<21} {M['precision']:5.3f} {M['recall']:5.3f} "
                     f"{M['f1']:5.3f} ({U['f1']:5.3f}) {M['aer']:5.3f} ({U['aer']:5.3f}) "
                     f"{M['null_f1']:7.3f} {M['total_f1']:7.3f}{ci_s:>8}  {sets}")
    if not all(p.has_gold for p in pairs):
        lines += ["", "No gold given: link counts only (give --gold or a file with a gold "
                  "column to score)."]
    return "\n".join(lines)
