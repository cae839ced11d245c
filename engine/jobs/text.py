"""The text jobs: a corpus aligned by every method and ranked, an aligner trained on gold
links, and the Lab's text comparison (untrained methods tuned, two aligners trained, paired
comparisons).

Each returns a torch-free document (:mod:`engine.jobs.results` reads it back) and, for
trained aligners, their folders as zips (``model.safetensors`` + ``config.json``, what
``python -m engine align --aligner`` and ``SINKSCOPE_ALIGNERS`` read).
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from dataclasses import replace
from pathlib import Path

from .context import Context
from .spec import Spec
from .split import Split, null_share, split  # noqa: F401  (the comparison's split)

CORPUS_SCHEMA = "sinkscope.job.align_corpus/1"
ALIGNER_SCHEMA = "sinkscope.job.train_aligner/1"
TEXT_SCHEMA = "sinkscope.job.compare_text/1"
CHUNK = 32  # pairs encoded and aligned at once: what a stopped corpus keeps, at least
SOFTMAX_METHOD, TRANSPORT_METHOD = "softmax-argmax", "unbalanced"  # the table's two columns
TRAINED = "trained"  # the label of a trained aligner's row
FINALS = ("sinkhorn", "softmax")  # the text comparison's trained aligners, in order
TRAIN_SHARE = (0.15, 0.55, 0.95)  # where each stage of the comparison's progress starts


# --------------------------------------------------------------------------- documents
def score_doc(s) -> dict:
    """A ``CorpusScore`` without its per-pair arrays."""
    return {"n_pairs": int(s.n_pairs), "macro": dict(s.macro), "micro": dict(s.micro),
            "macro_ci": {k: list(v) for k, v in s.macro_ci.items()},
            "micro_ci": {k: list(v) for k, v in s.micro_ci.items()}}


def paired_doc(p) -> dict:
    return {"method": p.method, "vs": p.vs, "metric": p.metric, "delta": float(p.delta),
            "ci95": [float(x) for x in p.ci95], "p": float(p.p)}


def verdict_doc(v) -> dict | None:
    """A ``Verdict``: ranking, paired comparisons, and which of them are against the
    softmax baseline (by position)."""
    if v is None:
        return None
    baseline = v.against_baseline()
    return {"metric": v.metric, "n_pairs": int(v.n_pairs), "bootstrap": int(v.bootstrap),
            "best": v.best, "ranked": [r.to_dict() for r in v.ranked],
            "paired": [paired_doc(p) for p in v.paired],
            "baseline": [k for k, p in enumerate(v.paired) if p in baseline]}


def aligner_zip(trained, name: str) -> bytes:
    """A trained aligner as a .zip holding the folder ``name`` with ``model.safetensors``
    and ``config.json``."""
    from ..aligner import checkpoint

    with tempfile.TemporaryDirectory() as d:
        folder = checkpoint.save(trained, Path(d) / name)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for f in (checkpoint.WEIGHTS, checkpoint.CONFIG):
                z.write(folder / f, f"{name}/{f}")
    return buf.getvalue()


def run_doc(r) -> dict:
    """A trained aligner's run (``engine.aligner.training.Trained``) in numbers."""
    return {"dev_total_f1": float(r.dev_total_f1), "theta": float(r.theta),
            "best_epoch": int(r.best_epoch), "epochs": int(r.epochs),
            "seconds": float(r.seconds), "cpu_seconds": float(r.cpu_seconds),
            "stopped": r.stopped, "settings": r.settings.to_dict(),
            "history": [{"epoch": e.epoch, "loss": float(e.loss),
                         "dev_total_f1": float(e.dev_total_f1), "theta": float(e.theta),
                         "seconds": float(e.seconds)} for e in r.history]}


# --------------------------------------------------------------------------- corpus
def _jaccard_distance(x, y) -> float:
    x, y = set(x), set(y)
    return 0.0 if not (x | y) else 1.0 - len(x & y) / len(x | y)


def _null_ratio(pairs, als: dict) -> list[float]:
    """Per pair, the share of words without a link: gold's, else the transport method's."""
    out = []
    for k, p in enumerate(pairs):
        n, m = p.shape
        if p.has_gold:
            nulls = (n - len({i for i, _ in p.sure})) + (m - len({j for _, j in p.sure}))
        else:
            al = als[TRANSPORT_METHOD][k]
            nulls = len(al.null_a) + len(al.null_b)
        out.append(nulls / max(n + m, 1))
    return out


