"""Extraction: from a pair's word scores S to links, for every method, batched.

Every method turns a padded batch of pairs into values V ∈ [0, 1] per word pair (−1 where
a word takes no part), and links are the pairs with V > θ. Methods (``METHODS``):

- ``softmax-argmax`` (SimAlign's ArgMax, Jalili Sabet et al., 2020): i → argmax_j S_ij
  (forward, A→B), argmax_i S_ij → j (backward, B→A), and their ``intersection`` (default)
  or ``union``; no threshold.
- ``softmax-both`` (awesome-align, Dou & Neubig, 2021): softmax over B and over A at a
  temperature; a link where both probabilities exceed the threshold t. V is
  (log₁₀ min(P→, P←) + 4)/4, so thresholds from 10⁻⁴ to 1 share one grid.
- ``similarity-threshold`` (OTAlign's baseline): S min-max scaled per pair, above θ.
- ``sinkhorn-argmax``: the balanced Sinkhorn plan's mutual argmax (row and column maxima).
- ``sinkhorn-threshold``, ``exact`` (POT ``ot.emd``), ``partial`` (mass m) and
  ``unbalanced`` (KL relaxation τ): the plan min-max scaled per pair (OTAlign, Arase et
  al., ACL 2023), above θ.

Partial transport follows OTAlign's weights: every word has capacity 1 (a_i = b_j = 1,
here divided by min(n, n'), which leaves the min-max scaled plan unchanged), and m is the
share of min(‖a‖, ‖b‖) moved, m ∈ (0, 1). Each word of the shorter text can send at most
its own mass and each word of the longer one receive at most as much, so even m → 1 leaves
the longer text's extra words without mass; m < 1 also drops the shorter text's worst
matched words. (With both texts normalised to mass 1, m = 1 is the balanced plan, and a
smaller m shrinks every row alike, so after min-max scaling m hardly changes the links.)

Plans are min-max scaled over each pair's own words, π̃ = (π − min π)/(max π − min π), so
one threshold means the same for pairs of any length.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import torch

from ..errors import SettingsError
from . import transport

from .methods import (DIRECTIONS, GRID, MASS_GRID, MASS_MIN, METHODS, TAU_GRID,  # noqa: F401
                      TAU_MAX, TAU_MIN, THRESHOLDED, Method)


@dataclass(frozen=True)
class Batch:
    """Padded pairs: scores, which words take part, and gold masks.

    Attributes:
        S: (N, n, m) float64 scores (0 where padded). real_a, real_b: (N, n), (N, m) bool,
        the pair's words. valid_a, valid_b: words with tokens (the rest get no links).
        sure, possible: (N, n, m) bool gold masks (all False without gold).
    """

    S: torch.Tensor
    real_a: torch.Tensor
    real_b: torch.Tensor
    valid_a: torch.Tensor
    valid_b: torch.Tensor
    sure: torch.Tensor
    possible: torch.Tensor
    shapes: tuple = field(default=())

    @property
    def valid(self) -> torch.Tensor:
        return self.valid_a.unsqueeze(-1) & self.valid_b.unsqueeze(-2)


def make_batch(S_list: Sequence[np.ndarray], valid_a: Sequence[np.ndarray],
               valid_b: Sequence[np.ndarray], gold: Sequence[tuple] | None = None) -> Batch:
    """A :class:`Batch` of N pairs; ``gold``: per pair (sure, possible) link sets or None."""
    N = len(S_list)
    n = max(s.shape[0] for s in S_list)
    m = max(s.shape[1] for s in S_list)
    S = torch.zeros((N, n, m), dtype=torch.float64)
    ra = torch.zeros((N, n), dtype=torch.bool)
    rb = torch.zeros((N, m), dtype=torch.bool)
    va, vb = ra.clone(), rb.clone()
    sure = torch.zeros((N, n, m), dtype=torch.bool)
    poss = sure.clone()
    for k, s in enumerate(S_list):
        nk, mk = s.shape
        S[k, :nk, :mk] = torch.from_numpy(np.asarray(s, dtype=np.float64))
        ra[k, :nk] = True
        rb[k, :mk] = True
        va[k, :nk] = torch.from_numpy(np.asarray(valid_a[k], dtype=bool))
        vb[k, :mk] = torch.from_numpy(np.asarray(valid_b[k], dtype=bool))
    for mask, side in ((sure, 0), (poss, 1)):
        links = [(k, i, j) for k in range(N) if gold is not None and gold[k] is not None
                 for i, j in gold[k][side]]
        if links:
            mask[tuple(torch.tensor(links, dtype=torch.long).T)] = True
    return Batch(S, ra, rb, va, vb, sure, poss | sure,
                 tuple((int(s.shape[0]), int(s.shape[1])) for s in S_list))


def _minmax(X: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """X min-max scaled over each matrix's valid block; −1 outside it."""
    big = torch.finfo(X.dtype).max
    lo = torch.where(valid, X, big).amin((-2, -1), keepdim=True)
    hi = torch.where(valid, X, -big).amax((-2, -1), keepdim=True)
    span = hi - lo
    V = torch.where(span > 0, (X - lo) / torch.where(span > 0, span, 1.0),
                    torch.where(hi > 0, 1.0, 0.0).expand_as(X))
    return torch.where(valid, V.clamp(0, 1), -1.0)


