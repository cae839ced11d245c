"""Untrusted input: a page's address declared as a table, and the texts people type.

Each page declares its address as a :class:`Schema`: one :class:`Param` per control (its
session key, its name in the address, its default, and ``read``, which parses and checks
one raw value, with the engine's own checks where it has them). One :meth:`Schema.parse`
turns any query string into safe session values and notices, one :meth:`Schema.to_query`
writes the state back. A value a link may not hold raises :class:`Refused` in ``read``:
the page then says so (a :class:`Message`, worded by the page's ``url`` words) and uses
the default or a clamped value; a hostile value (``steps=²``, a 5,000-digit number, NaN,
an unknown name) never raises anything else.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from . import locale

MISSING = object()  # "no value": the default holds
_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")
MARKDOWN = "\\`*_{}[]()<>#+-.!|~$:"  # every character Markdown may read as markup
INLINE = "\\`*_[]()~$|"  # what makes links, emphasis, code or LaTeX inline


class Refused(Exception):
    """A value a link may not hold: the notice ``key`` (of the page's ``url`` words) with
    its fields, and the value used instead (``use``; MISSING: the default)."""

    def __init__(self, key: str, *, use: Any = MISSING, **fields: Any):
        super().__init__(key)
        self.key, self.use, self.fields = key, use, fields


@dataclass(frozen=True)
class Message:
    """One notice about a link or a text, as a key of a page's ``url`` words and its fields.

    Attributes:
        key: the template's key in ``text/<page>.<lang>.json`` (section ``url``).
        args: the fields: numbers (written the language's way: :func:`shown`), strings
            (as they are), and ``label``/``name``/``where``/``fallback`` naming further
            words of the same section by key.
        page: the page whose words say it.
    """

    key: str
    args: Mapping[str, Any] = field(default_factory=dict)
    page: str = "main"

    def text(self, lang: str = "en") -> str:
        """The notice in ``lang`` (English for a language without a file)."""
        return say(self.key, lang, page=self.page, **self.args)


# Fields that name further words by key: the section of the ``url`` words that holds them
# (else the page's own top-level section of that name).
_SECTIONS = {"label": "labels", "name": "names", "where": "where", "fallback": "fallbacks",
             "preset": "presets"}


def shown(value: Any, lang: str) -> str:
    """A field of a notice, one rule for every language: a number as ``:g`` writes it
    (a count as :meth:`~engine.relation.summary.Numbers.count` does), in the language's
    marks (1e+09, 0,5, 30 000); a :class:`Quoted` value in the language's quotes."""
    if isinstance(value, Quoted):
        return value.text(lang)
    if isinstance(value, float):
        return locale.numbers(lang).general(value, "g")
    return locale.field(value, lang)


def say(key: str, lang: str = "en", *, page: str = "main", **args: Any) -> str:
    """The ``url`` notice ``key`` of ``page``'s words in ``lang``, fields filled.

    Fields named ``label``, ``name``, ``where``, ``fallback`` and ``preset`` hold keys of
    the ``url.labels`` / ``url.names`` / ``url.where`` / ``url.fallbacks`` words (or of the
    page's own ``presets``; an unknown one is shown as it is).
    Example: ``say("unknown_set", "es", value="'x'")``.
    """
    page_words = locale.words(page, lang)
    w = page_words["url"]

    def named(k: str, v: Any) -> str:
        table = w.get(_SECTIONS[k]) or page_words.get(_SECTIONS[k]) or {}
        return str(table.get(v, v))

    fields = {k: named(k, v) if k in _SECTIONS else shown(v, lang) for k, v in args.items()}
    return w[key].format(**fields)


class Quoted(str):
    """A value from a link as typed (escaped and cut by :func:`quote`); a notice shows it
    in its language's quotes (:func:`locale.quoted`: “abc”, «abc»)."""

    def text(self, lang: str = "en") -> str:
        return locale.quoted(self, lang)


def quote(raw: str, chars: int = 40, escape: str = INLINE) -> Quoted:
    """A URL value for a notice, shown as typed: cut to ``chars`` (with "…"), characters
    that do not print written as escapes (a tab as \\t), and every character of
    ``escape`` escaped, so a crafted value shows as typed (never as a link, bold text or
    LaTeX). The notice puts it in its language's quotes."""
    text = raw[:chars] + ("…" if len(raw) > chars else "")
    text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    return Quoted("".join("\\" + ch if ch in escape else ch for ch in text))


# --------------------------------------------------------------------------- raw values
def to_float(raw: object) -> float | None:
    """A finite number from a link's text, else None ("nan", "inf", "²", "1e400")."""
    try:
        x = float(str(raw).strip())
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) else None


def to_int(raw: object, most: float = 1e15) -> int | None:
    """A whole number (rounded) from a link's text, else None (also beyond ±``most``)."""
    x = to_float(raw)
    if x is None or abs(x) > most:
        return None
    return int(round(x))


def parse_bool(raw: object) -> bool | None:
    """A link's truthy or falsy word (true/false, on/off, yes/no, 1/0, empty: false) as a
    bool; None when it is neither. The one reading every page uses."""
    low = str(raw if raw is not None else "").strip().lower()
    return True if low in _ON else False if low in _OFF else None


def valid_text(text: object) -> str:
    """A str that can travel to the browser: unpaired surrogates become U+FFFD."""
    text = text if isinstance(text, str) else ""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace") \
        if any("\ud800" <= ch <= "\udfff" for ch in text) else text


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$&])")


