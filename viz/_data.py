"""Input checks and small array computations shared by the figure builders."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from viz.theme import escape_all


def as_array(x: object, name: str, ndim: int | None = None) -> np.ndarray:
    """``x`` as a finite float64 numpy array, checked for ``ndim``.

    Torch tensors on the CPU convert through ``np.asarray``; NaN and ±inf become 0 so
    a figure never carries NaN.

    Raises:
        ValueError: when ``x`` is None or has the wrong number of dimensions.
    """
    if x is None:
        raise ValueError(f"{name} is missing (None); pass an array")
    arr = np.asarray(x, dtype=np.float64)
    if ndim is not None and arr.ndim != ndim:
        hint = ""
        if ndim == 2 and arr.ndim == 4:
            hint = "; this looks like a layers × heads grid: pick a layer and head or use viz.grid"
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}{hint}")
    return np.nan_to_num(arr, nan=0.0, posinf=0.0, neginf=0.0)


def as_plan(plan: object, name: str = "plan") -> np.ndarray:
    """A single (n, m) plan (or attention / score matrix) as float64."""
    arr = as_array(plan, name, ndim=2)
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}); both texts need a token")
    return arr


def labels(tokens: Sequence[object] | None, size: int, name: str) -> list[str]:
    """Escaped labels for ``size`` tokens; positions "0".."size-1" when tokens is None.

    Raises:
        ValueError: when the number of tokens does not match the plan's side.
    """
    if tokens is None:
        return [str(i) for i in range(size)]
    tokens = list(tokens)
    if len(tokens) != size:
        raise ValueError(f"{name} has {len(tokens)} tokens but the plan has {size} on that side")
    return escape_all(tokens)


def weights(w: object, size: int, name: str) -> np.ndarray:
    """(size,) nonnegative weights; uniform when ``w`` is None."""
    if w is None:
        return np.full(size, 1.0 / size)
    arr = as_array(w, name, ndim=1)
    if arr.shape[0] != size:
        raise ValueError(f"{name} has {arr.shape[0]} weights but the plan has {size} tokens")
    return np.clip(arr, 0.0, None)


def row_normalise(plan: np.ndarray) -> np.ndarray:
    """Each row divided by its sum (the conditional π(j | i)); zero rows stay 0."""
    sums = plan.sum(axis=-1, keepdims=True)
    return np.divide(plan, sums, out=np.zeros_like(plan), where=sums > 0)


def limits(*arrays: np.ndarray, floor: float = 0.0) -> tuple[float, float]:
    """(zmin, zmax) shared by ``arrays`` for a mass scale starting at ``floor``.

    Never equal: an all-equal or all-zero input still gets a valid range.
    """
    hi = max(float(np.max(a)) for a in arrays)
    if not hi > floor:
        hi = floor + (abs(floor) if floor else 1.0)
    return floor, hi


def symmetric_limit(*arrays: np.ndarray) -> float:
    """max |x| over ``arrays`` for a diverging scale centred at 0 (1.0 when all 0)."""
    m = max(float(np.max(np.abs(a))) for a in arrays)
    return m if m > 0 else 1.0


def top_edges(plan: np.ndarray, *, top_k: int | None = None, threshold: float = 0.0,
              max_edges: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges (i, j, mass) of a plan worth drawing, heaviest first.

    An edge is kept when its mass is positive and above ``threshold``, when it is among
    row i's ``top_k`` heaviest (each token of A keeps its k strongest partners in B;
    None or 0 keeps all), and when it is among the ``max_edges`` heaviest overall.

    Args:
        plan: (n, m) nonnegative masses.

    Returns:
        (i, j, mass), three (E,) arrays sorted by decreasing mass.
    """
    n, m = plan.shape
    keep = (plan > 0) & (plan >= threshold)
    if top_k:
        k = min(int(top_k), m)
        order = np.argsort(-plan, axis=1, kind="stable")[:, :k]
        in_top = np.zeros_like(keep)
        np.put_along_axis(in_top, order, True, axis=1)
        keep &= in_top
    i, j = np.nonzero(keep)
    mass = plan[i, j]
    order = np.argsort(-mass, kind="stable")
    if max_edges is not None:
        order = order[: int(max_edges)]
    return i[order], j[order], mass[order]


def bin_edges(mass: np.ndarray, scale: float, n_bins: int = 5) -> list[np.ndarray]:
    """Indices of ``mass`` split into ``n_bins`` bins of mass / scale (lightest first).

    Each bin becomes one line trace with its own width and opacity, so a figure with
    hundreds of edges has only a handful of traces.
    """
    if mass.size == 0:
        return [np.zeros(0, dtype=int) for _ in range(n_bins)]
    rel = np.clip(mass / (scale if scale > 0 else 1.0), 0.0, 1.0)
    idx = np.minimum((rel * n_bins).astype(int), n_bins - 1)
    return [np.nonzero(idx == k)[0] for k in range(n_bins)]


def bin_style(k: int, n_bins: int = 5) -> tuple[float, float]:
    """(line width, opacity) for bin k of n_bins: heavier bins are wider and darker."""
    level = (k + 1) / n_bins
    return 0.6 + 5.4 * level, 0.12 + 0.78 * level


def segments(x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray,
             z0: np.ndarray | None = None, z1: np.ndarray | None = None):
    """Coordinates of line segments joined by None gaps, ready for one line trace."""
    e = len(x0)
    out = []
    for a, b in ((x0, x1), (y0, y1)) + (((z0, z1),) if z0 is not None else ()):
        c = np.empty(3 * e, dtype=object)
        c[0::3], c[1::3], c[2::3] = a, b, None
        out.append(c.tolist())
    return out


def spread_labels(xy: np.ndarray, priority: np.ndarray, *, max_labels: int = 60,
                  min_dist: float = 0.045) -> np.ndarray:
    """Which points of a scatter get a text label, so labels do not pile up.

    Points are taken in order of ``priority`` (highest first); a point is labelled when it
    lies at least ``min_dist`` (in units of the picture's extent) from every labelled point,
    up to ``max_labels``. Hover still names every point.

    Args:
        xy: (N, 2) or (N, 3) coordinates; priority: (N,) larger = label first.

    Returns:
        (N,) bool mask of the points to label.
    """
    xy = np.asarray(xy, dtype=np.float64)
    span = np.ptp(xy, axis=0)
    unit = (xy - xy.min(0)) / np.where(span > 0, span, 1.0)
    keep = np.zeros(len(xy), dtype=bool)
    chosen: list[int] = []
    for k in np.argsort(-np.asarray(priority, dtype=np.float64), kind="stable"):
        if len(chosen) >= max_labels:
            break
        if not chosen or np.min(np.linalg.norm(unit[chosen] - unit[k], axis=1)) >= min_dist:
            chosen.append(int(k))
            keep[k] = True
    return keep
