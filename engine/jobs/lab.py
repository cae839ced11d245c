"""The Lab's jobs: cloud models trained in turn, the width sweep, and the held-out view of a
trained model (``lab_predict``, a quick call, not a job).

Each job returns a torch-free document (numbers, lists, numpy arrays) that
:mod:`engine.jobs.results` reads back; a model's weights travel as float32 arrays keyed by
their ``state_dict`` names.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import numpy as np

from .context import Context
from .errors import JobError
from .spec import Spec

TRAIN_SCHEMA = "sinkscope.job.lab_train/1"
SWEEP_SCHEMA = "sinkscope.job.lab_sweep/1"
PREDICT_SCHEMA = "sinkscope.lab_predict/1"


def _run_summary(run) -> dict:
    return {**run.summary(), "steps_done": int(run.steps_done), "stopped": run.stopped}


def train_models(ctx: Context, spec: Spec) -> tuple[dict, dict]:
    """``lab_train``: each model trained in turn to the target (``engine.lab.training``).

    The partial result is the held-out curves so far (and the runs that ended); Stop ends
    the model in training with its best weights reached, and skips the rest. The result
    holds every started model's run numbers and weights.
    """
    from ..lab.training import build, train

    s0, models = spec.settings, spec.models
    curves = {m: {"step": [], "heldout_l1": []} for m in models}
    settings, runs, weights = {}, {}, {}
    seconds = 0.0

    def doc(status: str) -> dict:
        return {"schema": TRAIN_SCHEMA, "status": status, "target": s0.target,
                "steps": s0.steps, "models": list(models), "settings": dict(settings),
                "curves": {m: {k: list(v) for k, v in c.items()} for m, c in curves.items()},
                "runs": dict(runs), "seconds": seconds}  # copies: a reader may hold them

    ctx.report(0.0, doc("partial"), stage="train", model=models[0], step=0, steps=s0.steps)
    for i, m in enumerate(models):
        if ctx.stopping:
            break
        s = replace(s0, model=m)
        model = build(s)
        settings[m] = s.to_dict()

        def report(p, m=m, i=i) -> None:
            curves[m]["step"].append(int(p.step))
            curves[m]["heldout_l1"].append(float(p.heldout_l1))
            ctx.report((i + p.step / p.steps) / len(models), doc("partial"), stage="train",
                       model=m, step=int(p.step), steps=int(p.steps))

        run = train(s, model=model, callback=report, should_stop=lambda: ctx.stopping)
        runs[m], seconds = _run_summary(run), seconds + run.seconds
        weights[m] = {k: v.detach().cpu().numpy().astype(np.float32)
                      for k, v in model.state_dict().items()}
        ctx.keep(doc("partial"))
    out = doc("stopped" if ctx.stopping else "done")
    out["weights"] = weights
    return out, {}


def sweep(ctx: Context, spec: Spec) -> tuple[dict, dict]:
    """``lab_sweep``: the held-out error of each model at each width
    (``engine.lab.training.sweep_widths``); a stopped sweep keeps the widths reached (NaN
    for the others), and so does its partial result."""
    from ..lab.config import SWEEP_STEPS, SWEEP_WIDTHS
    from ..lab.training import sweep_widths

    s, models = spec.settings, spec.models
    errors: dict[str, np.ndarray] = {}
    steps = min(s.steps, SWEEP_STEPS)

    def doc(status: str) -> dict:
        return {"schema": SWEEP_SCHEMA, "status": status, "target": s.target,
                "models": list(models), "widths": list(SWEEP_WIDTHS), "steps": steps,
                "errors": {m: [None if np.isnan(x) else float(x) for x in errors[m]]
                           for m in errors}}

    def report(done: int, total: int, m: str, w: int) -> None:
        ctx.report(done / total, doc("partial"), stage="sweep", model=m, width=int(w),
                   done=done, total=total)

    sweep_widths(s, models, callback=report, should_stop=lambda: ctx.stopping, out=errors)
    out = doc("stopped" if ctx.stopping else "done")
    out["errors"] = {m: np.asarray(v, dtype=np.float64) for m, v in errors.items()}
    return out, {}


# --------------------------------------------------------------------------- weights
def encode_weights(weights: dict[str, np.ndarray]) -> dict[str, dict]:
    """A model's weights for a JSON body: name → ``{"shape", "data"}`` (base64 of the
    little-endian float32 values)."""
    return {k: {"shape": [int(n) for n in np.shape(v)],
                "data": base64.b64encode(np.ascontiguousarray(v, dtype="<f4").tobytes())
                .decode("ascii")} for k, v in weights.items()}


def lab_fields(settings: Any) -> dict:
    """A run's ``LabSettings`` (or its fields) as a body's settings, without ``model``."""
    d = settings.to_dict() if hasattr(settings, "to_dict") else dict(settings)
    d.pop("model", None)
    return d


def decode_weights(model: str, coded: dict) -> dict[str, np.ndarray]:
    """:func:`encode_weights`' inverse; a JobError (code "job_weights") for a malformed one."""
    out = {}
    for k, v in coded.items():
        try:
            raw = base64.b64decode(v["data"], validate=True)
            arr = np.frombuffer(raw, dtype="<f4").reshape([int(n) for n in v["shape"]])
        except Exception as e:  # bad base64, a length that is not the shape's
            raise JobError.of("job_weights", model=model,
                              reason=f"{k}: {type(e).__name__}") from None
        out[k] = arr.astype(np.float32)
    return out


