"""Files of pairs that people upload (the Align page's corpus, the Lab's gold pairs): the
limits every page states under its uploader, and one reading that checks them.

The pairs are read by ``engine.alignment.readers`` (torch-free); a file too large, with
too many pairs or that does not read raises an ``AlignFileError`` the page words in its
language (its code and parameters).
"""

from __future__ import annotations

MAX_UPLOAD_MB = 2  # the pages' and the server's limit (.streamlit/config.toml)
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 2**20
MAX_CORPUS_PAIRS = 2000  # pairs one job reads (engine.jobs.spec.MAX_PAIRS)


def read_pairs(raw: bytes, name: str, words: dict, lang: str = "en", *,
               one_based: bool = False, lowercase: bool = False):
    """The pairs of an uploaded file (``engine.alignment.readers.Pairs``), checked: its
    size, that it is text, its format, and at most :data:`MAX_CORPUS_PAIRS` pairs.

    Args:
        words: the page's words: ``too_big`` ({name}, {size}, {mb}) and ``too_many``
            ({name}, {n}, {limit}). lang: how their numbers are written.

    Raises:
        AlignFileError: over a limit (the page's sentence), or the readers' own (a code).
    """
    from engine.alignment.readers import AlignFileError, decode, parse_pairs

    from .locale import numbers

    num = numbers(lang)
    if len(raw) > MAX_UPLOAD_BYTES:
        raise AlignFileError(words["too_big"].format(
            name=name, size=num.fixed(len(raw) / 2**20, 1), mb=MAX_UPLOAD_MB))
    pairs = parse_pairs(decode(raw, name), name=name, one_based=one_based,
                        lowercase=lowercase)
    if len(pairs) > MAX_CORPUS_PAIRS:
        raise AlignFileError(words["too_many"].format(
            name=name, n=num.count(len(pairs)), limit=num.count(MAX_CORPUS_PAIRS)))
    return pairs


def job_pairs(pairs) -> list[dict]:
    """Pairs as a job's data (``{"text_a", "text_b", "gold"?}``, gold 0-based)."""
    return [p.to_dict() for p in pairs]
