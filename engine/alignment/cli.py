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
TRAINED = "trained"  # a trained aligner (--aligner) as a method


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
    p.add_argument("--method", default=None, choices=(*METHOD_NAMES, TRAINED),
                   help="score only this method (default: every method; trained: the "
                        "--aligner alone); --out writes its links")
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
    p.add_argument("--set", action="append", default=[], metavar="METHOD:KEY=VALUE[,...]",
                   help="one method's settings, e.g. unbalanced:threshold=0.42,tau=4.94 "
                        "(KEY: threshold, tau, mass, eps, direction, temperature; "
                        "trained:threshold=θ with --aligner); repeat for other methods")
    p.add_argument("--bootstrap", type=int, default=1000,
                   help="bootstrap resamples for the 95 %% intervals and the paired "
                        "comparisons (0: none)")
    p.add_argument("--out", default=None,
                   help="write the links of --method here (Pharaoh, 0-based; default: the "
                        "trained aligner's with --aligner, else softmax-both's)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--engine", default=None, metavar="URL",
                   help="align on a served engine (python -m engine serve), in chunks")
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
    from . import remote

    if args.out:  # before any work: a long run never ends failing to write
        from ..io.paths import check_writable

        check_writable(args.out, "--out")
    if args.method == TRAINED and not args.aligner:
        from ..errors import SettingsError

        raise SettingsError("--method trained needs --aligner DIR (or an allowed aligner's "
                            "name): the trained aligner it scores.")
    if args.engine:
        remote.check(args)
    _threads()
    pairs = _read(args, args.pairs, args.gold)
    dev = _read(args, args.dev) if args.dev else None
    if dev is not None and not all(p.has_gold for p in dev):
        from ..errors import SettingsError

        raise SettingsError("the dev file needs gold links for every pair.")
    result, out_method, alignments = compare(args, pairs, dev)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            for a in alignments:
                fh.write(a.pharaoh + "\n")
    if args.json:
        doc = _document(args, result, dev is not None, out_method, alignments)
        json.dump(doc, sys.stdout, ensure_ascii=False, allow_nan=False)
        print()
        return 0
    print(_table(result, dev is not None))
    return 0


def compare(args, pairs, dev=None):
    """The methods compared on ``pairs`` as the arguments say (tuned on ``dev`` when
    given): (the :class:`~engine.alignment.api.Comparison`, the method whose links are
    written, its alignments). ``run`` prints them; ``sinkscope.align`` returns them as
    the ``--json`` document."""
    from . import api, remote

    theta = _trained_theta(args)  # checked before the model loads
    encoder = None
    if args.model and not args.engine:
        from ..models.encoder import Encoder

        encoder = Encoder.load(args.model)
    aligner = None if args.engine else aligner_cli.load_for_align(args, encoder)
    source = api.source_of(args.source, args.layer, args.head, args.center or None)
    methods = [args.method] if args.method else list(METHOD_NAMES)
    methods = [m for m in methods if m != TRAINED]
    scored = remote.Corpus(args.engine, pairs, source, model=args.model,
                           progress=Progress("pairs", args.quiet)) if args.engine else \
        api.score_corpus(pairs, encoder=encoder, source=source,
                         progress=Progress("pairs", args.quiet)) if methods else None
    source = scored.source if scored is not None else source
    tuned = None
    if dev is not None and methods:
        sd = api.score_corpus(dev, encoder=encoder, source=source,
                              progress=Progress("dev", args.quiet))
        tuned = api.pick_settings(sd, methods)
    settings = _settings(args, methods, source.kind, tuned)
    with_trained = bool(args.aligner)
    boot = 0 if with_trained else args.bootstrap  # scored once, with trained
    result = scored.compare(settings, bootstrap=boot) if args.engine else \
        api.compare_methods(scored, settings, bootstrap=boot) if methods else \
        api.comparison_of(source, pairs, {}, {}, bootstrap=0)
    if with_trained:
        m, al = (scored.trained(args.aligner, theta) if args.engine else
                 aligner_cli.trained(aligner, pairs, dev, theta=theta))
        result = api.comparison_of(result.source, pairs, {**result.settings, TRAINED: m},
                                   {**result.alignments, TRAINED: al},
                                   bootstrap=args.bootstrap)
    out_method = args.method or (TRAINED if with_trained else api.DEFAULT_METHOD)
    alignments = result.alignments.get(out_method) or api.extract_links(
        scored, api.method_of(out_method, source.kind))
    return result, out_method, alignments


