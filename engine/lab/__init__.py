"""The lab: measures in the plane and models trained on coupling systems.

- ``measures``: families of clouds μ = Σᵢ aᵢ δ_{xᵢ} in ℝ² and seeded pairs of them.
- ``targets``: coupling systems (μ, ν) ↦ π ∈ Π(μ, ν) with exact marginals, and a user's own.
- ``nets``: measure encoders, the Sinkhorn Transformer and its two baselines.
- ``training``: training with progress, early stop and a stop request; save and load.
- ``toy``: the Learn page's hand-placed clouds.

Names load on first use, so ``python -m engine lab --help`` does not import torch.
"""

from __future__ import annotations

from .._lazy import exports

_WHERE = {
    "Family": "measures", "Pairs": "measures", "draw_pairs": "measures",
    "Target": "targets", "TARGETS": "targets", "custom_target": "targets",
    "get_target": "targets", "round_to_marginals": "targets",
    "MeasureEncoder": "nets", "PointEncoder": "nets", "CouplingModel": "nets",
    "SinkhornTransformer": "nets", "sinkhorn_log_plan": "nets", "round_to_coupling": "nets",
    "LabSettings": "config", "Progress": "training", "Run": "training",
    "train": "training", "predict": "training", "plan_errors": "training",
    "make_data": "training", "save": "training", "load": "training",
    "LabError": "errors", "TargetError": "errors",
}
__all__ = sorted(_WHERE)

__getattr__, __dir__ = exports(__name__, _WHERE)
