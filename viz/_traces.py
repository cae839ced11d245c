"""Trace helpers shared by the figure builders: token maps with rich hover, and the
classes of a marginal against its target (above, below, on target).

Plain dicts (``type="heatmap"`` …) so a builder can make its figure in one ``go.Figure``
call; :func:`map_trace` wraps one as a ``go.Heatmap``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from viz import theme as th
from viz._data import as_array
from viz.words import WORDS

LARGE = 64 * 64  # cells; above this, hover names positions, not tokens (keeps JSON small)
TOKEN_LINE = "{name}[{k}] {token}"  # a map's hover line for a token: "A[3] bank"
CLASSES = (("above target", th.COLOR_OVER), ("below target", th.COLOR_UNDER),
           ("on target", th.COLOR_MATCH))
CLASS_WORDS = ("above", "below", "on")  # each class's name in :data:`viz.words.WORDS`
UNDER_FILL = "rgba(86, 180, 233, 0.35)"  # COLOR_UNDER, light: the missing mass's box


def _customdata(la: list[str], lb: list[str], fields: Sequence[np.ndarray]) -> np.ndarray:
    """(n, m, 2 + k) object array: token A, token B, then the k numeric fields."""
    n, m = len(la), len(lb)
    cd = np.empty((n, m, 2 + len(fields)), dtype=object)
    cd[..., 0] = np.asarray(la, dtype=object)[:, None]
    cd[..., 1] = np.asarray(lb, dtype=object)[None, :]
    for k, f in enumerate(fields):
        cd[..., 2 + k] = f
    return cd


def map_trace(z: np.ndarray, la: list[str], lb: list[str], *, zname: str,
              fields: Sequence[tuple[str, np.ndarray]] = (), **kw) -> go.Heatmap:
    """One heatmap on numeric axes whose hover names both tokens and extra fields.

    Above ``LARGE`` cells (e.g. two 512-token texts) hover shows positions A[i], B[j]
    and the value only, sent as a float32 typed array: per-cell token strings and extra
    fields would make the figure tens of megabytes. The app's charts name the tokens
    anyway, from :func:`hover_meta` in the layout's ``meta`` (``sinkscope_app/js/axes.js``).

    Args:
        z: (n, m) values; la, lb: n and m escaped labels; zname: what z holds;
        fields: (name, (n, m) array) pairs shown on hover; names: what hover calls a
        row and a column token ("A", "B"); kw: more Heatmap settings.
    """
    return go.Heatmap(map_trace_dict(z, la, lb, zname=zname, fields=fields, **kw))


def map_trace_dict(z: np.ndarray, la: list[str], lb: list[str], *, zname: str,
                   fields: Sequence[tuple[str, np.ndarray]] = (),
                   names: tuple[str, str] = ("A", "B"), **kw) -> dict:
    """:func:`map_trace` as a plain dict, for figures built in one ``go.Figure`` call."""
    x, y = np.arange(z.shape[1]), np.arange(z.shape[0])
    ra, rb = names
    if z.size > LARGE:
        return dict(type="heatmap", z=np.asarray(z, dtype=np.float32), x=x, y=y,
                    hovertemplate=f"{ra}[%{{y}}] → {rb}[%{{x}}]<br>{zname} %{{z:.4g}}"
                                  "<extra></extra>", **kw)
    lines = [TOKEN_LINE.format(name=ra, k="%{y}", token="%{customdata[0]}"),
             TOKEN_LINE.format(name=rb, k="%{x}", token="%{customdata[1]}"), zname + " %{z:.4g}"]
    lines += [f"{name} %{{customdata[{2 + k}]:.4g}}" for k, (name, _) in enumerate(fields)]
    return dict(type="heatmap", z=z, x=x, y=y,
                customdata=_customdata(la, lb, [f for _, f in fields]),
                hovertemplate="<br>".join(lines) + "<extra></extra>", **kw)


def hover_meta(tokens_a: Sequence[object], tokens_b: Sequence[object], size: int, *,
               names: tuple[str, str] = ("A", "B")) -> dict:
    """What the browser needs to name the tokens under the pointer of a map above
    ``LARGE`` cells (whose hover shows positions only): {"hover": {"rows", "cols"}}, each
    token's first hover line as a smaller map's hover writes it (:data:`TOKEN_LINE`, raw
    text: ``js/axes.js`` writes it as text, never HTML); {} for smaller maps, whose hover
    names them already."""
    if size <= LARGE:
        return {}
    ra, rb = names
    return {"hover": {"rows": [TOKEN_LINE.format(name=ra, k=k, token=t)
                               for k, t in enumerate(tokens_a)],
                      "cols": [TOKEN_LINE.format(name=rb, k=k, token=t)
                               for k, t in enumerate(tokens_b)]}}


def score_fields(scores: np.ndarray | None, shape: tuple[int, int],
                 w: Mapping[str, str] = WORDS) -> list:
    """Hover fields for a map of ``shape``: the score S and the cost −S (S alone above
    :data:`LARGE` cells), named in ``w``'s words; none without scores."""
    if scores is None:
        return []
    s = as_array(scores, "scores", ndim=2)
    if s.shape != shape:
        raise ValueError(f"scores have shape {s.shape} but the plan has {shape}")
    if s.size > LARGE:  # the cost is −S: one field is enough when the figure is large
        return [(w["score"], s)]
    return [(w["score"], s), (w["cost_s"], -s)]


def classes(sums: np.ndarray, target: np.ndarray) -> list[np.ndarray]:
    """Indices above, below and on target (within 5% of the target + 1% of uniform)."""
    tol = 0.05 * target + 0.01 / max(1, len(target))
    diff = sums - target
    return [np.nonzero(diff > tol)[0], np.nonzero(diff < -tol)[0],
            np.nonzero(np.abs(diff) <= tol)[0]]


def class_marker(k: int) -> dict:
    """The bar marker of class k of :data:`CLASSES`. Below target is a light box outlined
    in sky blue (it spans what is missing, so a token that gets almost nothing still shows
    a bar); the others are solid."""
    color = CLASSES[k][1]
    if k == 1:
        return dict(color=UNDER_FILL, line=dict(width=1.5, color=color))
    return dict(color=color, line=dict(width=0))


def class_bars(sums: np.ndarray, target: np.ndarray, k: int) -> dict[str, np.ndarray]:
    """Positions and extent of the bars of class k (above, below, on target).

    Above and on target a bar rises from 0 to the sum; below target it rises from the sum
    to the target (a box of the missing mass, standing on what the token does get), so it
    is visible however little the token receives. ``js/patch.js`` (``patchCompare``) draws the
    same bars on every frame of the live sliders.

    Returns:
        {"pos": indices, "value": bar lengths, "base": where each bar starts}.
    """
    pos = classes(sums, target)[k]
    if k == 1:
        return {"pos": pos, "value": target[pos] - sums[pos], "base": sums[pos]}
    return {"pos": pos, "value": sums[pos], "base": np.zeros(len(pos))}
