"""Training a model to a coupling system, with progress, early stop and a stop request.

The loss is the mean L1 distance Σᵢⱼ |πᵢⱼ − F(μ, ν)ᵢⱼ| between the model's plan and the
target's on a batch of training pairs; the same distance on held-out pairs (never trained
on), on held-out pairs of twice the training size, and both marginal errors
‖π1 − a‖₁, ‖πᵀ1 − b‖₁ are what a run reports. A run is deterministic for its seed: the
pairs, the initial weights and the batches are all drawn from it.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import torch

from .config import (MAX_PAIRS, MAX_STEPS, MODELS, SWEEP_STEPS, SWEEP_WIDTHS,  # noqa: F401
                     LabSettings)
from .errors import LabError
from .measures import Family, Pairs, draw_pairs
from .nets import CouplingModel
from .targets import NAMES, Target, get_target

@dataclass(frozen=True)
class Progress:
    """Where a run is: after ``step`` of ``steps``.

    Attributes:
        train_loss: mean L1 to the target on the last batch.
        heldout_l1: mean L1 to the target on the held-out pairs.
        row_err, col_err: mean ‖π1 − a‖₁ and ‖πᵀ1 − b‖₁ on the held-out pairs.
        seconds: since the run started.
    """

    step: int
    steps: int
    train_loss: float
    heldout_l1: float
    row_err: float
    col_err: float
    seconds: float


@dataclass(frozen=True)
class Data:
    """The fixed sets of a run: pairs and their target plans (numpy, float64)."""

    train: Pairs
    train_plans: np.ndarray
    heldout: Pairs
    heldout_plans: np.ndarray
    double: Pairs
    double_plans: np.ndarray


@dataclass(frozen=True)
class Run:
    """A finished run: the trained model (best held-out weights), its numbers, its curve.

    Attributes:
        heldout_l1: mean L1 to the target plan on held-out pairs of the training size.
        heldout_l1_double: the same on held-out clouds of twice as many points.
        row_err, col_err: mean marginal errors (L1) on the held-out pairs.
        seconds: training time (data excluded). steps_done: steps actually taken.
        stopped: "done", "early" (patience ran out) or "requested" (a stop request).
        history: the progress reports, in order.
    """

    settings: LabSettings
    model: CouplingModel = field(repr=False, compare=False)
    heldout_l1: float
    heldout_l1_double: float
    row_err: float
    col_err: float
    seconds: float
    steps_done: int
    stopped: str
    history: tuple[Progress, ...] = field(repr=False)

    def summary(self) -> dict:
        """The CLI's JSON: heldout_l1, heldout_l1_double, row_err, col_err, seconds."""
        return {"heldout_l1": self.heldout_l1, "heldout_l1_double": self.heldout_l1_double,
                "row_err": self.row_err, "col_err": self.col_err, "seconds": self.seconds}


@functools.lru_cache(maxsize=8)
def _heldout(target: Target, family: Family, count: int, seed: int) -> tuple[Pairs, np.ndarray]:
    """A run's held-out pairs and their target plans (without its training set)."""
    pairs = draw_pairs(family, count, seed, stream=1)
    return pairs, target(pairs)


