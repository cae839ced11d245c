"""The Lab's long work, each a job of the session (:mod:`sinkscope_app.jobs`): training
the chosen models, the "Error vs width" sweep, and word aligners trained on a person's file
of gold alignments and compared with the untrained methods. Plain functions of a
:class:`~sinkscope_app.jobs.Job`: no Streamlit inside; each keeps what it has reached in
``job.result`` and polls Stop."""

from __future__ import annotations

import io
import tempfile
import threading
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path

from engine.aligner.config import AlignerSettings
from engine.lab.errors import LabError
from engine.lab.training import LabSettings, build, sweep_widths, train

from .. import engines, jobs

_ENCODER: list = []
_ENCODER_LOCK = threading.Lock()


def text_encoder():
    """The packaged sentence model: the engine's when it runs here, else loaded once in
    this process (the served engine does not train heads)."""
    engine = engines.current()
    if not engine.served:
        return engine.model(engine.models()[0])
    with _ENCODER_LOCK:
        if not _ENCODER:
            from engine.models.encoder import Encoder

            _ENCODER.append(Encoder.default())
        return _ENCODER[0]


def training(s0: LabSettings, models: list[str]):
    """A job's work: train each model in turn, the held-out curves growing in
    ``job.result`` (a dict: status, target, steps, settings, models, runs, curves,
    seconds); Stop ends the model in training with its best weights, and the rest."""
    def work(job: jobs.Job) -> dict:
        res = {"status": "training", "target": s0.target, "steps": s0.steps, "settings": {},
               "models": {}, "runs": {}, "curves": {m: ([], []) for m in models},
               "seconds": 0.0}
        job.result = res
        for i, m in enumerate(models):
            if job.stopping:
                break
            s = replace(s0, model=m)
            model = build(s)
            res["settings"][m], res["models"][m] = s, model

            def report(p, m=m, i=i) -> None:
                res["curves"][m][0].append(p.step)
                res["curves"][m][1].append(p.heldout_l1)
                job.progress = (i + p.step / p.steps) / len(models)
                job.info = {"model": m, "step": p.step, "steps": p.steps}

            run = train(s, model=model, callback=report, should_stop=lambda: job.stopping)
            res["runs"][m] = run
            res["seconds"] += run.seconds
        res["status"] = "stopped" if job.stopping else "done"
        return res
    return work


def sweep(s0: LabSettings, models: list[str]):
    """A job's work: the held-out error of each model at each width; a stopped sweep keeps
    the widths it reached (NaN for the others)."""
    def work(job: jobs.Job) -> dict:
        job.result = {"target": s0.target, "errors": {}}

        def report(done: int, total: int, m: str, w: int) -> None:
            job.progress, job.info = done / total, {"model": m, "width": w}

        errors = sweep_widths(s0, models, callback=report, should_stop=lambda: job.stopping)
        job.result = {"target": s0.target, "errors": errors}
        return job.result
    return work


FINALS = ("sinkhorn", "softmax")  # the trained aligners compared, in order
TRAIN_SHARE = (0.15, 0.55, 0.95)  # where each stage's share of the progress bar starts


@dataclass(frozen=True)
class Split:
    """A file's pairs with gold for the text comparison: ``test`` (the last quarter, held
    out), ``dev`` (the sixth of the rest before it: θ, the best epoch, the untrained
    methods' settings) and ``train`` (the first ``train_most`` of the others; ``unused``
    of them left out)."""

    train: tuple
    dev: tuple
    test: tuple
    unused: int


def split(pairs, train_most: int) -> Split:
    """The pairs with gold, split as :class:`Split` says.

    Raises:
        LabError: fewer than 4 pairs with gold (code "needs_gold_pairs").
    """
    gold = [p for p in pairs if p.has_gold]
    if len(gold) < 4:
        raise LabError.of("needs_gold_pairs", n=len(gold))
    k = max(1, round(len(gold) / 4))
    rest = gold[:-k]
    d = max(1, round(len(rest) / 6))
    fit = rest[:-d]
    return Split(tuple(fit[:train_most]), tuple(rest[-d:]), tuple(gold[-k:]),
                 max(0, len(fit) - train_most))


def null_share(pairs) -> float:
    """The share of the pairs' words that the gold leaves without a partner (sure links)."""
    from engine.alignment.score import COUNTS, pair_counts

    nulls = sum(int(pair_counts((), p)[COUNTS.index("null_gold")]) for p in pairs)
    words = sum(sum(p.shape) for p in pairs)
    return nulls / words if words else 0.0


