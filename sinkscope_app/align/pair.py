"""The Align page's Pair view: texts, gold, method and sliders; matrix, graph and scores.

θ and τ (or m) are live sliders (:mod:`sinkscope_app.align_live`) when the method has a
threshold and the pair fits the budget: the browser redraws the links, both figures and
this pair's scores while they move, from the values computed at every slider stop, and
the release sends the value back (URL, table). Otherwise Streamlit's sliders recompute on
release, with a note that says why.
"""

from __future__ import annotations

import streamlit as st

from engine import settings
from engine.errors import AlignerError, TextError

from .. import align_live, locale
from ..inputs import cut, md_text
from . import calls
from .params import (MASS_OPTIONS, TAU_OPTIONS, THRESHOLDED, TRAINED, aligners, compare_link,
                     method_defaults, methods)
from .words import aligner_failed, file_error, table, unread_message


def on_method() -> None:
    """A new method (or trained aligner) starts from its own defaults (θ, τ, m)."""
    ss = st.session_state
    ss.update(method_defaults(ss["align_method"], ss.get("align_aligner")))


def on_live() -> None:
    """A live slider was released on new values: keep them (URL, table follow)."""
    ss = st.session_state
    key, grid = align_live.grid_of(ss.get("align_method"), TAU_OPTIONS, MASS_OPTIONS)
    v = align_live.parse_choice(ss.get("align_live"), grid)
    if v is None:
        return
    ss["align_threshold"] = v[0]
    if key and v[1] is not None:
        ss["align_" + key] = v[1]


def server_sliders(slot, t: dict, method: str, note: str = "") -> None:
    """Streamlit's θ and τ (or m) sliders: each release reruns the page (the fallback of
    the live sliders)."""
    c2, c3 = slot.columns([3, 3])
    ss, num = st.session_state, locale.numbers(t["_lang"])
    for key, stops in (("align_threshold", align_live.THETA_STOPS), ("align_tau", TAU_OPTIONS),
                       ("align_mass", MASS_OPTIONS)):  # a select slider holds a stop
        ss[key] = min(stops, key=lambda x: abs(x - float(ss[key])))
    if method in THRESHOLDED + (TRAINED,):
        c2.select_slider(t["threshold"], align_live.THETA_STOPS, key="align_threshold",
                         help=t["threshold_help"], format_func=lambda x: num.fixed(x, 2))
    else:
        c2.caption(t["threshold_none"].format(method=method))
    if method == "unbalanced":
        c3.select_slider(t["tau"], TAU_OPTIONS, key="align_tau", format_func=num.general)
    elif method == "partial":
        c3.select_slider(t["mass"], MASS_OPTIONS, key="align_mass", help=t["mass_help"],
                         format_func=lambda x: num.fixed(x, 2))
    if note:
        slot.caption(note)


def _chart(fig, key: str, bind: dict | None, t: dict) -> None:
    """A figure of the Pair view, drawn the same way with the live sliders (``bind``: they
    redraw it) and without them: the same fonts and tick labels either way."""
    from viz.theme import plotly_config

    from ..live import chart

    chart(fig, key=key, config=plotly_config("png", key), bind=bind, failed=t["chart_failed"])


def _words_line(words: list[str]) -> str:
    return " · ".join(f"{k} {w}" for k, w in enumerate(words))


def _inputs(t: dict):
    """The texts, the gold and the method; returns (method, the sliders' place)."""
    ss, num = st.session_state, locale.numbers(t["_lang"])
    limit = settings.CONFIG.max_chars
    for key, name in (("align_a", t["text_a"]), ("align_b", t["text_b"])):
        text, chars = cut(ss.get(key), limit)
        if chars is not None:
            st.warning(t["text_cut"].format(name=name, n=num.count(chars), kept=num.count(limit)))
        if ss.get(key) != text:
            ss[key] = text
    left, right = st.columns(2)
    left.text_area(t["text_a"], key="align_a", height=80)
    right.text_area(t["text_b"], key="align_b", height=80)
    st.text_input(t["gold"], key="align_gold", help=t["gold_help"])
    c1, c2 = st.columns([2, 3])  # wide enough for every method's name
    c1.selectbox(t["method"], methods(), key="align_method", on_change=on_method)
    names = tuple(aligners())
    if ss["align_method"] == TRAINED and len(names) > 1:
        c1.selectbox(t["aligner"], names, key="align_aligner", on_change=on_method)
    return ss["align_method"], c2.container()


def _checked(t: dict, slot, method: str):
    """(the gold's pair or None, gold or None) for the typed texts; None when the texts
    themselves cannot be aligned (the page says why)."""
    from engine.alignment.readers import AlignFileError, make_pair

    ss = st.session_state
    text_a, text_b = ss["align_a"], ss["align_b"]
    if not text_a.strip() or not text_b.strip():
        server_sliders(slot, t, method)
        st.info(t["empty"])
        return None
    gold = ss.get("align_gold", "").strip() or None
    try:
        make_pair(text_a, text_b, where="these texts")
    except AlignFileError as e:
        server_sliders(slot, t, method)
        st.warning(t["bad_text"].format(error=md_text(file_error(e, t), 400)))
        return None
    pair = None
    if gold is not None:
        try:
            pair = make_pair(text_a, text_b, gold, one_based=None, where="gold")
        except AlignFileError as e:
            st.warning(t["bad_gold"].format(error=md_text(file_error(e, t), 400)))
            gold = None
    lower = bool(ss["align_lower"])
    shown = [(x.lower() if lower else x).split() for x in (text_a, text_b)]
    st.text(t["tokenisation"].format(lower=t["lower_on"] if lower else "")
            + "\nA: " + _words_line(shown[0]) + "\nB: " + _words_line(shown[1]))
    return pair, gold