def _masked_softmax(X: torch.Tensor, valid: torch.Tensor, dim: int) -> torch.Tensor:
    Xm = torch.where(valid, X, -torch.inf)
    mx = Xm.amax(dim, keepdim=True)
    mx = torch.where(torch.isfinite(mx), mx, 0.0)
    E = torch.where(valid, torch.exp(Xm - mx), 0.0)
    Z = E.sum(dim, keepdim=True)
    return E / torch.where(Z > 0, Z, 1.0)


def _argmax_mask(X: torch.Tensor, valid: torch.Tensor, dim: int) -> torch.Tensor:
    """One True per valid row (dim=-1) or column (dim=-2) at its maximum (first one)."""
    Xm = torch.where(valid, X, -torch.inf)
    idx = Xm.argmax(dim, keepdim=True)
    M = torch.zeros_like(valid).scatter(dim, idx, True)
    return M & valid


def plans(method: Method, batch: Batch, grid: Sequence[float] | None = None, *,
          dtype: torch.dtype | None = None, device=None) -> torch.Tensor:
    """The plans behind a transport method, (T, N, n, m), one per value of ``grid`` (τ for
    ``unbalanced``, m for ``partial``; the method's own value when None), solved in
    ``dtype`` (:data:`~engine.alignment.transport.DTYPE` by default; ``exact`` is float64) on
    ``device`` (the CPU by default; "cuda" solves there and brings the plans back)."""
    if device is None or torch.device(device).type == "cpu" or method.name == "exact":
        return _plans(method, batch, grid, dtype)
    return _plans(method, batch, grid, dtype, device).cpu()


def _plans(method, batch, grid, dtype, device=None):
    valid = batch.valid
    dt = dtype or transport.DTYPE
    C = torch.where(valid, transport.costs(batch.S, valid), 0.0)
    if method.name == "exact":
        dt = torch.float64
    C = C.to(dtype=dt, device=device)
    a = batch.valid_a.to(dtype=dt, device=device)
    b = batch.valid_b.to(dtype=dt, device=device)
    if method.name == "partial":  # capacity 1 per word, scaled so min(‖a‖, ‖b‖) = 1
        shorter = torch.minimum(a.sum(-1, keepdim=True), b.sum(-1, keepdim=True)).clamp_min(1)
        a, b = a / shorter, b / shorter
    else:
        a = a / a.sum(-1, keepdim=True).clamp_min(1)
        b = b / b.sum(-1, keepdim=True).clamp_min(1)
    if method.name in ("sinkhorn-argmax", "sinkhorn-threshold"):
        return transport.balanced(C, a, b, method.eps).unsqueeze(0)
    if method.name == "unbalanced":
        return transport.unbalanced(C, a, b, grid if grid is not None else [method.tau],
                                    method.eps)
    if method.name == "partial":
        return transport.partial(C, a, b, grid if grid is not None else [method.mass],
                                 method.eps)
    if method.name == "exact":
        return torch.stack([torch.from_numpy(transport.exact(
            C[k].numpy(), a[k].numpy(), b[k].numpy())) for k in range(len(C))]).unsqueeze(0)
    raise SettingsError(f"{method.name} does not come from a plan.")