def base_settings(encoder, epochs: int) -> AlignerSettings:
    """The page's aligner on ``encoder``: the hidden state the untrained methods read
    (layer 3, or the model's last when it has fewer), its top two layers fine-tuned."""
    layer = min(3, int(encoder.n_layers))
    return AlignerSettings(model=encoder.name, layer=layer, top=min(2, layer),
                           epochs=int(epochs), lowercase=True)


def _say(job: jobs.Job, final: str, k: int, res: dict):
    """A training run's progress (``engine.aligner.training.Progress``) as the job's."""
    lo, hi = TRAIN_SHARE[k], TRAIN_SHARE[k + 1]

    def say(p) -> None:
        done = 0.1 * p.step / max(p.steps, 1) if p.stage == "read" else \
            0.1 + 0.9 * (p.epoch - 1 + p.step / max(p.steps, 1)) / max(p.epochs, 1)
        job.progress = lo + (hi - lo) * min(done, 1.0)
        job.info = {"stage": p.stage, "final": final, "epoch": p.epoch, "epochs": p.epochs,
                    "step": p.step, "steps": p.steps}
        if p.stage == "dev":
            res["history"].setdefault(final, []).append((p.epoch, p.dev_total_f1))
    return say


def aligners(pairs, encoder, settings: AlignerSettings, train_most: int, *,
             bootstrap: int = 1000):
    """A job's work: the text comparison of the Lab.

    The untrained methods (engine.alignment, on the hidden state the aligners read) are
    tuned on the dev pairs and the best of them scored on the held-out ones; then a
    Sinkhorn (dustbin) and a softmax (+ null) aligner are trained (``engine.aligner``)
    and scored on the same held-out pairs, each against the untrained best and against
    each other by a paired bootstrap of total F1 (95 % intervals). ``job.result`` (a
    dict: sizes, null_share, untrained, trained, paired, history) grows as it goes; Stop
    ends the aligner in training at its best epoch so far, skips the next one, and still
    scores what was trained.
    """
    def work(job: jobs.Job) -> dict:
        from engine.aligner.extract import evaluate
        from engine.aligner.training import train
        from engine.alignment.api import source_of, tune
        from engine.alignment.score import paired_bootstrap

        sp = split(pairs, train_most)
        res = {"sizes": {"train": len(sp.train), "dev": len(sp.dev), "test": len(sp.test),
                         "unused": sp.unused},
               "null_share": null_share(sp.test), "untrained": None, "trained": {},
               "paired": {}, "history": {}}
        job.result = res
        job.report(0.0, stage="untrained")
        tu = tune(sp.dev, sp.test, encoder=encoder, bootstrap=bootstrap,
                  source=source_of("hidden", layer=settings.layer),
                  progress=lambda d, t: job.report(TRAIN_SHARE[0] * d / max(t, 1),
                                                   stage="untrained"))
        best = max(tu.dev, key=lambda name: tu.dev[name].macro["total_f1"])
        res["untrained"] = {"method": best, "setting": tu.settings[best],
                            "score": tu.test[best]}
        for k, final in enumerate(FINALS):
            if job.stopping:
                break
            r = train(sp.train, sp.dev, replace(settings, final=final), encoder=encoder,
                      progress=_say(job, final, k, res), should_stop=lambda: job.stopping)
            job.info = {"stage": "score", "final": final}
            sc, vs = evaluate(r.aligner, sp.test, against={best: tu.test[best]},
                              bootstrap=bootstrap)
            res["trained"][final] = {"run": r, "score": sc}
            res["paired"][(final, "untrained")] = vs[best]
        if len(res["trained"]) == len(FINALS):
            x, y = (res["trained"][f]["score"].counts for f in FINALS)
            res["paired"][FINALS] = paired_bootstrap(x, y, method=FINALS[0], vs=FINALS[1],
                                                     bootstrap=bootstrap)
        return res
    return work


def aligner_zip(trained, name: str) -> bytes:
    """A trained aligner (``engine.aligner.training.Trained``) as a .zip holding the folder
    ``name`` with ``model.safetensors`` and ``config.json`` (what
    ``python -m engine align --aligner`` and ``SINKSCOPE_ALIGNERS`` read)."""
    from engine.aligner import checkpoint

    with tempfile.TemporaryDirectory() as d:
        folder = checkpoint.save(trained, Path(d) / name)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for f in (checkpoint.WEIGHTS, checkpoint.CONFIG):
                z.write(folder / f, f"{name}/{f}")
    return buf.getvalue()
