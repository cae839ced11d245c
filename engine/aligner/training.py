"""Training an aligner on gold links: progress, stop requests, early stop, the best epoch kept.

The loss is the gold's negative log-likelihood under the plan (:func:`.layers.gold_loss`):
every sure link, and the dustbin for every word without one. AdamW with two learning rates
(the fine-tuned layers' and the heads'), a linear warm-up over the first tenth of the steps
and a linear decay to 0, gradients clipped to norm 1. After each epoch θ is tuned on the
dev pairs by total F1; the epoch with the best dev total F1 is kept. A run is
deterministic for its seed (the heads, the batches and dropout all draw from it) on one
device with one thread count.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from ..settings import ALIGNER_MAX_PAIRS
from .config import AlignerError, AlignerSettings
from .data import Corpus, batch, length_batches, prepare
from .extract import plans, tune_theta
from .layers import gold_loss
from .model import Aligner

WARMUP = 0.1  # share of the steps with a rising learning rate
CLIP = 1.0


@dataclass(frozen=True)
class Progress:
    """Where a run is. ``stage`` is "read" (texts cached: ``step`` of ``steps`` texts),
    "train" (``step`` of ``steps`` batches of ``epoch``) or "dev" (the epoch scored, with
    ``dev_total_f1`` and ``theta``). ``loss``: the epoch's mean training loss so far."""

    stage: str
    epoch: int
    epochs: int
    step: int
    steps: int
    loss: float
    dev_total_f1: float | None
    theta: float | None
    seconds: float


@dataclass(frozen=True)
class Epoch:
    """One finished epoch: mean training loss, dev total F1 at its best θ, seconds so far."""

    epoch: int
    loss: float
    dev_total_f1: float
    theta: float
    seconds: float


@dataclass(frozen=True)
class Trained:
    """A finished run.

    Attributes:
        aligner: the aligner at its best epoch, θ set. settings: the run's settings.
        dev_total_f1, theta: the best epoch's dev total F1 and θ. best_epoch: which.
        epochs: epochs run. seconds, cpu_seconds: the whole run, reading included.
        stopped: "done", "early" (patience ran out) or "requested" (a stop request).
        history: the epochs, in order.
    """

    aligner: Aligner = field(repr=False, compare=False)
    settings: AlignerSettings
    dev_total_f1: float
    theta: float
    best_epoch: int
    epochs: int
    seconds: float
    cpu_seconds: float
    stopped: str
    history: tuple[Epoch, ...] = field(repr=False)

    def summary(self) -> dict:
        """The command line's JSON: dev_total_f1, theta, epochs, seconds."""
        return {"dev_total_f1": self.dev_total_f1, "theta": self.theta,
                "epochs": self.epochs, "seconds": self.seconds}


def check_pairs(pairs: Sequence, what: str, least: int = 1) -> tuple:
    """The pairs, each with gold, between ``least`` and ALIGNER_MAX_PAIRS of them."""
    pairs = tuple(pairs)
    if len(pairs) < least:
        raise AlignerError.of("too_few", what=what, least=least, count=len(pairs))
    if len(pairs) > ALIGNER_MAX_PAIRS:
        raise AlignerError.of("too_many", what=what, count=len(pairs), most=ALIGNER_MAX_PAIRS)
    for k, p in enumerate(pairs, 1):
        if not p.has_gold:
            raise AlignerError.of("no_gold", what=what, pair=k)
    return pairs


def load_encoder(settings: AlignerSettings, device: str | None = None):
    """The base model of ``settings`` on ``device`` (default: the CPU)."""
    from ..models.encoder import Encoder

    device = device or "cpu"
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise AlignerError.of("device", device=device, reason="no CUDA GPU")
    return Encoder.load(settings.model, device=device)