def plan_key(method: Method, grid: Sequence[float] | None = None) -> tuple | None:
    """What a method's plans depend on besides the batch (None: it has no plan): methods with
    the same key share their plans (``sinkhorn-argmax`` and ``sinkhorn-threshold`` at one ε)."""
    if method.name in ("sinkhorn-argmax", "sinkhorn-threshold"):
        return ("balanced", method.eps)
    if method.name == "exact":
        return ("exact",)
    if method.name in ("partial", "unbalanced"):
        own = method.mass if method.name == "partial" else method.tau
        return (method.name, method.eps, tuple(grid) if grid is not None else (own,))
    return None


def values(method: Method, batch: Batch, grid: Sequence[float] | None = None, *,
           device=None, cache: dict | None = None) -> torch.Tensor:
    """V (T, N, n, m): links are V > θ; −1 where a word takes no part (see the module
    docstring for each method's V). ``cache``: a dict kept across the methods run on one
    batch, so methods with the same :func:`plan_key` solve once."""
    valid = batch.valid

    def plans_of(m: Method, g=None) -> torch.Tensor:
        key = plan_key(m, g)
        if cache is None:
            return plans(m, batch, g, device=device)
        if key not in cache:
            cache[key] = plans(m, batch, g, device=device)
        return cache[key]

    S = batch.S
    name = method.name
    if name == "softmax-argmax":
        fwd, bwd = _argmax_mask(S, valid, -1), _argmax_mask(S, valid, -2)
        M = {"intersection": fwd & bwd, "forward": fwd, "backward": bwd,
             "union": fwd | bwd}[method.direction]
        V = M.to(torch.float64)
    elif name == "softmax-both":
        P = torch.minimum(_masked_softmax(S / method.temperature, valid, -1),
                          _masked_softmax(S / method.temperature, valid, -2))
        V = ((torch.log10(P.clamp_min(1e-300)) + 4) / 4).clamp(0, 1)
    elif name == "similarity-threshold":
        V = _minmax(S, valid)
    elif name == "sinkhorn-argmax":
        P = plans_of(method)[0]
        V = (_argmax_mask(P, valid, -1) & _argmax_mask(P, valid, -2)).to(torch.float64)
    else:
        return _minmax(plans_of(method, grid), valid.unsqueeze(0))
    return torch.where(valid, V, -1.0).unsqueeze(0)


def links_of(V: torch.Tensor, theta: float, shapes: Sequence[tuple[int, int]]
             ) -> list[tuple[tuple[int, int], ...]]:
    """Links (i, j) with V > θ of each pair in a batch, V (N, n, m), sorted."""
    M = (V > theta).numpy()
    out = []
    for k, (n, m) in enumerate(shapes):
        ii, jj = np.nonzero(M[k, :n, :m])
        out.append(tuple((int(i), int(j)) for i, j in zip(ii, jj)))
    return out


