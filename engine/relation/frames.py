"""The browser's copy of a lattice of slider frames: which frames, and their binary form.

:func:`grid` picks the (ε, half-step) values a lattice holds for given slider stops;
:func:`encode` packs a display copy of a :class:`~engine.types.Lattice` (quantised plans,
float32 marginals, float64 metric numbers) into one compressed payload, which the app
sends to the browser and the served engine sends to the app (``POST /v1/lattice``);
:func:`decode` reads it back (what the browser computes). Torch-free.

Payload layout (little-endian): ``b"SKL1"``, a uint32 header length, the header (UTF-8
JSON: sizes, ε and half-step values, weights, section offsets), then one zlib stream
holding the sections: plan scales (E,) and attention scales (E,) float64; row and column
marginal differences π1 − a (E, T, n) and πᵀ1 − b (E, T, m) float32; plans (E, T, n, m)
as unsigned integers of ``bits`` bits, delta-coded along t (each frame minus the previous
one, modulo 2^bits); attention (E, n, m) in the same integers. The plan at (i, k) is
q · scale[i]. A second zlib stream, the header's ``metrics_bytes`` last bytes, holds the
metrics (E, T, K) float64: the app writes the metric strip's texts from them and sends
the browser the payload without them (:func:`browser_copy`).
"""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np

from ..types import Lattice

MAGIC = b"SKL1"
METRICS = ("softmax_col_err", "sinkhorn_row_err", "sinkhorn_col_err", "cost", "entropy",
           "kl_to_product", "mutual_information", "zero_weight_mass", "exact_cost",
           "l1_to_exact", "l1_to_product", "softmax_cost", "converged")


def grid(eps_stops, step_stops, *, max_half_steps: int, max_eps_values: int = 61
         ) -> tuple[np.ndarray, np.ndarray]:
    """The (ε, t) values a lattice holds for sliders with these stops.

    Every half-step stop up to ``max_half_steps`` (the solver's cost grows with the
    largest), and every ε stop, thinned evenly to at most ``max_eps_values`` (the end
    points kept). Stops left out are computed on the server when a slider stops there.

    Returns:
        (eps (E,), steps (T,)), increasing; steps always starts at 1.
    """
    eps = np.unique(np.asarray(eps_stops, dtype=np.float64))
    if eps.size > max_eps_values:
        eps = eps[np.unique(np.linspace(0, eps.size - 1, max_eps_values).round().astype(int))]
    steps = np.unique(np.asarray(step_stops, dtype=np.int64))
    steps = np.union1d([1], steps[(steps >= 1) & (steps <= max(1, max_half_steps))])
    return eps, steps.astype(np.int64)