def train(train_pairs: Sequence, dev_pairs: Sequence,
          settings: AlignerSettings = AlignerSettings(), *, encoder=None,
          device: str | None = None, progress: Callable[[Progress], None] | None = None,
          should_stop: Callable[[], bool] | None = None, threads: int | None = None) -> Trained:
    """Train an aligner on the gold links of ``train_pairs``; tune θ and pick the best
    epoch on ``dev_pairs``.

    min −Σ_gold log π (links and nulls) over batches of pairs, by AdamW.

    Args:
        train_pairs, dev_pairs: :class:`~engine.alignment.readers.Pair` s with gold.
        settings: the run. encoder: the base model already loaded (else loaded by
            ``settings.model`` on ``device``, the CPU by default).
        progress: called with a :class:`Progress` after every batch and every epoch.
        should_stop: polled before every batch; True ends the run, keeping the best epoch
            (or, before the first epoch ends, the weights reached).
        threads: torch threads during the run (None leaves torch's setting).

    Returns:
        A :class:`Trained`. If dev total F1 falls after the first epoch, lower ``lr``;
        if it is still rising at the end, add epochs.
    """
    train_pairs = check_pairs(train_pairs, "the training file")
    dev_pairs = check_pairs(dev_pairs, "the dev file")
    old = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    where = torch.device(device or "cpu")
    try:
        with torch.random.fork_rng(devices=[where.index or 0] if where.type == "cuda" else []):
            torch.manual_seed(settings.seed)
            encoder = encoder or load_encoder(settings, device)
            return _train(train_pairs, dev_pairs, settings, encoder, progress, should_stop)
    finally:
        torch.set_num_threads(old)


def _optimiser(aligner: Aligner, settings: AlignerSettings, steps: int):
    heads = [p for n, p in aligner.named_parameters() if not n.startswith("layers.")]
    opt = torch.optim.AdamW([{"params": list(aligner.layers.parameters()), "lr": settings.lr},
                             {"params": heads, "lr": settings.head_lr}], weight_decay=0.0)
    warm = max(1, int(WARMUP * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda t: min((t + 1) / warm, max(0.0, (steps - t) / max(1, steps - warm))))
    return opt, sched


def _train(train_pairs, dev_pairs, settings, encoder, progress, should_stop) -> Trained:
    w0, c0 = time.perf_counter(), time.process_time()
    say = progress or (lambda _: None)
    E = settings.epochs
    aligner = Aligner(encoder, settings)

    total, first = 2 * (len(train_pairs) + len(dev_pairs)), 2 * len(train_pairs)

    def reading(done: int) -> None:
        say(Progress("read", 0, E, done, total, float("nan"), None, None,
                     time.perf_counter() - w0))

    train_c = prepare(train_pairs, aligner, progress=lambda d, _: reading(d))
    dev_c = prepare(dev_pairs, aligner, progress=lambda d, _: reading(first + d))
    rng = np.random.default_rng(settings.seed)
    per_epoch = -(-len(train_c) // settings.batch)
    opt, sched = _optimiser(aligner, settings, E * per_epoch)
    history: list[Epoch] = []
    best: tuple = (-1.0, 0.5, None, 0)  # (f1, θ, state, epoch)
    stopped, stale = "done", 0
    for epoch in range(1, E + 1):
        loss, stop = _epoch(aligner, train_c, opt, sched, rng, epoch, say, should_stop, w0)
        if stop:
            stopped = "requested"
            if history:
                break
        theta, f1 = tune_theta(plans(aligner, dev_c), dev_c)
        history.append(Epoch(epoch, loss, f1, theta, time.perf_counter() - w0))
        say(Progress("dev", epoch, E, per_epoch, per_epoch, loss, f1, theta,
                     time.perf_counter() - w0))
        if f1 > best[0]:
            state = {k: v.detach().clone() for k, v in aligner.state_dict().items()}
            best, stale = (f1, theta, state, epoch), 0
        else:
            stale += 1
        if stop:
            break
        if settings.patience and stale >= settings.patience and epoch < E:
            stopped = "early"
            break
    aligner.load_state_dict(best[2])
    aligner.theta = float(best[1])
    aligner.eval()
    return Trained(aligner, settings, best[0], best[1], best[3], len(history),
                   time.perf_counter() - w0, time.process_time() - c0, stopped, tuple(history))


def _epoch(aligner, corpus: Corpus, opt, sched, rng, epoch, say, should_stop, w0):
    """One pass over the training pairs; (mean loss, stopped by request)."""
    aligner.train()
    batches = length_batches(corpus, aligner.settings.batch, rng)
    total, done = 0.0, 0
    for step, idx in enumerate(batches, 1):
        if should_stop is not None and should_stop():
            return total / max(done, 1), True
        b = batch(corpus, idx)
        loss = gold_loss(aligner(b), b.gold, b.mask_a, b.mask_b, aligner.settings.final)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(aligner.parameters(), CLIP)
        opt.step()
        sched.step()
        total += float(loss.detach())
        done += 1
        say(Progress("train", epoch, aligner.settings.epochs, step, len(batches),
                     total / done, None, None, time.perf_counter() - w0))
    return total / max(done, 1), False
