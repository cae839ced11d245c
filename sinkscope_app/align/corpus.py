"""The Align page's corpus: a file of pairs (the formats of ``engine.alignment.readers``)
aligned by every method as the engine's job (``align_corpus``: progress, Stop, found again
by its id in the page's address), its result an ``engine.jobs.results.CorpusResult``
(every pair's links and scores, the corpus scores with bootstrap intervals, the verdict,
the command that prints the same table); a stopped run's result holds the pairs aligned
so far, scored, labelled partial. This module turns a result into the page's table and
exports (torch-free).
"""

from __future__ import annotations

import hashlib
import io

from engine import settings
from engine.jobs.spec import FILE_NAME_MAX

from ..uploads import (MAX_CORPUS_PAIRS, MAX_UPLOAD_BYTES, MAX_UPLOAD_MB,  # noqa: F401
                       job_pairs, read_pairs)

BOOTSTRAP = 1000  # resamples of the intervals and paired comparisons (the command's default)


def read_file(raw: bytes, name: str, one_based: bool, t: dict):
    """Pairs from an uploaded file's bytes (checked: size, binary, format, pair count).

    Raises:
        SinkscopeError: with a message that says what to change.
    """
    return read_pairs(raw, name, t, t.get("_lang", "en"), one_based=one_based)


def job_body(pairs, name: str, *, one_based: bool, lowercase: bool, model: str,
             aligner: str = "") -> dict:
    """The ``align_corpus`` job of ``pairs`` (every method at its defaults, and the trained
    ``aligner`` when one is named); ``name`` and ``one_based`` are how the command that
    reproduces its table reads the file."""
    return {"kind": "align_corpus",
            "settings": {"model": model, "lowercase": bool(lowercase), "bootstrap": BOOTSTRAP,
                         "aligner": aligner or None},
            "data": {"pairs": job_pairs(pairs), "name": name[:FILE_NAME_MAX] or "pairs.tsv",
                     "one_based": bool(one_based),
                     "gold_column": bool(getattr(pairs, "gold_column", True))}}


def corpus_table(c):
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


def ranked(c) -> list[str]:
    """The methods best first (the verdict's order; the page's order without gold)."""
    return [r.method for r in c.verdict.ranked] if c.verdict else list(c.methods)


def scores_rows(c, num) -> list[dict]:
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


def links_file(c, method: str) -> bytes:
    """The predicted links of ``method``, one line per pair in input order (0-based)."""
    return ("\n".join(c.links[method]) + "\n").encode("utf-8")


def most_disagreeing(c, k: int = 3) -> list[int]:
    """1-based numbers of the pairs where softmax and transport disagree most."""
    order = sorted(range(len(c.pairs)), key=lambda t: (-c.disagreement[t], t))
    return [t + 1 for t in order[:k] if c.disagreement[t] > 0]


def train_split(pairs) -> tuple[list, list]:
    """A file's pairs with gold split for training an aligner: the last sixth (at least
    one) to pick θ and the best epoch, the rest to train on; ([], []) with fewer than two."""
    gold = [p for p in pairs if p.has_gold]
    if len(gold) < 2:
        return [], []
    d = max(1, round(len(gold) / 6))
    return gold[:-d], gold[-d:]
