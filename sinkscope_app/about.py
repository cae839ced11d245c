"""The About view: the measure-theoretic picture in plain words and a few formulas.

The text is Markdown with LaTeX, one per language: ``about`` in text/main.<lang>.json.
"""

from __future__ import annotations

from . import locale


def about(lang: str = "en") -> str:
    """The About view's Markdown in ``lang`` ("en", "es")."""
    return locale.texts("main", lang)["about"]


ABOUT = about("en")
