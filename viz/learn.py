"""Figures of the Learn walk-through: clouds in the plane, plans as lines, marginal bars.

Pure builders: arrays in, ``go.Figure`` out. Every word a figure shows comes in through
``words`` (the page passes its English or Spanish table; :data:`WORD_KEYS` lists the keys
read) and every number through ``num`` (:class:`engine.relation.summary.Numbers`: the
page's plain numbers, "0,5" and "≈ 0" in Spanish, the hover's numbers written in Python with
it and the axes' with its separators), so the builders know no language and read no file;
labels are escaped like every token. ``scale`` enlarges type, points and lines for a projector.

Colours follow :mod:`viz.theme`: cloud A blue, cloud B orange, and the marginal bars
vermillion (receives too much), sky blue (left alone) or grey (just right), as in the
Compare view.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from engine.relation.summary import Numbers
from viz import heatmaps, theme as th
from viz._axes import default_height, wrap
from viz._data import as_array, as_plan, labels as escaped, segments
from viz._traces import classes as _classes, map_trace_dict

# The words the builders read from ``words`` (the Learn page's table in its language).
WORD_KEYS = ("cloud_a", "cloud_b", "mass", "zero", "receives_verb", "sends_verb", "weighs",
             "over", "under", "on", "plan", "exact", "weight_tick", "received_title",
             "sent_title", "attention", "per_head", "text_a", "text_b")
ENGLISH = Numbers()  # numbers as :func:`engine.relation.summary.fmt` writes them
N_LINE_BINS = 8
BAR_TITLE_CHARS = 20  # characters per line of the bars' titles at scale 1
FIGURE_PX = 620  # the width a Learn figure is laid out for: the right column at 1400 px
# Where a point's label may go (plotly's textposition): which side of the point its box
# lies on, (x right, y down) in −1, 0, 1.
_PLACES = {"top center": (0, -1), "bottom center": (0, 1), "middle left": (-1, 0),
           "middle right": (1, 0), "top left": (-1, -1), "top right": (1, -1),
           "bottom left": (-1, 1), "bottom right": (1, 1)}
DIAMOND = 1.3  # a plotly diamond reaches 1.3 × its nominal radius
EXACT_WIDTH = 3.5  # px at scale 1: the exact plan's dashed lines (over a wider halo)
_CLASS_KEYS = ("over", "under", "on")
_CLASS_COLORS = (th.COLOR_OVER, th.COLOR_UNDER, th.COLOR_MATCH)


def _words(words: Mapping[str, str] | None) -> dict[str, str]:
    """The caller's words, checked for every key a builder reads (:data:`WORD_KEYS`)."""
    if words is None:
        raise ValueError("words are missing; pass the page's table of figure words "
                         "(sinkscope_app.learn_text.WORDS[lang])")
    gone = [k for k in WORD_KEYS if k not in words]
    if gone:
        raise ValueError(f"words lack {', '.join(gone)}; add them to the table passed in")
    return dict(words)


def _strs(values: object, num: Numbers) -> np.ndarray:
    """Each number written by ``num`` (for hover text: plotly's own format is not the page's)."""
    return np.asarray([num(v) for v in np.ravel(np.asarray(values, float))], dtype=object)


def _layout(theme: str, scale: float, height: int, title: str, num: Numbers = ENGLISH,
            **more) -> dict:
    """A layout in our theme: every font scaled by ``scale``, the title wrapped to fit
    (figures here are 560–700 px wide: the right column at 1400 px) and pinned to the top,
    the legend below it, axis numbers with ``num``'s decimal mark."""
    size = round(17 * scale)
    text = wrap(title, int(54 / scale))
    lines = text.count("<br>") + 1 if title else 0
    top = int(lines * size * 1.35 + 56 * scale) + 8
    layout = dict(template=th.TEMPLATES[th.check_theme(theme)], height=int(height * scale) + top,
                  font=dict(size=round(13 * scale)), separators=num.separators,
                  title=dict(text=text, font=dict(size=size), y=1.0, yref="container",
                             yanchor="top", pad=dict(t=int(8 + (lines - 1) * size * 1.3))),
                  hoverlabel=dict(font=dict(size=round(12 * scale))),
                  legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0.0,
                              font=dict(size=round(12 * scale))),
                  margin=dict(l=10, r=10, t=top, b=10))
    for k, v in more.items():
        both = isinstance(v, dict) and isinstance(layout.get(k), dict)
        layout[k] = {**layout[k], **v} if both else v
    return layout


