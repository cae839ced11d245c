"""The metrics strip: the summary rows of :mod:`engine.relation.summary` for the page and reports."""

from __future__ import annotations

from engine.relation.summary import HELP, Metric, fmt, rows
from engine.types import Relation

__all__ = ["HELP", "Metric", "fmt", "rows", "table"]


def table(r: Relation) -> list[tuple[str, str]]:
    """(label, value) pairs for reports."""
    return [(m.label, m.value + (f" ({m.detail})" if m.detail else "")) for m in rows(r)]
