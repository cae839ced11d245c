"""The networks: measure encoders, per-atom encoders, and Sinkhorn or softmax final layers.

A measure encoder reads a cloud μ = Σᵢ aᵢ δ_{xᵢ} as a measure, not a list: its attention
adds the atoms' log-weights to the softmax logits,

    attn(h)ᵢ = Σⱼ softmaxⱼ(⟨qᵢ, kⱼ⟩/√d + log aⱼ) vⱼ,

so atom j counts with its mass aⱼ. Splitting an atom into two copies of half its weight
changes nothing, and reordering the atoms reorders the output the same way (permutation
equivariance; Q(μ, x) is a function of the measure μ and the point x).

The Sinkhorn Transformer (Fraiman, arXiv 2603.25860): Q(μ, xᵢ) and K(ν, yⱼ) from two
measure encoders, cost C = −⟨Q, K⟩, and Sinkhorn as the final layer,

    π = diag(e^{f/ε}) (a ⊗ b ⊙ e^{⟨Q, K⟩/ε}) diag(e^{g/ε}) ∈ Π(a, b),

unrolled for a fixed number of log-domain half-steps, then rounded onto Π(a, b)
(:func:`round_to_coupling`), so its output is a coupling however few the half-steps, and
differentiated by autograd through both (as in SuperGlue). Its first half-step alone is
the softmax final layer, πᵢⱼ = aᵢ softmaxⱼ(⟨Qᵢ, Kⱼ⟩/ε + log bⱼ): the first marginal is a,
the second is not b.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..solver.core import log_plan
from .config import FINALS, MAX_DEPTH, MAX_WIDTH, MODELS, check_model  # noqa: F401


def log_weights(a: torch.Tensor) -> torch.Tensor:
    """log a with log 0 = −∞ (zero-mass atoms drop out of every softmax). a: (B, n)."""
    return torch.where(a > 0, torch.log(a.clamp_min(torch.finfo(a.dtype).tiny)),
                       torch.full_like(a, -math.inf))


def _heads_for(width: int, heads: int) -> int:
    h = max(1, min(heads, width))
    while width % h:
        h -= 1
    return h


class MeasureAttention(nn.Module):
    """One pre-norm Transformer layer over a measure: weighted self-attention, then an MLP.

    h ← h + Attn(LN(h); log a), h ← h + MLP(LN(h)). h: (B, n, D), a: (B, n).
    """

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = _heads_for(width, heads)
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(),
                                 nn.Linear(2 * width, width))

    def forward(self, h: torch.Tensor, log_a: torch.Tensor) -> torch.Tensor:
        B, n, D = h.shape
        H = self.heads
        q, k, v = self.qkv(self.ln1(h)).view(B, n, 3, H, D // H).permute(2, 0, 3, 1, 4)
        logits = q @ k.transpose(-1, -2) / math.sqrt(D // H) + log_a[:, None, None, :]
        z = (torch.softmax(logits, -1) @ v).transpose(1, 2).reshape(B, n, D)
        h = h + self.out(z)
        return h + self.mlp(self.ln2(h))


class MeasureEncoder(nn.Module):
    """Q(μ, x) for every atom of μ: embed, ``depth`` measure-attention layers, project.

    Args:
        width: D, the width of the layers and of the output. depth: layers L.
        heads: attention heads (reduced to a divisor of D). dim: the atoms' dimension.

    Shapes: x (B, n, dim), a (B, n) → (B, n, D).
    """

    def __init__(self, width: int, depth: int, heads: int = 2, dim: int = 2) -> None:
        super().__init__()
        self.embed = nn.Linear(dim, width)
        self.layers = nn.ModuleList(MeasureAttention(width, heads) for _ in range(depth))
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, width)

    def forward(self, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        la = log_weights(a)
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h, la)
        return self.head(self.ln(h))


class PointEncoder(nn.Module):
    """A context-free encoder: the same MLP on every atom, blind to the rest of the cloud.

    Shapes: x (B, n, dim), a (B, n) (ignored) → (B, n, D). ``depth`` hidden layers (at
    least one) of width 2D (at least 32), and the measure encoder's output width.
    """

    def __init__(self, width: int, depth: int, heads: int = 2, dim: int = 2) -> None:
        super().__init__()
        hidden = max(32, 2 * width)
        dims = [dim] + [hidden] * max(depth, 1)
        layers: list[nn.Module] = []
        for d_in, d_out in zip(dims[:-1], dims[1:]):
            layers += [nn.Linear(d_in, d_out), nn.GELU()]
        self.mlp = nn.Sequential(*layers, nn.Linear(hidden, width))

    def forward(self, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)


def sinkhorn_log_plan(S: torch.Tensor, a: torch.Tensor, b: torch.Tensor, eps: float,
                      half_steps: int) -> torch.Tensor:
    """log π after ``half_steps`` unrolled log-domain Sinkhorn half-steps (differentiable).

    The engine's own half-steps (:func:`engine.solver.core.log_plan`) started from
    g = ε log b: log πᵢⱼ = Sᵢⱼ/ε + αᵢ + βⱼ; odd half-steps set α = log a − LSEⱼ(S/ε + β)
    (rows sum to a), even ones β = log b − LSEᵢ(S/ε + α) (columns sum to b). One
    half-step is diag(a)·softmaxⱼ(S/ε + log b): attention over the measure ν (its weights
    in the logits, so atoms of weight 0, padding included, get no mass). For uniform b
    this is the engine's half-step 1, diag(a)·softmax(S/ε), and the converged plan is the
    engine's :func:`~engine.solver.sinkhorn` for any b.

    Args:
        S: (B, n, m) scores ⟨Q, K⟩ (cost −S). a: (B, n), b: (B, m) weights.
        eps: ε > 0. half_steps: ≥ 1; an even count ends on the columns (πᵀ1 = b exactly).

    Returns:
        (B, n, m) log-plan, −∞ on zero-mass rows and columns. If the rows are far from a,
        give more half-steps or a larger ε.
    """
    return log_plan(S, a, b, eps, half_steps, start="b")


def round_to_coupling(P: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Round nonnegative plans onto Π(a, b) (Altschuler–Weed–Rigollet, Algorithm 2).

    Rows above aᵢ, then columns above bⱼ, are scaled down, and the missing mass
    r ⊗ c / ‖r‖₁ is added back, so π1 = a and πᵀ1 = b to rounding error. Torch
    operations throughout, so a final layer can be trained through it; the L1 distance
    to the input is at most twice its marginal errors.

    Args:
        P: (..., n, m) plans ≥ 0 (negative entries count as 0). a: (..., n). b: (..., m).

    Returns:
        (..., n, m) couplings with both marginals exact.
    """
    P = P.clamp_min(0)
    r = P.sum(-1)
    P = P * torch.where(r > 0, a / torch.where(r > 0, r, 1), 1).clamp(max=1)[..., :, None]
    c = P.sum(-2)
    P = P * torch.where(c > 0, b / torch.where(c > 0, c, 1), 1).clamp(max=1)[..., None, :]
    er = (a - P.sum(-1)).clamp_min(0)  # ≥ 0 but for rounding
    ec = (b - P.sum(-2)).clamp_min(0)
    s = er.sum(-1)[..., None, None]
    return P + er[..., :, None] * ec[..., None, :] / torch.where(s > 0, s, 1)


