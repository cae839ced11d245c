"""Live θ, τ and m sliders of the Align page's Pair view: the page's side.

The payload itself (every value the sliders can show for one pair and method, packed as
``SKA1``; how it is built and read) is the engine's: :mod:`engine.alignment.live`, built
in the engine's process (embedded here, or ``POST /v1/align/live`` on a served engine) and
re-exported here. This module keeps what only the page needs, torch-free: the sliders'
words (:data:`WORDS`), the size budget's note in the page's language (:func:`too_large`),
the component that sends the payload and the sliders (:func:`payload_element`,
:func:`controls`), reading a slider's state back (:func:`parse_choice`), the figures'
style for the browser (:func:`style_of`) and the links and scores lines.

``js/align.js`` redraws the link matrix, the bipartite graph, the links line and the scores
line on every input of a slider: it reads the links (V > θ, the rule of
:mod:`engine.alignment.extract`) and looks the rest up (tested against Python on fixtures,
``tests/test_align_js.py``). On release the values go to the server, which writes the URL
and redraws the table of every method's scores from the same payload.

Above a size budget (``SINKSCOPE_LIVE_MAX_CELLS`` word pairs, or values over
``SINKSCOPE_LIVE_MAX_BYTES``) there is no payload: the page keeps Streamlit's sliders,
which recompute on release, with a note that says why.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from engine.alignment.live import (GRID_KEYS, MAGIC, SHOWN, THETA_STOPS,  # noqa: F401
                                   LivePayload, build, decode, fixed3, from_values, grid_of,
                                   kind_table, payload_id, setting_counts, side_safe_float32,
                                   state_scores, thetas_of, thousandths)

# The words the live sliders show, in English: the page passes its own (``t``) over these.
WORDS = {
    "threshold": "threshold θ on the method's values",
    "threshold_help": "A link where the value exceeds θ. Plans are min-max scaled per pair "
                      "(OTAlign), so one θ means the same for pairs of any length.",
    "tau": "τ (KL strength of the marginals; large τ is balanced)",
    "mass": "m (share of the shorter text's words moved)",
    "mass_help": "Partial transport moves the share m of the shorter text's words (each word "
                 "carries at most its own mass), so m < 1 leaves its worst-matched words "
                 "unaligned. The stops are the engine's grid k/51, every other one.",
    "pair_scores_live": "{method}: precision {precision}, recall {recall}, F1 {f1}, "
                        "AER {aer}, null F1 {null_f1}, total F1 {total_f1}",
    "decimal": ".",  # the decimal mark of the scores line
    "links_count": "{count} links",
    "link_count": "1 link",
    "links_line": "Links (Pharaoh, 0-based): {links}",
    "about": "About {label}",
    "live_off_cells": "Live sliders are off for these texts: {n} × {m} words is more than "
                      "the {cap} word pairs whose plans are precomputed, so each slider "
                      "release recomputes on the server.",
    "live_off_bytes": "Live sliders are off for these texts: the plans at every slider "
                      "value would take more than {mb} MB, so each slider release "
                      "recomputes on the server.",
}


def words_of(t: dict) -> dict[str, str]:
    """The sliders' words: the page's (``t``) where it has them, else :data:`WORDS`."""
    return {k: t.get(k, v) for k, v in WORDS.items()}



def scores(links, pair) -> dict | None:
    """This pair's scores of ``links`` (engine.alignment.score), None without gold."""
    from engine.alignment.score import METRICS, metrics_from_counts, pair_counts

    if not pair.has_gold:
        return None
    per = metrics_from_counts(pair_counts(links, pair))
    return {name: float(per[name]) for name in METRICS}


def count_text(n: int, lang: str = "en") -> str:
    """A whole number as ``lang`` writes it: "12,345" in English; in Spanish grouped by a
    no-break space from five digits on ("4096", "12 345")."""
    from engine.relation.summary import numbers

    num = numbers(lang)
    if num.group == ",":
        return f"{int(n):,}"
    return f"{int(n):,}".replace(",", num.group) if abs(int(n)) >= 10_000 else str(int(n))


def decimal_text(x: float, lang: str = "en", digits: int = 1) -> str:
    """``x`` with ``digits`` decimals and ``lang``'s decimal mark ("2.5", "2,5")."""
    from engine.relation.summary import numbers

    return f"{float(x):.{digits}f}".replace(".", numbers(lang).decimal)


def too_large(n: int, m: int, G: int, *, max_cells: int, max_bytes: int,
              words: dict[str, str], lang: str = "en") -> str:
    """Why there is no payload for n × m words and G grid values ("" when there is one),
    its numbers written as ``lang`` writes them."""
    if n * m > max_cells:
        return words["live_off_cells"].format(n=n, m=m, cap=count_text(max_cells, lang))
    if 4 * max(G, 1) * n * m > max_bytes:
        return words["live_off_bytes"].format(mb=decimal_text(max_bytes / 1e6, lang))
    return ""


# --------------------------------------------------------------------------- components
_JS_FILES = ("state", "format", "slider", "align")


def _component():
    """The component of ``js/align.js``: its own bundle (one slider is slider.js's)."""
    import streamlit as st

    from .live import bundle

    return st.components.v2.component("sinkscope_align", js=bundle(_JS_FILES),
                                      isolate_styles=False)


