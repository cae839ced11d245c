"""The Align page's corpus: a file of pairs (the formats of
``engine.alignment.readers``) aligned by every method as a job of the session
(:mod:`sinkscope_app.jobs`: progress, Stop, kept across reruns, language switches and a
trip to Pair and back), a sortable table, corpus scores with bootstrap intervals and
exports; a row click opens that pair in Pair.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass

from engine import settings
from engine.alignment.readers import AlignFileError

from .. import engines
from .params import METHODS, SOFTMAX_METHOD, TRANSPORT_METHOD

MAX_UPLOAD_MB = 2  # the page's and the server's limit (.streamlit/config.toml)
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 2**20
MAX_CORPUS_PAIRS = 2000


@dataclass(frozen=True)
class Corpus:
    """A corpus aligned by every method.

    Attributes:
        key: the file's hash and settings. pairs: each pair as a dict (text_a, text_b,
        gold?). links: method → per pair Pharaoh text. f1: method → per pair F1 (None
        without gold). null_ratio: per pair, the share of words without a (gold, else
        predicted by the transport method) link. disagreement: per pair, 1 − Jaccard of the
        softmax and transport links. scores: method → {"macro", "micro", "macro_ci",
        "micro_ci"} over the pairs with gold (empty without gold).
    """

    key: str
    pairs: tuple[dict, ...]
    links: dict
    f1: dict
    null_ratio: tuple[float, ...]
    disagreement: tuple[float, ...]
    scores: dict
    n_gold: int


def read_file(raw: bytes, name: str, one_based: bool, t: dict) -> tuple:
    """Pairs from an uploaded file's bytes (checked: size, binary, format, pair count).

    Raises:
        SinkscopeError: with a message that says what to change.
    """
    from engine.alignment.readers import decode, parse_pairs

    from .. import locale

    num = locale.numbers(t.get("_lang", "en"))
    if len(raw) > MAX_UPLOAD_BYTES:
        raise AlignFileError(t["too_big"].format(size=num.fixed(len(raw) / 2**20, 1),
                                                 mb=MAX_UPLOAD_MB))
    pairs = parse_pairs(decode(raw, name), name=name, one_based=one_based)
    if len(pairs) > MAX_CORPUS_PAIRS:
        raise AlignFileError(t["too_many"].format(n=num.count(len(pairs)),
                                                  limit=num.count(MAX_CORPUS_PAIRS)))
    return pairs


def _jaccard_distance(x, y) -> float:
    x, y = set(x), set(y)
    return 0.0 if not (x | y) else 1.0 - len(x & y) / len(x | y)


def _scores(pairs, als: dict) -> dict:
    """Each method's corpus scores over the pairs with gold (bootstrap intervals)."""
    from engine.alignment.score import score

    gold = [k for k, p in enumerate(pairs) if p.has_gold]
    if not gold:
        return {}
    out = {}
    for name in METHODS:
        cs = score([als[name][k].links for k in gold], [pairs[k] for k in gold],
                   bootstrap=1000)
        out[name] = {"macro": cs.macro, "micro": cs.micro, "macro_ci": cs.macro_ci,
                     "micro_ci": cs.micro_ci}
    return out


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


def align_corpus(pairs, key: str, lowercase: bool, model: str, progress) -> Corpus:
    """Every pair by every method at its defaults, by the process's engine (embedded, or
    served in chunks); ``progress(share, what, **info)`` reports ("encode" with ``done``
    and ``total`` pairs' texts, or a method's name), and may raise to stop the work."""
    from engine.alignment.api import method_of
    from engine.alignment.readers import links_text

    als = engines.current().align(pairs, {name: method_of(name) for name in METHODS},
                                  model=model, lowercase=lowercase, progress=progress)
    progress(1.0, "…")
    return Corpus(key, tuple(p.to_dict() for p in pairs),
                  {name: tuple(links_text(a.links) for a in als[name]) for name in METHODS},
                  {name: tuple(None if a.scores is None else a.scores["f1"] for a in als[name])
                   for name in METHODS},
                  _null_ratio(pairs, als),
                  tuple(_jaccard_distance(als[SOFTMAX_METHOD][k].links,
                                          als[TRANSPORT_METHOD][k].links)
                        for k in range(len(pairs))),
                  _scores(pairs, als), sum(p.has_gold for p in pairs))


def corpus_table(c: Corpus):
    """The corpus as a table: one row per pair (pandas DataFrame, English column names)."""
    import pandas as pd

    rows = []
    for k, p in enumerate(c.pairs):
        row = {"pair": k + 1, "text A": p["text_a"], "text B": p["text_b"],
               "gold": p.get("gold", "")}
        for name in METHODS:
            f = c.f1[name][k]
            row[f"F1 {name}"] = None if f is None else round(float(f), 4)
        row["null ratio"] = round(c.null_ratio[k], 4)
        row["disagreement"] = round(c.disagreement[k], 4)
        rows.append(row)
    return pd.DataFrame(rows)


def scores_rows(c: Corpus, num) -> list[dict]:
    """The corpus scores, one row per method: macro values, 95 % intervals (written with
    ``num``), micro F1 and AER."""
    rows = []
    for name in METHODS:
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
