"""Word alignment from Python: the ``align`` command's document, and one pair's links.

:func:`align` runs what ``sinkscope align --pairs FILE --json`` runs (the same defaults,
tuning and verdict) and returns its document as a dict; :func:`align_pair` aligns two
texts (an :class:`~engine.alignment.api.Alignment`, which ``sinkscope.show`` draws).
"""

from __future__ import annotations

import os
from typing import Iterable


def align(pairs: str | os.PathLike | Iterable, *, gold: str | None = None,
          dev: str | os.PathLike | Iterable | None = None, method: str | None = None,
          source: str | None = None, layer: int | None = None, head: int | str | None = None,
          model: str | None = None, lowercase: bool = False, one_based: bool = False,
          fmt: str = "auto", bootstrap: int = 1000, **settings) -> dict:
    """Align a corpus and compare the methods: the verdict and the links.

    Args:
        pairs: a file of pairs (TSV ``text_a, text_b[, gold]``, MultiMWA, awesome-align),
            or pairs: ``(text_a, text_b[, gold])`` tuples, dicts or ``Pair`` s.
        gold: a gold file for a file of pairs (Pharaoh, 0-based unless ``one_based``).
        dev: pairs with gold (a file or a list) to tune each method's settings on.
        method: the method whose links are returned (default ``softmax-both``); None
            compares every method.
        source, layer, head, model, lowercase, fmt, bootstrap: as the command's flags.
        settings: ``threshold``, ``tau``, ``mass``, ``eps``, ``direction`` for all methods.

    Returns:
        The ``--json`` document: ``source``, ``n_pairs``, ``n_gold``, ``tuned_on_dev``,
        ``methods`` {name: {settings, scores}}, ``best``, ``ranked``, ``paired``,
        ``command`` (None for pairs given as a list) and ``alignments`` {method, pairs:
        [{words_a, words_b, links (k, 2), pharaoh, null_a, null_b, …}]}.
    """
    from engine.alignment import api, cli
    from engine.errors import SettingsError
    from engine.io.cli import parser

    is_file = isinstance(pairs, (str, os.PathLike))
    args = parser().parse_args(["align", "--pairs", os.fspath(pairs) if is_file else "-",
                                "--json", "--quiet", "--bootstrap", str(int(bootstrap)),
                                "--format", fmt])
    args.gold, args.method, args.source, args.layer, args.head = gold, method, source, layer, head
    args.model, args.lowercase, args.one_based = model, lowercase, one_based
    unknown = set(settings) - {"threshold", "tau", "mass", "eps", "direction"}
    if unknown:
        raise SettingsError(f"align takes no setting {sorted(unknown)[0]!r}; the settings are "
                            "threshold, tau, mass, eps and direction.")
    for k, v in settings.items():
        setattr(args, k, v)
    cli._threads()

    def read(x, gold_=None):
        if isinstance(x, (str, os.PathLike)):
            return cli._read(args, os.fspath(x), gold_)
        return api.as_pairs(x)

    corpus = read(pairs, gold)
    tuning = read(dev) if dev is not None else None
    if tuning is not None and not all(p.has_gold for p in tuning):
        raise SettingsError("the dev pairs need gold links for every pair.")
    result, out_method, alignments = cli.compare(args, corpus, tuning)
    doc = cli._document(args, result, tuning is not None, out_method, alignments)
    if not is_file or (dev is not None and not isinstance(dev, (str, os.PathLike))):
        doc["command"] = None
    return doc


def align_pair(text_a: str, text_b: str, *, gold: str | None = None, method: str = "unbalanced",
               **kw):
    """The links between the whitespace words of two texts (n, m words), with the values
    V (n, m) they were read from (V > θ), scored when ``gold`` (Pharaoh) is given.

    ``method`` and ``kw`` as :func:`engine.alignment.api.align_pairs` (``threshold``,
    ``tau``, ``mass``, ``source``, ``layer``, ``encoder``…); the default is the Align
    page's pair view, ``unbalanced`` at its tuned settings.
    """
    from engine.alignment.api import align

    return align(text_a, text_b, gold=gold, method=method, **kw)
