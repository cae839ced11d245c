"""The HTTP API's two encodings of one document: JSON, and NPZ for speed.

A document is what :func:`engine.io.export.relation_document` returns: dicts, lists, strings,
numbers and numpy arrays. JSON (the default, for curl and any language) writes arrays as
nested lists with null for non-finite numbers (:func:`engine.io.export.json_safe`). NPZ, asked
for with ``Accept: application/x-npz``, keeps the arrays as they are (float64, ±inf
included; float64 arrays that hold float32 values, such as hidden states, as float32) and
the rest of the document as JSON inside the archive. For the 6 × 12 heads grid of two
~20-token texts that is 1.6 MB written and read back in 5–24 ms, against 3.4 MB and
0.27–0.44 s as JSON (``make bench``). Both decode to the same Relation.

Reading uses ``np.load(..., allow_pickle=False)``: an archive can hold arrays only.
Torch-free (the HTTP client imports it).
"""

from __future__ import annotations

import io
import json
import math
from typing import Any

import numpy as np

from ..io.export import json_safe

JSON = "application/json"
NPZ = "application/x-npz"
_DOC = "__document__"  # the archive member holding the document's JSON skeleton
_REF = "$array"  # {"$array": "a3"} stands for the archive member a3


def media_type(accept: str | None) -> str:
    """The encoding a client asks for in its Accept header: NPZ only when it names
    ``application/x-npz``; JSON otherwise (also for ``*/*`` or no header)."""
    return NPZ if accept and NPZ in accept.lower() else JSON


def dumps(doc: dict[str, Any], media: str = JSON) -> bytes:
    """Encode a document as JSON (UTF-8, compact) or NPZ (uncompressed)."""
    if media == JSON:
        return json.dumps(json_safe(doc), allow_nan=False, ensure_ascii=False,
                          separators=(",", ":")).encode()
    arrays: dict[str, np.ndarray] = {}

    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [strip(x) for x in v]
        if isinstance(v, float) and not math.isfinite(v):
            v = np.float64(v)
        if isinstance(v, (np.ndarray, np.generic)):
            name = f"a{len(arrays)}"
            arrays[name] = _narrow(np.asarray(v))
            return {_REF: name}
        return v

    skeleton = json.dumps(strip(doc), allow_nan=False, ensure_ascii=False).encode()
    buf = io.BytesIO()
    np.savez(buf, **arrays, **{_DOC: np.frombuffer(skeleton, dtype=np.uint8)})
    return buf.getvalue()


def _narrow(x: np.ndarray) -> np.ndarray:
    """float64 arrays whose every value is a float32 (hidden states, one head's queries
    and keys: the model's own float32 outputs) travel as float32, half the bytes; the
    reader's float64 gets the same values back."""
    if x.dtype == np.float64 and x.size > 64:
        x32 = x.astype(np.float32)
        if np.array_equal(x32, x):
            return x32
    return x


def loads(body: bytes, media: str = JSON) -> dict[str, Any]:
    """Decode :func:`dumps`' bytes. JSON gives lists (``relation_from_dict`` turns them
    into arrays); NPZ gives the arrays themselves. Raises ValueError on bad input."""
    if media == JSON:
        return json.loads(body)
    try:
        with np.load(io.BytesIO(body), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as e:  # zipfile, OSError, ValueError: all mean "not our archive"
        raise ValueError(f"not an NPZ document: {e}") from None
    if _DOC not in arrays:
        raise ValueError("not an NPZ document: no document skeleton inside")
    skeleton = json.loads(arrays.pop(_DOC).tobytes())

    def fill(v):
        if isinstance(v, dict):
            if len(v) == 1 and _REF in v:
                return arrays[v[_REF]]
            return {k: fill(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fill(x) for x in v]
        return v

    return fill(skeleton)
