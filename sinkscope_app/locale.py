"""Words and numbers in one place: every page's words, every language's number format,
and the engine's notices and errors said in the page's language.

``sinkscope_app/text/<page>.<lang>.json`` holds every word a page shows in one language
(Markdown with ``{named}`` fields the page fills in); ``engine.<lang>.json`` words what
the engine reports as a code with parameters (:class:`engine.types.Notice`, an error's
``code`` and ``params``), so no page ever reads an engine sentence back. Every language
of a page has the same keys; :func:`missing` says which are not. Numbers go through
:func:`numbers` (``engine.relation.summary.Numbers``: the page's rule, the same in every
language, in the language's marks: "0,5", "24 285", "1,66e-13" in Spanish),
tables through :func:`table` (decimal commas in a Spanish table, sorting by value).
Files are read once per process and must not be mutated.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.relation.summary import Numbers, numbers as _numbers
from engine.types import Notice

TEXT_DIR = Path(__file__).resolve().parent / "text"
DEFAULT_LANG = "en"
LANGS = {"en": "English", "es": "Español"}  # every page's languages, as the picker names them


class TextFileError(ValueError):
    """A page or language with no text file, or a file that is not valid JSON."""


def pages() -> tuple[str, ...]:
    """Every page with a text file, by name: ``("align", "engine", …)``."""
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


def words(page: str, lang: str) -> dict[str, Any]:
    """``page``'s words in ``lang``, English for a language without a file."""
    return texts(page, lang if lang in languages(page) else DEFAULT_LANG)


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


QUOTES = {"en": ("“", "”"), "es": ("«", "»")}  # how each language quotes what a person typed


def quoted(text: str, lang: str) -> str:
    """``text`` in ``lang``'s quotes: “abc” in English, «abc» in Spanish."""
    left, right = QUOTES.get(lang, QUOTES[DEFAULT_LANG])
    return f"{left}{text}{right}"


# --------------------------------------------------------------------------- numbers
def numbers(lang: str, plain: bool = False) -> Numbers:
    """How ``lang`` writes numbers (English for a language without a format), with the
    rule of the page: one rule in every language, the language giving only its marks.
    ``numbers("es")(0.5) == "0,5"``, ``numbers("es")(1.66e-13) == "1,66e-13"``,
    ``numbers("es").count(24285) == "24 285"``, ``numbers("es").fixed(0.857) == "0,857"``,
    ``numbers("es").percent(0.45) == "45 %"``; ``plain`` (the Learn page, for students):
    ``numbers("en", plain=True)(4.78e-05) == "0.00005"``, ``≈ 0`` below 5e-6."""
    return _numbers(lang, plain)


def nonzero_digits(x: float, digits: int = 3, most: int = 6) -> int:
    """How many decimals ``x`` needs not to read as 0: ``digits``, or more (up to
    ``most``) for a small nonzero value (an interval's end at −0.0002 is not "0.000")."""
    while digits < most and x != 0 and round(float(x), digits) == 0:
        digits += 1
    return digits


def field(value: Any, lang: str) -> str:
    """A field of a sentence the language's way: whole numbers counted ("1,024",
    "1 024"), other numbers through :func:`numbers`, anything else as it is."""
    import numpy as np

    num = numbers(lang)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                         np.floating)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return num.count(int(value))
    return num(float(value))


# --------------------------------------------------------------------------- engine's words
# Fields of the engine's notices written as the engine's English writes them (a tolerance
# is 1e-06), in the language's marks.
_SPECS = {"err": ".2g", "tol": "g", "eps": "g", "per_word": ".1f"}


def _fields(params: Mapping[str, Any], w: Mapping[str, Any], lang: str) -> dict[str, str]:
    num, out = numbers(lang), {}
    for k, v in params.items():
        if k == "name":
            name = w["names"].get(v, v)
            out[k] = name.format(k=params.get("k", "")) if "{k}" in name else name
        elif k == "pooling":
            out[k] = v or w["own_modules"]
        elif k in _SPECS and isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = num.general(v, _SPECS[k])
        else:
            out[k] = field(v, lang)
    return out


def notice(n: Notice, lang: str = DEFAULT_LANG) -> str:
    """An engine notice in ``lang``: its ``code``'s template (``engine.<lang>.json``,
    ``notices``) filled with its ``params`` the language's way (in English too: a page's
    sentence for a person, with no operator's setting named); for a notice without a code
    the page knows, the sentence the engine wrote."""
    w = words("engine", lang)
    template = w["notices"].get(n.code) if n.code else None
    if template is None:
        return n.message
    fields = _fields(n.params, w, lang)
    if n.code == "vocabulary":  # the optional parts, where the notice has them
        fields["unk_part"] = (w["notices"]["vocabulary_unk"].format(**fields)
                              if n.params.get("unk") else "")
        fields["sample_part"] = (w["notices"]["vocabulary_sample"].format(**fields)
                                 if n.params.get("sample") else "")
    return template.format(**fields)


