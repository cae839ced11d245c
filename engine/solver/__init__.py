"""The solver: entropic transport on scores (balanced, KL-relaxed and partial), references.

``sinkhorn``, ``partial``, ``softmax_attention``, ``log_plan`` (the differentiable unrolled
half-steps) and ``anneal_schedule`` (defined in :mod:`engine.solver.core`)
load on first use (PEP 562), so ``engine.solver.references`` (numpy and POT only) imports
without torch.
"""

from __future__ import annotations

from .._lazy import exports

_WHERE = {"sinkhorn": "core", "partial": "core", "softmax_attention": "core",
          "log_plan": "core", "anneal_schedule": "core"}
__all__ = sorted(_WHERE)

__getattr__, __dir__ = exports(__name__, _WHERE)
