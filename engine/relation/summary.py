"""The summary numbers as people read them: one number format, labels and help texts.

The app's metrics strip, the HTML report and the command line's table all show
:func:`rows`; the figures use :func:`fmt`. Torch-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..settings import DEFAULT_TOL
from ..types import Relation

ZERO_MASS = 1e-12  # mass below this on weight-0 tokens is rounding, not a plan's choice


def fmt(x: float) -> str:
    """Three significant digits; tiny or huge values in scientific notation; 0 as "0";
    +inf as "∞"; NaN as "n/a"."""
    x = float(x)
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == 0:
        return "0"
    if abs(x) < 1e-3 or abs(x) >= 1e5:
        return f"{x:.2e}"
    return f"{x:.3g}"


PLAIN_ZERO = 5e-6  # a plain-number reader sees "≈ 0" below this (one digit would be 0.000005)


@dataclass(frozen=True)
class Numbers:
    """How one page writes numbers in one language; call it on a number.

    The rule is the page's, the same in every language; a language changes only the marks
    (decimal comma, thousands space, "n/d"). By default :func:`fmt`'s digits (three
    significant digits; below 1e-3 or from 1e5 on in scientific notation: 1.66e-13). With
    ``plain`` (a page for students, Learn), small values are written as decimals with one
    significant digit (4.78e-05 → 0.00005) and nonzero values below ``zero_below`` as
    "≈ 0". A whole count is written as :meth:`count` writes it.

    Attributes:
        decimal: the decimal mark ("." or ","). group: the thousands separator.
        plain: write small values as plain decimals. zero_below: the "≈ 0" threshold.
        nan: what NaN reads as.
    """

    decimal: str = "."
    group: str = ","
    plain: bool = False
    zero_below: float = PLAIN_ZERO
    nan: str = "n/a"

    @property
    def separators(self) -> str:
        """Plotly's ``layout.separators``: the decimal mark, then the thousands one."""
        return self.decimal + self.group

    def __call__(self, x: float) -> str:
        if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
            return self.count(x)
        x = float(x)
        if math.isnan(x):
            return self.nan
        if not self.plain or math.isinf(x) or x == 0:
            return self._marks(fmt(x))
        ax = abs(x)
        if ax < self.zero_below:
            return "≈ 0"
        if ax < 1e-3:
            digits = -math.floor(math.log10(ax))  # one significant digit, as a decimal
            s = f"{x:.{digits}f}"
            if abs(float(s)) >= 10 ** (1 - digits):  # 0.000097 rounded up to 0.00010
                s = f"{x:.{digits - 1}f}"
        elif ax >= 1e3:  # whole numbers, grouped from five digits on
            s = f"{x:,.0f}" if ax >= 1e4 else f"{x:.0f}"
        else:
            s = fmt(x)
        return self._marks(s)

    def _marks(self, s: str) -> str:
        """``s`` written with English marks, in this language's."""
        return s.translate(str.maketrans({".": self.decimal, ",": self.group}))

    @property
    def english(self) -> bool:
        """English marks (a page's rule may still be plain)."""
        return self.decimal == "." and self.group == ","

    def count(self, n: int) -> str:
        """A whole count: 24,285 in English; 24 285 with a non-breaking space where a
        comma is the decimal mark, four digits kept together (4000)."""
        n = int(n)
        if self.english or abs(n) >= 10_000:
            return self._marks(f"{n:,}")
        return str(n)

    def fixed(self, x: float | None, digits: int = 3) -> str:
        """``x`` with ``digits`` decimals (0,500 / 0.500); "–" for None or NaN. Groups as
        :meth:`count` does."""
        if x is None or math.isnan(float(x)):
            return "–"
        x = float(x)
        grouped = self.english or abs(x) >= 10_000
        return self._marks(f"{x:,.{digits}f}" if grouped else f"{x:.{digits}f}")

    def general(self, x: float, spec: str = "g") -> str:
        """``x`` in a Python format ``spec`` ("g", ".2g", ".1e"), this language's marks:
        a tolerance stays 1e-06, never "≈ 0"."""
        return self._marks(format(float(x), spec))

    def percent(self, x: float) -> str:
        """x (a share, 0..1) as a percentage: 45% / 45 %, 0.04% / 0,04 %; a tiny share
        as 1.0e-05% (plain: as a plain decimal or "≈ 0 %")."""
        p = 100 * float(x)
        if p < 5e-7:
            s = "0"
        elif p < 1e-4 and self.plain:
            return self(p) + ("%" if self.english else "\u00a0%")
        elif p < 1:
            s = f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"
        else:
            s = f"{p:.0f}" if p >= 10 else f"{p:.1f}"
        return s + "%" if self.english else self._marks(s) + "\u00a0%"


NUMBERS = {"en": Numbers(), "es": Numbers(decimal=",", group="\u00a0", nan="n/d")}


