"""Live ε and half-step sliders: every frame in the browser, redrawn while dragging.

The engine solves every (ε, t) frame of the current relation in one batched call
(:mod:`engine.relation.lattice`); :func:`encode` packs a display copy of them (quantised
plans, float32 marginals, float64 metric numbers) into one compressed binary payload. The
browser gets it without the metric numbers (``frames.browser_copy``), once per texts /
model view / layer / head, and in their place the texts written from them in the page's
language (:func:`frame_texts`: the metric strip's values and details and the titles'
numbers of every frame, deflated; a second small payload). A client-side component
(:func:`sliders`, JavaScript in ``js/scrub.js``) owns both sliders and, on every input
event, swaps the frame's arrays into the charts that viz built (``Plotly.react``), and
looks up the metric strip's and titles' texts, without a round trip. When a slider is
released the value goes to the server, which writes the URL, recomputes the exact relation
(exports, other views) and computes any value the lattice does not hold.

Above a size budget (``SINKSCOPE_LIVE_MAX_CELLS`` token pairs, or a payload over
``SINKSCOPE_LIVE_MAX_BYTES``) no lattice is built: the sliders send their value on release
and the server redraws, as before, with a note that says why.

The payload's binary layout is :mod:`engine.relation.frames`'s (it also travels from a served
engine, ``POST /v1/lattice``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
import zlib
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from engine.relation import frames
from engine.relation.frames import MAGIC, METRICS, decode, encode  # noqa: F401  (the payload)
from engine.relation.summary import NUMBERS, Metric, Numbers, half_steps_text, numbers
from engine.types import Summary

from . import metrics as strip
from .inputs import written

TEXTS_MAGIC = b"SKT1"


@dataclass(frozen=True)
class Payload:
    """What the browser gets for one relation's sliders.

    Attributes:
        id: names the relation (texts, model view, layer, head, weights, pooling, grid).
        data: the binary payload as the browser gets it (``frames.browser_copy``), or None
            when the sliders fall back to the server.
        note: why there is no payload ("" when there is one).
        bits: 16 or 8, the integers the plans were quantised to (0 without a payload).
        seconds: time to solve and encode the lattice.
        metrics: the frames' metric numbers, {name: (E, T)} (``frames.metrics``), which
            :func:`frame_texts` writes for the browser; None without a payload.
    """

    id: str
    data: bytes | None
    note: str = ""
    bits: int = 0
    seconds: float = 0.0
    metrics: dict | None = None


def lattice_id(*geometry: object) -> str:
    """A short stable id for a relation's settings (model, texts, mode, layer, head,
    weights, pooling: what decides its frames; the grid is fixed per process)."""
    return hashlib.sha1(repr(geometry).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def build(pack, id_: str, *, max_bytes: int) -> Payload:
    """The payload ``pack()`` makes — (bytes or None, bits): a lattice solved and encoded
    here, or received from a served engine — timed; no bytes (over ``max_bytes``) becomes
    a fallback with a note."""
    t0 = time.perf_counter()
    data, bits = pack()
    seconds = time.perf_counter() - t0
    if data is None:
        return Payload(id_, None, "Live sliders are off for these texts: their frames would "
                       f"take more than {max_bytes / 1e6:.1f} MB (SINKSCOPE_LIVE_MAX_BYTES), "
                       "so each slider release recomputes on the server.", 0, seconds)
    return Payload(id_, frames.browser_copy(data), "", bits, seconds, frames.metrics(data))


def too_large_note(n: int, m: int, max_cells: int) -> str:
    """Why the sliders recompute on the server for texts of n × m tokens."""
    return (f"Live sliders are off for these texts: {n} × {m} tokens is more than the "
            f"{max_cells:,} token pairs whose frames are precomputed "
            "(SINKSCOPE_LIVE_MAX_CELLS), so each slider release recomputes on the server.")


# --------------------------------------------------------------------------- components
def component(name: str):
    """:func:`sinkscope_app.live.component` (imported on first use: the payload's functions
    and :func:`slider_data` serve the notebook widget, which runs without Streamlit)."""
    from .live import component as mount

    return mount(name)


def sent(data: dict) -> list:
    """:func:`sinkscope_app.live.sent`: ``data`` in a one-element list."""
    return [data]


# Every word the sliders show; the browser fills the {fields} (js/format.js, fill).
WORDS = {
    "eps_label": "ε — entropy (log scale)",
    "steps_label": "half-steps (1 = softmax)",
    "eps_value": "ε = {value}",
    "step_one": "1 half-step = softmax",
    "about": "About {label}",
    "metrics": "Metrics of the Sinkhorn plan shown",
    "release": "Release the slider to recompute on the server.",
    "nearest": "Showing the nearest precomputed frame (ε = {eps}, {steps}); ε = {want_eps} "
               "with {want_steps} is computed on the server when you let go.",
    "softmax_note": "Half-step 1: the Sinkhorn plan is softmax, diag(a)·softmax(S/ε) — rows "
                    "right, columns off by the softmax column error.",
    # "N half-steps" (the stops' texts) and what the browser writes into the graph's hovers
    "half_step": "{n} half-step",
    "half_steps": "{n} half-steps",
    "node": "{SIDE}[{k}] {label}<br>weight {side} = {weight}, {verb} {sum}<br>heaviest "
            "partners:<br>",
    "sends": "sends",
    "receives": "receives",
    "no_mass": "no mass",
}
URL_KEYS = {"eps": "eps", "steps": "steps"}  # the URL's names of the two values


def steps_text(t: int, words: dict[str, str] = WORDS, num: Numbers = NUMBERS["en"]) -> str:
    """"1 half-step", "12 half-steps" in the language of ``words``, the count written by
    ``num`` (English: ``summary.half_steps_text``, "1,000 half-steps")."""
    w, key = {**WORDS, **words}, "half_step" if int(t) == 1 else "half_steps"
    if num is NUMBERS["en"] and w[key] == WORDS[key]:
        return half_steps_text(int(t))
    return w[key].format(n=num(int(t)))


def step_labels(step_stops, words: dict[str, str] = WORDS,
                num: Numbers = NUMBERS["en"]) -> list[str]:
    """What the half-step slider says at each stop: "1 half-step = softmax", "2 half-steps"…
    (in the language of ``words``, counts written by ``num``)."""
    w = {**WORDS, **words}
    return [w["step_one"] if int(t) == 1 else steps_text(t, w, num) for t in step_stops]


def eps_labels(eps_stops, num: Numbers = NUMBERS["en"]) -> list[str]:
    """What the ε slider says at each stop: "0.1", "1" (English), "0,1" (Spanish)."""
    if num is NUMBERS["en"]:
        return [f"{e:g}" for e in eps_stops]
    return [num(float(e)) for e in eps_stops]


def metric_dicts(rows: list[Metric]) -> list[dict]:
    """The metric strip's rows as JSON for the component."""
    return [{"key": r.key, "label": r.label, "value": r.value, "detail": r.detail,
             "help": r.help} for r in rows]