def _sizes(w: np.ndarray, ref: float, scale: float) -> np.ndarray:
    """Marker diameters whose areas are proportional to the masses ``w``."""
    big = 26.0 * scale
    return np.where(w > 0, np.maximum(6 * scale, big * np.sqrt(np.clip(w, 0, None) / ref)),
                    5 * scale)


def _points(xy: np.ndarray, w: np.ndarray, names: list[str], *, side: str, ref: float,
            words: dict[str, str], scale: float, num: Numbers = ENGLISH,
            axes: tuple[str, str] = ("x", "y"), shown: np.ndarray | None = None,
            places: Sequence[str] | None = None) -> list[dict]:
    """One cloud's markers, area ∝ mass; points of weight 0 in a second, grey trace.

    Only the points where ``shown`` is true carry a label (all when None), each at its
    ``places`` entry (plotly textposition; above A's points and below B's when None);
    hover names every point."""
    base = th.COLOR_A if side == "a" else th.COLOR_B
    shown = np.ones(len(w), bool) if shown is None else np.asarray(shown, bool)
    if places is None:
        places = ["top center" if side == "a" else "bottom center"] * len(w)
    cloud = words["cloud_a"] if side == "a" else words["cloud_b"]
    out = []
    for sel, color, name in ((w > 0, base, cloud), (w <= 0, th.COLOR_ZERO, words["zero"])):
        if not sel.any():
            continue
        out.append(dict(
            type="scatter", x=xy[sel, 0], y=xy[sel, 1], mode="markers+text",
            xaxis=axes[0], yaxis=axes[1], name=name, legendgroup=name,
            marker=dict(size=_sizes(w[sel], ref, scale), color=color, opacity=1.0,
                        symbol="circle" if side == "a" else "diamond",
                        line=dict(width=1.2 * scale, color="white")),
            text=[names[k] if shown[k] else "" for k in np.flatnonzero(sel)],
            textposition=[places[k] for k in np.flatnonzero(sel)], cliponaxis=False,
            textfont=dict(size=round(11 * scale), color=color),
            customdata=np.stack([np.asarray(names, dtype=object)[sel], _strs(w[sel], num)], -1),
            hovertemplate=f"{cloud} · %{{customdata[0]}}<br>{words['mass']} "
                          "%{customdata[1]}<extra></extra>"))
    return out


def _lines(xa: np.ndarray, xb: np.ndarray, plan: np.ndarray, ref: float, *, color: str,
           name: str, scale: float, dash: str = "solid", width: float | None = None,
           axes: tuple[str, str] = ("x", "y"), show_legend: bool = True) -> list[dict]:
    """Segments xᵢ–yⱼ whose width grows with πᵢⱼ / ref, in a few traces (one per width).

    Pairs below 0.5% of ``ref`` are not drawn. With ``width`` every kept pair is drawn at
    that width (the exact plan's outline).
    """
    i, j = np.nonzero(plan > 0.005 * ref)
    mass = plan[i, j]
    rel = np.clip(mass / ref, 0.0, 1.0)
    k = np.minimum((rel * N_LINE_BINS).astype(int), N_LINE_BINS - 1)
    out, shown = [], False
    for b in range(N_LINE_BINS) if width is None else (None,):
        sel = np.ones(len(i), bool) if b is None else k == b
        if not sel.any():
            continue
        x, y = segments(xa[i[sel], 0], xa[i[sel], 1], xb[j[sel], 0], xb[j[sel], 1])
        level = 1.0 if b is None else (b + 1) / N_LINE_BINS
        w = width if width is not None else 0.8 + 9.0 * level
        out.append(dict(type="scatter", x=x, y=y, mode="lines", xaxis=axes[0], yaxis=axes[1],
                        line=dict(width=w * scale, color=color, dash=dash),
                        opacity=1.0 if b is None else 0.25 + 0.6 * level, hoverinfo="skip",
                        name=name, legendgroup=name, showlegend=show_legend and not shown))
        shown = True
    return out


