"""Joint 2-D / 3-D pictures of both texts' points, with a check on how faithful they are."""

from __future__ import annotations

import threading

import numpy as np

from .. import settings
from ..errors import SettingsError
from ..types import Projection, Relation

_umap_lock = threading.Lock()
_cache_enabled = False


def project(r: Relation, *, space: str = "qk", method: str = "pca", dim: int = 2,
            seed: int = 0) -> Projection:
    """Project text A's and text B's points jointly to ``dim`` dimensions.

    Args:
        r: a single-head :class:`Relation` (not a grid).
        space: "qk" (A's queries with B's keys of the head: the geometry of the scores) or
            "hidden" (hidden states entering the layer).
        method: "pca" (deterministic) or "umap" (clouds of 3 points or fewer use PCA).
        dim: 2 or 3.
        seed: UMAP's random state.

    Returns:
        A :class:`Projection`; ``distance_cost_corr`` is the Spearman correlation between
        projected A–B distances and the cost −S over pairs with a_i b_j > 0.
    """
    if dim not in (2, 3):
        raise SettingsError(f"dim must be 2 or 3, got {dim!r}.")
    if space not in ("qk", "hidden"):
        raise SettingsError(f"space must be 'qk' or 'hidden', got {space!r}.")
    if method not in ("pca", "umap"):
        raise SettingsError(f"method must be 'pca' or 'umap', got {method!r}.")
    if r.points_a is None:
        raise SettingsError("Projections need one layer and head, not the whole grid.")
    xa, xb = (r.points_a, r.points_b) if space == "qk" else (r.hidden_a, r.hidden_b)
    X = np.concatenate([xa, xb]).astype(np.float64)
    n = len(xa)
    note, code, explained = "", "", None
    if method == "umap" and len(X) <= 3:
        method, code = "pca", "umap_few_points"
        note = "UMAP needs at least 4 points; PCA shown instead."
    if method == "umap":
        Y = _umap(X, dim, seed)
    else:
        Y, explained = pca(X, dim)
    d = np.linalg.norm(Y[:n, None, :] - Y[None, n:, :], axis=-1)
    mask = (r.a[:, None] * r.b[None, :]) > 0
    corr = _spearman(d[mask], -r.scores[mask])
    return Projection(xy_a=Y[:n], xy_b=Y[n:], method=method, space=space, dim=dim,
                      distance_cost_corr=corr, explained=explained, note=note, note_code=code)


def pca(X: np.ndarray, dim: int) -> tuple[np.ndarray, float]:
    """Principal components of X (N, p) → (N, dim) coordinates and explained variance.

    Signs are fixed (largest loading positive) so the picture is deterministic; missing
    components (N or p < dim) are zeros.
    """
    Xc = X - X.mean(0)
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    k = min(dim, len(s))
    signs = np.sign(Vt[np.arange(k), np.abs(Vt[:k]).argmax(1)])
    signs[signs == 0] = 1
    Y = np.zeros((len(X), dim))
    Y[:, :k] = U[:, :k] * s[:k] * signs
    total = float((s ** 2).sum())
    explained = float((s[:k] ** 2).sum() / total) if total > 0 else 1.0
    return Y, explained


def _umap(X: np.ndarray, dim: int, seed: int) -> np.ndarray:
    """UMAP with settings that work on small clouds (see NOTES: n ≥ 4, spectral init)."""
    settings.quiet_libraries()
    import umap

    warm_numba_cache()
    nn = max(2, min(15, len(X) - 1))
    with _umap_lock:
        reducer = umap.UMAP(n_components=dim, n_neighbors=nn, init="spectral",
                            random_state=seed, n_jobs=1, min_dist=0.3)
        try:
            return np.asarray(reducer.fit_transform(X), dtype=np.float64)
        except Exception:  # degenerate clouds (repeated points) can fail spectral init
            reducer = umap.UMAP(n_components=dim, n_neighbors=nn, init="random",
                                random_state=seed, n_jobs=1, min_dist=0.3)
            return np.asarray(reducer.fit_transform(X), dtype=np.float64)


def warm_numba_cache() -> None:
    """Turn on numba's disk cache for umap and pynndescent, so later processes start fast."""
    global _cache_enabled
    if _cache_enabled:
        return
    settings.quiet_libraries()
    import numba.core.registry
    import pynndescent  # noqa: F401
    import umap  # noqa: F401
    import sys

    for name, mod in list(sys.modules.items()):
        if not (name.startswith("umap") or name.startswith("pynndescent")):
            continue
        for obj in list(vars(mod).values()):
            if isinstance(obj, numba.core.registry.CPUDispatcher):
                try:
                    if type(obj._cache).__name__ == "NullCache":
                        obj.enable_caching()
                except Exception:
                    pass
    _cache_enabled = True


def warm_up_umap() -> None:
    """Fit a tiny UMAP once so numba's compilation happens before the first user asks."""
    rng = np.random.default_rng(0)
    _umap(rng.normal(size=(12, 8)), 2, 0)


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation; 0 when either side is constant or too short."""
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return 0.0
    from scipy.stats import spearmanr

    rho = spearmanr(x, y).statistic
    return float(rho) if np.isfinite(rho) else 0.0
