"""Figures of the Sentences view: candidates ranked by sentence similarity and by Sinkhorn
divergence, side by side and one against the other.

Candidates are numbered 1..K in the order they were given, in every figure. Texts are
escaped (plotly renders a subset of HTML) and shortened; hover shows them in full.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from engine.relation.summary import Numbers
from engine.types import Ranking
from viz import theme as th
from viz.words import ENGLISH, WORDS, words_of

HOVER_CHARS = 300


def _label(k: int, text: str, max_chars: int) -> str:
    return f"{k + 1}. " + th.shorten(th.escape(text), max_chars)


def _hover(r: Ranking, w: dict = WORDS, num: Numbers = ENGLISH) -> list[str]:
    out = []
    for k, text in enumerate(r.candidates):
        out.append(f"<b>{k + 1}.</b> {th.shorten(th.escape(text), HOVER_CHARS)}<br>"
                   + w["sent_hover"].format(cosine=num.fixed(r.similarity[k], 4),
                                            place=r.rank_similarity[k],
                                            divergence=num(float(r.divergence[k])),
                                            dplace=r.rank_divergence[k]))
    return out


def _shift_colors(r: Ranking) -> list[str]:
    """Vermillion: the divergence ranks the candidate lower than the cosine does (by 2 or
    more places); blue: higher; grey: about the same."""
    shift = r.rank_divergence - r.rank_similarity
    return [th.COLOR_OVER if s >= 2 else th.COLOR_UNDER if s <= -2 else th.COLOR_MATCH
            for s in shift]


def rankings(r: Ranking, *, max_chars: int = 42, height: int | None = None,
             width: int | None = None, theme: str = "light", words: dict | None = None,
             num: Numbers = ENGLISH) -> go.Figure:
    """Both rankings side by side, each candidate's two places joined by a line.

    Left: candidates by cosine similarity of the model's sentence embeddings (most similar
    on top); right: by debiased Sinkhorn divergence S_ε between the measures (smallest on
    top). A steep line is a candidate the two disagree about.

    Args:
        r: a :class:`~engine.types.Ranking` of K candidates.
        max_chars: characters of each candidate shown (hover shows the whole text).
        height, width: size in pixels; height defaults to one row per candidate.
        theme: "light" or "dark".
        words, num: the figure's words over :data:`viz.words.WORDS` and the page's number
            format (English by default).

    Returns:
        A figure with one line trace per colour (3) and two marker traces (left: places by
        similarity, right: by divergence) whose ``customdata`` is the candidate index.
    """
    K, w = len(r.candidates), words_of(words)
    ps, pd = r.rank_similarity, r.rank_divergence
    colors = _shift_colors(r)
    fig = go.Figure()
    for color, name in ((th.COLOR_MATCH, w["sent_same"]), (th.COLOR_UNDER, w["sent_higher"]),
                        (th.COLOR_OVER, w["sent_lower"])):
        xs, ys = [], []
        for k in range(K):
            if colors[k] == color:
                xs += [0, 1, None]
                ys += [int(ps[k]), int(pd[k]), None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=name, hoverinfo="skip",
                                 line=dict(color=color, width=2), showlegend=bool(xs)))
    hover = _hover(r, w, num)
    left = [f"{_label(k, r.candidates[k], max_chars)}  {num.fixed(r.similarity[k], 3)}"
            for k in range(K)]
    right = [f"{num(float(r.divergence[k]))}  {_label(k, r.candidates[k], max_chars)}"
             for k in range(K)]
    for x, y, text, pos, name in ((0, ps, left, "middle left", w["sent_by_sim"]),
                                  (1, pd, right, "middle right", w["sent_by_div"])):
        fig.add_trace(go.Scatter(
            x=[x] * K, y=[int(v) for v in y], mode="markers+text", text=text,
            textposition=pos, name=name, showlegend=False,
            marker=dict(size=9, color=colors, line=dict(width=1, color=th.edge_color(theme))),
            customdata=np.arange(K), hovertext=hover, hoverinfo="text"))
    fig.update_xaxes(visible=False, range=[-1.6, 2.6], fixedrange=True)
    fig.update_yaxes(visible=False, range=[K + 0.7, 0.3], fixedrange=True)
    fig.add_annotation(x=0, y=0.3, yref="y", text=w["sent_sim_head"],
                       showarrow=False, xanchor="right", yanchor="bottom")
    fig.add_annotation(x=1, y=0.3, yref="y", text=w["sent_div_head"].format(
        eps=num.general(r.eps)), showarrow=False, xanchor="left", yanchor="bottom")
    fig.update_layout(margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h", y=-0.02, yanchor="top", x=0.5,
                                  xanchor="center"),
                      title=dict(text=w["sent_title"], x=0.5, xanchor="center"))
    return th.apply(fig, theme, height=height or 110 + 26 * K, width=width,
                    separators=num.separators)


def scatter(r: Ranking, *, height: int | None = None, width: int | None = None,
            theme: str = "light", words: dict | None = None,
            num: Numbers = ENGLISH) -> go.Figure:
    """Each candidate at (cosine similarity, Sinkhorn divergence), labelled by its number.

    Candidates near the bottom right are close both ways; off the trend, pooling and
    transport disagree. Colours as in :func:`rankings`.

    Args:
        r: a :class:`~engine.types.Ranking`.
        height, width: size in pixels. theme: "light" or "dark".
        words, num: as for :func:`rankings`.

    Returns:
        A figure with one marker trace; ``customdata`` holds candidate indices (0-based),
        x the similarities, y the divergences.
    """
    K, w = len(r.candidates), words_of(words)
    rho = "" if not np.isfinite(r.spearman) else w["sent_rho"].format(
        rho=num.fixed(r.spearman, 2))
    fig = go.Figure(go.Scatter(
        x=np.asarray(r.similarity, float), y=np.asarray(r.divergence, float),
        mode="markers+text", text=[str(k + 1) for k in range(K)], textposition="top center",
        marker=dict(size=12, color=_shift_colors(r),
                    line=dict(width=1, color=th.edge_color(theme))),
        customdata=np.arange(K), hovertext=_hover(r, w, num), hoverinfo="text",
        name=w["candidates"]))
    fig.update_xaxes(title_text=w["sent_x"])
    fig.update_yaxes(title_text=w["sent_y"].format(eps=num.general(r.eps)), rangemode="tozero")
    fig.update_layout(margin=dict(l=70, r=20, t=50, b=60), showlegend=False,
                      title=dict(text=w["sent_one"].format(rho=rho), x=0.5,
                                 xanchor="center"))
    return th.apply(fig, theme, height=height or 460, width=width, separators=num.separators)