def align_corpus(ctx: Context, spec: Spec) -> tuple[dict, dict]:
    """``align_corpus``: every pair by every method at its defaults (and by an allowed
    trained aligner), scored on the pairs with gold, ranked with paired comparisons.

    Pairs are encoded and aligned :data:`CHUNK` at a time; Stop (or the deadline) ends the
    run after the chunk in hand, and the pairs aligned so far are scored and ranked as a
    result labelled ``partial``.
    """
    import numpy as np

    from ..alignment.api import extract_methods, method_of, score_corpus
    from ..alignment.extract import METHODS

    s, pairs = spec.settings, spec.pairs
    enc = ctx.encoder(s["model"])
    methods = {name: method_of(name) for name in METHODS}
    aligner = None
    if s["aligner"]:
        from ..aligner.cli import TrainedMethod
        from ..aligner.registry import lookup

        aligner = lookup(s["aligner"], encoders={enc.name: enc}, device=str(enc.device))
    als = {k: [] for k in methods}
    counts = {k: [] for k in methods}
    trained = []
    total = len(pairs)
    done = 0
    ctx.report(0.0, stage="encode", done=0, total=total)
    for start in range(0, total, CHUNK):
        if ctx.stopping:
            break
        chunk = pairs[start:start + CHUNK]
        scored = score_corpus(chunk, encoder=enc, lowercase=s["lowercase"])
        for label, ext in extract_methods(scored, methods, values=False).items():
            als[label] += ext.alignments
            counts[label].append(ext.counts)
        if aligner is not None:
            from ..aligner.extract import align

            trained += align(aligner, [p.lower() for p in chunk] if s["lowercase"] else chunk)
        done = start + len(chunk)
        ctx.report(done / total, stage="align", done=done, total=total)
    kept = pairs[:done]
    settings = dict(methods)
    alignments = {k: tuple(v) for k, v in als.items()}
    count_arrays = {k: np.concatenate(v) if v else np.zeros((0, 7), np.int64)
                    for k, v in counts.items()}
    if aligner is not None:
        settings[TRAINED] = TrainedMethod(float(aligner.theta), aligner.settings.final,
                                          aligner.name)
        alignments[TRAINED] = tuple(trained)
        count_arrays = None  # computed from the links, the trained row included
    return corpus_doc(spec, kept, settings, alignments, count_arrays,
                      aligner=None if aligner is None else aligner.name), {}


def corpus_doc(spec: Spec, kept, settings: dict, alignments: dict, count_arrays=None, *,
               aligner: str | None = None) -> dict:
    """The ``align_corpus`` document of the pairs aligned (``kept``, the first of
    ``spec.pairs``; "partial" when they are not all): every method's links (label →
    ``Method``, label → one ``Alignment`` per pair), scored and ranked, and the command
    that prints the same table."""
    from ..alignment.api import DEFAULT_SOURCE, comparison_of
    from ..alignment.readers import links_text
    from ..alignment.verdict import command_line
    from ..settings import DEFAULT_MODEL

    s, total = spec.settings, len(spec.pairs)
    b = s["bootstrap"]
    cmp = comparison_of(DEFAULT_SOURCE, kept, settings, alignments, count_arrays,
                        bootstrap=b, ranked=b > 0) if kept else None
    labels = tuple(alignments)
    return {"schema": CORPUS_SCHEMA, "status": "done" if len(kept) == total else "partial",
            "n_total": total, "model": s["model"], "lowercase": s["lowercase"],
            "pairs": [p.to_dict() for p in kept], "methods": list(labels),
            "links": {k: [links_text(a.links) for a in alignments[k]] for k in labels},
            "n_links": {k: [len(a.links) for a in alignments[k]] for k in labels},
            "f1": {k: [None if a.scores is None else float(a.scores["f1"])
                       for a in alignments[k]] for k in labels},
            "null_ratio": _null_ratio(kept, alignments) if kept else [],
            "disagreement": [_jaccard_distance(alignments[SOFTMAX_METHOD][k].links,
                                               alignments[TRANSPORT_METHOD][k].links)
                             for k in range(len(kept))],
            "scores": {k: {"macro": sc.macro, "micro": sc.micro,
                           "macro_ci": {m: list(v) for m, v in sc.macro_ci.items()},
                           "micro_ci": {m: list(v) for m, v in sc.micro_ci.items()}}
                       for k, sc in (cmp.scores.items() if cmp else ())},
            "n_gold": sum(p.has_gold for p in kept), "gold_column": spec.gold_column,
            "verdict": verdict_doc(cmp.verdict) if cmp else None,
            "settings": {k: {f: v for f, v in m.to_dict().items() if f != "method"}
                         for k, m in settings.items()},
            "command": command_line(spec.name, settings=settings, lowercase=s["lowercase"],
                                    one_based=spec.one_based,
                                    model=None if s["model"] == DEFAULT_MODEL else s["model"],
                                    aligner=aligner)}


# --------------------------------------------------------------------------- aligners
def _say(ctx: Context, final: str, lo: float, hi: float, history: list | None = None,
         partial=None):
    """A training run's progress (``engine.aligner.training.Progress``) as the job's,
    between shares ``lo`` and ``hi``; each scored epoch appended to ``history``."""
    def say(p) -> None:
        done = 0.1 * p.step / max(p.steps, 1) if p.stage == "read" else \
            0.1 + 0.9 * (p.epoch - 1 + p.step / max(p.steps, 1)) / max(p.epochs, 1)
        if p.stage == "dev" and history is not None:
            history.append((int(p.epoch), float(p.dev_total_f1)))
        ctx.report(lo + (hi - lo) * min(done, 1.0), partial() if partial else None,
                   stage=p.stage, final=final, epoch=int(p.epoch), epochs=int(p.epochs),
                   step=int(p.step), steps=int(p.steps))
    return say


