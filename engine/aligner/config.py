"""A trained aligner's settings and errors.

:class:`AlignerSettings` holds what a run is (base model, final layer, which layers are
read and fine-tuned, the schedule, the seed); its defaults and ranges are
:data:`engine.settings.ALIGNER_WHOLE` and :data:`~engine.settings.ALIGNER_RATES`.
:class:`AlignerError` speaks in codes with parameters (:data:`MESSAGES`), like the Align
readers' errors, so a page can word them in its language.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, fields

from ..errors import AlignerError  # (defined with the errors a page catches; its sentences here)
from ..settings import ALIGNER_FINALS, ALIGNER_RATES, ALIGNER_WHOLE, DEFAULT_MODEL

MESSAGES: dict[str, str] = {
    "whole": "{name} must be a whole number from {lo} to {hi}, got {value!r}.",
    "rate": "{name} must be a number from {lo:g} to {hi:g}, got {value!r}.",
    "choice": "{name} must be one of {choices}, got {value!r}.",
    "top_above_layer": "top ({top}) cannot exceed layer ({layer}): the fine-tuned layers are "
                       "the last ones of those read; lower top or raise layer.",
    "layer_above_model": "layer {layer} is out of range: {model} has hidden states 0 to "
                         "{layers}.",
    "no_gold": "{what} needs gold links for every pair; pair {pair} has none.",
    "too_few": "{what} needs at least {least} pairs with gold, got {count}.",
    "too_many": "{what} holds {count:,} pairs, more than {most:,}; use fewer pairs.",
    "out_not_dir": "--out {path} exists and is not a folder; give a folder for the aligner.",
    "out_unwritable": "--out {path} cannot be written ({reason}); give a folder you can "
                      "write to.",
    "not_aligner": "{path} is not a trained aligner ({reason}); give a folder written by "
                   "python -m engine train-aligner.",
    "bad_checkpoint": "{path} holds a malformed aligner ({reason}); train and save it again.",
    "other_base": "{path} was trained on the base model {trained!r} ({trained_hash}), not on "
                  "{given!r} ({given_hash}); align with the model it was trained on.",
    "not_listed": "Aligner {name!r} is not on the allow-list; choose one of: {names}. "
                  "Operators add aligners with SINKSCOPE_ALIGNERS.",
    "job_aligner": "Aligner {name!r} was trained by a job the engine no longer holds (it "
                   "never existed, or its result was dropped); train it again.",
    "bad_list": "SINKSCOPE_ALIGNERS entry {entry!r} is not of the form name=folder.",
    "device": "device {device!r} is not available here ({reason}); use --device cpu.",
}


def check_whole(name: str, value, lo: int, hi: int) -> int:
    """``value`` as an int in [lo, hi], or an :class:`AlignerError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not lo <= value <= hi:
        raise AlignerError.of("whole", name=name, lo=lo, hi=hi, value=value)
    return int(value)


def check_rate(name: str, value, lo: float, hi: float) -> float:
    """``value`` as a float in [lo, hi], or an :class:`AlignerError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not math.isfinite(value) or not lo <= value <= hi:
        raise AlignerError.of("rate", name=name, lo=lo, hi=hi, value=value)
    return float(value)


def check_choice(name: str, value, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise AlignerError.of("choice", name=name, choices=", ".join(choices), value=value)
    return value


@dataclass(frozen=True)
class AlignerSettings:
    """One aligner: what it reads, what it fine-tunes, how it is trained.

    Attributes:
        model: the allow-listed base sentence-transformers model.
        final: "sinkhorn" (dustbin coupling) or "softmax" (row softmax + null column).
        layer: the hidden state read (0 … L; the untrained Align methods read 3).
        top: how many of the layers below it are fine-tuned (0: only the heads).
        epochs: passes over the training pairs (the most, with early stop).
        batch: pairs per step. lr: the layers' learning rate; head_lr: the heads'.
        half_steps: half-steps of the Sinkhorn layer.
        eps: the Sinkhorn layer's ε when aligning (and choosing θ and the best epoch); it
            trains at ε = 1. A plan softer than the trained one scores better (MTRef dev
            total F1 +0.004–0.006 at 1.4; docs/lab.md). ``softmax`` ignores it.
        patience: epochs without a better dev total F1 before stopping (0: never).
        seed: fixes the heads' initial weights, the batches and dropout.
        lowercase: texts are lower-cased (when training and when aligning).
        transpose: the training files were read with A and B swapped (a record only).
    """

    model: str = DEFAULT_MODEL
    final: str = ALIGNER_FINALS[0]
    layer: int = ALIGNER_WHOLE["layer"][0]
    top: int = ALIGNER_WHOLE["top"][0]
    epochs: int = ALIGNER_WHOLE["epochs"][0]
    batch: int = ALIGNER_WHOLE["batch"][0]
    lr: float = ALIGNER_RATES["lr"][0]
    head_lr: float = ALIGNER_RATES["head_lr"][0]
    half_steps: int = ALIGNER_WHOLE["half_steps"][0]
    eps: float = ALIGNER_RATES["eps"][0]
    patience: int = ALIGNER_WHOLE["patience"][0]
    seed: int = ALIGNER_WHOLE["seed"][0]
    lowercase: bool = False
    transpose: bool = False

    def __post_init__(self) -> None:
        check_choice("final", self.final, ALIGNER_FINALS)
        for name, (_, lo, hi) in ALIGNER_WHOLE.items():
            check_whole(name, getattr(self, name), lo, hi)
        for name, (_, lo, hi) in ALIGNER_RATES.items():
            check_rate(name, getattr(self, name), lo, hi)
        if self.top > self.layer:
            raise AlignerError.of("top_above_layer", top=self.top, layer=self.layer)
        if not isinstance(self.model, str) or not self.model.strip():
            raise AlignerError.of("choice", name="model", choices="the allow-listed models",
                                  value=self.model)
        for name in ("lowercase", "transpose"):
            if not isinstance(getattr(self, name), bool):
                raise AlignerError.of("choice", name=name, choices="true, false",
                                      value=getattr(self, name))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "AlignerSettings":
        """The settings a :meth:`to_dict` mapping holds (unknown keys: an error)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise AlignerError.of("choice", name="setting", choices=", ".join(sorted(names)),
                                  value=unknown[0])
        return cls(**d)
