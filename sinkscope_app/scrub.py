"""Live ε and half-step sliders: every frame in the browser, redrawn while dragging.

The engine solves every (ε, t) frame of the current relation in one batched call
(:mod:`engine.lattice`); :func:`encode` packs a display copy of them (quantised plans,
float32 marginals, float64 metric numbers) into one compressed binary payload, sent to the
browser once per texts / model view / layer / head. A client-side component
(:func:`sliders`, JavaScript in ``live.js``) owns both sliders and, on every input event,
swaps the frame's arrays into the charts that viz built (``Plotly.react``), and rewrites
the metric strip, without a round trip. When a slider is released the value goes to the
server, which writes the URL, recomputes the exact relation (exports, other views) and
computes any value the lattice does not hold.

Above a size budget (``SINKSCOPE_LIVE_MAX_CELLS`` token pairs, or a payload over
``SINKSCOPE_LIVE_MAX_BYTES``) no lattice is built: the sliders send their value on release
and the server redraws, as before, with a note that says why.

Payload layout (little-endian): ``b"SKL1"``, a uint32 header length, the header (UTF-8
JSON: sizes, ε and half-step values, weights, section offsets), then one zlib stream
holding the sections: plan scales (E,) and attention scales (E,) float64; metrics
(E, T, K) float64; row and column marginal differences π1 − a (E, T, n) and πᵀ1 − b
(E, T, m) float32; plans (E, T, n, m) as unsigned integers of ``bits`` bits,
delta-coded along t (each frame minus the previous one, modulo 2^bits); attention
(E, n, m) in the same integers. The plan at (i, k) is q · scale[i].
"""

from __future__ import annotations

import hashlib
import json
import struct
import time
import zlib
from dataclasses import dataclass

import numpy as np

from engine.lattice import Lattice
from engine.summary import HELP, ZERO_MASS, Metric

from .live import component

MAGIC = b"SKL1"
METRICS = ("softmax_col_err", "sinkhorn_row_err", "sinkhorn_col_err", "cost", "entropy",
           "kl_to_product", "mutual_information", "zero_weight_mass", "exact_cost",
           "l1_to_exact", "l1_to_product", "softmax_cost", "converged")


@dataclass(frozen=True)
class Payload:
    """What the browser gets for one relation's sliders.

    Attributes:
        id: names the relation (texts, model view, layer, head, weights, pooling, grid).
        data: the binary payload, or None when the sliders fall back to the server.
        note: why there is no payload ("" when there is one).
        bits: 16 or 8, the integers the plans were quantised to (0 without a payload).
        seconds: time to solve and encode the lattice.
    """

    id: str
    data: bytes | None
    note: str = ""
    bits: int = 0
    seconds: float = 0.0


