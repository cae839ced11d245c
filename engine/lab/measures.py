"""Measures in the plane: families of clouds, and pairs of them drawn by a seed.

A cloud is a discrete measure μ = Σᵢ aᵢ δ_{xᵢ}, xᵢ ∈ ℝ². A family fixes how many atoms a
cloud has, how spread out it is and whether its weights are uniform or random; each cloud
then gets its own centre, size, stretch and turn, so that relations which depend on the
whole cloud (its centre, its spread) differ from cloud to cloud.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import LabError

WEIGHTS = ("uniform", "random")
MAX_POINTS = 64  # atoms per cloud: the page draws every line of a plan


@dataclass(frozen=True)
class Family:
    """How clouds are drawn.

    Attributes:
        points: atoms per cloud n (2 ≤ n ≤ 64).
        spread: typical radius of a cloud; each cloud's own size is spread · e^{U(−r, r)}.
        weights: "uniform" (aᵢ = 1/n) or "random" (Dirichlet(2), every aᵢ > 0).
        size_range: r above: log-range of the cloud sizes (0: every cloud the same size).
    """

    points: int = 8
    spread: float = 1.0
    weights: str = "uniform"
    size_range: float = 1.1

    def __post_init__(self) -> None:
        if not isinstance(self.points, (int, np.integer)) or isinstance(self.points, bool):
            raise LabError(f"points must be a whole number, got {self.points!r}.")
        if self.points < 2:
            raise LabError(f"A cloud needs at least 2 points, got {self.points}: "
                           "set points to 2 or more (an empty cloud has nothing to relate).")
        if self.points > MAX_POINTS:
            raise LabError(f"points must be at most {MAX_POINTS}, got {self.points}.")
        if not (np.isfinite(self.spread) and 0 < self.spread <= 100):
            raise LabError(f"spread must be in (0, 100], got {self.spread!r}.")
        if self.weights not in WEIGHTS:
            raise LabError(f"weights must be one of {', '.join(WEIGHTS)}, got {self.weights!r}.")
        if not (np.isfinite(self.size_range) and 0 <= self.size_range <= 3):
            raise LabError(f"size_range must be in [0, 3], got {self.size_range!r}.")

    def resized(self, points: int) -> "Family":
        """The same family with another number of atoms per cloud."""
        return Family(points=points, spread=self.spread, weights=self.weights,
                      size_range=self.size_range)


@dataclass(frozen=True)
class Pairs:
    """A batch of B pairs of clouds (μ, ν) with n and m atoms.

    Attributes:
        x: (B, n, 2) atoms of μ. a: (B, n) weights of μ, each row summing to 1.
        y: (B, m, 2) atoms of ν. b: (B, m) weights of ν.
    """

    x: np.ndarray
    a: np.ndarray
    y: np.ndarray
    b: np.ndarray

    def __len__(self) -> int:
        return int(self.x.shape[0])

    def take(self, idx) -> "Pairs":
        """The pairs at ``idx`` (an index array or slice)."""
        return Pairs(self.x[idx], self.a[idx], self.y[idx], self.b[idx])


def _clouds(rng: np.random.Generator, count: int,
            family: Family) -> tuple[np.ndarray, np.ndarray]:
    n = family.points
    z = rng.standard_normal((count, n, 2))
    stretch = np.exp(rng.uniform(-0.5, 0.5, (count, 1, 2)))
    turn = rng.uniform(0, np.pi, count)
    c, s = np.cos(turn), np.sin(turn)
    R = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)  # (count, 2, 2)
    size = family.spread * np.exp(rng.uniform(-family.size_range, family.size_range,
                                              (count, 1, 1)))
    centre = rng.standard_normal((count, 1, 2)) * family.spread
    x = centre + size * np.einsum("cij,cnj->cni", R, z * stretch)
    if family.weights == "uniform":
        w = np.full((count, n), 1.0 / n)
    else:
        w = rng.gamma(2.0, size=(count, n))
        w = w / w.sum(-1, keepdims=True)
    return x, w


def draw_pairs(family: Family, count: int, seed: int, *, stream: int = 0,
               points_b: int | None = None) -> Pairs:
    """``count`` independent pairs of clouds from ``family``, the same for the same seed.

    Args:
        family: how each cloud is drawn (both clouds of a pair from the same family).
        count: how many pairs B (≥ 1).
        seed: any integer; equal seeds give equal pairs.
        stream: a second integer for independent sets from one seed (training 0, held-out 1).
        points_b: atoms of ν if not ``family.points`` (clouds of unequal sizes).

    Returns:
        :class:`Pairs` with x (B, n, 2), a (B, n), y (B, m, 2), b (B, m).
    """
    if count < 1:
        raise LabError(f"count must be at least 1, got {count}.")
    rng = np.random.default_rng(
        np.random.SeedSequence([int(seed) % 2**63, int(stream), family.points]))
    x, a = _clouds(rng, count, family)
    y, b = _clouds(rng, count, family if points_b is None else family.resized(points_b))
    return Pairs(x, a, y, b)