def notices(found, lang: str = DEFAULT_LANG) -> list[tuple[str, str]]:
    """(level, sentence in ``lang``) for each :class:`~engine.types.Notice`."""
    return [(n.level, notice(n, lang)) for n in found]


def error(e: BaseException, lang: str = DEFAULT_LANG) -> str:
    """An engine error in ``lang``: its ``code``'s template (``engine.<lang>.json``,
    ``errors``, or ``file_errors`` for a file's mistake: :func:`file_error`) filled with
    its ``params``, in English too; an error without a known code is its message (the
    engine's English, which says what to change)."""
    from engine.alignment.readers import AlignFileError

    code = getattr(e, "code", "")
    w = words("engine", lang)
    if isinstance(e, AlignFileError) or (code in w["file_errors"] and code not in w["errors"]):
        return file_error(e, lang)  # (a file's mistake may come over the wire uncast)
    template = w["errors"].get(code) if code else None
    if template is None:
        return str(e)
    params = dict(getattr(e, "params", {}))
    if code == "unread_pairs":
        shown = [w["names"]["unread"].format(k=k, side=side.upper())
                 for k, side in params["pairs"]]
        params = {"pairs": ", ".join(shown[:5]),
                  "more": w["names"]["more"].format(n=len(shown) - 5) if len(shown) > 5
                  else ""}
        return template.format(**params)
    return template.format(**_fields(params, w, lang))


def file_error(e: BaseException, lang: str = DEFAULT_LANG) -> str:
    """What a file of pairs, a typed pair or its gold got wrong (an ``AlignFileError``'s
    ``code`` and ``params``), one sentence in ``lang`` (``engine.<lang>.json``,
    ``file_errors``): its line as "pairs.tsv, line 3", a text as "text A", a typed token
    in the language's quotes. A place that is a word ("these texts", "gold") is left out:
    the page's sentence around the error says it. An error without a known code is its
    message."""
    w = words("engine", lang)["file_errors"]
    code = getattr(e, "code", "")
    if not code or code not in w or not isinstance(w[code], str):
        return str(e)
    template, num, fields = w[code], numbers(lang), {}
    for k, v in getattr(e, "params", {}).items():
        if k == "where" and isinstance(v, tuple):
            fields[k] = w["where_line"].format(file=v[0], line=num.count(v[1]))
        elif k == "where":  # said by the sentence around it
            template = template.replace("{where}: ", "", 1)
            fields[k] = w["where_names"].get(v, v)
        elif isinstance(v, bool):  # an optional part of the sentence
            fields[k] = w["parts"][k] if v else ""
        elif k in ("sep", "what", "field"):  # a word the sentence picks: "tabs", "text A"
            fields[k] = w["parts"].get(v, v)
        elif isinstance(v, tuple):  # a header's words: “source”, “src”
            fields[k] = ", ".join(quoted(x, lang) for x in v)
        elif isinstance(v, int):
            fields[k] = num.count(v)
        elif isinstance(v, float):
            fields[k] = num.fixed(v, 1)
        else:
            fields[k] = str(v)
    return template.format(**fields)


# --------------------------------------------------------------------------- tables
def table(data, lang: str, *, digits: int | None = 3, columns: tuple[str, ...] | None = None,
          formats: Mapping[str, Any] | None = None):
    """``data`` (a DataFrame, or a list of row dicts) for ``st.dataframe``, its float
    columns written the language's way (0,857 in Spanish) while the cells keep their
    values (a click on a heading sorts by value): with ``digits`` decimals, or as
    :func:`numbers` writes them when ``digits`` is None. ``columns``: the float columns
    to write (default every float column); ``formats``: column → a Python format spec
    (".1e") or a function of the value, for columns written otherwise. Give these columns
    no ``format`` in their column configuration: a format there would override the words."""
    import pandas as pd

    df = data if isinstance(data, pd.DataFrame) else pd.DataFrame(list(data))
    num = numbers(lang)
    cols = [c for c in (columns if columns is not None else df.columns)
            if c in df.columns and pd.api.types.is_float_dtype(df[c])]

    def write(x) -> str:
        return num(x) if digits is None else num.fixed(x, digits)

    def spec(f):
        return f if callable(f) else (lambda x: num.general(x, f))

    writers = {c: write for c in cols} | {c: spec(f) for c, f in (formats or {}).items()
                                           if c in df.columns}
    return df.style.format(writers, na_rep="–")
