"""Plain-data exports of a Relation: JSON-safe dict, CSV tables and NPZ bytes."""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import numpy as np

from .types import Relation


def relation_to_dict(r: Relation) -> dict[str, Any]:
    """Everything a client needs from a Relation, as JSON-safe values (−inf → null)."""
    c = r.coupling
    return {
        "model": r.model,
        "settings": {"layer": r.layer, "head": r.head, "eps": r.eps,
                     "half_steps": r.half_steps, "mode": r.mode, "weights": r.weights,
                     "pool_words": r.pool_words},
        "tokens_a": list(r.tokens_a), "tokens_b": list(r.tokens_b),
        "a": _js(r.a), "b": _js(r.b),
        "scores": _js(r.scores),
        "softmax_plan": _js(r.softmax_plan),
        "sinkhorn_plan": _js(c.plan),
        "exact_plan": _js(r.exact_plan),
        "f": _js(c.f), "g": _js(c.g),
        "marginals": {
            "softmax_rows": _js(r.softmax_plan.sum(-1)),
            "softmax_cols": _js(r.softmax_plan.sum(-2)),
            "sinkhorn_rows": _js(c.plan.sum(-1)),
            "sinkhorn_cols": _js(c.plan.sum(-2)),
        },
        "row_err": _js(c.row_err), "col_err": _js(c.col_err),
        "half_steps_run": c.half_steps,
        "summary": {k: _js(v) for k, v in r.summary.__dict__.items()},
        "truncated": {"a": r.truncated_a, "b": r.truncated_b},
        "notices": list(r.notices),
    }


def _js(x):
    """numpy / float → JSON-safe lists and floats; non-finite values (−inf f) → None."""
    arr = np.asarray(x)
    if arr.dtype == bool:
        return arr.tolist()
    return _finite(arr.astype(np.float64).tolist())


def _finite(v):
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v if math.isfinite(v) else None


def plans_csv(r: Relation) -> str:
    """One row per (token of A, token of B) pair, single head: scores, both plans, cost."""
    if r.scores.ndim != 2:
        raise ValueError("CSV export is for one layer and head; choose a head first.")
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["i", "token_a", "a_i", "j", "token_b", "b_j", "score", "cost",
                "softmax_attention", "softmax_plan", "sinkhorn_plan", "exact_plan"])
    for i, ta in enumerate(r.tokens_a):
        for j, tb in enumerate(r.tokens_b):
            w.writerow([i, ta, f"{r.a[i]:.10g}", j, tb, f"{r.b[j]:.10g}",
                        f"{r.scores[i, j]:.10g}", f"{-r.scores[i, j]:.10g}",
                        f"{r.attention[i, j]:.10g}", f"{r.softmax_plan[i, j]:.10g}",
                        f"{r.coupling.plan[i, j]:.10g}", f"{r.exact_plan[i, j]:.10g}"])
    return out.getvalue()


def marginals_csv(r: Relation) -> str:
    """One row per token of each text: target weight and both plans' marginals."""
    if r.scores.ndim != 2:
        raise ValueError("CSV export is for one layer and head; choose a head first.")
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["text", "index", "token", "weight", "softmax_marginal", "sinkhorn_marginal"])
    for side, toks, wt, sm, sk in (
            ("A", r.tokens_a, r.a, r.softmax_plan.sum(1), r.coupling.plan.sum(1)),
            ("B", r.tokens_b, r.b, r.softmax_plan.sum(0), r.coupling.plan.sum(0))):
        for i, t in enumerate(toks):
            w.writerow([side, i, t, f"{wt[i]:.10g}", f"{sm[i]:.10g}", f"{sk[i]:.10g}"])
    return out.getvalue()


def to_npz(r: Relation) -> bytes:
    """All arrays of a Relation in one compressed NPZ (tokens as unicode arrays)."""
    buf = io.BytesIO()
    c = r.coupling
    np.savez_compressed(
        buf, tokens_a=np.array(r.tokens_a, dtype=str), tokens_b=np.array(r.tokens_b, dtype=str),
        a=r.a, b=r.b, scores=r.scores, attention=r.attention, softmax_plan=r.softmax_plan,
        sinkhorn_plan=c.plan, f=c.f, g=c.g, row_err=c.row_err, col_err=c.col_err,
        exact_plan=r.exact_plan, product=r.product,
        settings=np.array([f"layer={r.layer}", f"head={r.head}", f"eps={r.eps}",
                           f"half_steps={r.half_steps}", f"mode={r.mode}",
                           f"weights={r.weights}", f"pool_words={r.pool_words}"]))
    return buf.getvalue()
