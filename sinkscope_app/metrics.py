"""The metrics strip: the summary rows of :mod:`engine.relation.summary` for the page and
reports, in the page's language (``text/main.<lang>.json``, numbers as the language writes
them)."""

from __future__ import annotations

import math

from engine.relation.summary import HELP, Metric, ZERO_MASS, fmt, numbers, rows as _rows
from engine.settings import DEFAULT_TOL
from engine.types import Relation

from . import locale

__all__ = ["HELP", "Metric", "fmt", "rows", "table"]


def rows(r: Relation, lang: str = "en") -> list[Metric]:
    """The summary of ``r`` as the metric strip shows it, in ``lang``.

    English is :func:`engine.relation.summary.rows` exactly; another language takes its
    labels, details and help texts from its text file and writes numbers its own way
    (``numbers("es")(0.629) == "0,629"``).
    """
    if lang == "en":
        return _rows(r)
    w = locale.texts("main", lang)["metrics"]
    num = numbers(lang)
    s, tol = r.summary, num(DEFAULT_TOL)

    def m(key: str, value: str, detail: str = "") -> Metric:
        return Metric(key, w["labels"][key], value, detail, w["help"][key].format(tol=tol))

    if math.isinf(s.kl_to_product) and s.zero_weight_mass > ZERO_MASS:
        kl = m("kl_to_product", "∞", w["kl_detail"].format(mass=num(s.zero_weight_mass)))
    else:
        kl = m("kl_to_product", num(s.kl_to_product))
    cost_detail = w["cost_detail"].format(exact=num(s.exact_cost), softmax=num(s.softmax_cost))
    if s.cost < s.exact_cost - 1e-9 * max(1.0, abs(s.exact_cost)):
        cost_detail += w["below_exact"]
    t = int(r.coupling.half_steps_run)
    steps = w["half_step" if t == 1 else "half_steps"].format(n=num(t))
    return [
        m("softmax_col_err", num(s.softmax_col_err)),
        m("sinkhorn_row_err", num(s.sinkhorn_row_err)),
        m("sinkhorn_col_err", num(s.sinkhorn_col_err)),
        m("cost", num(s.cost), cost_detail),
        m("entropy", num(s.entropy)),
        kl,
        m("l1_to_exact", num(s.l1_to_exact)),
        m("converged", w["yes"] if bool(s.converged) else w["no"], steps),
    ]


def table(r: Relation, lang: str = "en") -> list[tuple[str, str]]:
    """(label, value) pairs for reports."""
    return [(m.label, m.value + (f" ({m.detail})" if m.detail else "")) for m in rows(r, lang)]