def _result(t: dict, slot, method: str, gold, theme: str):
    """The links at the sliders' values: (result, payload or None, live chart binding);
    live sliders drawn in ``slot`` when the pair fits, else Streamlit's."""
    ss = st.session_state
    text_a, text_b, lower = ss["align_a"], ss["align_b"], bool(ss["align_lower"])
    model, words = calls.model_name(), align_live.words_of(t)
    threshold, tau, mass = (float(ss["align_threshold"]), float(ss["align_tau"]),
                            float(ss["align_mass"]))
    with st.spinner():
        payload, data, note = calls.live_payload(text_a, text_b, gold, method, lower, model,
                                                 words, lang=t["_lang"])
        if payload is None:
            r = calls.align_pair(text_a, text_b, gold, method, threshold, tau, mass, lower,
                                 model, calls.aligner_of(method))
            server_sliders(slot, t, method, note)
            with slot.container(key="align_lines"):  # the live sliders' two lines
                if r.scores:
                    st.markdown(f"**{align_live.scores_line(words, method, r.scores)}**")
                st.text(align_live.links_line(words, r.links))
            return r, None, None
    value = {"tau": tau, "mass": mass}.get(payload.grid_key)
    g, k = payload.grid_index(value), payload.theta_index(threshold)
    r = calls.live_result(payload, g, k, text_a, text_b, gold, lower)
    with slot:
        align_live.controls(
            key="align_live", payload=payload, theta=threshold, grid_value=value, words=words,
            style=align_live.style_of(len(r.words_a), len(r.words_b), theme, t.get("figure"),
                                      t["_lang"]),
            note="", lines={"scores": align_live.scores_line(words, method, r.scores),
                            "links": align_live.links_line(words, r.links)},
            on_change=on_live)
    bind = {"align": payload.id, "theta": align_live.THETA_STOPS[k],
            "grid": payload.grid[g] if payload.grid else None}
    return r, (payload, data), bind


def pair_view(t: dict, theme: str) -> None:
    """The Pair view (see the module's docstring)."""
    method, slot = _inputs(t)
    checked = _checked(t, slot, method)
    if checked is None:
        return
    pair, gold = checked
    try:
        r, live, bind = _result(t, slot, method, gold, theme)
    except TextError as e:
        server_sliders(slot, t, method)
        st.warning(t["bad_text"].format(error=md_text(unread_message(e, t), 400)))
        return
    except AlignerError as e:  # an operator's aligner that does not load
        server_sliders(slot, t, method)
        st.warning(aligner_failed(e, t))
        return
    _figures(t, theme, method, pair, gold, r, live, bind)


def _figures(t: dict, theme: str, method: str, pair, gold, r, live, bind) -> None:
    """The matrix, the graph, every method's scores and the link to Compare."""
    import viz.align as va

    ss, num = st.session_state, locale.numbers(t["_lang"])
    sure = possible = None
    if pair is not None:
        sure, possible = sorted(pair.sure), sorted(pair.possible)
    fig = va.matrix(r.words_a, r.words_b, r.links, plan=r.plan,
                    plan_title=t["plan_title"][method], sure=sure, possible=possible,
                    method=method, title=t["links_title"].format(method=method), theme=theme,
                    words=t.get("figure"), num=num)
    _chart(fig, "align_matrix", bind and {**bind, "chart": "matrix"}, t)
    g_col, s_col = st.columns([2, 3])
    with g_col:
        _chart(va.graph(r.words_a, r.words_b, r.links, sure=sure, possible=possible,
                        theme=theme, words=t.get("figure")), "align_graph",
               bind and {**bind, "chart": "graph"}, t)
    if pair is not None:
        s_col.caption(t["scores"])
        rows = calls.method_table(ss["align_a"], ss["align_b"], gold, method,
                                  float(ss["align_threshold"]), float(ss["align_tau"]),
                                  float(ss["align_mass"]), bool(ss["align_lower"]),
                                  calls.model_name())
        if live is not None:  # the chosen method's row is what the browser showed
            rows = [calls.live_row(row, r) if row["method"].endswith(" ◀") else row
                    for row in rows]
        s_col.table(table(rows, t), hide_index=True)
    else:  # no gold typed, or gold that does not fit the texts (said above)
        s_col.info(t["scores_bad_gold" if ss.get("align_gold", "").strip() else "scores_none"])
    if live is not None:
        align_live.payload_element(*live)
    # a new tab with a fresh session: the main page reads its state from the address
    st.link_button(t["open_compare"], compare_link(ss["align_a"], ss["align_b"], t["_lang"]),
                   icon=":material/compare:")