def labelled(plan: np.ndarray | None, a: np.ndarray, b: np.ndarray,
             top: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Which points of A and of B to label when only ``top`` per cloud have room.

    The points that matter for the picture: for A the ends of its heaviest pairs
    (max_j πᵢⱼ), for B those that also receive furthest from their weight
    (|πᵀ1 − b|ⱼ + max_i πᵢⱼ); without a plan, the heaviest masses. Weight-0 points are
    never labelled when labels are rationed.

    Returns:
        (n,) and (m,) boolean masks; all true when ``top`` is None.
    """
    if top is None:
        return np.ones(len(a), bool), np.ones(len(b), bool)
    if plan is None:
        score_a, score_b = a.astype(float), b.astype(float)
    else:
        score_a = plan.max(1)
        score_b = np.abs(plan.sum(0) - b) + plan.max(0)

    def best(score: np.ndarray, w: np.ndarray) -> np.ndarray:
        order = [k for k in np.argsort(-score, kind="stable") if w[k] > 0][:max(0, int(top))]
        mask = np.zeros(len(w), bool)
        mask[order] = True
        return mask

    return best(score_a, a), best(score_b, b)


def _ranges(xa: np.ndarray, xb: np.ndarray, pad: float = 0.12):
    """Axis ranges that hold both clouds with a margin."""
    pts = np.concatenate([xa, xb])
    lo, hi = pts.min(0), pts.max(0)
    span = np.maximum(hi - lo, 1e-9)
    return ([lo[0] - pad * span[0], hi[0] + pad * span[0]],
            [lo[1] - pad * span[1] - 0.1 * span[1], hi[1] + pad * span[1] + 0.1 * span[1]])


def _check(xa, a, xb, b):
    xa, xb = as_array(xa, "xa", 2), as_array(xb, "xb", 2)
    a, b = as_array(a, "a", 1), as_array(b, "b", 1)
    if xa.shape != (len(a), 2) or xb.shape != (len(b), 2):
        raise ValueError(f"points {xa.shape}, {xb.shape} do not match masses {a.shape}, "
                         f"{b.shape}; points are (n, 2)")
    if len(a) == 0 or len(b) == 0:
        raise ValueError("both clouds need at least one point")
    return xa, np.clip(a, 0, None), xb, np.clip(b, 0, None)


def _names(given: Sequence[str] | None, size: int, prefix: str) -> list[str]:
    if given is None:
        return [f"{prefix}{k + 1}" for k in range(size)]
    return escaped(given, size, prefix)


def _exact_lines(xa, xb, exact, ref, *, name, theme, scale) -> list[dict]:
    """The exact plan's pairs as dashed lines over a halo of the background's colour, so
    they stay visible over a dense, spread-out plan (ε = 1)."""
    bg = th.TEMPLATES[th.check_theme(theme)].layout.paper_bgcolor
    halo = _lines(xa, xb, exact, ref, color=bg, name=name, scale=scale, width=EXACT_WIDTH + 3,
                  show_legend=False)
    return halo + _lines(xa, xb, exact, ref, color=th.COLOR_ACCENT, name=name, scale=scale,
                         dash="dash", width=EXACT_WIDTH)


def _label_box(c: np.ndarray, r: float, place: str, w: float,
               h: float) -> tuple[float, float, float, float]:
    """The box (x0, y0, x1, y1), pixels with y down, of a ``w`` × ``h`` label at ``place``
    around a marker of radius ``r`` centred at ``c``."""
    sx, sy = _PLACES[place]
    off = r / 0.8 + 1  # plotly's own offset of a label from its marker's centre
    x0 = c[0] + (sx * off if sx > 0 else sx * off - w if sx < 0 else -w / 2)
    y0 = c[1] + (sy * off if sy > 0 else sy * off - h if sy < 0 else -h / 2)
    return (x0, y0, x0 + w, y0 + h)


def label_size(name: str, font: float) -> tuple[float, float]:
    """A label's estimated (width, height) in pixels at ``font`` px."""
    return 0.62 * font * max(1, len(str(name))) + 2, 1.25 * font


def label_boxes(xy: np.ndarray, diameters: np.ndarray, names: Sequence[str],
                places: Sequence[str | None], px: float,
                font: float) -> list[tuple[float, float, float, float] | None]:
    """Each placed label's box in pixels (y down; None for a point without a label), as
    :func:`label_places` estimates it."""
    c = np.asarray(xy, float) * np.array([px, -px])
    r = np.asarray(diameters, float) / 2
    return [None if p is None else _label_box(c[k], r[k], p, *label_size(names[k], font))
            for k, p in enumerate(places)]


def label_places(xy: np.ndarray, diameters: np.ndarray, names: Sequence[str],
                 shown: np.ndarray, px: float, font: float,
                 prefer: Sequence[int] | None = None, reach: np.ndarray | None = None,
                 frame: tuple[Sequence[float], Sequence[float]] | None = None,
                 crowded: float = 0.05) -> list[str | None]:
    """A place for each point's label where no marker and no other label covers it.

    Greedy, most-crowded point first: each label takes the place around its point (of
    :data:`_PLACES`) whose box overlaps the other points' markers and the labels already
    placed least, in pixels (``px`` pixels per data unit; boxes estimated from ``font``).
    A label that every place leaves more than ``crowded`` covered is left out (None: the
    point is named on hover), so labels never pile up on a tight cluster.

    Args:
        xy: (N, 2) every point drawn (both clouds). diameters: (N,) marker sizes in px.
        names: N labels. shown: (N,) which points may carry a label.
        px: pixels per data unit. font: the labels' font size in px.
        prefer: for each point, the index of its preferred place in :data:`_PLACES`
            (kept on ties); 0 ("top center") when None.
        reach: (N,) how far each marker reaches, in nominal radii (1 for a circle,
            :data:`DIAMOND` for a diamond); 1 when None.
        frame: the plane's ((x0, x1), (y0, y1)) in data units: a label's part outside it
            counts as covered (it would be cut at the edge).
        crowded: the share of a label's box that may be covered.

    Returns:
        N plotly ``textposition`` values; None for a point without a label.
    """
    keys = list(_PLACES)
    n = len(xy)
    c = np.asarray(xy, float) * np.array([px, -px])  # pixels, y down
    r = np.asarray(diameters, float) / 2
    ext = r * (np.ones(n) if reach is None else np.asarray(reach, float))
    prefer = [0] * n if prefer is None else list(prefer)
    out: list[str | None] = [None] * n
    boxes: list[tuple[float, float, float, float]] = [
        (c[k, 0] - ext[k], c[k, 1] - ext[k], c[k, 0] + ext[k], c[k, 1] + ext[k])
        for k in range(n)]

    def hit(box, other) -> float:
        w = min(box[2], other[2]) - max(box[0], other[0])
        h = min(box[3], other[3]) - max(box[1], other[1])
        return max(w, 0.0) * max(h, 0.0)

    if frame is not None:
        (fx0, fx1), (fy0, fy1) = frame
        inside = (fx0 * px, -fy1 * px, fx1 * px, -fy0 * px)

    def outside(box) -> float:
        if frame is None:
            return 0.0
        return (box[2] - box[0]) * (box[3] - box[1]) - hit(box, inside)

    todo = [k for k in range(n) if shown[k]]
    dist = [min((np.hypot(*(c[k] - c[j])) for j in range(n) if j != k), default=np.inf)
            for k in todo]
    labels: list[tuple[float, float, float, float]] = []
    for k in [todo[i] for i in np.argsort(dist, kind="stable")]:
        w, h = label_size(names[k], font)
        best, score = None, crowded * w * h  # more covered than this: no label
        for i in [prefer[k]] + [i for i in range(len(keys)) if i != prefer[k]]:
            box = _label_box(c[k], r[k], keys[i], w, h)
            if any(hit(box, b) > 0 for b in labels):
                continue  # a label never lies on another
            cost = sum(hit(box, b) for j, b in enumerate(boxes) if j != k) + outside(box)
            if cost <= score - 1e-9 or (best is None and cost <= score):
                best, score = keys[i], cost
        if best is None:
            continue  # nowhere free enough: named on hover only
        out[k] = best
        labels.append(_label_box(c[k], r[k], best, w, h))
    return out


def _plane_parts(xa, a, xb, b, plan, exact, labels_a, labels_b, title, ranges, words,
                 theme, scale, height, label_top=None, num: Numbers = ENGLISH,
                 width: float = 1.0) -> tuple[list[dict], dict]:
    """(traces, layout) of :func:`plane`, for figures that add to it."""
    xa, a, xb, b = _check(xa, a, xb, b)
    w = _words(words)
    la, lb = _names(labels_a, len(a), "A"), _names(labels_b, len(b), "B")
    ref = float(max(np.max(a), np.max(b)))
    pair_ref = float(np.max(np.minimum(a[:, None], b[None, :]))) or 1.0
    data: list[dict] = []
    if plan is not None:
        p = as_plan(plan)
        if p.shape != (len(a), len(b)):
            raise ValueError(f"plan {p.shape} does not match the clouds ({len(a)}, {len(b)})")
        data += _lines(xa, xb, p, pair_ref, color=th.edge_color(theme), name=w["plan"],
                       scale=scale, show_legend=False)
    if exact is not None:
        e = as_plan(exact, "exact")
        if e.shape != (len(a), len(b)):
            raise ValueError(f"exact {e.shape} does not match the clouds ({len(a)}, {len(b)})")
        data += _exact_lines(xa, xb, e, pair_ref, name=w["exact"], theme=theme, scale=scale)
    show_a, show_b = labelled(as_plan(plan) if plan is not None else None, a, b, label_top)
    xr, yr = ranges if ranges is not None else _ranges(xa, xb)
    # pixels per data unit as plotly will draw the plane (equal scales: the tighter axis)
    px = min((FIGURE_PX - 20) * width / (xr[1] - xr[0]),
             max(height - 40, 100) / (yr[1] - yr[0])) * scale
    places = label_places(np.concatenate([xa, xb]),
                          np.concatenate([_sizes(a, ref, scale), _sizes(b, ref, scale)]),
                          la + lb, np.concatenate([show_a, show_b]), px, 11 * scale,
                          prefer=[0] * len(a) + [1] * len(b),
                          reach=np.r_[np.ones(len(a)), np.full(len(b), DIAMOND)],
                          frame=(xr, yr))
    show_a, show_b = (np.array([p is not None for p in places[:len(a)]]),
                      np.array([p is not None for p in places[len(a):]]))
    places = [p or "top center" for p in places]
    data += (_points(xa, a, la, side="a", ref=ref, words=w, scale=scale, num=num, shown=show_a,
                     places=places[:len(a)])
             + _points(xb, b, lb, side="b", ref=ref, words=w, scale=scale, num=num,
                       shown=show_b, places=places[len(a):]))
    named: set[str] = set()
    for tr in data:  # one legend entry per name (both clouds may have points of weight 0)
        if tr.get("showlegend", True):
            tr["showlegend"] = tr["name"] not in named
            named.add(tr["name"])
    layout = _layout(theme, scale, height, title, num,
                     xaxis=dict(range=list(xr), showgrid=False, zeroline=False,
                                showticklabels=False),
                     yaxis=dict(range=list(yr), showgrid=False, zeroline=False,
                                showticklabels=False, scaleanchor="x", scaleratio=1))
    return data, layout


def plane(xa: object, a: object, xb: object, b: object, *, plan: object = None,
          exact: object = None, labels_a: Sequence[str] | None = None,
          labels_b: Sequence[str] | None = None, title: str = "",
          ranges: tuple[Sequence[float], Sequence[float]] | None = None,
          words: Mapping[str, str] | None = None, num: Numbers = ENGLISH,
          theme: str = "light", scale: float = 1.0, height: int = 400) -> go.Figure:
    """Two clouds in the plane, each point's area its mass; a plan as lines between them.

    μ = Σ aᵢ δ_{xᵢ} (blue circles), ν = Σ bⱼ δ_{yⱼ} (orange diamonds); the line xᵢ–yⱼ is
    as wide as πᵢⱼ is heavy, against the heaviest mass a pair could carry, max min(aᵢ, bⱼ),
    so widths compare across plans of the same clouds.

    Args:
        xa: (n, 2) points of A; a: (n,) masses. xb: (m, 2) points of B; b: (m,) masses.
        plan: optional (n, m) plan drawn as lines.
        exact: optional (n, m) plan drawn as dashed outlines over a halo (the exact OT
            plan), on top of ``plan``'s lines.
        labels_a, labels_b: point names (escaped here); "A1…", "B1…" when None.
        title: trusted title text. ranges: ((x0, x1), (y0, y1)); fitted when None.
        words: the figure words, every key of :data:`WORD_KEYS` (required: the page's
            table in its language). num: how numbers are written (hover, axes); English
            (:func:`engine.relation.summary.fmt`) by default. theme: "light" or "dark".
        scale: type and mark size factor (presenter mode: 1.4). height: pixels at scale 1.

    Returns:
        A figure: line traces first, then the points of A, then those of B (each cloud's
        points of weight 0 in a trace of their own, named ``words["zero"]``).
    """
    data, layout = _plane_parts(xa, a, xb, b, plan, exact, labels_a, labels_b, title, ranges,
                                words, theme, scale, height, num=num)
    return go.Figure(data=data, layout=layout)


def _bars(sums: np.ndarray, target: np.ndarray, names: list[str], *, axes: tuple[str, str],
          verb: str, words: dict[str, str], fg: str, scale: float, seen: set[str],
          num: Numbers = ENGLISH) -> list[dict]:
    """Bars of a marginal coloured by class, with a tick at each point's weight."""
    idx = np.arange(len(sums))
    cd = np.stack([np.asarray(names, dtype=object), _strs(target, num), _strs(sums, num)], -1)
    out = []
    for key, color, sel in zip(_CLASS_KEYS, _CLASS_COLORS, _classes(sums, target)):
        show = key not in seen and sel.size > 0
        seen.add(key) if show else None
        out.append(dict(type="bar", x=idx[sel], y=sums[sel], xaxis=axes[0], yaxis=axes[1],
                        marker=dict(color=color, line=dict(width=0)), width=0.75,
                        name=words[key], legendgroup=key, showlegend=show, customdata=cd[sel],
                        hovertemplate=f"%{{customdata[0]}} {verb} %{{customdata[2]}}<br>"
                                      f"{words['weighs']} %{{customdata[1]}}<extra></extra>"))
    size = float(np.clip(300 / max(1, len(sums)), 10, 30)) * scale
    out.append(dict(type="scatter", x=idx, y=target, xaxis=axes[0], yaxis=axes[1],
                    mode="markers", name=words["weight_tick"], legendgroup="tick",
                    showlegend="tick" not in seen,
                    marker=dict(symbol="line-ew-open", size=size, color=fg,
                                line=dict(width=3 * scale, color=fg)),
                    customdata=cd,
                    hovertemplate=f"%{{customdata[0]}} {words['weighs']} %{{customdata[1]}}"
                                  "<extra></extra>"))
    seen.add("tick")
    return out


def plan_and_bars(xa: object, a: object, xb: object, b: object, plan: object, *,
                  exact: object = None, labels_a: Sequence[str] | None = None,
                  labels_b: Sequence[str] | None = None, title: str = "",
                  ranges: tuple[Sequence[float], Sequence[float]] | None = None,
                  bar_max: float | None = None, words: Mapping[str, str] | None = None,
                  num: Numbers = ENGLISH, theme: str = "light", scale: float = 1.0,
                  height: int = 430, label_top: int | None = None) -> go.Figure:
    """The plane with a plan's lines, beside its two marginals against the weights.

    Right, top: what each point of B receives, πᵀ1, against bⱼ (tick); right, bottom:
    what each point of A sends, π1, against aᵢ. Bars are vermillion above the tick,
    sky blue below it ("left alone"), grey on it. A coupling has every bar on its tick.

    Args:
        xa, a, xb, b, plan, exact, labels_a, labels_b, title, ranges, words, num, theme,
            scale: as for :func:`plane`; ``plan`` is required here.
        bar_max: the bars' upper limit (keep it fixed while a plan changes, so bars move
            and the axis does not); fitted when None.
        height: pixels at scale 1.
        label_top: label only this many points per cloud in the plane, those that
            matter (:func:`labelled`); the rest are named on hover. None labels all.

    Returns:
        A figure: plane traces on axes (x, y), B's bars on (x2, y2), A's on (x3, y3).
    """
    if plan is None:
        raise ValueError("plan is missing (None); pass the (n, m) plan")
    data, layout = _plane_parts(xa, a, xb, b, plan, exact, labels_a, labels_b, title, ranges,
                                words, theme, scale, height, label_top, num, width=0.6)
    xa, a, xb, b = _check(xa, a, xb, b)
    p = as_plan(plan)
    w = _words(words)
    la, lb = _names(labels_a, len(a), "A"), _names(labels_b, len(b), "B")
    fg = th.foreground(theme)
    got, sent = p.sum(0), p.sum(1)
    top = bar_max or 1.12 * max(float(np.max(got)), float(np.max(sent)), float(np.max(a)),
                                float(np.max(b)), 1e-12)
    seen: set[str] = set()
    data += _bars(got, b, lb, axes=("x2", "y2"), verb=w["receives_verb"], words=w, fg=fg,
                  scale=scale, seen=seen, num=num)
    data += _bars(sent, a, la, axes=("x3", "y3"), verb=w["sends_verb"], words=w, fg=fg,
                  scale=scale, seen=seen, num=num)
    tick = dict(size=round(11 * scale))
    small = dict(size=round(13 * scale))

    def axis(names, domain, anchor):
        return dict(domain=domain, anchor=anchor, tickmode="array",
                    tickvals=list(range(len(names))), ticktext=[th.shorten(s, 10) for s in names],
                    tickfont=tick, showgrid=False,
                    tickangle=-45 if len(names) > 8 else 0, range=[-0.6, len(names) - 0.4])

    layout["xaxis"]["domain"] = [0.0, 0.6]
    layout.update(
        barmode="overlay",
        xaxis2=axis(lb, [0.68, 1.0], "y2"),
        yaxis2=dict(domain=[0.56, 0.88], anchor="x2", range=[0, top], nticks=4, tickfont=tick),
        xaxis3=axis(la, [0.68, 1.0], "y3"),
        yaxis3=dict(domain=[0.0, 0.30], anchor="x3", range=[0, top], nticks=4, tickfont=tick),
        # the bars' titles in the right third (~190 px at 1400 px): wrapped short
        annotations=[dict(text=wrap(text, int(BAR_TITLE_CHARS / scale)), x=0.68, y=y,
                          xref="paper",
                          yref="paper", xanchor="left", yanchor="bottom", showarrow=False,
                          align="left", font=small)
                     for text, y in ((w["received_title"], 0.9), (w["sent_title"], 0.34))],
    )
    layout["margin"]["b"] = int(50 * scale)
    return go.Figure(data=data, layout=layout)


def two_maps(left: object, right: object, *, titles: tuple[str, str],
             labels_a: Sequence[str] | None = None, labels_b: Sequence[str] | None = None,
             title: str = "", zlabel: str = "mass", words: Mapping[str, str] | None = None,
             num: Numbers = ENGLISH, theme: str = "light", scale: float = 1.0,
             height: int = 420) -> go.Figure:
    """Two plans side by side as heatmaps on one colour scale (rows A, columns B).

    Args:
        left, right: (n, m) plans. titles: a title above each. labels_a, labels_b: names.
        title: the figure's title. zlabel: what a cell holds (hover, colour bar).
        words, num, theme, scale: as for :func:`plane` (``words`` may be omitted here:
            the two titles and ``zlabel`` are its only words). height: pixels at scale 1.

    Returns:
        A figure with two ``Heatmap`` traces on axes (x, y) and (x2, y2), one coloraxis.
    """
    zl, zr = as_plan(left, "left"), as_plan(right, "right")
    if zl.shape != zr.shape:
        raise ValueError(f"the two plans differ in shape: {zl.shape} and {zr.shape}")
    n, m = zl.shape
    la, lb = _names(labels_a, n, "A"), _names(labels_b, m, "B")
    hi = max(float(zl.max()), float(zr.max()), 1e-12)
    data = [_map(z, la, lb, zlabel, num, coloraxis="coloraxis", xaxis=xa, yaxis=ya)
            for z, xa, ya in ((zl, "x", "y"), (zr, "x2", "y2"))]
    tick = dict(size=round(12 * scale))

    def axis(names, domain, anchor, reverse=False, **more):
        r = [-0.5, len(names) - 0.5]
        return dict(domain=domain, anchor=anchor, tickmode="array",
                    tickvals=list(range(len(names))), ticktext=[th.shorten(s, 10) for s in names],
                    tickfont=tick, showgrid=False, zeroline=False,
                    range=r[::-1] if reverse else r, **more)

    sub = dict(size=round(14 * scale))
    layout = _layout(
        theme, scale, height, title, num,
        coloraxis=dict(colorscale=th.MASS_SCALE, cmin=0.0, cmax=hi,
                       colorbar=dict(title=dict(text=zlabel), thickness=int(14 * scale))),
        xaxis=axis(lb, [0.0, 0.44], "y"), yaxis=axis(la, [0.0, 0.9], "x", reverse=True),
        xaxis2=axis(lb, [0.5, 0.94], "y2"),
        yaxis2=axis(la, [0.0, 0.9], "x2", reverse=True, showticklabels=False),
        annotations=[dict(text=t, x=x, y=0.92, xref="paper", yref="paper", xanchor="center",
                          yanchor="bottom", showarrow=False, font=sub)
                     for t, x in zip(titles, (0.22, 0.72))],
        margin=dict(l=int(50 * scale), b=int(40 * scale)))
    return go.Figure(data=data, layout=layout)


def sink(tokens: Sequence[str], received: object, weights: object, *,
         per_head: object = None, title: str = "", words: Mapping[str, str] | None = None,
         num: Numbers = ENGLISH, theme: str = "light", scale: float = 1.0,
         height: int = 460) -> go.Figure:
    """What each token receives from attention, against what a coupling must give it.

    Bars: the attention each token receives, (1/n) Σᵢ softmax(S)ᵢⱼ (the mean over heads
    when several); dots: the same for each head; ticks: the token's weight bⱼ, which is
    exactly what every coupling gives it.

    Args:
        tokens: n token strings (escaped here). received: (n,) attention received.
        weights: (n,) the weights b. per_head: optional (H, n), one row per head.
        title, words, num, theme, scale: as for :func:`plane`. height: pixels at scale 1.

    Returns:
        A figure: bar traces by class, then the per-head dots (when given), then ticks.
    """
    got = as_array(received, "received", 1)
    b = as_array(weights, "weights", 1)
    names = escaped(tokens, len(got), "tokens")
    if b.shape != got.shape:
        raise ValueError(f"weights {b.shape} and received {got.shape} differ in shape")
    w = _words(words)
    fg = th.foreground(theme)
    seen: set[str] = set()
    data = _bars(got, b, names, axes=("x", "y"), verb=w["receives_verb"], words=w, fg=fg,
                 scale=scale, seen=seen, num=num)
    ticks = data.pop()  # draw the ticks last, over the dots
    top = float(max(np.max(got), np.max(b)))
    if per_head is not None:
        ph = as_array(per_head, "per_head", 2)
        if ph.shape[1] != len(got):
            raise ValueError(f"per_head {ph.shape} does not have one column per token ({len(got)})")
        H = ph.shape[0]
        jitter = np.linspace(-0.25, 0.25, H) if H > 1 else np.zeros(1)
        xs = (np.arange(len(got))[None, :] + jitter[:, None]).ravel()
        data.append(dict(type="scatter", x=xs, y=ph.ravel(), mode="markers", name=w["per_head"],
                         marker=dict(size=5 * scale, color=fg, opacity=0.45),
                         customdata=np.stack([np.repeat(np.arange(H), len(got)),
                                              _strs(ph, num)], -1),
                         hovertemplate=f"{w['per_head']} %{{customdata[0]}}: "
                                       "%{customdata[1]}<extra></extra>"))
        top = max(top, float(np.max(ph)))
    data.append(ticks)
    tick = dict(size=round(12 * scale))
    layout = _layout(
        theme, scale, height, title, num, barmode="overlay",
        xaxis=dict(tickmode="array", tickvals=list(range(len(got))),
                   ticktext=[th.shorten(s, 12) for s in names], tickfont=tick, showgrid=False,
                   tickangle=-45 if len(got) > 10 else 0, range=[-0.6, len(got) - 0.4]),
        yaxis=dict(range=[0, 1.08 * top], title=dict(text=w["attention"]), tickfont=tick),
        margin=dict(l=int(70 * scale), b=int(90 * scale)))
    return go.Figure(data=data, layout=layout)


def _map(z: np.ndarray, la: list[str], lb: list[str], zlabel: str, num: Numbers,
         names: tuple[str, str] = ("A", "B"), **kw) -> dict:
    """A heatmap trace whose hover writes the mass with ``num`` (``map_trace_dict``'s own
    hover uses plotly's format, which writes 4.78e-5 for a student's 0,00005)."""
    tr = map_trace_dict(z, la, lb, zname=zlabel, names=names, **kw)
    n, m = z.shape
    tr["customdata"] = np.stack([np.repeat(np.asarray(la, dtype=object)[:, None], m, 1),
                                 np.repeat(np.asarray(lb, dtype=object)[None, :], n, 0),
                                 _strs(z, num).reshape(n, m)], -1)
    tr["hovertemplate"] = (f"{names[0]}[%{{y}}] %{{customdata[0]}}<br>{names[1]}[%{{x}}] "
                           f"%{{customdata[1]}}<br>{zlabel} %{{customdata[2]}}<extra></extra>")
    return tr


def coupling_map(plan: object, tokens_a: Sequence[str], tokens_b: Sequence[str], *,
                 title: str = "", zlabel: str = "mass", words: Mapping[str, str] | None = None,
                 num: Numbers = ENGLISH, theme: str = "light", scale: float = 1.0,
                 height: int | None = None) -> go.Figure:
    """One coupling of two texts as a heatmap (:func:`viz.heatmaps.heatmap`), type scaled,
    its axes named in the page's language (``words["text_a"]``, ``words["text_b"]``).

    Args:
        plan: (n, m) plan, rows text A's tokens, columns text B's.
        tokens_a, tokens_b: n and m token strings (escaped by the heatmap builder).
        title, zlabel, theme: as for :func:`viz.heatmaps.heatmap`.
        words, num: as for :func:`plane` (required words).
        scale: type size factor. height: pixels at scale 1 (fitted to n when None).

    Returns:
        A figure with one ``Heatmap`` trace whose ``z`` is ``plan``.
    """
    w = _words(words)
    z = as_plan(plan)
    h = default_height(z.shape[0]) if height is None else height
    fig = heatmaps.heatmap(z, tokens_a, tokens_b, title=title, zlabel=zlabel, theme=theme,
                           height=int(h * scale))
    tr = fig.data[0]
    if tr.customdata is not None:  # small maps name the tokens on hover: numbers by num
        la, lb = list(np.asarray(tr.customdata)[:, 0, 0]), list(np.asarray(tr.customdata)[0, :, 1])
        fix = _map(z, la, lb, zlabel, num)
        tr.update(customdata=fix["customdata"], hovertemplate=fix["hovertemplate"])
    fig.update_layout(font=dict(size=round(13 * scale)), separators=num.separators,
                      title=dict(font=dict(size=round(17 * scale))),
                      xaxis_title_text=w["text_b"], yaxis_title_text=w["text_a"])
    return fig
