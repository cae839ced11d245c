"""A Lab run's settings, torch-free: the models, their sizes and checks, the sweep's widths.

:class:`LabSettings` is what one training run is (target, model, sizes, schedule, seed);
``engine.lab.training`` trains it, the Lab page and the engine's jobs
(``engine.jobs``) build it without importing torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .errors import check_choice, check_final_layer, check_lr, check_whole
from .measures import MAX_POINTS, Family  # noqa: F401  (the clouds' size limit)
from .targets import DEFAULT_TARGET, NAMES as TARGETS  # noqa: F401  (the targets' names)

MODELS = ("sinkhorn", "softmax", "context-free")
FINALS = ("sinkhorn", "softmax")
MAX_WIDTH = 256
MAX_DEPTH = 8
MAX_HEADS = 16
MAX_STEPS = 20000
MAX_PAIRS = 20000
MAX_BATCH = 4096
SWEEP_WIDTHS = (1, 2, 4, 8, 16, 32)
SWEEP_STEPS = 150  # steps per run of a sweep (at most the run's own)


def check_model(kind: str, width: int, depth: int, heads: int, eps: float,
                half_steps: int) -> None:
    """Raise :class:`~engine.lab.errors.LabError` with the fix for an unknown model or a
    size out of range."""
    check_choice("model", kind, MODELS)
    check_whole("width", width, 1, MAX_WIDTH)
    check_whole("depth", depth, 0, MAX_DEPTH)  # depth 0: embedding and head only
    check_whole("heads", heads, 1, MAX_HEADS)
    check_final_layer(eps, half_steps)


@dataclass(frozen=True)
class LabSettings:
    """One training run. The defaults are the Lab page's defaults.

    Attributes:
        target: a target's name (see ``engine.lab.targets.NAMES``).
        model: "sinkhorn", "softmax" or "context-free".
        width, depth, heads: encoder sizes. eps: ε of the final layer.
        half_steps: Sinkhorn half-steps unrolled in the final layer.
        steps: Adam steps (1 … 20 000). batch: pairs per step. lr: Adam's learning rate.
        points, spread, weights: the family of clouds (see :class:`Family`).
        train_pairs, heldout_pairs: sizes of the fixed training and held-out sets.
        seed: fixes the pairs, the initial weights and the batches.
        eval_every: steps between held-out evaluations (and progress reports).
        patience: stop after this many evaluations without a better held-out error
            (0: never stop early); the best weights are kept either way.
    """

    target: str = DEFAULT_TARGET
    model: str = "sinkhorn"
    width: int = 16
    depth: int = 2
    heads: int = 2
    eps: float = 0.5
    half_steps: int = 100
    steps: int = 400
    batch: int = 64
    lr: float = 6e-3
    points: int = 8
    spread: float = 1.0
    weights: str = "uniform"
    train_pairs: int = 1024
    heldout_pairs: int = 128
    seed: int = 0
    eval_every: int = 25
    patience: int = 0

    def __post_init__(self) -> None:
        check_model(self.model, self.width, self.depth, self.heads, self.eps, self.half_steps)
        for name, v, lo, hi in (("steps", self.steps, 1, MAX_STEPS),
                                ("batch", self.batch, 1, MAX_BATCH),
                                ("train_pairs", self.train_pairs, 1, MAX_PAIRS),
                                ("heldout_pairs", self.heldout_pairs, 2, MAX_PAIRS),
                                ("eval_every", self.eval_every, 1, MAX_STEPS),
                                ("patience", self.patience, 0, MAX_STEPS),
                                ("seed", self.seed, 0, 2**63 - 1)):
            check_whole(name, v, lo, hi, " (about 400 steps make the default point in under a "
                        "minute)" if name == "steps" else "")
        check_lr(self.lr, 6e-3)
        self.family  # validates points, spread, weights

    @property
    def family(self) -> Family:
        return Family(points=self.points, spread=self.spread, weights=self.weights)

    def to_dict(self) -> dict:
        return asdict(self)


__all__ = ["LabSettings", "MODELS", "FINALS", "MAX_WIDTH", "MAX_DEPTH", "MAX_HEADS",
           "MAX_STEPS", "MAX_PAIRS", "MAX_BATCH", "SWEEP_WIDTHS", "SWEEP_STEPS", "check_model"]
