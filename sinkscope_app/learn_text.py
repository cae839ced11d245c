"""Every word of the Learn walk-through, read from ``text/learn.<lang>.json``.

Each language is written for its readers, not translated line by line; both say the same
mathematics, and both files have the same keys. Texts are Markdown with ``{named}`` fields
that the page fills with live numbers from the engine (the tests check that both languages
use the same fields). Streamlit renders ``$…$`` as LaTeX. This module only gives the files'
sections the names the page uses; no text is written here.

The figures' words (``WORDS``) are passed to every :mod:`viz.learn` builder by the page
(the builders hold none), so the page and the figures cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.relation.summary import numbers

from .i18n import DEFAULT_LANG, languages, texts

PAGE = "learn"


@dataclass(frozen=True)
class Step:
    """One step: a title, a short text, the formula behind it, and its own words.

    Attributes:
        title: a short title. body: the text (Markdown, with ``{fields}``).
        math: the same idea in symbols (Markdown with LaTeX), shown on request.
        words: the step's control labels, captions and figure titles.
    """

    title: str
    body: str
    math: str
    words: dict[str, str] = field(default_factory=dict)


def percent(x: float, lang: str) -> str:
    """x (a share, 0..1) as a percentage the way each language writes it: 45% / 45 %,
    0.04% / 0,04 %; a tiny share in Spanish as a plain decimal or "≈ 0 %"
    (:func:`engine.relation.summary.numbers`), never 1.0e-05."""
    p = 100 * float(x)
    if p < 5e-7:
        s = "0"
    elif p < 1e-4 and lang != DEFAULT_LANG:
        s = numbers(lang)(p)
    elif p < 1:
        s = f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"
    else:
        s = f"{p:.0f}" if p >= 10 else f"{p:.1f}"
    if lang == "es":
        return s.replace(".", ",") + "\u00a0%"
    return s + "%"


def count(n: int, lang: str) -> str:
    """A whole count (characters, tokens) the way each language groups digits: 24,285 in
    English, 24 285 in Spanish (a non-breaking space; a comma there is the decimal mark)."""
    if lang == DEFAULT_LANG:
        return f"{int(n):,}"
    return numbers(lang)(int(n)) if abs(int(n)) >= 1000 else str(int(n))


_FILES = {lang: texts(PAGE, lang) for lang in languages(PAGE)}

LANGS = {lang: t["name"] for lang, t in _FILES.items()}
UI = {lang: t["ui"] for lang, t in _FILES.items()}
STEPS = {lang: tuple(Step(**s) for s in t["steps"]) for lang, t in _FILES.items()}
WORDS = {lang: t["words"] for lang, t in _FILES.items()}  # what the figures say
WORDS_TEXT = {lang: {**t["words"], **t["words_text"]} for lang, t in _FILES.items()}
PRESETS = {lang: t["presets"] for lang, t in _FILES.items()}
# Titles of the examples in ``assets/examples.json`` for the other languages (English
# titles are the file's own).
EXAMPLES = {lang: t["examples"] for lang, t in _FILES.items()}
EXAMPLES_ES = EXAMPLES["es"]
N_STEPS = len(STEPS[DEFAULT_LANG])