def predict(settings: dict, weights: dict[str, dict[str, np.ndarray]], size: int,
            pair: int) -> dict:
    """The held-out view of trained Lab models: pair ``pair`` of the held-out pairs with
    ``size`` atoms (the training size: the run's own held-out set; another: 16 fresh pairs),
    the target's plan, and each model's plan and errors.

    Args:
        settings: the run's ``LabSettings`` fields (without ``model``).
        weights: model name → its weights (``state_dict`` name → float32 array).
        size: atoms per cloud. pair: which pair (clamped to the pairs there are).

    Returns:
        ``{"schema", "size", "pair", "n_pairs", "x", "a", "y", "b", "target", "plans":
        {model: (n, m)}, "errors": {model: {"l1", "row", "col"}}}``.
    """
    import torch

    from ..lab.config import LabSettings
    from ..lab.training import build, heldout_pairs, plan_errors, predict as run_model

    s0 = LabSettings(**{k: v for k, v in settings.items() if k != "model"})
    models = {}
    for m, w in weights.items():  # (weights that do not fit: refused before any work)
        models[m] = build(replace(s0, model=m))
        try:
            models[m].load_state_dict({n: torch.as_tensor(v) for n, v in w.items()})
        except (RuntimeError, KeyError, ValueError) as e:
            raise JobError.of("job_weights", model=m, reason=str(e).split("\n")[0][:200]) \
                from None
        models[m].eval()
    pairs, plans = heldout_pairs(s0, int(size))
    k = min(max(int(pair), 0), len(pairs) - 1)
    one = pairs.take([k])
    out_plans, errors = {}, {}
    for m, model in models.items():
        P = run_model(model, one)
        l1, row, col = plan_errors(P, plans[k:k + 1], one)
        out_plans[m], errors[m] = P[0], {"l1": l1, "row": row, "col": col}
    return {"schema": PREDICT_SCHEMA, "size": int(one.x.shape[1]), "pair": k,
            "n_pairs": len(pairs), "x": one.x[0], "a": one.a[0], "y": one.y[0], "b": one.b[0],
            "target": plans[k], "plans": out_plans, "errors": errors}


def predict_body(body: Any) -> dict:
    """``POST /v1/lab/predict``'s body checked and answered (:func:`predict`)."""
    from ..lab.config import MODELS, LabSettings
    from .spec import _object, _whole

    b = _object(body, "the body", {"settings": {}, "weights": None, "size": None,
                                   "pair": 0})
    names = {f: getattr(LabSettings(), f) for f in LabSettings.__dataclass_fields__
             if f != "model"}
    s = _object(b["settings"], "settings", names)
    LabSettings(**s)  # checked (LabError)
    w = b["weights"]
    if not isinstance(w, dict) or not w or any(m not in MODELS for m in w):
        raise JobError.of("job_body", where="weights", problem="must map 1 to 3 of "
                          f"{', '.join(MODELS)} to their weights")
    from ..lab.measures import MAX_POINTS

    size = _whole(b["size"], "size", 2, MAX_POINTS)
    pair = _whole(b["pair"], "pair", 0, 2**31 - 1)
    decoded = {}
    for m, coded in w.items():
        if not isinstance(coded, dict) or not all(
                isinstance(v, dict) and set(v) == {"shape", "data"} for v in coded.values()):
            raise JobError.of("job_weights", model=m, reason="each weight is "
                              '{"shape": [...], "data": "<base64 float32>"}')
        decoded[m] = decode_weights(m, coded)
    return predict(s, decoded, size, pair)
