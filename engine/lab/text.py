"""A relation learned on text: trained Q, K projections of a frozen sentence model's word
states, with a Sinkhorn or a softmax final layer, on pairs with gold word alignments.

The sentence model is frozen; its word states h (pooled from subwords, one layer) are
read once. Only two maps are trained, Q = h_A W_Q and K = h_B W_K (d → D), with scores
S = QKᵀ/√D and as final layer either Sinkhorn (π ∈ Π(a, b), a and b uniform over the
words) or a row softmax (π = diag(a)·softmax(S/ε)). The loss is the gold links'
conditional log-likelihood, −Σ_{(i,j) ∈ sure} log(πᵢⱼ / aᵢ) / |sure|. Links are read off
the plan as OTAlign does: the plan min-max scaled per pair, links where it exceeds θ, θ
chosen on a tuning split by total F1 (links and null alignments together).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn

from .errors import LabError, check_choice, check_final_layer, check_whole
from .nets import sinkhorn_log_plan

FINALS = ("sinkhorn", "softmax")
THETAS = tuple(np.round(np.arange(0.05, 1.0, 0.05), 2))


@dataclass(frozen=True)
class TextSettings:
    """One text run. Attributes: final ("sinkhorn" or "softmax"), layer (of the frozen
    model's word states), width D, eps, half_steps, steps, batch (pairs per step), lr,
    seed."""

    final: str = "sinkhorn"
    layer: int = 3
    width: int = 384
    eps: float = 0.1
    half_steps: int = 20
    steps: int = 200
    batch: int = 32
    lr: float = 1e-3
    seed: int = 0

    def __post_init__(self) -> None:
        check_choice("final", self.final, FINALS)
        for name, v, hi in (("width", self.width, 1024), ("steps", self.steps, 20000),
                            ("batch", self.batch, 4096)):
            check_whole(name, v, 1, hi)
        check_final_layer(self.eps, self.half_steps)


@dataclass(frozen=True)
class WordStates:
    """Frozen word states of the pairs: ha[k] (n_k, d), hb[k] (m_k, d), gold masks
    sure[k] (n_k, m_k) bool."""

    ha: tuple[np.ndarray, ...]
    hb: tuple[np.ndarray, ...]
    sure: tuple[np.ndarray, ...]

    def __len__(self) -> int:
        return len(self.ha)

    def take(self, idx: Sequence[int]) -> "WordStates":
        return WordStates(tuple(self.ha[i] for i in idx), tuple(self.hb[i] for i in idx),
                          tuple(self.sure[i] for i in idx))


def word_states(pairs: Sequence, encoder, layer: int = 3, *, batch_size: int = 32,
                progress: Callable[[int, int], None] | None = None) -> WordStates:
    """Encode every pair's two texts once with the frozen model; keep one layer's states.

    Words the model did not read (cut off at its length limit) keep zero states.
    """
    from ..alignment.sources import Source, encode_words

    keep = Source("hidden", layer=layer, head="mean", center=False)
    wa = encode_words([p.text_a for p in pairs], encoder, keep=keep, batch_size=batch_size,
                      progress=progress)
    wb = encode_words([p.text_b for p in pairs], encoder, keep=keep, batch_size=batch_size)
    sure = []
    for p in pairs:
        G = np.zeros(p.shape, dtype=bool)
        for i, j in p.sure:
            G[i, j] = True
        sure.append(G)
    return WordStates(tuple(w.hidden[-1] for w in wa), tuple(w.hidden[-1] for w in wb),
                      tuple(sure))


def _pad(states: WordStates, idx: Sequence[int]):
    n = max(states.ha[i].shape[0] for i in idx)
    m = max(states.hb[i].shape[0] for i in idx)
    d = states.ha[idx[0]].shape[1]
    B = len(idx)
    Ha, Hb = np.zeros((B, n, d), np.float32), np.zeros((B, m, d), np.float32)
    a, b = np.zeros((B, n), np.float32), np.zeros((B, m), np.float32)
    G = np.zeros((B, n, m), np.float32)
    for k, i in enumerate(idx):
        ni, mi = states.ha[i].shape[0], states.hb[i].shape[0]
        Ha[k, :ni], Hb[k, :mi] = states.ha[i], states.hb[i]
        a[k, :ni], b[k, :mi] = 1.0 / ni, 1.0 / mi
        G[k, :ni, :mi] = states.sure[i]
    return tuple(torch.as_tensor(v) for v in (Ha, a, Hb, b, G))


class TextHead(nn.Module):
    """Q = h_A W_Q, K = h_B W_K (d → D), S = QKᵀ/√D, then Sinkhorn or row softmax.

    Shapes: Ha (B, n, d), a (B, n), Hb (B, m, d), b (B, m) → log π (B, n, m).
    """

    def __init__(self, dim: int, settings: TextSettings) -> None:
        super().__init__()
        self.settings = settings
        self.wq = nn.Linear(dim, settings.width, bias=False)
        self.wk = nn.Linear(dim, settings.width, bias=False)
        if settings.width == dim:  # start from the model's own dot product, ⟨h_A, h_B⟩
            with torch.no_grad():
                self.wq.weight.copy_(torch.eye(dim))
                self.wk.weight.copy_(torch.eye(dim))

    def forward(self, Ha, a, Hb, b) -> torch.Tensor:
        s = self.settings
        S = self.wq(Ha) @ self.wk(Hb).transpose(-1, -2) / math.sqrt(s.width)
        return sinkhorn_log_plan(S, a, b, s.eps, 1 if s.final == "softmax" else s.half_steps)


@dataclass(frozen=True)
class TextRun:
    """A trained head: the model, its loss curve, the training time."""

    settings: TextSettings
    model: TextHead = field(repr=False, compare=False)
    losses: tuple[float, ...]
    seconds: float


def train_text(states: WordStates, settings: TextSettings = TextSettings()) -> TextRun:
    """Train W_Q, W_K on the gold links of ``states`` (the sentence model stays frozen).

    min −Σ_{(i,j) ∈ sure} log(πᵢⱼ/aᵢ) / |sure| over batches of pairs, by Adam.
    """
    if len(states) == 0:
        raise LabError("There are no pairs to train on: give pairs with gold links.")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        model = TextHead(states.ha[0].shape[1], settings)
    opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
    rng = np.random.default_rng(settings.seed)
    losses = []
    t0 = time.perf_counter()
    for _ in range(settings.steps):
        idx = rng.choice(len(states), size=min(settings.batch, len(states)), replace=False)
        Ha, a, Hb, b, G = _pad(states, idx)
        logP = model(Ha, a, Hb, b)
        cond = logP - torch.log(a.clamp_min(1e-30))[..., None]
        loss = -(torch.where(G > 0, cond, torch.zeros_like(cond))).sum() / G.sum().clamp_min(1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    model.eval()
    return TextRun(settings, model, tuple(losses), time.perf_counter() - t0)


def text_plans(model: TextHead, states: WordStates, batch: int = 64) -> list[np.ndarray]:
    """The head's plans π (n_k, m_k) for every pair."""
    out = []
    with torch.no_grad():
        for start in range(0, len(states), batch):
            idx = list(range(start, min(start + batch, len(states))))
            Ha, a, Hb, b, _ = _pad(states, idx)
            P = torch.exp(model(Ha, a, Hb, b)).numpy()
            out += [P[k, :states.ha[i].shape[0], :states.hb[i].shape[0]]
                    for k, i in enumerate(idx)]
    return out


def links_at(plans: Sequence[np.ndarray], theta: float) -> list[list[tuple[int, int]]]:
    """Links where the per-pair min-max scaled plan exceeds θ."""
    out = []
    for P in plans:
        lo, hi = P.min(), P.max()
        V = (P - lo) / (hi - lo) if hi > lo else np.zeros_like(P)
        out.append([(int(i), int(j)) for i, j in zip(*np.nonzero(V > theta))])
    return out


def tune_theta(plans: Sequence[np.ndarray], pairs: Sequence,
               thetas: Sequence[float] = THETAS) -> tuple[float, float]:
    """(θ, total F1) with the best total F1 (OTAlign's macro average) on these pairs."""
    from ..alignment.score import score

    best = (float(thetas[0]), -1.0)
    for t in thetas:
        f1 = score(links_at(plans, t), pairs, bootstrap=0).macro["total_f1"]
        if f1 > best[1]:
            best = (float(t), float(f1))
    return best


@dataclass(frozen=True)
class HeadScore:
    """One row of a comparison: which head, its held-out total F1, θ, training seconds."""

    name: str
    total_f1: float
    theta: float | None
    seconds: float


def compare_heads(pairs: Sequence, encoder, *, test_share: float = 0.25,
                  settings: TextSettings = TextSettings(),
                  progress: Callable[[str], None] | None = None,
                  should_stop: Callable[[], bool] | None = None) -> tuple[HeadScore, ...]:
    """Split pairs with gold (the last ``test_share`` held out), train a Sinkhorn head
    and a softmax head on the rest, and score both and the untrained default method on
    the held-out pairs by total F1. θ is chosen on the training pairs.

    ``progress(stage)`` names each stage ("encode", "sinkhorn", "softmax", "untrained")
    as it starts; ``should_stop()``, polled before each, ends the comparison there with
    the heads scored so far.

    Raises:
        LabError: fewer than 4 pairs with gold (code "needs_gold_pairs").
    """
    from ..alignment.api import align_pairs
    from ..alignment.score import score

    pairs = [p for p in pairs if p.has_gold]
    if len(pairs) < 4:
        raise LabError.of("needs_gold_pairs", n=len(pairs))
    k = max(1, int(round(len(pairs) * test_share)))
    fit, test = pairs[:-k], pairs[-k:]
    say = progress or (lambda _: None)
    stop = should_stop or (lambda: False)
    say("encode")
    st_fit, st_test = word_states(fit, encoder, settings.layer), \
        word_states(test, encoder, settings.layer)
    out = []
    for final in FINALS:
        if stop():
            return tuple(out)
        say(final)
        r = train_text(st_fit, TextSettings(**{**settings.__dict__, "final": final}))
        theta, _ = tune_theta(text_plans(r.model, st_fit), fit)
        f1 = score(links_at(text_plans(r.model, st_test), theta), test,
                   bootstrap=0).macro["total_f1"]
        out.append(HeadScore(final, float(f1), theta, r.seconds))
    if stop():
        return tuple(out)
    say("untrained")
    f1 = score(align_pairs(test, encoder=encoder), test, bootstrap=0).macro["total_f1"]
    out.append(HeadScore("untrained", float(f1), None, 0.0))
    return tuple(out)
