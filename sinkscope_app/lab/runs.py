"""The Lab's long work, each a job of the session (:mod:`sinkscope_app.jobs`): training
the chosen models, the "Error vs width" sweep, and the heads trained on a person's file of
gold alignments. Plain functions of a :class:`~sinkscope_app.jobs.Job`: no Streamlit
inside; each keeps what it has reached in ``job.result`` and polls Stop."""

from __future__ import annotations

import threading
from dataclasses import replace

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


def text_heads(text_pairs):
    """A job's work: train a Sinkhorn and a softmax head on the pairs' gold links and
    score them against the untrained method (``engine.lab.text.compare_heads``)."""
    def work(job: jobs.Job):
        from engine.lab.text import compare_heads

        stages = ("encode", "sinkhorn", "softmax", "untrained")

        def say(stage: str) -> None:
            job.progress = stages.index(stage) / len(stages) if stage in stages else 0.0
            job.info = {"what": stage}

        return compare_heads(text_pairs, text_encoder(), progress=say,
                             should_stop=lambda: job.stopping)
    return work