def numbers(lang: str, plain: bool = False) -> Numbers:
    """The number format of ``lang`` ("en", "es"; English for a language without one),
    with the plain rule of a page for students when ``plain``.

    Example: ``numbers("es")(0.5) == "0,5"``, ``numbers("es")(4.78e-05) == "4,78e-05"``,
    ``numbers("en")(4.78e-05) == fmt(4.78e-05)``, ``numbers("en", plain=True)(4.78e-05)
    == "0.00005"``, ``numbers("es", plain=True)(1e-9) == "≈ 0"``.
    """
    num = NUMBERS.get(lang, NUMBERS["en"])
    return replace(num, plain=True) if plain else num


def half_steps_text(t: int) -> str:
    """"1 half-step", "100 half-steps"."""
    return f"{t:,} half-step" + ("" if t == 1 else "s")


HELP = {
    "softmax_col_err": (
        "‖(diag(a)·softmax(S/ε))ᵀ1 − b‖₁. Softmax gets every row right but not the columns: "
        "this is how much mass text B's tokens receive beyond or below their weights b. "
        "0 would mean softmax is already a coupling; the largest possible value is 2."),
    "sinkhorn_row_err": (
        "‖π1 − a‖₁ after the last half-step: how far the Sinkhorn plan's rows are from text "
        "A's weights. 0 (up to rounding) after a row half-step (odd count)."),
    "sinkhorn_col_err": (
        "‖πᵀ1 − b‖₁ after the last half-step: how far the columns are from text B's "
        "weights. At half-step 1 this equals softmax's column error."),
    "cost": (
        "Transport cost ⟨−S, π⟩ = −Σ π_ij S_ij (lower: mass sits on high-score pairs), "
        "beside the exact OT plan's cost and softmax's. Exact OT is the cheapest plan among "
        "couplings, the plans whose marginals are a and b. A plan that is not a coupling yet "
        "— softmax, or Sinkhorn before it converges — is not in that set, so it can cost "
        "less than exact OT: it buys its low cost by sending too much mass to the cheapest "
        "tokens of B."),
    "entropy": (
        "H(π) = −Σ π_ij log π_ij. Large ε spreads the plan out (high entropy, up to "
        "H(a)+H(b)); small ε sharpens it."),
    "kl_to_product": (
        "KL(π ‖ a⊗b) = Σ π_ij log(π_ij / a_i b_j): 0 when every pair gets a_i·b_j "
        "(ε → ∞), large when the pairing is sharp. It is infinite (∞) while π puts mass on "
        "a token of weight 0 — softmax sends mass to [CLS] and [SEP] — because a⊗b gives "
        "those tokens none. For a coupling it is the plan's mutual information."),
    "l1_to_exact": (
        "‖π − π*‖₁, the distance to the exact optimal transport plan π* (the ε → 0 limit, "
        "computed with POT's network simplex). Lower ε and more half-steps bring it down."),
    "converged": (
        f"Whether both marginal errors are within the tolerance {DEFAULT_TOL:g} after the "
        "half-steps you asked for. If not, raise half-steps or ε."),
}


@dataclass(frozen=True)
class Metric:
    """One number of the summary as shown: ``label`` ``value`` (``detail``), ``help``."""

    key: str
    label: str
    value: str
    detail: str
    help: str


def rows(r: Relation) -> list[Metric]:
    """The summary of a single-head relation, in display order."""
    s = r.summary

    def m(key: str, label: str, value: str, detail: str = "") -> Metric:
        return Metric(key, label, value, detail, HELP[key])

    if math.isinf(s.kl_to_product) and s.zero_weight_mass > ZERO_MASS:
        kl = m("kl_to_product", "KL(π ‖ a⊗b)", "∞",
               f"{fmt(s.zero_weight_mass)} of π's mass on weight-0 tokens")
    else:
        kl = m("kl_to_product", "KL(π ‖ a⊗b)", fmt(s.kl_to_product))
    cost_detail = f"exact OT {fmt(s.exact_cost)} · softmax {fmt(s.softmax_cost)}"
    if s.cost < s.exact_cost - 1e-9 * max(1.0, abs(s.exact_cost)):
        cost_detail += " · below exact OT: π is not a coupling yet"
    t = r.coupling.half_steps_run
    return [
        m("softmax_col_err", "Softmax column error", fmt(s.softmax_col_err)),
        m("sinkhorn_row_err", "Sinkhorn row error", fmt(s.sinkhorn_row_err)),
        m("sinkhorn_col_err", "Sinkhorn column error", fmt(s.sinkhorn_col_err)),
        m("cost", "Cost ⟨−S, π⟩", fmt(s.cost), cost_detail),
        m("entropy", "Entropy H(π)", fmt(s.entropy)),
        kl,
        m("l1_to_exact", "‖π − π*‖₁ to exact OT", fmt(s.l1_to_exact)),
        m("converged", "Converged", "yes" if bool(s.converged) else "no", half_steps_text(t)),
    ]