def _threads() -> None:
    """torch's threads for this run (``SINKSCOPE_TORCH_THREADS``, 1 by default, as the app):
    with other work on the cores, two threads made the encoder and the solves several
    times slower than one."""
    from ..settings import CONFIG

    if CONFIG.torch_threads > 0:
        import torch

        torch.set_num_threads(CONFIG.torch_threads)


def _settings(args, methods: list[str], kind: str, tuned: dict | None) -> dict:
    """Each method's settings: tuned on dev (or its defaults for the source ``kind``), then
    --threshold, --tau, --mass, --eps, --direction for all, then --set for one."""
    from dataclasses import replace

    from . import api
    from .verdict import parse_setting

    over = {k: v for k, v in (("threshold", args.threshold), ("tau", args.tau),
                              ("mass", args.mass), ("eps", args.eps),
                              ("direction", args.direction)) if v is not None}
    settings = {name: replace((tuned or {}).get(name) or api.method_of(name, kind), **over)
                for name in methods}
    for text in args.set:
        name, changes = parse_setting(text, (*METHOD_NAMES, "trained"))
        if name == "trained":  # read by _trained_theta
            continue
        if name not in settings:
            from ..errors import SettingsError

            raise SettingsError(f"--set names {name}, which this run does not score "
                                f"(--method {args.method}).")
        settings[name] = replace(settings[name], **changes)
    return settings


def _trained_theta(args) -> float | None:
    """θ of ``--method trained --threshold X`` or ``--set trained:threshold=X`` (the last
    given), or None: the aligner's own θ, or the one tuned on --dev.

    Raises:
        SettingsError: a setting other than threshold, a θ outside [0, 1), --set trained
            without --aligner, or another method's flag with --method trained.
    """
    from ..errors import SettingsError
    from .verdict import parse_setting

    theta = None
    if args.method == TRAINED and args.threshold is not None:  # its own flag, as for any
        if not 0 <= args.threshold < 1:
            raise SettingsError(f"--threshold of the trained aligner must satisfy 0 ≤ θ < 1; "
                                f"got {args.threshold}.")
        theta = float(args.threshold)
    if args.method == TRAINED:
        given = [f for f, v in (("--tau", args.tau), ("--mass", args.mass), ("--eps", args.eps),
                                ("--direction", args.direction)) if v is not None]
        if given:
            raise SettingsError(f"{', '.join(given)} do not apply to --method trained: a "
                                "trained aligner has only its threshold θ (--threshold).")
    for text in args.set:
        name, changes = parse_setting(text, (*METHOD_NAMES, "trained"))
        if name != "trained":
            continue
        if not args.aligner:
            raise SettingsError("--set trained: needs --aligner DIR, the aligner it sets.")
        if set(changes) != {"threshold"} or not 0 <= changes["threshold"] < 1:
            raise SettingsError(f"--set trained: takes only threshold=θ with 0 ≤ θ < 1; got "
                                f"{text!r}.")
        theta = changes["threshold"]
    return theta


def _document(args, result, tuned: bool, out_method: str, alignments) -> dict:
    """The ``--json`` document: settings and scores per method, the verdict (``best``,
    ``ranked``, ``paired``), the command that reproduces the table, the alignments."""
    v = result.verdict
    return {"source": result.source.to_dict(), "n_pairs": result.n_pairs,
            "n_gold": len(result.gold), "tuned_on_dev": tuned,
            "methods": {name: {"settings": result.settings[name].to_dict(),
                               "scores": None if name not in result.scores else
                               result.scores[name].to_dict()}
                        for name in result.settings},
            "best": None if v is None else v.best,
            "ranked": [] if v is None else [r.method for r in v.ranked],
            "paired": [] if v is None else [p.to_dict() for p in v.paired],
            "command": _command(args, result),
            "alignments": {"method": out_method,
                           "pairs": [a.to_dict(values=False) for a in alignments]}}


