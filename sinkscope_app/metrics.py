"""The metrics strip: the numbers of a Relation's summary, formatted, with help texts."""

from __future__ import annotations

import math

from engine.types import Relation


def fmt(x: float) -> str:
    """Three significant digits; tiny values in scientific notation; exact 0 as 0."""
    x = float(x)
    if not math.isfinite(x):
        return "n/a"
    if x == 0:
        return "0"
    if abs(x) < 1e-3 or abs(x) >= 1e5:
        return f"{x:.2e}"
    return f"{x:.3g}"


HELP = {
    "softmax_col_err": (
        "‖(diag(a)·softmax(S/ε))ᵀ1 − b‖₁. Softmax gets every row right but not the columns: "
        "this is how much mass text B's tokens receive beyond or below their weights b. "
        "0 would mean softmax is already a coupling; the largest possible value is 2."),
    "sinkhorn_row_err": (
        "‖π1 − a‖₁ after the last half-step: how far the coupling's rows are from text A's "
        "weights. 0 (up to rounding) after a row half-step (odd count)."),
    "sinkhorn_col_err": (
        "‖πᵀ1 − b‖₁ after the last half-step: how far the columns are from text B's "
        "weights. At half-step 1 this equals softmax's column error."),
    "cost": (
        "Transport cost ⟨−S, π⟩ = −Σ π_ij S_ij (lower: mass sits on high-score pairs). "
        "Compare with the exact OT cost and softmax's cost shown below the value."),
    "entropy": (
        "H(π) = −Σ π_ij log π_ij. Large ε spreads the plan out (high entropy, up to "
        "H(a)+H(b)); small ε sharpens it."),
    "kl_to_product": (
        "KL(π ‖ a⊗b), the mutual information of the coupling: 0 when every pair gets "
        "a_i·b_j (ε → ∞), large when the pairing is sharp."),
    "l1_to_exact": (
        "‖π − π*‖₁, the distance to the exact optimal transport plan π* (the ε → 0 limit, "
        "computed with POT's network simplex). Lower ε and more half-steps bring it down."),
    "converged": (
        "Whether both marginal errors are within the tolerance 1e-6 after the half-steps "
        "you asked for. If not, raise half-steps or ε."),
}


def items(r: Relation) -> list[dict]:
    """Label, value, help and optional delta for each metric, in display order."""
    s = r.summary
    conv = bool(s.converged)
    c = r.coupling
    return [
        dict(key="softmax_col_err", label="Softmax column error", value=fmt(s.softmax_col_err)),
        dict(key="sinkhorn_row_err", label="Sinkhorn row error", value=fmt(s.sinkhorn_row_err)),
        dict(key="sinkhorn_col_err", label="Sinkhorn column error", value=fmt(s.sinkhorn_col_err)),
        dict(key="cost", label="Cost ⟨−S, π⟩", value=fmt(s.cost),
             delta=f"exact OT {fmt(s.exact_cost)} · softmax {fmt(s.softmax_cost)}"),
        dict(key="entropy", label="Entropy H(π)", value=fmt(s.entropy)),
        dict(key="kl_to_product", label="KL(π ‖ a⊗b)", value=fmt(s.kl_to_product)),
        dict(key="l1_to_exact", label="‖π − π*‖₁ to exact OT", value=fmt(s.l1_to_exact)),
        dict(key="converged", label="Converged", value="yes" if conv else "no",
             delta=f"{c.half_steps} half-step{'s' if c.half_steps != 1 else ''}"),
    ]


def table(r: Relation) -> list[tuple[str, str]]:
    """(label, value) pairs for reports."""
    out = []
    for m in items(r):
        v = m["value"] + (f" ({m['delta']})" if m.get("delta") else "")
        out.append((m["label"], v))
    return out
