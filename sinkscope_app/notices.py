"""The engine's notices in the page's language.

The engine writes each :class:`engine.types.Notice` in English for its API (``message``),
with a ``kind`` that says what it is about. The page shows a notice of a kind it knows in
its own language: the numbers and names the English sentence carries are read back from
it (:data:`PATTERNS`, one pattern per sentence the engine writes), then written into the
language's template (``engine_notices`` of ``text/main.<lang>.json``) with the language's
number format. A kind the page does not know, or a sentence no pattern reads, is shown as
the engine wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from engine.relation.summary import numbers

from . import i18n

_NAME = r"(?P<name>Text A|Text B|The pair|The candidates|Candidate \d+)"
_NUM = r"[-+0-9.,e]+"
# (kind, template key, pattern): every sentence the engine (and compute.vocabulary_notice)
# writes, with its numbers and names as named groups.
PATTERNS: tuple[tuple[str, str, re.Pattern], ...] = tuple(
    (kind, key, re.compile(pattern, re.S)) for kind, key, pattern in (
        ("chars_cut", "chars_cut",
         _NAME + rf" was cut to its first (?P<limit>{_NUM}) characters \(SINKSCOPE_MAX_CHARS\)\.$"),
        ("tokens_cut", "tokens_cut",
         _NAME + rf" was cut to the model's limit of (?P<n>{_NUM}) tokens: the next "
         rf"(?P<dropped>{_NUM}) tokens were dropped\.$"),
        ("no_position_bias", "no_position_bias",
         r"This model adds a relative position bias to its attention logits.*$"),
        ("not_converged", "not_converged",
         rf"Sinkhorn has not converged after (?P<steps>{_NUM}) half-steps \(marginal error "
         rf"(?P<err>{_NUM}) > (?P<tol>{_NUM})\): raise half-steps or ε\.$"),
        ("not_converged", "not_converged_heads",
         rf"Sinkhorn has not converged on (?P<bad>{_NUM}) of (?P<all>{_NUM}) heads after "
         rf"(?P<steps>{_NUM}) half-steps: raise half-steps or ε\.$"),
        ("not_converged", "not_converged_candidates",
         rf"Sinkhorn has not converged for (?P<bad>{_NUM}) of (?P<all>{_NUM}) candidates at "
         rf"ε = (?P<eps>{_NUM}) within (?P<steps>{_NUM}) half-steps: raise ε\.$"),
        ("candidates_cut", "candidates_cut",
         rf"Only the first (?P<max>{_NUM}) candidates are ranked; (?P<more>{_NUM}) more lines "
         r"were left out\.$"),
        ("not_mean_pooled", "not_mean_pooled",
         r"This model pools by (?P<pooling>.+?), not by the plain mean of its states: .*$"),
        ("vocabulary", "vocabulary",
         rf"{_NAME} is mostly outside the vocabulary of (?P<model>\S+): (?P<per_word>{_NUM}) "
         r"word pieces per word \(English prose: about 1\.1\)"
         r"(?:, and (?P<unk>\d+)% of its pieces are \[UNK\] \(unknown\))?"
         r"(?:, as in “(?P<sample>.*?) …”)?\. Such pieces .*$"),
    ))
_TEXT = ("name", "model", "sample", "pooling")  # fields that are words, not numbers
_SMALL = ("err", "tol", "eps")  # numbers written as the engine wrote them (:g), decimal mark
# the language's


def _number(raw: str) -> float | int:
    """An English number as the engine wrote it ("1,000", "0.0012", "1e-06")."""
    raw = raw.replace(",", "")
    x = float(raw)
    return int(x) if re.fullmatch(r"[-+]?\d+", raw) else x


def _name(raw: str, w: Mapping[str, str]) -> str:
    """"Text A", "Candidate 3" … in the page's words."""
    m = re.fullmatch(r"Candidate (\d+)", raw)
    if m:
        return w["candidate"].format(k=m.group(1))
    return w.get({"Text A": "text_a", "Text B": "text_b", "The pair": "pair",
                  "The candidates": "candidates"}.get(raw, ""), raw)


def say(kind: str, message: str, lang: str = "en") -> str:
    """``message`` (an engine notice of ``kind``, in English) in ``lang``.

    Example: ``say("tokens_cut", "Text B was cut to the model's limit of 512 tokens: the
    next 1,024 tokens were dropped.", "es")`` →
    "El texto B se recortó al límite del modelo, 512 tokens: se descartaron los 1024
    tokens siguientes."
    """
    if lang == "en" or lang not in i18n.languages("main"):
        return message
    w = i18n.texts("main", lang)["engine_notices"]
    num = numbers(lang)
    for k, key, pattern in PATTERNS:
        if k != kind:
            continue
        m = pattern.match(message.strip())
        if not m:
            continue
        fields = {}
        for field, raw in m.groupdict().items():
            if field == "name":
                fields[field] = _name(raw, w["names"])
            elif field == "pooling":
                fields[field] = w["own_modules"] if raw == "its own modules" else raw
            elif field in _TEXT:
                fields[field] = raw or ""
            elif raw is None:
                fields[field] = ""
            elif field in _SMALL:  # a tolerance is 1e-06, not "≈ 0"
                fields[field] = f"{_number(raw):g}".replace(".", num.decimal)
            else:
                fields[field] = num(_number(raw))
        if key == "vocabulary":  # the optional parts, where the English has them
            fields["unk_part"] = (w["vocabulary_unk"].format(**fields) if m.group("unk")
                                  else "")
            fields["sample_part"] = (w["vocabulary_sample"].format(**fields)
                                     if m.group("sample") else "")
        return w[key].format(**fields)
    return message


def say_all(notices, lang: str = "en") -> list[tuple[str, str]]:
    """(level, sentence in ``lang``) for each :class:`~engine.types.Notice`."""
    return [(n.level, say(n.kind, n.message, lang)) for n in notices]