def _quantise(x: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(E, ...) nonnegative values → (integers, (E,) scales) with x ≈ q · scale."""
    top = float(2 ** bits - 1)
    peak = x.reshape(x.shape[0], -1).max(1)
    scale = np.where(peak > 0, peak, 1.0) / top
    q = np.rint(x / scale.reshape(-1, *([1] * (x.ndim - 1))))
    return np.clip(q, 0, top).astype(f"<u{bits // 8}"), scale


def framed(magic: bytes, header: dict, body: bytes) -> bytes:
    """``magic`` (4 bytes), a uint32 header length, the header as UTF-8 JSON, then ``body``:
    the framing of every payload the browser reads (js/state.js ``readPayload``)."""
    head = json.dumps(header, ensure_ascii=False, allow_nan=False).encode()
    return magic + struct.pack("<I", len(head)) + head + body


def unframed(data: bytes, magic: bytes = MAGIC) -> tuple[dict, bytes]:
    """A :func:`framed` payload back: (header, body); ValueError for another magic or a
    payload cut short."""
    if data[:4] != magic:
        raise ValueError(f"not a sinkscope payload (no {magic.decode()} header)")
    if len(data) < 8 or 8 + struct.unpack("<I", data[4:8])[0] > len(data):
        raise ValueError(f"the {magic.decode()} payload is cut short ({len(data)} bytes)")
    (size,) = struct.unpack("<I", data[4:8])
    return json.loads(data[8:8 + size]), data[8 + size:]


def _pack(lat: Lattice, id_: str, bits: int, level: int) -> bytes:
    E, T = lat.shape
    n, m = lat.plans.shape[-2:]
    plans, plan_scale = _quantise(lat.plans, bits)
    delta = plans.copy()
    delta[:, 1:] -= plans[:, :-1]  # modulo 2^bits: the browser adds them back up
    attention, att_scale = _quantise(lat.attention, bits)
    s = lat.summary
    metrics = np.stack([np.broadcast_to(np.asarray(getattr(s, k), dtype="<f8"), (E, T))
                        for k in METRICS], -1)
    row_diff = lat.plans.sum(-1) - lat.a
    col_diff = lat.plans.sum(-2) - lat.b
    sections = [("plan_scale", plan_scale.astype("<f8")), ("attention_scale", att_scale.astype("<f8")),
                ("row_diff", row_diff.astype("<f4")),
                ("col_diff", col_diff.astype("<f4")), ("plans", delta), ("attention", attention)]
    body, offsets, at = [], {}, 0
    for name, arr in sections:
        raw = np.ascontiguousarray(arr).tobytes()
        pad = (-len(raw)) % 8  # every section starts on an 8-byte boundary
        offsets[name] = [at, len(raw)]
        body.append(raw + b"\0" * pad)
        at += len(raw) + pad
    tail = zlib.compress(np.ascontiguousarray(metrics).tobytes(), level)
    header = {
        "v": 1, "id": id_, "n": int(n), "m": int(m), "bits": bits,
        "eps": [float(e) for e in lat.eps], "steps": [int(t) for t in lat.steps],
        "a": [float(x) for x in lat.a], "b": [float(x) for x in lat.b], "tol": lat.tol,
        "metrics": list(METRICS), "metrics_bytes": len(tail), "sections": offsets,
    }
    return framed(MAGIC, header, zlib.compress(b"".join(body), level) + tail)


def encode(lat: Lattice, id_: str, *, max_bytes: int, level: int = 6) -> tuple[bytes | None, int]:
    """The binary payload of a lattice: 16-bit plans, or 8-bit when those would exceed
    ``max_bytes``; (None, 0) when neither fits.

    Returns:
        (payload or None, bits).
    """
    for bits in (16, 8):
        data = _pack(lat, id_, bits, level)
        if len(data) <= max_bytes:
            return data, bits
    return None, 0


def decode(data: bytes) -> dict:
    """The payload back as arrays (what the browser computes; used by the tests).

    Returns:
        A dict with the header's fields and ``plans`` (E, T, n, m), ``attention``
        (E, n, m), ``row_sums`` (E, T, n), ``col_sums`` (E, T, m) as float64 and
        ``metrics`` {name: (E, T)} (none in a :func:`browser_copy`).
    """
    h, rest = unframed(data)
    body = zlib.decompress(rest[:len(rest) - h.get("metrics_bytes", 0)])
    E, T, n, m = len(h["eps"]), len(h["steps"]), h["n"], h["m"]

    def sec(name, dtype, shape):
        off, length = h["sections"][name]
        return np.frombuffer(body, dtype=dtype, count=length // np.dtype(dtype).itemsize,
                             offset=off).reshape(shape)

    u = f"<u{h['bits'] // 8}"
    q = np.cumsum(sec("plans", u, (E, T, n, m)), axis=1, dtype=np.uint64) % (2 ** h["bits"])
    plans = q * sec("plan_scale", "<f8", (E,))[:, None, None, None]
    attention = sec("attention", u, (E, n, m)) * sec("attention_scale", "<f8", (E,))[:, None, None]
    a, b = np.asarray(h["a"]), np.asarray(h["b"])
    return {**h, "plans": plans, "attention": attention,
            "row_sums": sec("row_diff", "<f4", (E, T, n)) + a,
            "col_sums": sec("col_diff", "<f4", (E, T, m)) + b,
            "metrics": metrics(data) if "metrics_bytes" in h else {}}


def header(data: bytes) -> dict:
    """The payload's header alone (sizes, ε and half-step values, bits)."""
    return unframed(data)[0]


def metrics(data: bytes) -> dict[str, np.ndarray]:
    """The metric numbers of a full payload, {name: (E, T) float64}, read from its
    second stream alone (the plans stay packed)."""
    h = header(data)
    raw = zlib.decompress(data[len(data) - h["metrics_bytes"]:])
    E, T, K = len(h["eps"]), len(h["steps"]), len(h["metrics"])
    table = np.frombuffer(raw, dtype="<f8").reshape(E, T, K)
    return {k: table[..., j] for j, k in enumerate(h["metrics"])}


def browser_copy(data: bytes) -> bytes:
    """The payload as the browser gets it: without the metrics (the page sends their
    texts instead) and without their fields in the header."""
    h, rest = unframed(data)
    cut = h.pop("metrics_bytes", 0)
    h.pop("metrics", None)
    return framed(MAGIC, h, rest[:len(rest) - cut])
