"""How the text comparison (``compare_text``) splits a file's pairs with gold, torch-free: a
page shows the same split before it sends the job."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Split:
    """A file's pairs with gold for the text comparison: ``test`` (the last quarter, held
    out), ``dev`` (the sixth of the rest before it: θ, the best epoch, the untrained
    methods' settings) and ``train`` (the first ``train_most`` of the others; ``unused``
    of them left out)."""

    train: tuple
    dev: tuple
    test: tuple
    unused: int


def split(pairs, train_most: int) -> Split:
    """The pairs with gold, split as :class:`Split` says.

    Raises:
        LabError: fewer than 4 pairs with gold (code "needs_gold_pairs").
    """
    from ..lab.errors import LabError

    gold = [p for p in pairs if p.has_gold]
    if len(gold) < 4:
        raise LabError.of("needs_gold_pairs", n=len(gold))
    k = max(1, round(len(gold) / 4))
    rest = gold[:-k]
    d = max(1, round(len(rest) / 6))
    fit = rest[:-d]
    return Split(tuple(fit[:train_most]), tuple(rest[-d:]), tuple(gold[-k:]),
                 max(0, len(fit) - train_most))


def null_share(pairs) -> float:
    """The share of the pairs' words that the gold leaves without a partner (sure links)."""
    from ..alignment.score import COUNTS, pair_counts

    nulls = sum(int(pair_counts((), p)[COUNTS.index("null_gold")]) for p in pairs)
    words = sum(sum(p.shape) for p in pairs)
    return nulls / words if words else 0.0


__all__ = ["Split", "null_share", "split"]
