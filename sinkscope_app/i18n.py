"""The app's words as data: one JSON file per page and language, one set of keys.

``sinkscope_app/text/<page>.<lang>.json`` holds every word a page shows in one language
(Markdown with ``{named}`` fields the page fills in). Every language of a page has the
same keys, nested the same way; :func:`missing` says which are not, and the tests check
it for every page. Files are read once per process and must not be mutated.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

TEXT_DIR = Path(__file__).resolve().parent / "text"
DEFAULT_LANG = "en"


class TextFileError(ValueError):
    """A page or language with no text file, or a file that is not valid JSON."""


def pages() -> tuple[str, ...]:
    """Every page with a text file, by name: ``("lab", "learn", …)``."""
    return tuple(sorted({p.name.split(".")[0] for p in TEXT_DIR.glob("*.*.json")}))


def languages(page: str) -> tuple[str, ...]:
    """The languages that ``page`` has a file for: the default first, then by code.

    Example: ``languages("learn") == ("en", "es")``.
    """
    found = sorted(p.name.split(".")[-2] for p in TEXT_DIR.glob(f"{page}.*.json"))
    if not found:
        raise TextFileError(f"no text files for page {page!r} in {TEXT_DIR}; add "
                            f"{page}.{DEFAULT_LANG}.json there")
    return tuple(sorted(found, key=lambda lang: (lang != DEFAULT_LANG, lang)))


@functools.lru_cache(maxsize=None)
def texts(page: str, lang: str) -> dict[str, Any]:
    """Every word of ``page`` in ``lang``, as the file holds it (read once, do not mutate).

    Raises:
        TextFileError: no ``<page>.<lang>.json`` (the message lists the languages there
            are), or a file that does not parse.
    """
    path = TEXT_DIR / f"{page}.{lang}.json"
    if not path.is_file():
        raise TextFileError(f"no {lang!r} text for page {page!r}; languages there are: "
                            f"{', '.join(languages(page))}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise TextFileError(f"{path.name} is not valid JSON: {e}; fix the file") from e


def keys(tree: Any, prefix: str = "") -> set[str]:
    """Every key path in a nested text tree: ``{"ui.back", "steps.0.title", …}``."""
    out: set[str] = set()
    if isinstance(tree, Mapping):
        items = tree.items()
    elif isinstance(tree, list):
        items = enumerate(tree)
    else:
        return out
    for k, v in items:
        path = f"{prefix}{k}"
        out.add(path)
        out |= keys(v, path + ".")
    return out


def missing(page: str, optional: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """For each language of ``page``, the key paths another language has and it lacks.

    Args:
        page: the page's file stem ("learn"). optional: top-level sections whose inner
            keys may differ (e.g. a table one language leaves to another source).

    Returns:
        ``{lang: {path, …}}`` with an empty set for a complete language.
    """
    def paths(lang: str) -> set[str]:
        return {p for p in keys(texts(page, lang))
                if p.split(".")[0] not in optional or "." not in p}

    langs = languages(page)
    every = set().union(*(paths(lang) for lang in langs))
    return {lang: every - paths(lang) for lang in langs}
