"""Writing large answers in pieces: the JSON of a document as a stream of chunks, and a
body cut into slices, so a replica never holds a second whole copy of a large answer and
no single message between Serve's proxy and the replica carries all of it.

:func:`json_chunks` gives exactly the bytes of :func:`engine.serving.wire.dumps` (JSON),
cut into chunks of about ``size`` bytes; it writes arrays row by row from their numbers
(``float.__repr__``, as ``json`` does), ~10× faster than building nested lists first
(the 6 × 12 heads grid of two 160-token texts: 167 MB). Everything that is not an array
goes through :func:`engine.io.export.json_safe` and ``json.dumps`` as in ``wire.dumps``.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterator

import numpy as np

from ..io.export import json_safe
from . import wire

CHUNK = 1 << 20  # bytes per piece of a streamed answer


def _dumps(v: Any) -> str:
    return json.dumps(json_safe(v), allow_nan=False, ensure_ascii=False,
                      separators=(",", ":"))


def _row(x: np.ndarray) -> str:
    """The numbers of a 1-d array as JSON, without brackets (``_js`` in engine.io.export:
    bools and integers as they are, everything else as float64, non-finite as null)."""
    if x.dtype == bool:
        return ",".join("true" if v else "false" for v in x.tolist())
    if x.dtype.kind in "iu":
        return ",".join(map(int.__repr__, x.tolist()))
    x = x.astype(np.float64, copy=False)
    if np.isfinite(x).all():
        return ",".join(map(float.__repr__, x.tolist()))
    return ",".join(float.__repr__(v) if math.isfinite(v) else "null" for v in x.tolist())


def _array(x: np.ndarray) -> Iterator[str]:
    if x.ndim == 1:
        yield "[" + _row(x) + "]"
        return
    if x.ndim == 2 and x.size <= 65536:
        yield "[" + ",".join("[" + _row(r) + "]" for r in x) + "]"
        return
    yield from _items(x, _array)


def _items(items, write) -> Iterator[str]:
    """A JSON array of ``items``, each written by ``write``."""
    yield "["
    for i, item in enumerate(items):
        if i:
            yield ","
        yield from write(item)
    yield "]"


def _pieces(v: Any) -> Iterator[str]:
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        yield "{"
        for i, (k, x) in enumerate(v.items()):
            yield ("," if i else "") + json.dumps(k, ensure_ascii=False) + ":"
            yield from _pieces(x)
        yield "}"
    elif isinstance(v, (list, tuple)):
        yield from _items(v, _pieces)
    elif isinstance(v, np.ndarray) and v.ndim >= 1:
        yield from _array(v)
    else:
        yield _dumps(v)


def json_chunks(doc: dict[str, Any], size: int = CHUNK) -> Iterator[bytes]:
    """``wire.dumps(doc, JSON)`` in chunks of about ``size`` bytes (UTF-8)."""
    parts: list[str] = []
    n = 0
    for piece in _pieces(doc):
        parts.append(piece)
        n += len(piece)
        if n >= size:
            yield "".join(parts).encode()
            parts, n = [], 0
    if parts:
        yield "".join(parts).encode()


def dumps(doc: dict[str, Any], media: str = wire.JSON) -> bytes:
    """:func:`engine.serving.wire.dumps`, with JSON written by :func:`json_chunks`."""
    if media == wire.JSON:
        return b"".join(json_chunks(doc))
    return wire.dumps(doc, media)


def slices(body: bytes, size: int = CHUNK) -> Iterator[bytes]:
    """``body`` in slices of ``size`` bytes (copies of one slice at a time)."""
    view = memoryview(body)
    for start in range(0, len(view), size):
        yield bytes(view[start:start + size])