def _command(args, result) -> str:
    """The command that prints this table with its settings written out (no --dev)."""
    from .verdict import command_line

    return command_line(args.pairs, settings=result.settings, source=result.source,
                        gold=args.gold, lowercase=args.lowercase, one_based=args.one_based,
                        transpose=args.transpose, fmt=args.format, model=args.model,
                        bootstrap=args.bootstrap, aligner=args.aligner)


def _table(result, tuned: bool) -> str:
    """The printed table: one row per method, best first, with its difference from the best,
    then the paired comparisons (without gold: link counts)."""
    from .verdict import settings_text

    source, v = result.source, result.verdict
    src = f"source {source.kind}, layer {source.layer}"
    if source.kind == "attention":
        src += f", head {source.head}"
    if source.center:
        src += ", centred"
    n, k = result.n_pairs, len(result.gold)
    gold = "" if k in (0, n) else f" ({k} with gold, scored)"
    lines = [f"{n} pairs{gold} · {src} · settings {'tuned on dev' if tuned else 'defaults'} · "
             "macro over pairs (OTAlign); micro in brackets"
             + ("; best total F1 first" if v else ""), ""]
    if v is None:
        lines.append(f"{'method':<21} {'links':>6} {'unaligned':>9}  settings")
        for name, als in result.alignments.items():
            n_links = sum(len(a.links) for a in als)
            nulls = sum(len(a.null_a) + len(a.null_b) for a in als)
            words = sum(len(a.words_a) + len(a.words_b) for a in als)
            lines.append(f"{name:<21} {n_links:>6} {nulls / max(words, 1):>9.1%}  "
                         f"{settings_text(result.settings[name])}")
        return "\n".join(lines + ["", "No gold given: link counts only (give --gold or a "
                                   "file with a gold column to score)."])
    lines.append(f"{'method':<21} {'P':>5} {'R':>5} {'F1':>13} {'AER':>13} {'null F1':>7} "
                 f"{'total F1':>15} {'Δ best':>7}  settings")
    for r in v.ranked:
        sc = result.scores[r.method]
        M, U = sc.macro, sc.micro
        ci = sc.macro_ci.get("total_f1")
        ci_s = f" ±{(ci[1] - ci[0]) / 2:.3f}" if ci else ""
        lines.append(f"{r.method:<21} {M['precision']:5.3f} {M['recall']:5.3f} "
                     f"{M['f1']:5.3f} ({U['f1']:5.3f}) {M['aer']:5.3f} ({U['aer']:5.3f}) "
                     f"{M['null_f1']:7.3f} {M['total_f1']:7.3f}{ci_s:>8} "
                     f"{'best' if r.best else f'{r.delta:+.3f}':>7}  "
                     f"{settings_text(result.settings[r.method])}")
    return "\n".join(lines + _paired_lines(v))


def _paired_lines(v) -> list[str]:
    """The paired comparisons under the table: against the best, transport against softmax."""
    if not v.paired:
        return []
    lines = ["", f"Paired on the same {v.n_pairs} pairs: difference in total F1, its 95 % "
             f"paired-bootstrap interval ({v.bootstrap} resamples) and p of no difference "
             "(p < 0.05 exactly when the interval leaves out 0)" if v.bootstrap else
             f"Paired on the same {v.n_pairs} pairs: difference in total F1 (no resamples: "
             "no interval, no p)"]
    for title, group in ((f"against the best, {v.best}:", v.against_best()),
                         ("transport against softmax-argmax:", v.against_baseline())):
        if group:
            lines.append("  " + title)
        for p in group:
            if not v.bootstrap:
                lines.append(f"    {p.method:<21} {p.delta:+.3f}")
                continue
            pv = "p<0.001" if p.p < 0.001 else f"p {p.p:.3f}"
            lines.append(f"    {p.method:<21} {p.delta:+.3f}  [{p.ci95[0]:+.3f}, "
                         f"{p.ci95[1]:+.3f}]  {pv}")
    return lines
