"""Two small clouds of points in the plane, for the Learn walk-through: the clouds
themselves, their scores and what a plan sends and receives (numpy only, no torch; the
plans are solved in :mod:`engine.lab.toy`).

A cloud is a measure μ = Σᵢ aᵢ δ_{xᵢ} with xᵢ ∈ ℝ²; the walk-through relates cloud A to
cloud B with the engine's own :func:`~engine.solver.core.softmax_attention` and
:func:`~engine.solver.core.sinkhorn`, and with POT's ``ot.emd`` for exact transport
(:mod:`engine.lab.toy`).

The cost. In the plane the natural cost is the squared distance, C = ½‖x − y‖² (near is
cheap), i.e. scores S = −½‖x − y‖². Opened up,

    ½‖x − y‖² = ½‖x‖² + ½‖y‖² − ⟨x, y⟩,

and the first two terms depend on the row only or on the column only. A coupling pays
each of them in full whatever it does (row i always sends aᵢ, column j always receives
bⱼ), so the couplings for ½‖x − y‖² and for −⟨x, y⟩ are the same, entropic and exact
alike: −⟨x, y⟩ is the transformer's cost −⟨Q(μ, x), K(ν, y)⟩ with Q and K the identity.
Softmax fixes the rows only, so the column term ½‖y‖² does tilt it. For the same reason,
moving cloud B as a whole changes softmax but never the coupling (the shift adds
⟨x, t⟩ − ⟨y, t⟩ − ½‖t‖², again a row term plus a column term).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SettingsError

PRESETS = ("clusters", "outlier", "shifted", "unequal")
COSTS = ("distance", "inner")  # −½‖x − y‖² and ⟨x, y⟩ as scores
SHIFT_MIN, SHIFT_MAX = -3.0, 2.0  # how far the slider moves cloud B along x
EPS_PATH = (20.0, 10.0, 5.0, 2.0, 1.0, 0.5, 0.2, 0.1, 0.05, 0.02)  # step 4, large → small
MAX_HALF_STEPS = 6000  # at the asked ε, after the warm start (every preset converges)
WARM_HALF_STEPS = 2000  # the most at each larger ε of the warm start
TOL = 1e-5  # L1 marginal tolerance: far below what a picture shows

# Hand-placed points: each preset tells one story (see ``clouds``).
_A_CLUSTERS = [(-0.6, 1.7), (0.3, 1.1), (0.2, 2.2), (-0.5, -1.1), (0.4, -1.6), (-0.3, -2.2)]
_B_CLUSTERS = [(2.2, 1.0), (3.0, 0.5), (2.9, 1.5), (4.7, -1.7), (5.5, -1.3), (5.2, -2.3)]
_A_OUTLIER = [(-0.6, 0.7), (0.4, 1.1), (0.1, 0.0), (-0.7, -0.9), (0.5, -0.9)]
_B_OUTLIER = [(2.3, 0.7), (3.1, 0.1), (2.4, -0.8), (3.2, 1.2), (4.8, 2.6)]
_A_SHAPE = [(-0.9, 1.3), (0.0, 1.7), (0.8, 1.0), (-0.5, 0.1), (0.5, -0.6), (-0.2, -1.5)]
_SHIFTED_BY = (3.2, 0.0)
_A_UNEQUAL = [(-0.2, 1.4), (0.3, -0.1), (-0.3, -1.6)]
_A_UNEQUAL_MASS = [0.5, 0.3, 0.2]
_B_UNEQUAL = [(2.2, 2.0), (3.0, 1.3), (2.3, 0.6), (3.3, -0.1), (2.5, -0.8), (3.2, -1.6),
              (2.4, -2.3)]
# The plane every preset is drawn in: it holds both clouds at every shift.
FRAME = ((-1.6, 7.9), (-2.9, 3.1))


@dataclass(frozen=True)
class Clouds:
    """Two discrete measures in the plane.

    Attributes:
        xa: (n, 2) points of cloud A; a: (n,) their masses, summing to 1.
        xb: (m, 2) points of cloud B; b: (m,) their masses, summing to 1.
        preset: which of :data:`PRESETS` they come from.
        shift: how far cloud B was moved along x from the preset's place.
    """

    xa: np.ndarray
    a: np.ndarray
    xb: np.ndarray
    b: np.ndarray
    preset: str
    shift: float

    @property
    def n(self) -> int:
        return len(self.a)

    @property
    def m(self) -> int:
        return len(self.b)


def _frozen(x) -> np.ndarray:
    arr = np.array(x, dtype=np.float64)
    arr.setflags(write=False)  # shared through caches; the solvers get copies
    return arr


def _uniform(k: int) -> np.ndarray:
    return np.full(k, 1.0 / k)


def clouds(preset: str = "clusters", shift: float = 0.0) -> Clouds:
    """The preset's two clouds, with cloud B moved by ``shift`` along the x axis.

    - "clusters": A has two groups; B has one group near A and one far away.
    - "outlier": B has one point far from everything else.
    - "shifted": B is A moved to the right: the same cloud, elsewhere.
    - "unequal": A has three points of unequal mass, B has seven equal ones.

    Args:
        preset: one of :data:`PRESETS`.
        shift: in [:data:`SHIFT_MIN`, :data:`SHIFT_MAX`].

    Raises:
        SettingsError: for an unknown preset or a shift out of range.
    """
    if preset not in PRESETS:
        raise SettingsError(f"preset must be one of {', '.join(PRESETS)}; got {preset!r}.")
    try:
        shift = float(shift)
    except (TypeError, ValueError):
        raise SettingsError(f"shift must be a number, got {shift!r}.") from None
    if not SHIFT_MIN <= shift <= SHIFT_MAX:  # also refuses NaN
        raise SettingsError(f"shift must lie in [{SHIFT_MIN:g}, {SHIFT_MAX:g}], got {shift}.")
    if preset == "clusters":
        xa, xb, a = _A_CLUSTERS, _B_CLUSTERS, None
    elif preset == "outlier":
        xa, xb, a = _A_OUTLIER, _B_OUTLIER, None
    elif preset == "shifted":
        xa, a = _A_SHAPE, None
        xb = (np.asarray(_A_SHAPE) + np.asarray(_SHIFTED_BY)).tolist()
    else:
        xa, xb, a = _A_UNEQUAL, _B_UNEQUAL, _A_UNEQUAL_MASS
    xb = np.asarray(xb, dtype=np.float64) + np.array([shift, 0.0])
    return Clouds(xa=_frozen(xa), a=_frozen(a if a is not None else _uniform(len(xa))),
                  xb=_frozen(xb), b=_frozen(_uniform(len(xb))), preset=preset, shift=shift)


def scores(c: Clouds, cost: str = "distance") -> np.ndarray:
    """Scores S (n, m) between the clouds; the cost is −S.

    "distance": S = −½‖xᵢ − yⱼ‖²; "inner": S = ⟨xᵢ, yⱼ⟩. Both give the same couplings
    (see the module's docstring); softmax differs by the column term −½‖yⱼ‖².
    """
    if cost == "distance":
        d = c.xa[:, None, :] - c.xb[None, :, :]
        return -0.5 * (d ** 2).sum(-1)
    if cost == "inner":
        return c.xa @ c.xb.T
    raise SettingsError(f"cost must be one of {', '.join(COSTS)}; got {cost!r}.")


def product(c: Clouds) -> np.ndarray:
    """a ⊗ b, (n, m): the coupling as ε → ∞ (everyone partners everyone)."""
    return np.outer(c.a, c.b)


def received(plan: np.ndarray) -> np.ndarray:
    """What each point of B receives, πᵀ1: (m,)."""
    return np.asarray(plan).sum(-2)


def sent(plan: np.ndarray) -> np.ndarray:
    """What each point of A sends, π1: (n,)."""
    return np.asarray(plan).sum(-1)


PLANS = ("softmax", "half_steps", "coupling", "exact")


@dataclass(frozen=True)
class ToyPlan:
    """One plan between the clouds (:func:`engine.lab.toy.toy_plan`; ``POST /v1/toy``).

    Attributes:
        clouds: the :class:`Clouds`. kind: one of :data:`PLANS`. plan: (n, m).
        t: the half-steps of ``half_steps`` (else None). eps: the ε of ``coupling`` (else
        None). row_err, col_err: its final L1 marginal errors (``half_steps`` and
        ``coupling``; else None). converged: whether ``coupling`` converged (else None).
    """

    clouds: Clouds
    kind: str
    plan: np.ndarray
    t: int | None = None
    eps: float | None = None
    row_err: float | None = None
    col_err: float | None = None
    converged: bool | None = None
