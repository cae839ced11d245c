"""The live view in a notebook: ``sinkscope.show(...)`` (Jupyter, JupyterLab, VS Code).

``show(relation)`` (or ``show("text A", "text B", layer=…, head=…)``) draws the compare
view, softmax beside the Sinkhorn coupling with their marginals, with the app's ε and
half-step sliders: every (ε, t) frame is solved once here (the app's lattice payload,
:mod:`engine.relation.frames` via :mod:`sinkscope_app.scrub`) and the browser swaps
frames in while a slider moves, with the app's own JavaScript (``sinkscope_app/js``, one
module: :data:`sinkscope_app.browser.WIDGET_FILES`). ``show(alignment)`` draws a pair's
links with the θ slider (the Align page's payload, :mod:`sinkscope_app.align_live`).

The widget is an ``anywidget`` (``pip install "sinkscope[notebook]"``); its code and
plotly.js (the installed plotly package's copy, sent on request) come from the kernel,
never from a CDN. Where widgets cannot render (a static export, GitHub's viewer) the output
is the static plotly figures under a one-line note (:data:`STATIC_NOTE`).
"""

from __future__ import annotations

import functools
import html
from pathlib import Path
from typing import Any

import numpy as np

STATIC_NOTE = ("Static figures: run this notebook in Jupyter, JupyterLab or VS Code for the "
               "live sliders (sinkscope.show).")
CONFIG = {"displaylogo": False, "responsive": True}


@functools.lru_cache(maxsize=1)
def _plotly_js() -> bytes:
    """plotly.min.js as the installed plotly package ships it."""
    import plotly

    return (Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
            ).read_bytes()


@functools.lru_cache(maxsize=1)
def _widget_class():
    """The widget class (built on first use: anywidget and traitlets load only then)."""
    try:
        import anywidget
        import traitlets
    except ImportError as e:  # pragma: no cover - the message is the point
        raise ImportError("sinkscope.show needs anywidget: pip install 'sinkscope[notebook]'"
                          ) from e
    from sinkscope_app.browser import WIDGET_FILES, bundle

    class View(anywidget.AnyWidget):
        """The app's live view in a notebook (see :mod:`sinkscope.notebook`).

        Attributes (synced with the browser):
            view: {"kind": "relation" | "alignment", "controls", "charts", "failed"}.
            payload: the lattice's bytes (relation) or the pair's (alignment).
            texts: the texts of the lattice's frames (relation only).
            frame: {"eps": ε, "steps": t} once a relation's slider is released.
            choice: {"theta": θ, "grid": …} once an alignment's slider is released.
        """

        _esm = bundle(WIDGET_FILES)
        view = traitlets.Dict().tag(sync=True)
        payload = traitlets.Bytes(b"").tag(sync=True)
        texts = traitlets.Bytes(b"").tag(sync=True)
        frame = traitlets.Dict().tag(sync=True)
        choice = traitlets.Dict().tag(sync=True)

        def __init__(self, figures: list, **kw: Any) -> None:
            super().__init__(**kw)
            self.figures = figures  # the static figures (the fallback, and for Python)
            self.on_msg(self._answer)

        def _answer(self, _widget, content, _buffers) -> None:
            if isinstance(content, dict) and content.get("ask") == "plotly":
                self.send({"kind": "plotly"}, [_plotly_js()])

        def _repr_mimebundle_(self, **kw):
            bundle_ = super()._repr_mimebundle_(**kw)
            data = bundle_[0] if isinstance(bundle_, tuple) else bundle_
            data["text/html"] = static_html(self.figures)
            data["text/plain"] = STATIC_NOTE
            return bundle_

    return View


def static_html(figures: list) -> str:
    """The fallback: the one-line note, then each figure as plotly HTML (no plotly.js: a
    viewer that runs scripts has it, or shows the note alone)."""
    parts = [f"<p><em>{html.escape(STATIC_NOTE)}</em></p>"]
    parts += [fig.to_html(full_html=False, include_plotlyjs=False, config=CONFIG)
              for fig in figures]
    return "\n".join(parts)


def show(what, text_b: str | None = None, /, *, theme: str = "light", gold: str | None = None,
         **settings):
    """The live view of a relation or an alignment, as a notebook widget.

    Args:
        what: a :class:`~engine.types.Relation` of one layer and head (``sinkscope.relate``),
            text A (then ``text_b`` and ``settings`` go to ``sinkscope.relate``), or an
            :class:`~engine.alignment.api.Alignment` (``sinkscope.align_pair``).
        text_b: text B, when ``what`` is text A.
        theme: "light" or "dark".
        gold: an alignment's gold links (Pharaoh), to score it as the θ slider moves.
        settings: ``sinkscope.relate``'s settings (layer, head, eps, half_steps, mode, …).

    Returns:
        The widget (its ``figures`` are the static figures; ``frame`` the released (ε, t)).
    """
    from engine.alignment.api import Alignment

    if isinstance(what, Alignment):
        return alignment_view(what, theme=theme, gold=gold)
    if isinstance(what, str):
        from engine.relation.relate import relate

        what = relate(what, text_b, **settings)
    return relation_view(what, theme=theme)