@functools.lru_cache(maxsize=8)
def _data(target: Target, family: Family, train_pairs: int, heldout_pairs: int,
          seed: int) -> Data:
    train = draw_pairs(family, train_pairs, seed, stream=0)
    heldout, heldout_plans = _heldout(target, family, heldout_pairs, seed)
    double = draw_pairs(family.resized(min(2 * family.points, 64)),
                        max(1, heldout_pairs // 2), seed, stream=2)
    return Data(train, target(train), heldout, heldout_plans, double, target(double))


def make_data(settings: LabSettings, target: "Target | None" = None) -> Data:
    """The training, held-out and double-size sets of a run, with target plans (cached)."""
    t = get_target(settings.target if target is None else target)
    return _data(t, settings.family, settings.train_pairs, settings.heldout_pairs,
                 settings.seed)


def _tensors(p: Pairs, dtype=torch.float32):
    return tuple(torch.as_tensor(v, dtype=dtype) for v in (p.x, p.a, p.y, p.b))


def predict(model: CouplingModel, pairs: Pairs) -> np.ndarray:
    """The model's plans π (B, n, m) for the pairs, as float64 numpy."""
    dtype = next(model.parameters()).dtype
    with torch.no_grad():
        return model(*_tensors(pairs, dtype)).double().numpy()


def plan_errors(P: np.ndarray, target: np.ndarray, pairs: Pairs) -> tuple[float, float, float]:
    """Mean L1 distance to the target, mean row and column marginal errors (L1).

    ‖π − F(μ, ν)‖₁ = Σᵢⱼ |πᵢⱼ − Fᵢⱼ|, ‖π1 − a‖₁, ‖πᵀ1 − b‖₁, each averaged over pairs.
    """
    l1 = np.abs(P - target).sum((-1, -2)).mean()
    row = np.abs(P.sum(-1) - pairs.a).sum(-1).mean()
    col = np.abs(P.sum(-2) - pairs.b).sum(-1).mean()
    return float(l1), float(row), float(col)


def build(settings: LabSettings) -> CouplingModel:
    """A freshly initialised model for the settings (weights drawn from the seed)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        return CouplingModel(settings.model, width=settings.width, depth=settings.depth,
                             heads=settings.heads, eps=settings.eps,
                             half_steps=settings.half_steps)


def train(settings: LabSettings = LabSettings(), *, target: "Target | None" = None,
          callback: Callable[[Progress], None] | None = None,
          should_stop: Callable[[], bool] | None = None, threads: int | None = 1,
          model: CouplingModel | None = None) -> Run:
    """Train one model to a coupling system by Adam on the mean L1 distance.

    min_θ E_{(μ, ν)} ‖π_θ(μ, ν) − F(μ, ν)‖₁ over the fixed training pairs.

    Args:
        settings: the run (model, target, sizes, steps, seed).
        target: a :class:`Target` (e.g. from ``custom_target``) instead of
            ``settings.target``.
        callback: called with a :class:`Progress` every ``eval_every`` steps and at the end.
        should_stop: polled every step; True ends the run (the best weights so far are kept).
        threads: torch threads during the run (1 is fastest on a shared small machine;
            None leaves torch's setting).
        model: a model from :func:`build` to train in place (a caller that may be
            interrupted keeps it, with the weights it had reached); a fresh one when None.

    Returns:
        A :class:`Run`. If the held-out error stalls, try more steps, a larger width or
        a smaller lr; if the Sinkhorn models stay far from the target, more half-steps or
        a larger ε (their plans are couplings after any number of half-steps).
    """
    data = make_data(settings, target)
    old_threads = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        return _train(settings, data, callback, should_stop,
                      build(settings) if model is None else model)
    finally:
        if threads:
            torch.set_num_threads(old_threads)


def _train(settings, data, callback, should_stop, model) -> Run:
    opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=settings.steps,
                                                       eta_min=settings.lr / 20)
    rng = np.random.default_rng(np.random.SeedSequence([settings.seed, 7]))
    X = _tensors(data.train)
    T = torch.as_tensor(data.train_plans, dtype=torch.float32)
    n_train = len(data.train)
    history: list[Progress] = []
    best = (np.inf, None)
    stale, stopped, step, loss_v = 0, "done", 0, float("nan")
    t0 = time.perf_counter()

    def report(step: int) -> float:
        model.eval()
        l1, row, col = plan_errors(predict(model, data.heldout), data.heldout_plans,
                                   data.heldout)
        model.train()
        p = Progress(step, settings.steps, loss_v, l1, row, col, time.perf_counter() - t0)
        history.append(p)
        if callback is not None:
            callback(p)
        return l1

    for step in range(1, settings.steps + 1):
        if should_stop is not None and should_stop():
            stopped, step = "requested", step - 1
            break
        idx = torch.as_tensor(rng.choice(n_train, size=min(settings.batch, n_train),
                                         replace=False))
        P = model(*(v[idx] for v in X))
        loss = (P - T[idx]).abs().sum((-1, -2)).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        loss_v = float(loss.detach())
        if step % settings.eval_every == 0 or step == settings.steps:
            l1 = report(step)
            if l1 < best[0] - 1e-6:
                best, stale = (l1, {k: v.clone() for k, v in model.state_dict().items()}), 0
            else:
                stale += 1
                if settings.patience and stale >= settings.patience:
                    stopped = "early"
                    break
    if not history or history[-1].step != step:
        if step > 0:
            l1 = report(step)
            if l1 < best[0]:
                best = (l1, {k: v.clone() for k, v in model.state_dict().items()})
    seconds = time.perf_counter() - t0
    if best[1] is not None:
        model.load_state_dict(best[1])
    model.eval()
    l1, row, col = plan_errors(predict(model, data.heldout), data.heldout_plans, data.heldout)
    l1d, _, _ = plan_errors(predict(model, data.double), data.double_plans, data.double)
    return Run(settings, model, l1, l1d, row, col, seconds, step, stopped, tuple(history))


def sweep_widths(settings: LabSettings, models=MODELS, widths=SWEEP_WIDTHS, *,
                 steps: int | None = None,
                 callback: Callable[[int, int, str, int], None] | None = None,
                 target: "Target | None" = None,
                 should_stop: Callable[[], bool] | None = None,
                 out: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Held-out L1 of each model trained at each width: the approximation theorem as a curve.

    Args:
        settings: every other setting of the runs. models: which to train.
        widths: encoder widths D. steps: steps per run (default min(steps, 150)).
        callback: called as (done, total, model, width) before each run.
        target: a :class:`Target` instead of ``settings.target``.
        should_stop: polled before each run and every step: True ends the sweep, its runs
            so far kept (a run cut short keeps its best weights' error).
        out: a dict to fill in place (model → its NaN-filled row, written as runs end), so
            a caller reading it while the sweep runs sees the widths reached.

    Returns:
        model name → (len(widths),) held-out L1 per width (NaN for a run not made).
    """
    steps = steps or min(settings.steps, SWEEP_STEPS)
    out = {} if out is None else out
    out.update({m: np.full(len(widths), np.nan) for m in models})
    total, done = len(models) * len(widths), 0
    for i, w in enumerate(widths):
        for m in models:
            if should_stop is not None and should_stop():
                return out
            if callback is not None:
                callback(done, total, m, w)
            run = train(replace(settings, model=m, width=int(w), steps=steps,
                                eval_every=steps), target=target, should_stop=should_stop)
            out[m][i] = run.heldout_l1
            done += 1
    return out


@functools.lru_cache(maxsize=16)
def _other_size(target: Target, family: Family, count: int, seed: int) -> tuple[Pairs, np.ndarray]:
    pairs = draw_pairs(family, count, seed, stream=3)
    return pairs, target(pairs)


def heldout_pairs(settings: LabSettings, points: int | None = None, *,
                  target: "Target | None" = None) -> tuple[Pairs, np.ndarray]:
    """Held-out pairs and their target plans, of the training size or of ``points`` atoms.

    The training size gives the run's own held-out set; another size gives 16 fresh pairs
    from the same family and seed (never trained on).
    """
    t = get_target(settings.target if target is None else target)
    if points is None or points == settings.points:  # (the training set is not drawn)
        return _heldout(t, settings.family, settings.heldout_pairs, settings.seed)
    return _other_size(t, settings.family.resized(int(points)), 16, settings.seed)


def save(model: CouplingModel, path, settings: LabSettings | None = None) -> None:
    """Write a model's weights and configuration to a ``.safetensors`` file.

    Raises:
        LabError: the file cannot be written (no such folder, no permission, disk full).
    """
    from safetensors import SafetensorError
    from safetensors.torch import save_file

    meta = {"config": json.dumps(model.config)}
    if settings is not None:
        meta["settings"] = json.dumps(settings.to_dict())
    try:
        save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()},
                  str(path), metadata=meta)
    except (OSError, SafetensorError) as e:
        raise LabError(f"could not write {path}: {e} (give a path in a folder that exists "
                       "and can be written).") from None


def load(path) -> tuple[CouplingModel, LabSettings | None]:
    """Read a model saved by :func:`save`: (model, its settings or None)."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    try:
        with safe_open(str(path), framework="pt") as fh:
            meta = fh.metadata() or {}
    except Exception as e:  # missing file, not a safetensors file, truncated: say so
        raise LabError(f"{path} could not be read as a lab model ({type(e).__name__}: {e}); "
                       "give a file written by engine.lab.training.save.") from None
    if "config" not in meta:
        raise LabError(f"{path} is not a lab model (no configuration in its metadata): "
                       "save models with engine.lab.training.save.")
    try:
        model = CouplingModel(**json.loads(meta["config"]))
        model.load_state_dict(load_file(str(path)))
        settings = LabSettings(**json.loads(meta["settings"])) if "settings" in meta else None
    except LabError:
        raise
    except (ValueError, TypeError, RuntimeError, KeyError) as e:
        raise LabError(f"{path} holds a model this version cannot rebuild ({type(e).__name__}: "
                       f"{str(e)[:200]}); train and save it again.") from None
    model.eval()
    return model, settings


__all__ = ["LabSettings", "Progress", "Run", "Data", "train", "make_data", "predict",
           "plan_errors", "build", "save", "load", "sweep_widths", "heldout_pairs", "MODELS",
           "NAMES", "SWEEP_WIDTHS", "replace"]
