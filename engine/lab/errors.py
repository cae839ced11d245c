"""The lab's errors: settings and targets whose messages say what to change."""

from __future__ import annotations

from ..errors import SettingsError


class LabError(SettingsError):
    """A lab setting out of range (width, depth, steps, points, ε, a target's name)."""


class TargetError(LabError):
    """A coupling system that does not return couplings (wrong shape, sign or marginals)."""
