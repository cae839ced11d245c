"""Every word of the Learn walk-through, read from ``text/learn.<lang>.json``.

Each language is written for its readers, not translated line by line; both say the same
mathematics, and both files have the same keys. Texts are Markdown with ``{named}`` fields
that the page fills with live numbers from the engine (the tests check that both languages
use the same fields). Streamlit renders ``$…$`` as LaTeX. This module only gives the files'
sections the names the page uses; no text is written here. Numbers are written through
``sinkscope_app.locale.numbers`` (``percent``, ``count``).

The figures' words (``WORDS``) are passed to every :mod:`viz.learn` builder by the page
(the builders hold none), so the page and the figures cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..locale import DEFAULT_LANG, languages, texts

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