def relation_parts(r, *, theme: str = "light", lang: str = "en") -> dict:
    """What the relation widget sends: the compare figure bound to the lattice, the
    sliders' data, the lattice payload and its frames' texts (the app's own builders).

    Returns:
        {"figure", "chart" (chart.js's data), "controls" (scrub.js's), "payload" (bytes),
        "texts" (bytes), "id"}.
    """
    from engine import settings as cfg
    from engine.relation.frames import encode, grid
    from engine.relation.lattice import relation_lattice
    from sinkscope_app import locale, metrics, scrub
    from sinkscope_app.browser import chart_data
    from sinkscope_app.main.params import EPS_OPTIONS, HALF_STEP_OPTIONS
    from viz import heatmaps

    if np.ndim(r.scores) != 2:
        from engine.errors import SettingsError

        raise SettingsError("sinkscope.show draws one layer and head: relate with layer=L, "
                            "head=H (or head='mean').")
    CONFIG_ = cfg.CONFIG
    eps, steps = grid(EPS_OPTIONS, HALF_STEP_OPTIONS, max_half_steps=CONFIG_.live_max_half_steps)
    id_ = scrub.lattice_id(tuple(r.tokens_a), tuple(r.tokens_b), r.scores.tobytes(),
                           r.a.tobytes(), r.b.tobytes())
    payload = scrub.build(lambda: encode(relation_lattice(r, eps, steps), id_,
                                         max_bytes=CONFIG_.live_max_bytes), id_,
                          max_bytes=CONFIG_.live_max_bytes)
    w = locale.words("main", lang)
    num = locale.numbers(lang)
    fig = heatmaps.compare(r, theme=theme, words=w.get("figures"), num=num)
    live = payload.data is not None
    bind = {"lattice": id_, "eps": float(r.eps), "steps": int(r.half_steps)} if live else None
    sliders = w["sliders"]
    controls = scrub.slider_data(
        eps=float(r.eps), steps=int(r.half_steps), eps_stops=EPS_OPTIONS,
        step_stops=HALF_STEP_OPTIONS, lattice=id_ if live else None,
        metrics=metrics.rows(r, lang), note=payload.note,
        help={"eps": sliders["eps_help"], "steps": sliders["steps_help"]},
        words=sliders["words"], num=num, grid=(eps, steps), lang=lang)
    controls["url"] = None  # a notebook has no address to keep
    return {"figure": fig, "id": id_, "controls": controls,
            "chart": chart_data(fig, src="", config=CONFIG, bind=bind),
            "payload": payload.data or b"",
            "texts": scrub.texts_payload(payload, lang) if live else b""}


def relation_view(r, *, theme: str = "light"):
    """The compare view of relation ``r`` with live ε and half-step sliders."""
    p = relation_parts(r, theme=theme)
    view = {"kind": "relation", "controls": p["controls"], "charts": [p["chart"]],
            "failed": p["chart"]["failed"]}
    return _widget_class()([p["figure"]], view=view, payload=p["payload"], texts=p["texts"])


def alignment_payload(alignment, pair):
    """(payload, its bytes) of one alignment's values at every θ stop: the Align page's
    builder (:func:`sinkscope_app.align_live.from_values`), in one place to repoint."""
    from engine.alignment.extract import Method
    from sinkscope_app import align_live

    d = dict(alignment.method)
    method = Method(d.pop("method"), **d)
    V = np.asarray(alignment.values, dtype=np.float64)
    p = align_live.from_values(V[None], align_live.thetas_of(method), pair, method.name,
                               id_=align_live.payload_id(alignment.words_a, alignment.words_b,
                                                         V.tobytes(), alignment.method))
    return p, p.encode()


def alignment_view(alignment, *, theme: str = "light", gold: str | None = None):
    """A pair's links (matrix and graph) with the θ slider, as the Align page draws them."""
    import viz.align as va
    from engine.alignment.readers import make_pair
    from sinkscope_app import align_live, locale
    from sinkscope_app.browser import chart_data

    if alignment.values is None:
        from engine.errors import SettingsError

        raise SettingsError("this alignment holds no values: align with values=True.")
    pair = make_pair(" ".join(alignment.words_a), " ".join(alignment.words_b), gold)
    payload, data = alignment_payload(alignment, pair)
    t, num = locale.words("align", "en"), locale.numbers("en")
    method = payload.method
    theta = float(alignment.method.get("threshold", 0.5))
    k = payload.theta_index(theta)
    links = payload.links(0, k)
    scores = align_live.scores(links, pair)
    sure = possible = None
    if pair.has_gold:
        sure, possible = sorted(pair.sure), sorted(pair.possible)
    words = {**align_live.words_of(t), "method": method}
    controls = {"role": "align", "payload": payload.id,
                "theta_stops": list(align_live.THETA_STOPS),
                "theta_labels": [f"{x:.2f}" for x in align_live.THETA_STOPS], "theta": k,
                "grid_key": None, "grid_stops": [], "grid_labels": [], "grid": 0,
                "words": words, "style": align_live.style_of(*payload.shape, theme,
                                                               t.get("figure")),
                "note": "", "url": None, "url_values": None,
                "lines": {"scores": align_live.scores_line(words, method, scores),
                          "links": align_live.links_line(words, links)}}
    bind = {"align": payload.id, "theta": align_live.THETA_STOPS[k], "grid": None}
    plan_title = t["plan_title"].get(method, "")
    matrix = va.matrix(payload.words_a, payload.words_b, links, plan=payload.plan(0),
                       plan_title=plan_title, sure=sure, possible=possible, method=method,
                       title=t["links_title"].format(method=method), theme=theme,
                       words=t.get("figure"), num=num)
    graph = va.graph(payload.words_a, payload.words_b, links, sure=sure, possible=possible,
                     theme=theme, words=t.get("figure"))
    charts = [chart_data(matrix, src="", config=CONFIG, bind={**bind, "chart": "matrix"}),
              chart_data(graph, src="", config=CONFIG, bind={**bind, "chart": "graph"})]
    view = {"kind": "alignment", "controls": controls, "charts": charts,
            "failed": charts[0]["failed"]}
    return _widget_class()([matrix, graph], view=view, payload=data)