def frame_stops(eps_stops, step_stops, grid_eps, grid_steps) -> dict[str, list[int]]:
    """The lattice frame each slider stop shows, as indices into the lattice's (ε, t) grid
    (``engine.relation.frames.grid``): the grid's ε nearest the stop on a log scale
    (:func:`nearest_stops`'s rule) and its largest half-step count ≤ the stop (the frame
    nearest on the way there; 1 is always held)."""
    t = np.asarray(grid_steps, dtype=float)
    return {"eps": [nearest_stops(e, 1, grid_eps, grid_steps)[0] for e in eps_stops],
            "steps": [max(int(np.searchsorted(t, float(s), side="right")) - 1, 0)
                      for s in step_stops]}


def frame_texts(payload: Payload, lang: str = "en") -> dict:
    """What the browser writes with each frame of ``payload``'s lattice, in ``lang``.

    Frame (i, k) is entry q = i·T + k of every list (E ε values × T half-step counts):
    the metric strip as ``metrics.rows`` writes it, and the numbers the figures' titles
    take (``viz.heatmaps``, ``viz.bipartite``).

    Returns:
        {"eps": (E,) each ε as the language writes it; "values": {key: (E·T,)} each row's
        value; "details": {key: (E·T,)} for the rows with a detail; "max_err": (E·T,)
        the larger Sinkhorn marginal error; "converged": (E·T,) bools}.
    """
    h, mx, num = frames.header(payload.data), payload.metrics, numbers(lang)
    values, details, max_err, converged = {}, {}, [], []
    for i in range(len(h["eps"])):
        for k, t in enumerate(h["steps"]):
            s = Summary(**{key: float(mx[key][i, k]) for key in METRICS})
            r = SimpleNamespace(summary=s, coupling=SimpleNamespace(half_steps_run=int(t)))
            for row in strip.rows(r, lang):
                values.setdefault(row.key, []).append(row.value)
                details.setdefault(row.key, []).append(row.detail)
            max_err.append(num(max(s.sinkhorn_row_err, s.sinkhorn_col_err)))
            converged.append(bool(s.converged))
    return {"eps": [num(e) for e in h["eps"]], "values": values,
            "details": {key: d for key, d in details.items() if any(d)},
            "max_err": max_err, "converged": converged}


def texts_id(lattice: str, lang: str) -> str:
    """The id of the texts of lattice ``lattice`` in ``lang``."""
    return f"{lattice}:{lang}"


def texts_payload(payload: Payload, lang: str = "en", level: int = 9) -> bytes:
    """:func:`frame_texts` as the browser gets them: ``b"SKT1"``, a uint32 header length,
    the header (JSON: {"id": :func:`texts_id`}), then the texts as deflated JSON."""
    body = json.dumps(frame_texts(payload, lang), ensure_ascii=False, separators=(",", ":"))
    return frames.framed(TEXTS_MAGIC, {"id": texts_id(payload.id, lang)},
                         zlib.compress(body.encode(), level))