def lattice_id(*geometry: object) -> str:
    """A short stable id for a relation's settings (model, texts, mode, layer, head,
    weights, pooling: what decides its frames; the grid is fixed per process)."""
    return hashlib.sha1(repr(geometry).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _quantise(x: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(E, ...) nonnegative values → (integers, (E,) scales) with x ≈ q · scale."""
    top = float(2 ** bits - 1)
    peak = x.reshape(x.shape[0], -1).max(1)
    scale = np.where(peak > 0, peak, 1.0) / top
    q = np.rint(x / scale.reshape(-1, *([1] * (x.ndim - 1))))
    return np.clip(q, 0, top).astype(f"<u{bits // 8}"), scale


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
                ("metrics", metrics), ("row_diff", row_diff.astype("<f4")),
                ("col_diff", col_diff.astype("<f4")), ("plans", delta), ("attention", attention)]
    body, offsets, at = [], {}, 0
    for name, arr in sections:
        raw = np.ascontiguousarray(arr).tobytes()
        pad = (-len(raw)) % 8  # every section starts on an 8-byte boundary
        offsets[name] = [at, len(raw)]
        body.append(raw + b"\0" * pad)
        at += len(raw) + pad
    header = json.dumps({
        "v": 1, "id": id_, "n": int(n), "m": int(m), "bits": bits,
        "eps": [float(e) for e in lat.eps], "steps": [int(t) for t in lat.steps],
        "a": [float(x) for x in lat.a], "b": [float(x) for x in lat.b], "tol": lat.tol,
        "metrics": list(METRICS), "sections": offsets, "zero_mass": ZERO_MASS,
    }, allow_nan=False).encode()
    return MAGIC + struct.pack("<I", len(header)) + header + zlib.compress(b"".join(body), level)


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
        ``metrics`` {name: (E, T)}.
    """
    if data[:4] != MAGIC:
        raise ValueError("not a sinkscope lattice payload")
    (size,) = struct.unpack("<I", data[4:8])
    h = json.loads(data[8:8 + size])
    body = zlib.decompress(data[8 + size:])
    E, T, n, m = len(h["eps"]), len(h["steps"]), h["n"], h["m"]

    def sec(name, dtype, shape):
        off, length = h["sections"][name]
        return np.frombuffer(body, dtype=dtype, count=length // np.dtype(dtype).itemsize,
                             offset=off).reshape(shape)

    u = f"<u{h['bits'] // 8}"
    q = np.cumsum(sec("plans", u, (E, T, n, m)), axis=1, dtype=np.uint64) % (2 ** h["bits"])
    plans = q * sec("plan_scale", "<f8", (E,))[:, None, None, None]
    attention = sec("attention", u, (E, n, m)) * sec("attention_scale", "<f8", (E,))[:, None, None]
    metrics = sec("metrics", "<f8", (E, T, len(h["metrics"])))
    a, b = np.asarray(h["a"]), np.asarray(h["b"])
    return {**h, "plans": plans, "attention": attention,
            "row_sums": sec("row_diff", "<f4", (E, T, n)) + a,
            "col_sums": sec("col_diff", "<f4", (E, T, m)) + b,
            "metrics": {k: metrics[..., i] for i, k in enumerate(h["metrics"])}}


def build(lat_fn, id_: str, *, max_bytes: int) -> Payload:
    """Solve (``lat_fn()`` → :class:`Lattice`) and encode, timing both; a payload over
    ``max_bytes`` becomes a fallback with a note."""
    t0 = time.perf_counter()
    lat = lat_fn()
    data, bits = encode(lat, id_, max_bytes=max_bytes)
    seconds = time.perf_counter() - t0
    if data is None:
        return Payload(id_, None, "Live sliders are off for these texts: their frames would "
                       f"take more than {max_bytes / 1e6:.1f} MB (SINKSCOPE_LIVE_MAX_BYTES), "
                       "so each slider release recomputes on the server.", 0, seconds)
    return Payload(id_, data, "", bits, seconds)


def too_large_note(n: int, m: int, max_cells: int) -> str:
    """Why the sliders recompute on the server for texts of n × m tokens."""
    return (f"Live sliders are off for these texts: {n} × {m} tokens is more than the "
            f"{max_cells:,} token pairs whose frames are precomputed "
            "(SINKSCOPE_LIVE_MAX_CELLS), so each slider release recomputes on the server.")


# --------------------------------------------------------------------------- components
def metric_dicts(rows: list[Metric]) -> list[dict]:
    """The metric strip's rows as JSON for the component."""
    return [{"key": r.key, "label": r.label, "value": r.value, "detail": r.detail,
             "help": r.help} for r in rows]


def sliders(*, key: str, eps: float, steps: int, eps_stops, step_stops, lattice: str | None,
            metrics: list[Metric], note: str, help: dict[str, str], on_change) -> dict | None:
    """Both sliders and the metric strip, drawn and driven in the browser.

    Args:
        key: the component's fixed key.
        eps, steps: the values the server holds (the URL's).
        eps_stops, step_stops: the sliders' stops (arrow keys move one stop).
        lattice: the id of the lattice payload whose frames the sliders scrub, or None
            when the server redraws on release.
        metrics: the metric strip for (eps, steps), as the server computed it.
        note: a sentence shown under the sliders (why they are not live), or "".
        help: help texts of the two sliders, {"eps": ..., "steps": ...}.
        on_change: called (before the rerun) when a slider is released on a new value.

    Returns:
        The component's state: {"frame": {"eps": ε, "steps": t}} once a slider was
        released, else empty. (Not "value": Streamlit unwraps a state holding only a
        dict named "value" and would call callbacks per field.)
    """
    data = {
        "role": "scrub", "lattice": lattice, "eps": float(eps), "steps": int(steps),
        "eps_stops": [float(e) for e in eps_stops],
        "eps_labels": [f"{e:g}" for e in eps_stops],
        "step_stops": [int(t) for t in step_stops],
        "metrics": metric_dicts(metrics), "note": note, "help": help,
        "zero_mass": ZERO_MASS, "metric_help": HELP,
    }
    return component("sinkscope_scrub")(key=key, data=data, on_frame_change=on_change)


def lattice_element(payload: Payload | None, *, key: str = "sinkscope_lattice") -> None:
    """Send the lattice's frames to the browser (an invisible element); nothing for None.

    The payload is the same bytes on every rerun for the same relation, so Streamlit
    sends it once and refers to it by hash afterwards.
    """
    if payload is None or payload.data is None:
        return
    component("sinkscope_lattice")(key=key, data=payload.data)


def parse_value(state, eps_stops, step_stops) -> tuple[float, int] | None:
    """(ε, t) from the component's state {"frame": {"eps", "steps"}}, snapped to the
    nearest stops; None when it holds no usable value (the browser's data is untrusted)."""
    try:
        v = state.get("frame") if hasattr(state, "get") else getattr(state, "frame", None)
        eps, steps = float(v["eps"]), float(v["steps"])
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    if not (np.isfinite(eps) and np.isfinite(steps) and eps > 0):
        return None
    e = np.asarray(eps_stops, dtype=float)
    t = np.asarray(step_stops, dtype=float)
    return (float(e[np.argmin(np.abs(np.log(e) - np.log(eps)))]),
            int(t[np.argmin(np.abs(t - steps))]))