def md_text(text: str, max_chars: int = 200) -> str:
    """A person's text for st.markdown, shown literally: Markdown and HTML characters are
    escaped (no links, images or formatting), cut to ``max_chars`` with an ellipsis."""
    text = " ".join(str(text).split())
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return _MD_SPECIAL.sub(r"\\\1", text)


def cut(text: object, limit: int) -> tuple[str, int | None]:
    """(``text`` made valid and cut to ``limit`` characters, its length when it was cut,
    else None)."""
    text = valid_text(text)
    return (text, None) if len(text) <= limit else (text[:limit], len(text))


# --------------------------------------------------------------------------- readers
def choice(options, key: str = "unknown_choice", **args: Any) -> Callable:
    """A reader of one of ``options`` (or ``options(ctx)``), refusing anything else with
    notice ``key`` (fields ``args`` and ``value``, the quoted raw value)."""
    def read(raw: str, ctx: Any) -> str:
        allowed = options(ctx) if callable(options) else options
        if raw in allowed:
            return raw
        raise Refused(key, **args, value=quote(raw))
    return read


def flag(key: str = "not_bool", **args: Any) -> Callable:
    """A reader of :func:`parse_bool`'s words, refusing others with notice ``key``."""
    def read(raw: str, ctx: Any) -> bool:
        value = parse_bool(raw)
        if value is None:
            raise Refused(key, **args, value=quote(raw, 20))
        return value
    return read


def text(limit: Callable[[Any], int], key: str = "text_cut", **args: Any) -> Callable:
    """A reader of a text: made valid, cut to ``limit(ctx)`` characters with notice
    ``key`` (fields ``args``, ``chars`` and ``limit``)."""
    def read(raw: str, ctx: Any) -> str:
        most = limit(ctx)
        value, chars = cut(raw, most)
        if chars is not None:
            raise Refused(key, use=value, **args, chars=chars, limit=most)
        return value
    return read


