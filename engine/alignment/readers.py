"""Readers for pairs of texts with gold word alignments.

Every reader returns a tuple of :class:`Pair`; every bad line raises a
:class:`~engine.errors.AlignFileError` naming the file, the line and what is wrong; a file
over :data:`MAX_BYTES`, with more than :data:`MAX_PAIRS` pairs or a text over
:data:`MAX_WORDS` words is refused with a message, never a traceback.

Formats (``read_pairs(path, fmt="auto")`` picks one by the file's name and first line):

- ``table``: TSV, CSV or JSONL with the fields ``text_a``, ``text_b`` and an optional
  ``gold`` (Pharaoh links), or ``sure`` and ``possible``; a header may also call them
  source, target, alignment and the other names of :data:`COLUMNS`, and one it cannot read
  is refused naming the column. A TSV or CSV without a header row holds
  ``text_a, text_b[, gold]`` (the layout of the Edinburgh++ files). An empty gold cell means
  that pair has no gold (:class:`Pairs` counts them).
- ``multimwa``: the MultiMWA TSV: ``id, sent1, N/A, sent2, N/A, 1, 1, sure, possible``.
- ``awesome``: awesome-align's ``src ||| tgt`` file, with gold links in a separate file
  (``gold=``), one line per pair.

Links are Pharaoh ``i-j`` over whitespace words, ``ipj`` for a possible link; indices are
0-based unless ``one_based=True``. Possible links include the sure ones (S ⊆ P).
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import SinkscopeError

MAX_BYTES = 32 * 2**20
MAX_PAIRS = 20_000
MAX_WORDS = 400
FORMATS = ("auto", "table", "multimwa", "awesome")
_LINK = re.compile(r"^([0-9]{1,6})([-p])([0-9]{1,6})$")


# What each mistake says in English (the message), with its details as fields; a page in
# another language says the same from ``code`` and ``params`` (sinkscope_app/align_page.py).
# ``where`` is "<file>, line <k>" or what is read ("pair", "links"); ``hint`` and ``gold``
# are optional parts (ENGLISH_PARTS), ``sep`` "tabs" or "commas", ``what`` "file" or
# "gold file".
MESSAGES: dict[str, str] = {
    "text_empty": "{where}: {field} is empty; every pair needs two texts.",
    "text_too_long": "{where}: {field} has {words} words, more than {max_words}; split it "
                     "into sentences.",
    "gold_not_text": "{where}: gold must be Pharaoh links as text ('0-0 1-2'), got {type}.",
    "not_a_link": "{where}: {token!r} is not a link; write links as i-j (sure) or ipj "
                  "(possible), separated by spaces.",
    "link_index_zero": "{where}: link {token} has index 0 but links are 1-based here; drop "
                       "the 1-based flag if they are 0-based.",
    "link_out_of_range": "{where}: link {token} is out of range: text A has {n} words and "
                         "text B {m}{hint}.",
    "cannot_read": "Cannot read the {what} {path}: {reason}.",
    "not_a_file": "The {what} {path} is not a file.",
    "path_too_big": "The {what} {path} is {mb:.1f} MB, more than {max_mb} MB; split it into "
                    "smaller files.",
    "too_big": "{file} is {mb:.1f} MB, more than {max_mb} MB; split it into smaller files.",
    "binary": "{file} is not a text file (it holds NUL bytes).",
    "not_utf8": "{where}: not UTF-8 text; save the file as UTF-8.",
    "too_many_pairs": "{file} holds more than {max_pairs:,} pairs; split it.",
    "multimwa_fields": "{where}: {fields} tab-separated fields; MultiMWA lines have 9 (id, "
                       "sent1, N/A, sent2, N/A, 1, 1, sure, possible).",
    "empty_file": "{file} is empty; give one pair per line.",
    "not_json": "{where}: not a JSON object ({reason}); write one "
                '{{"text_a": ..., "text_b": ..., "gold": ...}} per line.',
    "json_fields": "{where}: each line needs the fields text_a and text_b.",
    "not_csv": "{file}: not valid {kind} ({reason}).",
    "header": "{where}: the header needs both text_a and text_b.",
    "too_few_fields": "{where}: {fields} field(s); each line needs text_a and text_b{gold} "
                      "separated by {sep}.",
    "too_many_fields": "{where}: {fields} fields; expected text_a, text_b and an optional "
                       "gold column.",
    "no_pairs": "{file} holds no pairs.",
    "gold_lines": "{gold_file} has {lines} lines but {file} has {pairs} pairs; give one line "
                  "of links per pair.",
    "awesome_line": "{where}: write each pair as 'source ||| target' (one '|||').",
    "bad_format": "format must be one of {formats}; got {fmt!r}.",
    "links_lines": "{file} has {lines} lines but there are {pairs} pairs; give one line of "
                   "links per pair.",
}
# Mistakes in a table's header row, worded the same way (a page words them from ``code``
# and ``params`` as it words MESSAGES): ``column`` the header's word as written, ``role``
# "text_a", "text_b" or "gold", ``columns`` the header's words that name it.
HEADER_MESSAGES: dict[str, str] = {
    "header_column": "{where}: the header's column {column!r} is not one sinkscope reads; "
                     "call the columns text_a (or source), text_b (or target) and gold (or "
                     "alignment, or sure and possible), and id one to skip.",
    "header_twice": "{where}: the header names {role} more than once ({columns}); keep one "
                    "of them.",
}
ENGLISH_PARTS = {"hint": " (are the links 1-based? say so with the 1-based flag)",
                 "gold": " and gold"}
#: Header words of a table (lower case, spaces and hyphens as "_") → the column they name;
#: ``None`` marks a column read past (an id).
COLUMNS: dict[str, str | None] = {
    **dict.fromkeys(("text_a", "source", "src", "source_text", "sentence1", "sentence_1",
                     "sent1", "text1", "sentence_a"), "text_a"),
    **dict.fromkeys(("text_b", "target", "tgt", "target_text", "sentence2", "sentence_2",
                     "sent2", "text2", "sentence_b"), "text_b"),
    **dict.fromkeys(("gold", "alignment", "alignments", "links", "gold_links", "align"),
                    "gold"),
    "sure": "gold", "possible": "possible",
    **dict.fromkeys(("id", "pair_id", "index", "#"), None),
}


class AlignFileError(SinkscopeError):
    """A file of pairs or gold links that cannot be read; the message names the line.

    Attributes:
        code: which mistake (a key of :data:`MESSAGES`; "" for a message of its own).
        params: its details: numbers, names, ``where`` as (file, line) or a word.
    """

    def __init__(self, message: str, *, code: str = "", params: dict | None = None):
        super().__init__(message)
        self.code, self.params = code, dict(params or {})

    @classmethod
    def of(cls, code: str, **params) -> AlignFileError:
        """The error ``code`` with ``params``, its message the sentence of :data:`MESSAGES`
        (or :data:`HEADER_MESSAGES`)."""
        english = {k: ENGLISH_PARTS[k] if v is True else "" if v is False else
                   f"{v[0]}, line {v[1]}" if k == "where" and isinstance(v, tuple) else
                   ", ".join(map(repr, v)) if k == "columns" else v
                   for k, v in params.items()}
        sentence = MESSAGES.get(code) or HEADER_MESSAGES[code]
        return cls(sentence.format(**english), code=code, params=params)


Link = tuple[int, int]


@dataclass(frozen=True)
class Pair:
    """Two texts and, when known, their gold word alignment.

    Attributes:
        text_a, text_b: the texts; words are what ``str.split()`` gives.
        sure: sure gold links (i, j), 0-based word indices of A and B.
        possible: possible gold links, sure ones included (S ⊆ P).
        has_gold: whether gold was given (a pair may be gold-aligned to nothing).
    """

    text_a: str
    text_b: str
    sure: frozenset[Link] = frozenset()
    possible: frozenset[Link] = frozenset()
    has_gold: bool = False

    @property
    def words_a(self) -> list[str]:
        return self.text_a.split()

    @property
    def words_b(self) -> list[str]:
        return self.text_b.split()

    @property
    def shape(self) -> tuple[int, int]:
        """(n, m): word counts of A and B."""
        return len(self.words_a), len(self.words_b)

    def lower(self) -> "Pair":
        """The same pair with both texts lower-cased (the gold sets' convention)."""
        return Pair(self.text_a.lower(), self.text_b.lower(), self.sure, self.possible,
                    self.has_gold)

    def transposed(self) -> "Pair":
        """B and A swapped, links (i, j) → (j, i)."""
        return Pair(self.text_b, self.text_a, frozenset((j, i) for i, j in self.sure),
                    frozenset((j, i) for i, j in self.possible), self.has_gold)

    def to_dict(self) -> dict:
        d = {"text_a": self.text_a, "text_b": self.text_b}
        if self.has_gold:
            d["gold"] = links_text(self.sure, self.possible)
        return d


class Pairs(tuple):
    """The pairs a file holds (a tuple of :class:`Pair`), and whether it gives gold.

    Attributes:
        gold_column: the file has gold links (a gold, sure or possible column, a gold
            file, MultiMWA's links); a pair whose gold cell is empty has none
            (``Pair.has_gold`` False) and is left out of the scores.
    """

    gold_column: bool

    def __new__(cls, pairs: Iterable[Pair] = (), gold_column: bool = False) -> "Pairs":
        out = super().__new__(cls, pairs)
        out.gold_column = bool(gold_column)
        return out

    @property
    def n_gold(self) -> int:
        """How many pairs have gold ("3 pairs, 2 with gold")."""
        return sum(p.has_gold for p in self)

    @property
    def without_gold(self) -> tuple[int, ...]:
        """0-based indices of the pairs without gold."""
        return tuple(k for k, p in enumerate(self) if not p.has_gold)


def make_pair(text_a: str, text_b: str, gold: str | None = None, *,
              possible: str | None = None, one_based: bool | None = False,
              where: str | tuple[str, int] = "pair") -> Pair:
    """A :class:`Pair` from two texts and optional Pharaoh gold, checked.

    ``gold``: sure links ``i-j`` (and possible ``ipj``); ``possible``: more links, all
    possible. Both None: no gold (``has_gold`` False); "" is gold with no link.
    ``one_based``: links count words from 1; None: from 0, and the caller offers no 1-based
    choice (an index one past the end then gets no hint about it).

    Raises:
        AlignFileError: an empty or too long text, a malformed link or one out of range.
    """
    for name, t in (("text_a", text_a), ("text_b", text_b)):
        if not isinstance(t, str) or not t.strip():
            raise AlignFileError.of("text_empty", where=where, field=name)
        if len(t.split()) > MAX_WORDS:
            raise AlignFileError.of("text_too_long", where=where, field=name,
                                    words=len(t.split()), max_words=MAX_WORDS)
    for g in (gold, possible):
        if g is not None and not isinstance(g, str):
            raise AlignFileError.of("gold_not_text", where=where, type=type(g).__name__)
    if gold is None and possible is None:
        return Pair(text_a, text_b)
    n, m = len(text_a.split()), len(text_b.split())
    sure, poss = parse_links(gold or "", n, m, one_based=one_based, where=where,
                             possible_text=possible or "")
    return Pair(text_a, text_b, sure, poss, True)


def parse_links(text: str, n: int, m: int, *, one_based: bool | None = False,
                where: str | tuple[str, int] = "links",
                possible_text: str = "") -> tuple[frozenset, frozenset]:
    """Pharaoh links ``"0-0 1-2 3p4"`` → (sure, possible) sets of 0-based (i, j).

    ``i-j`` is sure, ``ipj`` possible; ``possible_text`` adds links that are all possible
    (MultiMWA's last column). P includes S.

    Raises:
        AlignFileError: a token that is not a link, or an index outside the texts.
    """
    sure: set[Link] = set()
    possible: set[Link] = set()
    off = 1 if one_based else 0
    for part, force_possible in ((text, False), (possible_text, True)):
        for tok in part.split():
            mt = _LINK.match(tok)
            if not mt:
                raise AlignFileError.of("not_a_link", where=where, token=tok[:40])
            i, j = int(mt.group(1)) - off, int(mt.group(3)) - off
            if i < 0 or j < 0:
                raise AlignFileError.of("link_index_zero", where=where, token=tok)
            if i >= n or j >= m:
                raise AlignFileError.of("link_out_of_range", where=where, token=tok, n=n, m=m,
                                        hint=one_based is False and (i == n or j == m))
            (possible if (mt.group(2) == "p" or force_possible) else sure).add((i, j))
    possible |= sure
    return frozenset(sure), frozenset(possible)


def links_text(sure: Iterable[Link], possible: Iterable[Link] = ()) -> str:
    """(sure, possible) → Pharaoh text, 0-based, sorted: ``"0-0 1p2"``."""
    sure = set(sure)
    out = [f"{i}-{j}" for i, j in sorted(sure)]
    out += [f"{i}p{j}" for i, j in sorted(set(possible) - sure)]
    return " ".join(out)


def _read_text(path: str | Path, what: str = "file") -> str:
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as e:
        raise AlignFileError.of("cannot_read", what=what, path=str(path),
                                reason=str(e.strerror or e)) from None
    if not p.is_file():
        raise AlignFileError.of("not_a_file", what=what, path=str(path))
    if size > MAX_BYTES:
        raise AlignFileError.of("path_too_big", what=what, path=str(path), mb=size / 2**20,
                                max_mb=MAX_BYTES // 2**20)
    raw = p.read_bytes()
    return decode(raw, str(path))


def decode(raw: bytes, name: str = "the file") -> str:
    """Bytes of a pairs file → text (UTF-8, a BOM dropped); refuses binary and huge data."""
    if len(raw) > MAX_BYTES:
        raise AlignFileError.of("too_big", file=name, mb=len(raw) / 2**20,
                                max_mb=MAX_BYTES // 2**20)
    if b"\x00" in raw:
        raise AlignFileError.of("binary", file=name)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise AlignFileError.of("not_utf8", where=(name, line)) from None
    return text


def _lines(text: str) -> list[str]:
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def _check_count(pairs: list, name: str) -> None:
    if len(pairs) > MAX_PAIRS:
        raise AlignFileError.of("too_many_pairs", file=name, max_pairs=MAX_PAIRS)


def read_multimwa(text: str, *, name: str = "file", one_based: bool = False) -> Pairs:
    """MultiMWA TSV: ``id, sent1, N/A, sent2, N/A, 1, 1, sure, possible`` per line."""
    pairs = []
    for k, line in enumerate(_lines(text), 1):
        if not line.strip():
            continue
        where = (name, k)
        cols = line.split("\t")
        if len(cols) < 8:
            raise AlignFileError.of("multimwa_fields", where=where, fields=len(cols))
        a, b = cols[1], cols[3]
        n, m = len(a.split()), len(b.split())
        make_pair(a, b, where=where)  # the texts' own checks
        sure, possible = parse_links(cols[7], n, m, one_based=one_based, where=where,
                                     possible_text=cols[8] if len(cols) > 8 else "")
        pairs.append(Pair(a, b, sure, possible, True))
        _check_count(pairs, name)
    return Pairs(pairs, True)


def read_table(text: str, *, name: str = "file", one_based: bool = False,
               kind: str | None = None) -> Pairs:
    """TSV, CSV or JSONL with ``text_a``, ``text_b`` and optional ``gold`` (or ``sure`` and
    ``possible``); the header may name them as :data:`COLUMNS` does (source, target,
    alignment, …).

    ``kind``: "tsv", "csv" or "jsonl" (guessed from the first line when None). A TSV or CSV
    whose first row names no column is read as ``text_a, text_b[, gold]``. An empty gold
    cell means that pair has no gold.
    """
    lines = _lines(text)
    if not lines:
        raise AlignFileError.of("empty_file", file=name)
    first = lines[0].lstrip()
    kind = kind or ("jsonl" if first.startswith("{") else "tsv" if "\t" in first else "csv")
    if kind == "jsonl":
        return _read_jsonl(lines, name, one_based)
    delim = "\t" if kind == "tsv" else ","
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=delim,
                               quoting=csv.QUOTE_NONE if delim == "\t" else csv.QUOTE_MINIMAL))
    except csv.Error as e:
        raise AlignFileError.of("not_csv", file=name, kind=kind.upper(), reason=str(e)) from None
    cols = _header(rows[0], (name, 1))
    start = 0 if cols is None else 1
    cols = cols or {"text_a": 0, "text_b": 1, "gold": 2}
    pairs: list[Pair] = []
    for k, row in enumerate(rows[start:], start + 1):
        if not any(c.strip() for c in row):
            continue
        where = (name, k)
        need = max(cols["text_a"], cols["text_b"]) + 1
        if len(row) < need:
            raise AlignFileError.of("too_few_fields", where=where, fields=len(row),
                                    gold="gold" in cols,
                                    sep="tabs" if delim == "\t" else "commas")
        if len(row) > max(cols.values()) + 1 and start == 0:
            raise AlignFileError.of("too_many_fields", where=where, fields=len(row))
        gold, possible = (row[cols[c]] if c in cols and cols[c] < len(row) else None
                          for c in ("gold", "possible"))
        pairs.append(make_pair(row[cols["text_a"]], row[cols["text_b"]],
                               **_cells(gold, possible), one_based=one_based, where=where))
        _check_count(pairs, name)
    if not pairs:
        raise AlignFileError.of("no_pairs", file=name)
    has_gold = "gold" in cols if start else any(len(r) > 2 for r in rows)
    return Pairs(pairs, has_gold or "possible" in cols)


def _cells(gold, possible) -> dict:
    """A row's gold and possible cells as :func:`make_pair` takes them: both blank or
    missing is no gold (None); a blank one beside links is ""."""
    blank = [g is None or (isinstance(g, str) and not g.strip()) for g in (gold, possible)]
    if all(blank):
        return {"gold": None, "possible": None}
    return {k: "" if b else g for k, g, b in zip(("gold", "possible"), (gold, possible), blank)}


def _word(column: str) -> str:
    return re.sub(r"[\s-]+", "_", column.strip().lower())


def _header(row: list[str], where: tuple[str, int]) -> dict[str, int] | None:
    """Which column holds what (role → index) when ``row`` is a header; None when it names
    no column of :data:`COLUMNS` (a row of data).

    Raises:
        AlignFileError: a role named twice, no text_a or text_b (``unknown``: the header's
            words it does not know), or a word it does not know.
    """
    words = [_word(c) for c in row]
    if not any(COLUMNS.get(w) for w in words):
        return None
    named: dict[str, list[int]] = {}
    for k, w in enumerate(words):
        if COLUMNS.get(w):
            named.setdefault(COLUMNS[w], []).append(k)
    unknown = tuple(row[k].strip()[:40] for k, w in enumerate(words) if w and w not in COLUMNS)
    for role, ks in named.items():
        if len(ks) > 1:
            raise AlignFileError.of("header_twice", where=where, role=role,
                                    columns=tuple(row[k].strip() for k in ks))
    if "text_a" not in named or "text_b" not in named:
        raise AlignFileError.of("header", where=where, unknown=unknown)
    if unknown:
        raise AlignFileError.of("header_column", where=where, column=unknown[0])
    return {role: ks[0] for role, ks in named.items()}


def _read_jsonl(lines: list[str], name: str, one_based: bool) -> Pairs:
    """JSON Lines: one object per pair, its keys named as a header's (:data:`COLUMNS`)."""
    pairs: list[Pair] = []
    gold_column = False
    for k, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = (name, k)
        try:
            row = json.loads(line)
        except ValueError as e:
            raise AlignFileError.of("not_json", where=where, reason=e.msg) from None
        except RecursionError:
            raise AlignFileError.of("not_json", where=where,
                                    reason="nested too deeply") from None
        if isinstance(row, dict):
            row = {COLUMNS.get(_word(str(key))) or key: v for key, v in row.items()}
        if not isinstance(row, dict) or "text_a" not in row or "text_b" not in row:
            raise AlignFileError.of("json_fields", where=where)
        gold_column = gold_column or "gold" in row or "possible" in row
        pairs.append(make_pair(row["text_a"], row["text_b"],
                               **_cells(row.get("gold"), row.get("possible")),
                               one_based=one_based, where=where))
        _check_count(pairs, name)
    return Pairs(pairs, gold_column)


def read_awesome(text: str, gold_text: str | None = None, *, name: str = "file",
                 gold_name: str = "gold file", one_based: bool = False) -> Pairs:
    """awesome-align's ``src ||| tgt`` lines, with optional gold links, one line each (a
    blank line of the gold file: gold with no link)."""
    lines = _lines(text)
    gold_lines = _lines(gold_text) if gold_text is not None else None
    if gold_lines is not None and len(gold_lines) != len(lines):
        raise AlignFileError.of("gold_lines", gold_file=gold_name, lines=len(gold_lines),
                                file=name, pairs=len(lines))
    pairs = []
    for k, line in enumerate(lines, 1):
        where = (name, k)
        if line.count("|||") != 1:
            raise AlignFileError.of("awesome_line", where=where)
        a, b = (s.strip() for s in line.split("|||"))
        g = None if gold_lines is None else gold_lines[k - 1]
        pairs.append(make_pair(a, b, g, one_based=one_based,
                               where=where if g is None else (gold_name, k)))
        _check_count(pairs, name)
    if not pairs:
        raise AlignFileError.of("no_pairs", file=name)
    return Pairs(pairs, gold_lines is not None)


def sniff(text: str, name: str = "") -> str:
    """Guess a format from a file's name and first line: multimwa, awesome or table."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if "|||" in first:
        return "awesome"
    cols = first.split("\t")
    if len(cols) >= 8 and cols[2].strip() == "N/A":
        return "multimwa"
    return "table"


def parse_pairs(text: str, *, fmt: str = "auto", name: str = "file", gold_text: str | None = None,
                one_based: bool = False, lowercase: bool = False,
                transpose: bool = False) -> Pairs:
    """Pairs from a file's text (see the module docstring for the formats).

    Args:
        fmt: "auto", "table", "multimwa" or "awesome".
        gold_text: awesome-align's gold links (one line per pair), for fmt="awesome".
        one_based: links count words from 1.
        lowercase: lower-case both texts (the gold sets' convention).
        transpose: swap A and B (OTAlign reads MTRef with sent2 first).
    """
    if fmt not in FORMATS:
        raise AlignFileError.of("bad_format", formats=", ".join(FORMATS), fmt=fmt)
    if not text.strip():
        raise AlignFileError.of("empty_file", file=name)
    fmt = sniff(text, name) if fmt == "auto" else fmt
    if fmt == "multimwa":
        pairs = read_multimwa(text, name=name, one_based=one_based)
    elif fmt == "awesome":
        pairs = read_awesome(text, gold_text, name=name, one_based=one_based)
    else:
        kind = "jsonl" if name.endswith((".jsonl", ".json")) else "csv" if name.endswith(
            ".csv") else None
        pairs = read_table(text, name=name, one_based=one_based, kind=kind)
    if lowercase:
        pairs = Pairs((p.lower() for p in pairs), pairs.gold_column)
    if transpose:
        pairs = Pairs((p.transposed() for p in pairs), pairs.gold_column)
    return pairs


def read_pairs(path: str | Path, *, fmt: str = "auto", gold: str | Path | None = None,
               one_based: bool = False, lowercase: bool = False,
               transpose: bool = False) -> Pairs:
    """Read pairs (and gold) from a file; ``gold`` names awesome-align's links file.

    Raises:
        AlignFileError: a missing, binary, huge or malformed file (the message names the
            line and what is wrong).
    """
    text = _read_text(path)
    gold_text = _read_text(gold, "gold file") if gold is not None else None
    if gold_text is not None and fmt == "auto":
        fmt = "awesome"
    return parse_pairs(text, fmt=fmt, name=Path(path).name, gold_text=gold_text,
                       one_based=one_based, lowercase=lowercase, transpose=transpose)


def read_links(path: str | Path, pairs: tuple[Pair, ...], *,
               one_based: bool = False) -> Pairs:
    """Attach gold links from a Pharaoh file (one line per pair) to pairs read without them
    (a blank line: gold with no link)."""
    lines = _lines(_read_text(path, "gold file"))
    name = Path(path).name
    if len(lines) != len(pairs):
        raise AlignFileError.of("links_lines", file=name, lines=len(lines), pairs=len(pairs))
    return Pairs((make_pair(p.text_a, p.text_b, g, one_based=one_based, where=(name, k))
                  for k, (p, g) in enumerate(zip(pairs, lines), 1)), True)
