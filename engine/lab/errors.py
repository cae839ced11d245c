"""The lab's errors, and the checks every lab setting goes through (one message each).

The lab's ranges are narrower than the solver's (:func:`engine.settings.check_eps` allows
ε in [1e-6, 1e6] and 100 000 half-steps): a final layer is unrolled and back-propagated
through at every training step, so ε stays in [0.001, 100] and half-steps ≤ 2000.
"""

from __future__ import annotations

import math
import numbers

from ..errors import SettingsError

LAB_EPS_MIN, LAB_EPS_MAX = 1e-3, 100.0
LAB_HALF_STEPS_MAX = 2000


class LabError(SettingsError):
    """A lab setting out of range (width, depth, steps, points, ε, a target's name)."""


class TargetError(LabError):
    """A coupling system that does not return couplings (wrong shape, sign or marginals)."""


def check_choice(name: str, value, choices: tuple[str, ...]) -> None:
    """Raise :class:`LabError` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise LabError(f"{name} must be one of {', '.join(choices)}, got {value!r}.")


def check_whole(name: str, value, lo: int, hi: int, hint: str = "") -> None:
    """Raise :class:`LabError` unless ``value`` is a whole number (not a bool) in [lo, hi];
    ``hint`` ends the message (e.g. " (about 400 steps take under a minute)")."""
    if (not isinstance(value, numbers.Integral) or isinstance(value, bool)
            or not lo <= value <= hi):
        raise LabError(f"{name} must be a whole number from {lo} to {hi}, got {value!r}{hint}.")


def check_lab_eps(eps) -> None:
    """Raise :class:`LabError` unless ε is a number in [0.001, 100]."""
    if not (isinstance(eps, numbers.Real) and not isinstance(eps, bool) and math.isfinite(eps)
            and LAB_EPS_MIN <= eps <= LAB_EPS_MAX):
        raise LabError(f"ε must be between {LAB_EPS_MIN:g} and {LAB_EPS_MAX:g}, got {eps!r}: "
                       "try 0.1 (smaller is sharper but needs more half-steps).")


def check_final_layer(eps, half_steps) -> None:
    """The final layer's ε and half-steps (1 … 2000), as every lab model checks them."""
    check_whole("half_steps", half_steps, 1, LAB_HALF_STEPS_MAX)
    check_lab_eps(eps)


def check_lr(lr, default: float) -> None:
    """Raise :class:`LabError` unless the learning rate is a number in (0, 1]."""
    if not (isinstance(lr, numbers.Real) and not isinstance(lr, bool) and math.isfinite(lr)
            and 0 < lr <= 1):
        raise LabError(f"lr must be in (0, 1], got {lr!r}: try {default:g}.")