def written(value: Any) -> str:
    """A value as the address writes it: true/false, ``:g`` for numbers, else str."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# --------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Param:
    """One control in a page's address.

    Attributes:
        key: its session key (the widget's key).
        url: its name in the address, readable.
        read: ``read(raw, ctx) -> value``: parses and checks one raw value, raising
            :class:`Refused` for one a link may not hold.
        default: its value when nothing set it.
        doc: what it holds, in a few words (docs/urls.md lists them all).
        old: names older links used; they still open the same state.
        scope: "page" for controls whose change reruns the page, "view" for those drawn
            in a fragment (a change reruns only the fragment).
        view: the view whose link carries it ("" for every link).
        write: ``write(value, state) -> str | None``: the address's text (None: left out).
        nav: a change of it is a browser history entry; the value a missing parameter
            stands for (None: a missing parameter is no change). ``NOT_NAV``: not one.
    """

    key: str
    url: str
    read: Callable[[str, Any], Any]
    default: Any = None
    doc: str = ""
    old: tuple[str, ...] = ()
    scope: str = "page"
    view: str = ""
    write: Callable[[Any, Mapping], str | None] | None = None
    nav: Any = MISSING


@dataclass
class Parsed:
    """Values read from a URL, and what had to change to make them safe.

    ``warnings`` are the sentences in the language asked for (English by default),
    ``messages`` the same notices as keys and fields (:class:`Message`)."""

    values: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)


@dataclass(frozen=True)
class Schema:
    """A page's address: its parameters, and the rules that join them.

    Attributes:
        page: the page whose ``url`` words say the notices.
        params: one :class:`Param` per control, in the order they are read.
        resolve: ``resolve(values, given, ctx, warn)``, after every parameter is read:
            the rules between parameters (an example sets texts and settings); ``given``
            holds the raw values by key, ``warn(key, **args)`` adds a notice. Values
            refused by a reader are left out again afterwards (their default holds).
    """

    page: str
    params: tuple[Param, ...]
    resolve: Callable[..., None] | None = None

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(p.key for p in self.params)

    @property
    def nav(self) -> dict[str, Any]:
        """URL name → the value a missing parameter stands for, for every parameter whose
        change is a history entry (``sinkscope_app.history.track``)."""
        return {p.url: p.nav for p in self.params if p.nav is not MISSING}

    def given(self, query: Mapping[str, Any]) -> dict[str, str]:
        """The address's raw values by session key: readable names first, then older
        names; unknown parameters dropped; the last of repeated ones."""
        q = {str(k): _last(v) for k, v in query.items()}
        out = {}
        for p in self.params:
            for name in (p.url, *p.old):
                if name in q:
                    out[p.key] = q[name]
                    break
        return out

    def parse(self, query: Mapping[str, Any], ctx: Any = None, *,
              lang: str = "en") -> Parsed:
        """Turn untrusted query parameters into safe control values. Never raises.

        A bad value falls back to its default (or is clamped) with a notice in ``lang``.
        """
        out, given = Parsed(), self.given(query)
        refused: set[str] = set()

        def warn(key: str, **args: Any) -> None:
            message = Message(key, args, self.page)
            out.messages.append(message)
            out.warnings.append(message.text(lang))

        for p in self.params:
            if p.key not in given:
                continue
            try:
                out.values[p.key] = p.read(given[p.key], ctx)
            except Refused as r:
                warn(r.key, **r.fields)
                if r.use is MISSING:
                    refused.add(p.key)
                else:
                    out.values[p.key] = r.use
        if self.resolve is not None:
            self.resolve(out.values, given, ctx, warn)
        for key in refused:
            out.values.pop(key, None)
        return out

    def to_query(self, state: Mapping[str, Any]) -> dict[str, str]:
        """The query string for ``state``, by readable names (a parameter whose ``write``
        says None is left out)."""
        q: dict[str, str] = {}
        for p in self.params:
            if p.key not in state:
                continue
            if p.view and state.get("view") != p.view:
                continue
            text = written(state[p.key]) if p.write is None else p.write(state[p.key], state)
            if text is not None:
                q[p.url] = text
        return q


def _last(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        v = v[-1] if v else ""
    return str(v)
