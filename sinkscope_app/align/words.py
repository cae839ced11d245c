"""The Align page's words: ``text/align.<lang>.json``, its tables' column names, and what a
file, a typed pair or the engine got wrong, said in the page's language from the error's
code and parameters (never read back from an English sentence)."""

from __future__ import annotations

from typing import Any

from engine.errors import TextError

from .. import locale
from .params import METHODS, TRAINED

# Every word the page shows, per language (copies, so a key added for English is shown,
# in English, by every language until its file has it).
TEXT: dict[str, dict[str, Any]] = {lang: dict(locale.texts("align", lang))
                                   for lang in locale.languages("align")}


def ui(lang: str = "en") -> dict:
    """The page's strings in ``lang`` (``text/align.<lang>.json``; English for a language
    without a file, and for a key its file lacks)."""
    return {**TEXT["en"], **TEXT.get(lang, {}), "_lang": lang if lang in TEXT else "en"}


class UnreadText(TextError):
    """A text of the pair has no word the model can read; ``side`` is "a" or "b"."""

    def __init__(self, side: str):
        self.side = side
        super().__init__(ui()["unread_text"].format(name=ui()["text_" + side]),
                         code="unread_text", params={"side": side})


def unread_message(e: Exception, t: dict) -> str:
    """What ``e`` (a text that cannot be aligned) says in the page's language (``t``)."""
    if isinstance(e, UnreadText):
        return t["unread_text"].format(name=t["text_" + e.side])
    if getattr(e, "code", "") == "unread_pairs":
        pairs = sorted({k for k, _ in e.params["pairs"]})
        shown = ", ".join(map(str, pairs[:5])) + (" …" if len(pairs) > 5 else "")
        return t["unread_pairs"].format(pairs=shown)
    return locale.error(e, t.get("_lang", "en"))


def aligner_failed(e: Exception, t: dict) -> str:
    """Why the trained aligner cannot be used (the operator's sentence from the engine)."""
    from ..inputs import md_text

    return t["aligner_failed"].format(error=md_text(locale.error(e, t.get("_lang", "en")), 400))


def file_error(e: Exception, t: dict) -> str:
    """What a file (or the typed pair, or its gold) got wrong, in the page's language
    (:func:`sinkscope_app.locale.error`: an ``AlignFileError`` from its code and
    parameters, another coded error in the engine's words, a message of its own as it
    is)."""
    return locale.error(e, t.get("_lang", "en"))


def column_names(t: dict, columns) -> dict[str, str]:
    """Displayed name of each table column (the data's English keys, as exported) in the
    page's language: "F1 exact", "F1 95 %" and the like from their parts."""
    names = t["columns"]
    out = {}
    for c in columns:
        if c in names:
            out[c] = names[c]
        elif c.startswith("F1 ") and c[3:] in METHODS + (TRAINED,):
            out[c] = t["col_method_f1"].format(method=c[3:])
        elif c.startswith("links ") and c[6:] in METHODS + (TRAINED,):
            out[c] = t["col_method_links"].format(method=c[6:])
        elif c.endswith(" 95 %") and c[:-5] in names:
            out[c] = t["col_ci"].format(label=names[c[:-5]])
        else:
            out[c] = c
    return out


def shown_rows(rows: list[dict], t: dict) -> list[dict]:
    """``rows`` with their keys as the page shows them (:func:`column_names`)."""
    names = column_names(t, rows[0] if rows else ())
    return [{names[k]: v for k, v in row.items()} for row in rows]


_TEXT_COLUMNS = ("method", "links", "pair", "text A", "text B", "gold")


def float_columns(row: dict, t: dict) -> list[str]:
    """The displayed names of ``row``'s number columns with decimals (English keys in,
    the page's names out): the ones :func:`sinkscope_app.locale.table` writes."""
    names = column_names(t, row)
    return [names[k] for k, v in row.items()
            if k not in _TEXT_COLUMNS and (v is None or isinstance(v, float))]


def written(df, t: dict, digits: int = 3):
    """A large table with its decimals written as the page's language writes them ("0,857";
    "–" for none), as text: the browser draws it sooner than a styled table of 800 rows.
    Values in [0, 1] with a fixed number of decimals sort as text as they sort as numbers."""
    import pandas as pd

    num = locale.numbers(t.get("_lang", "en"))
    out = df.copy()
    for c in out.columns:
        if pd.api.types.is_float_dtype(out[c]):
            out[c] = [num.fixed(x, digits) for x in out[c]]
    return out


def table(rows, t: dict, digits: int = 3):
    """Rows of English keys as the page shows them: column names and numbers (three
    decimals) in its language, the cells keeping their values."""
    shown = shown_rows(rows, t) if isinstance(rows, list) else rows
    first = rows[0] if isinstance(rows, list) and rows else {}
    return locale.table(shown, t.get("_lang", "en"), digits=digits,
                        columns=tuple(float_columns(first, t)) if first else None)


# --------------------------------------------------------------------------- the verdict
SYMBOLS = {"threshold": "θ", "tau": "τ", "mass": "m", "eps": "ε", "temperature": "T"}


def signed(x: float, num, digits: int = 3) -> str:
    """A difference with its sign, in the language's marks: "+0,012", "−0,004", "0,000";
    a small nonzero one with the decimals it needs ("−0,0002", never "0,000" for an
    interval's end that leaves out 0)."""
    digits = locale.nonzero_digits(x, digits)
    r = round(float(x), digits)
    return ("+" if r > 0 else "−" if r < 0 else "") + num.fixed(abs(r), digits)


def settings_words(settings: dict, t: dict) -> str:
    """A method's settings as the page writes them: "θ 0,42 · τ 4,94 · ε 0,1" (numbers to
    three significant digits; a setting that is a word, as a direction, named in the
    page's language, its value as the engine names it)."""
    num, names = locale.numbers(t["_lang"]), t["setting_names"]
    return " · ".join(f"{SYMBOLS[k]} {num.general(v, '.3g')}" if k in SYMBOLS
                      else f"{names.get(k, k)} {v}" for k, v in settings.items())


def ranked_rows(v, settings: dict, t: dict) -> list[dict]:
    """The verdict's ranking as table rows (English keys): rank, the method (★ the best),
    total F1, its 95 % interval, the difference from the best and the settings."""
    num = locale.numbers(t["_lang"])
    return [{"rank": r.rank, "method": ("★ " if r.best else "") + r.method,
             "total F1": r.value,
             "total F1 95 %": "–" if r.ci95 is None else
             f"{num.fixed(r.ci95[0], 3)} – {num.fixed(r.ci95[1], 3)}",
             "Δ best": t["best"] if r.best else signed(r.delta, num),
             "settings": settings_words(settings.get(r.method, {}), t)} for r in v.ranked]


def paired_rows(group, t: dict) -> list[dict]:
    """Paired comparisons (``engine.alignment.score.Paired``) as table rows: the method,
    what it is compared with, the difference in total F1, its 95 % paired-bootstrap
    interval, p, and whether the interval leaves out 0."""
    num = locale.numbers(t["_lang"])
    return [{"method": p.method, "against": p.vs, "Δ total F1": signed(p.delta, num),
             "95 % interval": t["interval"].format(lo=signed(p.ci95[0], num),
                                                  hi=signed(p.ci95[1], num)),
             "p": t["p_small"].format(p=num.fixed(0.001, 3)) if p.p < 0.001
             else num.fixed(p.p, 3),
             "difference shown": t["differs_yes"] if p.ci95[0] > 0 or p.ci95[1] < 0
             else t["differs_no"]} for p in group]