def link_counts(V: torch.Tensor, theta: float, batch: Batch,
                null_gold: str = "sure") -> torch.Tensor:
    """Counts (:data:`~engine.alignment.score.COUNTS`) of the links V > θ of every pair in a
    batch against its gold masks: V (..., N, n, m) → (..., N, 7) int64, as
    :func:`~engine.alignment.score.mask_counts` gives pair by pair."""
    pred = V > theta
    gold = batch.sure if null_gold == "sure" else batch.possible
    null_a, null_b = batch.real_a & ~pred.any(-1), batch.real_b & ~pred.any(-2)
    gna, gnb = batch.real_a & ~gold.any(-1), batch.real_b & ~gold.any(-2)
    shape = pred.shape[:-2]
    return torch.stack([
        pred.sum((-1, -2)), (pred & batch.sure).sum((-1, -2)),
        (pred & batch.possible).sum((-1, -2)), batch.sure.sum((-1, -2)).expand(shape),
        null_a.sum(-1) + null_b.sum(-1), (gna.sum(-1) + gnb.sum(-1)).expand(shape),
        (null_a & gna).sum(-1) + (null_b & gnb).sum(-1)], -1).to(torch.int64)


def grid_counts(V: torch.Tensor, batch: Batch, null_gold: str = "sure",
                G: int = GRID) -> torch.Tensor:
    """Counts (:data:`~engine.alignment.score.COUNTS`) of the links V > θ_k for every
    θ_k = k/G at once: V (T, N, n, m) → (T, N, G, 7) int64.

    A value v ∈ (0, 1] lies above θ_k exactly when ⌈vG⌉ − 1 ≥ k, so each count is a
    histogram of ⌈vG⌉ − 1 summed from k up (one pass over V, not one per threshold).
    """
    T, N, n, m = V.shape
    bucket = (torch.ceil(V * G) - 1).clamp(-1, G - 1).long() + 1  # 0 … G
    gold = batch.sure if null_gold == "sure" else batch.possible

    def hist(idx: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """(T, N, G+1) weighted histogram of indices over the last axes."""
        idx = idx.reshape(T, N, -1)
        w = w.expand(T, *w.shape[-3:]) if w.dim() == 3 else w
        w = w.reshape(T, N, -1).to(torch.int64)
        h = torch.zeros((T, N, G + 1), dtype=torch.int64)
        return h.scatter_add_(-1, idx, w)

    def above(h: torch.Tensor) -> torch.Tensor:  # Σ_{b ≥ k+1} h[b], k = 0 … G−1
        return h.flip(-1).cumsum(-1).flip(-1)[..., 1:]

    def at_most(h: torch.Tensor) -> torch.Tensor:  # Σ_{b ≤ k} h[b], k = 0 … G−1
        return h.cumsum(-1)[..., :G]

    ones = torch.ones((N, n, m), dtype=torch.bool)
    pred = above(hist(bucket, ones))
    pred_s = above(hist(bucket, batch.sure))
    pred_p = above(hist(bucket, batch.possible))
    row_b = bucket.amax(-1)  # (T, N, n)
    col_b = bucket.amax(-2)  # (T, N, m)
    gna = batch.real_a & ~gold.any(-1)
    gnb = batch.real_b & ~gold.any(-2)

    def hist1(idx, w):
        idx = idx.reshape(T, N, -1)
        w = w.unsqueeze(0).expand(T, *w.shape).reshape(T, N, -1).to(torch.int64)
        return torch.zeros((T, N, G + 1), dtype=torch.int64).scatter_add_(-1, idx, w)

    # a row is null at θ_k when its largest bucket is ≤ k (no entry above θ_k)
    null_pred = at_most(hist1(row_b, batch.real_a)) + at_most(hist1(col_b, batch.real_b))
    null_hit = at_most(hist1(row_b, gna)) + at_most(hist1(col_b, gnb))
    sure_n = batch.sure.sum((-1, -2)).view(1, N, 1).expand(T, N, G)
    null_g = (gna.sum(-1) + gnb.sum(-1)).view(1, N, 1).expand(T, N, G)
    return torch.stack([pred, pred_s, pred_p, sure_n, null_pred, null_g, null_hit], -1)