def read_texts(data: bytes) -> dict:
    """A :func:`texts_payload` back: its header's fields and the texts (the tests')."""
    head, body = frames.unframed(data, TEXTS_MAGIC)
    return {**head, **json.loads(zlib.decompress(body))}


def sliders(*, key: str, eps: float, steps: int, eps_stops, step_stops, lattice: str | None,
            metrics: list[Metric], note: str, help: dict[str, str], on_change,
            words: dict[str, str] | None = None,
            url_keys: dict[str, str] | None = None,
            num: Numbers = NUMBERS["en"], grid=None, lang: str = "en") -> dict | None:
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
        words: the sliders' words (:data:`WORDS`, the default; another language's table
            has the same keys).
        url_keys: the URL's names of ε and t (:data:`URL_KEYS`), which the browser keeps
            up to date while a slider moves, with each stop's value as the address writes
            it (``inputs.written``: "0.5" on a Spanish page too, whose label says "0,5").
        num: how the page's language writes numbers (``engine.relation.summary.numbers``);
            the browser writes the numbers it computes the same way (js/format.js).
        grid: the lattice's (ε values, half-step counts) (``frames.grid``), whose frame each
            stop shows (:func:`frame_stops`); by default the stops themselves.
        lang: the page's language, whose texts of each frame (:func:`texts_payload`) the
            browser looks up while a slider moves.

    Returns:
        The component's state: {"frame": {"eps": ε, "steps": t}} once a slider was
        released, else empty. (Not "value": Streamlit unwraps a state holding only a
        dict named "value" and would call callbacks per field.)
    """
    data = slider_data(eps=eps, steps=steps, eps_stops=eps_stops, step_stops=step_stops,
                       lattice=lattice, metrics=metrics, note=note, help=help, words=words,
                       url_keys=url_keys, num=num, grid=grid, lang=lang)
    return component("sinkscope_scrub")(key=key, data=sent(data), on_frame_change=on_change)


def slider_data(*, eps: float, steps: int, eps_stops, step_stops, lattice: str | None,
                metrics: list[Metric], note: str, help: dict[str, str],
                words: dict[str, str] | None = None, url_keys: dict[str, str] | None = None,
                num: Numbers = NUMBERS["en"], grid=None, lang: str = "en") -> dict:
    """What ``js/scrub.js`` draws the sliders and the metric strip from (:func:`sliders`'
    arguments, the same names; the app's page and the notebook widget both send it)."""
    words = {**WORDS, **(words or {})}
    i, k = nearest_stops(eps, steps, eps_stops, step_stops)
    return {
        "role": "scrub", "lattice": lattice, "eps": float(eps), "steps": int(steps),
        "eps_stops": [float(e) for e in eps_stops], "eps_index": i,
        "eps_labels": eps_labels(eps_stops, num),
        "step_stops": [int(t) for t in step_stops], "steps_index": k,
        "step_labels": step_labels(step_stops, words, num),
        "steps_texts": [steps_text(t, words, num) for t in step_stops],
        "metrics": metric_dicts(metrics), "note": note, "help": help, "words": words,
        "texts": texts_id(lattice, lang) if lattice else None,
        "url": dict(url_keys or URL_KEYS), "numbers": dataclasses.asdict(num),
        "url_eps": [written(float(e)) for e in eps_stops],
        "frames": frame_stops(eps_stops, step_stops, *(grid or (eps_stops, step_stops))),
    }


def lattice_element(payload: Payload | None, *, key: str = "sinkscope_lattice") -> None:
    """Send the lattice's frames to the browser (an invisible element); nothing for None.

    The payload is the same bytes on every rerun for the same relation, so Streamlit
    sends it once and refers to it by hash afterwards.
    """
    if payload is None or payload.data is None:
        return
    component("sinkscope_lattice")(key=key, data=payload.data)


def texts_element(data: bytes | None, *, key: str = "sinkscope_texts") -> None:
    """Send the texts of the lattice's frames in the page's language (:func:`texts_payload`)
    to the browser, as :func:`lattice_element` does; nothing for None."""
    if data is not None:
        component("sinkscope_texts")(key=key, data=data)


def nearest_stops(eps: float, steps: float, eps_stops, step_stops) -> tuple[int, int]:
    """The indices of the ε stop nearest ``eps`` (on a log scale) and of the half-step stop
    nearest ``steps``."""
    e = np.asarray(eps_stops, dtype=float)
    t = np.asarray(step_stops, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        i = np.argmin(np.nan_to_num(np.abs(np.log(e) - np.log(float(eps))), nan=np.inf))
    return int(i), int(np.argmin(np.abs(t - float(steps))))


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
    i, k = nearest_stops(eps, steps, eps_stops, step_stops)
    return float(eps_stops[i]), int(step_stops[k])