def train_aligner(ctx: Context, spec: Spec) -> tuple[dict, dict]:
    """``train_aligner``: an aligner trained on the gold links of the training pairs, θ
    and the best epoch picked on the dev pairs (``engine.aligner.training.train``); Stop
    keeps the best epoch reached (or, before one ends, the weights reached). The result
    holds the run's numbers; its folder is the file ``aligner`` (a zip)."""
    from ..aligner.training import train

    s = spec.settings
    enc = ctx.encoder(s.model)
    history: list = []

    def partial() -> dict:
        return {"schema": ALIGNER_SCHEMA, "status": "partial", "name": spec.name,
                "history": [{"epoch": e, "dev_total_f1": f} for e, f in history]}

    r = train(spec.train, spec.dev, s, encoder=enc, device=str(enc.device),
              progress=_say(ctx, s.final, 0.0, 0.95, history, partial),
              should_stop=lambda: ctx.stopping)
    ctx.report(0.97, stage="save", final=s.final)
    doc = {"schema": ALIGNER_SCHEMA, "status": "stopped" if ctx.stopping else "done",
           "name": spec.name, "run": run_doc(r), "files": ["aligner"]}
    return doc, {"aligner": aligner_zip(r, spec.name)}


def compare_text(ctx: Context, spec: Spec) -> tuple[dict, dict]:
    """``compare_text``: the Lab's text comparison.

    The untrained methods (``engine.alignment``, on the hidden state the aligners read) are
    tuned on the dev pairs and the best of them scored on the held-out ones; then a
    Sinkhorn (dustbin) and a softmax (+ null) aligner are trained (``engine.aligner``),
    scored on the same held-out pairs, each against the untrained best and against each
    other by a paired bootstrap of total F1 (95 % intervals). The partial result is each
    aligner's dev total F1 per epoch; Stop ends the aligner in training at its best epoch
    so far, skips the next one, and still scores what was trained. Each trained aligner is
    a file (a zip) named by its final layer.
    """
    from ..aligner.config import AlignerSettings
    from ..aligner.extract import evaluate
    from ..aligner.training import train
    from ..alignment.api import source_of, tune
    from ..alignment.score import paired_bootstrap

    s = spec.settings
    enc = ctx.encoder(s["model"])
    layer = min(3, int(enc.n_layers))
    base = AlignerSettings(model=enc.name, layer=layer, top=min(2, layer),
                           epochs=int(s["epochs"]), seed=int(s["seed"]), lowercase=True)
    pairs = tuple(p.lower() for p in spec.pairs)
    sp = split(pairs, int(s["train_pairs"]))
    bootstrap = int(s["bootstrap"])
    res = {"schema": TEXT_SCHEMA, "status": "partial",
           "sizes": {"train": len(sp.train), "dev": len(sp.dev), "test": len(sp.test),
                     "unused": sp.unused},
           "null_share": null_share(sp.test), "untrained": None, "trained": {},
           "paired": [], "history": {}}

    def partial() -> dict:  # (copies: a reader may hold it while training goes on)
        return {"schema": TEXT_SCHEMA, "status": "partial", "sizes": res["sizes"],
                "null_share": res["null_share"],
                "history": {f: list(h) for f, h in res["history"].items()}}

    ctx.report(0.0, partial(), stage="untrained")
    tu = tune(sp.dev, sp.test, encoder=enc, bootstrap=bootstrap,
              source=source_of("hidden", layer=base.layer),
              progress=lambda d, t: ctx.report(TRAIN_SHARE[0] * d / max(t, 1),
                                               stage="untrained"))
    best = max(tu.dev, key=lambda name: tu.dev[name].macro["total_f1"])
    res["untrained"] = {"method": best, "setting": tu.settings[best].to_dict(),
                        "score": score_doc(tu.test[best])}
    files, scores = {}, {}
    for k, final in enumerate(FINALS):
        if ctx.stopping:
            break
        history = res["history"].setdefault(final, [])
        r = train(sp.train, sp.dev, replace(base, final=final), encoder=enc,
                  device=str(enc.device),
                  progress=_say(ctx, final, TRAIN_SHARE[k], TRAIN_SHARE[k + 1], history,
                                partial),
                  should_stop=lambda: ctx.stopping)
        ctx.report(TRAIN_SHARE[k + 1], stage="score", final=final)
        sc, vs = evaluate(r.aligner, sp.test, against={best: tu.test[best]},
                          bootstrap=bootstrap)
        scores[final] = sc
        res["trained"][final] = {"run": run_doc(r), "score": score_doc(sc)}
        p = vs[best]
        res["paired"].append({**paired_doc(p), "method": final, "vs": "untrained"})
        files[final] = aligner_zip(r, f"sinkscope-aligner-{final}")
    if len(scores) == len(FINALS):
        x, y = (scores[f].counts for f in FINALS)
        res["paired"].append(paired_doc(paired_bootstrap(
            x, y, method=FINALS[0], vs=FINALS[1], bootstrap=bootstrap)))
    res["status"] = "stopped" if ctx.stopping else "done"
    res["files"] = sorted(files)
    return res, files