class CouplingModel(nn.Module):
    """(μ, ν) ↦ π: Q over μ, K over ν, scores ⟨Q, K⟩, then a Sinkhorn or softmax layer.

    Args:
        kind: "sinkhorn" (measure encoders + Sinkhorn, the Sinkhorn Transformer),
            "softmax" (measure encoders + row softmax) or "context-free" (per-atom MLPs +
            Sinkhorn).
        width, depth, heads: the encoders' sizes. eps: ε of the final layer.
        half_steps: Sinkhorn half-steps of the final layer (1 for softmax).

    Shapes: x (B, n, 2), a (B, n), y (B, m, 2), b (B, m) → π (B, n, m). The Sinkhorn
    models' plans are rounded onto Π(a, b) (:func:`round_to_coupling`), so they are
    couplings to rounding error after any number of half-steps; the softmax model's rows
    sum to a and its columns are what they are.
    """

    def __init__(self, kind: str = "sinkhorn", *, width: int = 16, depth: int = 2,
                 heads: int = 2, eps: float = 0.5, half_steps: int = 100) -> None:
        super().__init__()
        check_model(kind, width, depth, heads, eps, half_steps)
        self.kind = kind
        self.config = dict(kind=kind, width=width, depth=depth, heads=heads, eps=eps,
                           half_steps=half_steps)
        enc = PointEncoder if kind == "context-free" else MeasureEncoder
        self.encoder_q = enc(width, depth, heads)
        self.encoder_k = enc(width, depth, heads)
        self.eps = float(eps)
        self.half_steps = 1 if kind == "softmax" else int(half_steps)

    def scores(self, x, a, y, b) -> torch.Tensor:
        """S = ⟨Q(μ, xᵢ), K(ν, yⱼ)⟩: (B, n, m)."""
        return self.encoder_q(x, a) @ self.encoder_k(y, b).transpose(-1, -2)

    def forward(self, x, a, y, b) -> torch.Tensor:
        P = sinkhorn_log_plan(self.scores(x, a, y, b), a, b, self.eps, self.half_steps).exp()
        return P if self.kind == "softmax" else round_to_coupling(P, a, b)


class SinkhornTransformer(CouplingModel):
    """The Sinkhorn Transformer: measure encoders Q, K, cost −⟨Q, K⟩, Sinkhorn final layer."""

    def __init__(self, *, width: int = 16, depth: int = 2, heads: int = 2, eps: float = 0.5,
                 half_steps: int = 100) -> None:
        super().__init__("sinkhorn", width=width, depth=depth, heads=heads, eps=eps,
                         half_steps=half_steps)