def payload_element(payload: LivePayload, data: bytes, *, key: str = "align_payload") -> None:
    """Send the payload's bytes (an invisible element). The same bytes on every rerun for
    the same pair and method, so a slider release sends only the small controls."""
    _component()(key=key, data=data)


def controls(*, key: str, payload: LivePayload, theta: float, grid_value: float | None,
             words: dict[str, str], style: dict, note: str, lines: dict[str, str],
             on_change) -> dict | None:
    """The θ slider (and τ or m), the links line and the scores line, in the browser.

    Args:
        key: the component's fixed key.
        payload: the pair's :class:`LivePayload` (sent by :func:`payload_element`).
        theta, grid_value: the values the server holds (the URL's).
        words: :func:`words_of` the page's words, plus "method".
        style: how the figures draw links (:func:`style_of`).
        note: a sentence under the sliders ("" for none).
        lines: {"scores", "links"}: the two lines as the server wrote them (shown until
            the payload is decoded; :func:`scores_line`, :func:`links_line`).
        on_change: called (before the rerun) when a slider is released on a new value.

    Returns:
        The component's state: {"choice": {"theta": θ, "grid": value}} once released.
    """
    from .inputs import written
    from .live import sent

    g = payload.grid_index(grid_value)
    mark = words.get("decimal", ".")  # the sliders' values with the page's decimal mark
    data = {"role": "align", "payload": payload.id, "theta_stops": list(THETA_STOPS),
            "theta_labels": [f"{x:.2f}".replace(".", mark) for x in THETA_STOPS],
            "theta": payload.theta_index(theta), "grid_key": payload.grid_key,
            "grid_stops": list(payload.grid),
            "grid_labels": [f"{x:g}".replace(".", mark) for x in payload.grid], "grid": g,
            "words": words, "style": style, "note": note, "lines": lines,
            "url": {"theta": "threshold", "tau": "tau", "mass": "mass"},
            # each stop's value as the address writes it (the labels carry the decimal mark)
            "url_values": {"theta": [written(x) for x in THETA_STOPS],
                           "grid": [written(float(x)) for x in payload.grid]}}
    return _component()(key=key, data=sent(data), on_choice_change=on_change)


def parse_choice(state, grid: Sequence[float]) -> tuple[float, float | None] | None:
    """(θ, grid value) from the component's state, snapped to the stops; None when it holds
    nothing usable (the browser's data is untrusted)."""
    try:
        v = state.get("choice") if hasattr(state, "get") else getattr(state, "choice", None)
        theta = float(v["theta"])
        value = v.get("grid")
        value = None if value is None else float(value)
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    if not np.isfinite(theta) or (value is not None and not np.isfinite(value)):
        return None
    th = THETA_STOPS[LivePayload.theta_index(theta)]
    if not grid or value is None:
        return th, None
    g = np.asarray(grid, dtype=np.float64)
    return th, float(g[int(np.argmin(np.abs(g - value)))])


def style_of(n: int, m: int, theme: str, words: dict | None = None, lang: str = "en") -> dict:
    """How ``viz.align`` draws links for n × m words on ``theme``: what the browser needs to
    rebuild the figures' link and node traces as viz does (sizes, symbols, colours, the
    graph's node heights, every word the traces carry, from ``words`` over
    ``viz.align.WORDS``, so the browser writes no word of its own, and ``lang``'s number
    format for the plan's values, ``engine.relation.summary.numbers``)."""
    from engine.relation.summary import numbers
    import viz.align as va
    from viz import theme as th

    w = va.words_of(words)
    span = max(n, m)
    ya = np.linspace(0, span - 1, n) if n > 1 else np.array([(span - 1) / 2])
    yb = np.linspace(0, span - 1, m) if m > 1 else np.array([(span - 1) / 2])
    return {"size": max(6, min(16, int(360 / max(n, m)))), "kinds": list(va.KINDS),
            "symbols": va.SYMBOLS, "colors": va.COLORS, "names": w["names"], "dash": va.DASH,
            "null_symbols": va.NULL_SYMBOLS, "null_names": w["null_names"],
            "node_names": w["nodes"], "unaligned": w["unaligned"],
            "text_colors": {s: th.text_color(s, theme) for s in ("a", "b")},
            "ya": [float(y) for y in ya], "yb": [float(y) for y in yb],
            "numbers": dataclasses.asdict(numbers(lang))}



def scores_line(words: dict[str, str], method: str, scores: dict | None) -> str:
    """The scores line for ``scores`` ("" without gold); js/align.js, scoresText."""
    if not scores:
        return ""
    mark = words.get("decimal", ".")
    return words["pair_scores_live"].format(method=method, **{
        k: fixed3(scores[k]).replace(".", mark) for k in SHOWN})


def links_line(words: dict[str, str], links) -> str:
    """The links line: their count and Pharaoh text; js/align.js, linksText."""
    text = " ".join(f"{i}-{j}" for i, j in sorted(links))
    count = words.get("link_count", "") if len(links) == 1 else ""  # one: no plural
    return ((count or words["links_count"].format(count=len(links))) + " · "
            + words["links_line"].format(links=text or "∅"))
