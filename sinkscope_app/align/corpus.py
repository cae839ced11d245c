"""The Align page's corpus: a file of pairs (the formats of
``engine.alignment.readers``) aligned by every method as a job of the session
(:mod:`sinkscope_app.jobs`: progress, Stop, kept across reruns, language switches and a
trip to Pair and back), a sortable table, corpus scores with bootstrap intervals and
exports; a row click opens that pair in Pair.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from typing import Any

from engine import settings
from engine.alignment.readers import AlignFileError

from .. import engines
from .params import METHODS, SOFTMAX_METHOD, TRAINED, TRANSPORT_METHOD

MAX_UPLOAD_MB = 2  # the page's and the server's limit (.streamlit/config.toml)
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 2**20
MAX_CORPUS_PAIRS = 2000
BOOTSTRAP = 1000  # resamples of the intervals and paired comparisons (the command's default)


@dataclass(frozen=True)
class Corpus:
    """A corpus aligned by every method, scored on its pairs with gold and ranked.

    Attributes:
        key: the file's hash and settings. pairs: each pair as a dict (text_a, text_b,
        gold?). methods: the labels, in the page's order. links: label → per pair Pharaoh
        text. n_links: label → per pair link count. f1: label → per pair F1 (None
        without gold). null_ratio: per pair, the share of words without a (gold, else
        predicted by the transport method) link. disagreement: per pair, 1 − Jaccard of
        the softmax and transport links. scores: label → {"macro", "micro", "macro_ci",
        "micro_ci"} over the pairs with gold (empty without gold). n_gold: pairs with
        gold. gold_column: the file has gold links. verdict: the methods ranked with
        paired comparisons (``engine.alignment.verdict.Verdict``; None without gold).
        settings: label → its settings (``Method.to_dict`` without the name). command:
        the ``python -m engine align`` line that prints the same table.
    """

    key: str
    pairs: tuple[dict, ...]
    methods: tuple[str, ...]
    links: dict
    n_links: dict
    f1: dict
    null_ratio: tuple[float, ...]
    disagreement: tuple[float, ...]
    scores: dict
    n_gold: int
    gold_column: bool = True
    verdict: Any = None
    settings: dict = field(default_factory=dict)
    command: str = ""


def read_file(raw: bytes, name: str, one_based: bool, t: dict) -> tuple:
    """Pairs from an uploaded file's bytes (checked: size, binary, format, pair count).

    Raises:
        SinkscopeError: with a message that says what to change.
    """
    from engine.alignment.readers import decode, parse_pairs

    from .. import locale

    num = locale.numbers(t.get("_lang", "en"))
    if len(raw) > MAX_UPLOAD_BYTES:
        raise AlignFileError(t["too_big"].format(
            name=name, size=num.fixed(len(raw) / 2**20, 1), mb=MAX_UPLOAD_MB))
    pairs = parse_pairs(decode(raw, name), name=name, one_based=one_based)
    if len(pairs) > MAX_CORPUS_PAIRS:
        raise AlignFileError(t["too_many"].format(name=name, n=num.count(len(pairs)),
                                                  limit=num.count(MAX_CORPUS_PAIRS)))
    return pairs


def _jaccard_distance(x, y) -> float:
    x, y = set(x), set(y)
    return 0.0 if not (x | y) else 1.0 - len(x & y) / len(x | y)


def _null_ratio(pairs, als: dict) -> tuple[float, ...]:
    out = []
    for k, p in enumerate(pairs):
        n, m = p.shape
        if p.has_gold:
            nulls = (n - len({i for i, _ in p.sure})) + (m - len({j for _, j in p.sure}))
        else:
            al = als[TRANSPORT_METHOD][k]
            nulls = len(al.null_a) + len(al.null_b)
        out.append(nulls / max(n + m, 1))
    return tuple(out)


def compare(pairs, lowercase: bool, model: str, progress, aligner=None):
    """Every pair by every method at its defaults (and by a trained ``aligner``), by the
    process's engine (embedded: one batched pass; served: in chunks): an
    ``engine.alignment.api.Comparison``. ``progress(share, what, **info)`` reports and may
    raise to stop the work."""
    from engine.alignment.api import comparison_of, method_of

    settings = {name: method_of(name) for name in METHODS}
    cmp = engines.current().align(pairs, settings, model=model, lowercase=lowercase,
                                  progress=progress,
                                  bootstrap=0 if aligner is not None else BOOTSTRAP)
    if aligner is None:
        return cmp
    from engine.aligner.cli import TrainedMethod
    from engine.aligner.extract import align

    progress(0.9, TRAINED)
    engines.one_thread()
    als = align(aligner, [p.lower() for p in pairs] if lowercase else pairs)
    m = TrainedMethod(float(aligner.theta), aligner.settings.final, aligner.name)
    return comparison_of(cmp.source, pairs, {**cmp.settings, TRAINED: m},
                         {**cmp.alignments, TRAINED: tuple(als)}, bootstrap=BOOTSTRAP)


def align_corpus(pairs, key: str, lowercase: bool, model: str, progress, *,
                 aligner=None, name: str = "pairs.tsv", one_based: bool = False) -> Corpus:
    """The :class:`Corpus` of ``pairs`` (:func:`compare`); ``name`` and ``one_based`` are
    how the command that reproduces its table reads the file."""
    from engine.alignment.readers import links_text
    from engine.alignment.verdict import command_line
    from engine.settings import DEFAULT_MODEL

    cmp = compare(pairs, lowercase, model, progress, aligner)
    progress(1.0, "…")
    als = cmp.alignments
    labels = tuple(als)
    return Corpus(
        key, tuple(p.to_dict() for p in pairs), labels,
        {k: tuple(links_text(a.links) for a in als[k]) for k in labels},
        {k: tuple(len(a.links) for a in als[k]) for k in labels},
        {k: tuple(None if a.scores is None else a.scores["f1"] for a in als[k])
         for k in labels},
        _null_ratio(pairs, als),
        tuple(_jaccard_distance(als[SOFTMAX_METHOD][k].links, als[TRANSPORT_METHOD][k].links)
              for k in range(len(pairs))),
        {k: {"macro": s.macro, "micro": s.micro, "macro_ci": s.macro_ci,
             "micro_ci": s.micro_ci} for k, s in cmp.scores.items()},
        sum(p.has_gold for p in pairs), bool(getattr(pairs, "gold_column", True)),
        cmp.verdict, {k: {f: v for f, v in m.to_dict().items() if f != "method"}
                      for k, m in cmp.settings.items()},
        command_line(name, settings=cmp.settings, lowercase=lowercase, one_based=one_based,
                     model=None if model == DEFAULT_MODEL else model,
                     aligner=None if aligner is None else aligner.name))


def corpus_table(c: Corpus):
    """The corpus as a table: one row per pair (pandas DataFrame, English column names)."""
    import pandas as pd

    rows = []
    for k, p in enumerate(c.pairs):
        row = {"pair": k + 1, "text A": p["text_a"], "text B": p["text_b"],
               "gold": p.get("gold", "")}
        for name in c.methods:  # without gold: how many links each method drew
            f = c.f1[name][k]
            if c.n_gold:
                row[f"F1 {name}"] = None if f is None else round(float(f), 4)
            else:
                row[f"links {name}"] = c.n_links[name][k]
        row["null ratio"] = round(c.null_ratio[k], 4)
        row["disagreement"] = round(c.disagreement[k], 4)
        rows.append(row)
    return pd.DataFrame(rows)


def ranked(c: Corpus) -> list[str]:
    """The methods best first (the verdict's order; the page's order without gold)."""
    return [r.method for r in c.verdict.ranked] if c.verdict else list(c.methods)


def scores_rows(c: Corpus, num) -> list[dict]:
    """The corpus scores, one row per method, best first: macro values, 95 % intervals
    (written with ``num``), micro F1 and AER."""
    rows = []
    for name in ranked(c):
        s = c.scores[name]
        row = {"method": name}
        for metric, label in (("precision", "precision"), ("recall", "recall"), ("f1", "F1"),
                              ("aer", "AER"), ("null_f1", "null F1"),
                              ("total_f1", "total F1")):
            lo, hi = s["macro_ci"].get(metric, (None, None))
            row[label] = s["macro"][metric]
            if metric in ("f1", "total_f1", "aer"):
                row[f"{label} 95 %"] = "–" if lo is None else (
                    f"{num.fixed(lo, 3)} – {num.fixed(hi, 3)}")
        row["micro F1"] = s["micro"]["f1"]
        row["micro AER"] = s["micro"]["aer"]
        rows.append(row)
    return rows


def corpus_key(raw: bytes, name: str, lowercase: bool, one_based: bool, model: str) -> str:
    h = hashlib.sha256(raw).hexdigest()[:16]
    return f"{h}:{name}:{lowercase}:{one_based}:{model}:{settings.CONFIG.engine}"


def table_csv(df) -> bytes:
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    return buf.getvalue().encode("utf-8")


def links_file(c: Corpus, method: str) -> bytes:
    """The predicted links of ``method``, one line per pair in input order (0-based)."""
    return ("\n".join(c.links[method]) + "\n").encode("utf-8")


def most_disagreeing(c: Corpus, k: int = 3) -> list[int]:
    """1-based numbers of the pairs where softmax and transport disagree most."""
    order = sorted(range(len(c.pairs)), key=lambda t: (-c.disagreement[t], t))
    return [t + 1 for t in order[:k] if c.disagreement[t] > 0]
