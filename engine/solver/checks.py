"""The solver's input checks: arrays to tensors, weight vectors, and per-problem ε, τ and
batch shapes. Each refusal is a :class:`~engine.errors.SettingsError` that says what to
give instead."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..errors import SettingsError
from ..settings import EPS_MAX, EPS_MIN, check_eps


def _as_tensor(x: Any, *, dtype: torch.dtype | None = None, device=None) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        t = x
    else:
        t = torch.as_tensor(np.asarray(x))
    if not t.is_floating_point():
        t = t.to(torch.float64)
    if dtype is not None or device is not None:
        t = t.to(dtype=dtype or t.dtype, device=device or t.device)
    return t


def check_weights(w: torch.Tensor, name: str, size: int, *, normalised: bool = True) -> torch.Tensor:
    """Check a weight vector (..., size): nonnegative, finite, summing to 1.

    With ``normalised=False`` (unbalanced and partial transport) any total > 0 is allowed.
    """
    if w.shape[-1] != size:
        raise SettingsError(f"{name} has {w.shape[-1]} weights but the scores have {size} "
                            f"{'rows' if name == 'a' else 'columns'}; give one weight per token.")
    if not torch.isfinite(w).all():
        raise SettingsError(f"{name} holds NaN or infinite weights; give finite weights ≥ 0.")
    if (w < 0).any():
        raise SettingsError(f"{name} holds negative weights; weights must be ≥ 0.")
    total = w.sum(-1)
    if not normalised:
        if (total <= 0).any():
            raise SettingsError(f"{name} has no mass (all its weights are 0); give at least "
                                f"one weight > 0.")
        return w
    tol = 1e-5 if w.dtype == torch.float32 else 1e-8
    off = (total - 1).abs().flatten()
    if (off > tol * max(1, size) ** 0.5 + tol).any():
        k = int(off.argmax())
        where = f" in problem {k} of the batch" if off.numel() > 1 else ""
        raise SettingsError(f"{name} must sum to 1 (it sums to {float(total.flatten()[k]):.6g}"
                            f"{where}); normalise it, e.g. {name} / {name}.sum().")
    return w


def _parameter(x: Any, name: str, dtype, device) -> float | torch.Tensor:
    """A setting as a float, or as a tensor when it has dimensions (one value per problem)."""
    if isinstance(x, (bool, str)) or x is None:
        raise SettingsError(f"{name} must be a number or an array of numbers, got {x!r}.")
    if isinstance(x, (int, float, np.integer, np.floating)):
        return float(x)
    try:
        t = _as_tensor(x, dtype=dtype, device=device)
    except (TypeError, ValueError, RuntimeError):
        raise SettingsError(f"{name} must be a number or an array of numbers, got {x!r}.") from None
    return float(t) if t.dim() == 0 else t


def _check_eps_values(eps: float | torch.Tensor) -> float | torch.Tensor:
    """ε as :func:`check_eps` checks it, element by element for an array of ε."""
    if not isinstance(eps, torch.Tensor):
        return check_eps(eps)
    if eps.numel() == 0:
        raise SettingsError("ε is an empty array; give one ε (or one per problem).")
    if not torch.isfinite(eps).all() or (eps <= 0).any():
        raise SettingsError("ε must be a finite number > 0 for every problem; try ε = 1.")
    if (eps < EPS_MIN).any() or (eps > EPS_MAX).any():
        raise SettingsError(f"ε must lie in [{EPS_MIN:g}, {EPS_MAX:g}] for every problem, got "
                            f"{float(eps.min()):g} to {float(eps.max()):g}.")
    return eps


def _check_tau_values(tau: float | torch.Tensor) -> float | torch.Tensor:
    """τ > 0 (math.inf allowed: balanced), for one τ or for each problem."""
    t = torch.as_tensor(tau)
    if t.numel() == 0:
        raise SettingsError("tau is an empty array; give one τ (or one per problem).")
    if torch.isnan(t).any() or (t <= 0).any():
        raise SettingsError("tau (the KL strength of the marginal relaxation) must be > 0; "
                            "use tau=None or math.inf for balanced transport, e.g. tau=1.")
    return tau


def _broadcast(name: str, shape: tuple, *shapes: tuple) -> torch.Size:
    try:
        return torch.broadcast_shapes(shape, *shapes)
    except RuntimeError:
        raise SettingsError(f"{name} has shape {tuple(shape)}, which does not broadcast with the "
                            f"batch dimensions {tuple(torch.broadcast_shapes(*shapes))} of the "
                            f"scores and weights; give one value or one per problem, e.g. shape "
                            f"(T, 1) for T values over a batch of problems.") from None
