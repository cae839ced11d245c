"""The Lab's figure builders (viz.lab): traces, panels and axes, and clear errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

from engine.relation.summary import numbers
from viz import lab as vlab


def _pair(n=4, m=5, seed=0):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(n, 2)), rng.normal(size=(m, 2)) + 2
    a, b = np.full(n, 1 / n), rng.dirichlet(np.ones(m))
    return x, a, y, b, np.outer(a, b)


def test_loss_curves_one_line_per_model_on_a_log_axis():
    fig = vlab.loss_curves({"sinkhorn": ([25, 50], [0.3, 0.1]), "softmax": ([], [])},
                           labels={"sinkhorn": "Sinkhorn <b>T</b>"}, total_steps=400)
    assert [t.name for t in fig.data] == ["Sinkhorn &lt;b&gt;T&lt;/b&gt;", "softmax"]
    assert fig.layout.yaxis.type == "log" and tuple(fig.layout.xaxis.range) == (0, 400)
    with pytest.raises(ValueError, match="same length"):
        vlab.loss_curves({"x": ([1, 2], [0.1])})


def test_couplings_draw_each_plan_as_lines_between_the_clouds():
    x, a, y, b, P = _pair()
    Q = np.zeros_like(P)
    Q[np.arange(4), np.arange(4)] = 0.25 - 1e-9  # a nearly diagonal plan: four heavy lines
    fig = vlab.couplings(x, a, y, b, {"target": P, "sinkhorn": Q},
                         notes={"sinkhorn": "L1 0.1"})
    titles = [t.text.split("<br>")[0] for t in fig.layout.annotations]
    assert titles == ["target", "sinkhorn"]
    assert "L1 0.1 · 100% of the mass drawn" in fig.layout.annotations[1].text
    lines = [t for t in fig.data if t.mode == "lines"]
    points = [t for t in fig.data if t.mode == "markers"]
    assert len(points) == 4 and {len(t.x) for t in points} == {4, 5}
    assert [t.marker.symbol for t in points[:2]] == ["circle", "diamond"]
    in_panel2 = [t for t in lines if t.xaxis == "x2"]
    assert sum(len(t.x) for t in in_panel2) == 3 * 4  # four segments, None-separated
    assert max(t.line.width for t in in_panel2) >= max(t.line.width for t in lines
                                                       if t.xaxis == "x")
    with pytest.raises(ValueError, match=r"plan 'bad' must be \(4, 5\)"):
        vlab.couplings(x, a, y, b, {"bad": P.T})


def test_a_small_cloud_is_drawn_as_large_as_the_other():
    # ν 20 times smaller than μ and far away: each is drawn centred, at its own spread.
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(8, 2)) * 3, rng.normal(size=(8, 2)) * 0.15 + 40
    a, b = np.full(8, 1 / 8), rng.dirichlet(np.ones(8))
    fig = vlab.couplings(x, a, y, b, {"target": np.outer(a, b)})
    mu, nu = ([t for t in fig.data if t.name == name][0] for name in ("μ", "ν"))
    for tr, w in ((mu, a), (nu, b)):
        xy = np.c_[tr.x, tr.y]
        m = w @ xy
        np.testing.assert_allclose(m, 0, atol=1e-12)
        assert np.sqrt(w @ ((xy - m) ** 2).sum(1)) == pytest.approx(1.0)


@pytest.mark.parametrize("n", [3, 8, 32])
def test_couplings_stay_readable_from_3_to_32_points(n):
    # A spread-out plan (every pair holds a·b) draws no hairball at 32 points; a matching
    # draws one line per point, each at full width; markers shrink with n but stay visible.
    rng = np.random.default_rng(n)
    x, y = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    a = b = np.full(n, 1 / n)
    match = np.eye(n) / n
    fig = vlab.couplings(x, a, y, b, {"target": match, "model": np.outer(a, b)})
    segs = {ax: sum(len(t.x) for t in fig.data if t.mode == "lines" and t.xaxis == ax) // 3
            for ax in ("x", "x2")}
    assert segs["x"] == n
    assert segs["x2"] == (n * n if n < 10 else 0)  # a·b ≥ 10 % of min(a, b) only for n < 10
    assert {t.line.width for t in fig.data if t.mode == "lines" and t.xaxis == "x"} == {6.0}
    sizes = np.asarray([t.marker.size for t in fig.data if t.mode == "markers"], float)
    assert sizes.min() >= 6 and sizes.max() <= 16.1


def test_long_model_names_wrap_and_are_never_cut():
    x, a, y, b, P = _pair()
    name = "Context-free encoders + Sinkhorn (a longer name than any panel holds)"
    fig = vlab.couplings(x, a, y, b, {"cf": P}, labels={"cf": name})
    head = fig.layout.annotations[0].text.split("<br><span")[0]
    assert "…" not in head and head.replace("<br>", " ") == name
    assert all(len(line) <= vlab.TITLE_CHARS for line in head.split("<br>"))
    m = vlab.matrices({"cf": P}, labels={"cf": name})
    assert m.layout.annotations[0].text.replace("<br>", " ") == name


def test_a_long_note_and_panel_notes_keep_clear_of_the_panel_titles():
    """The Spanish Lab's note ran into the panels' titles, and their notes into each other
    (issue 42): the title is pinned to the top, the top margin holds every line of the
    note and of the tallest panel title, and each panel's note wraps to its third."""
    from sinkscope_app import locale

    x, a, y, b, P = _pair()
    ui = locale.texts("lab", "es")
    notes = {k: "L1 1,699 · filas 3,6e-08 · columnas 2,0e-08" for k in ("sinkhorn", "softmax")}
    fig = vlab.couplings(x, a, y, b, {"target": P, "sinkhorn": P, "softmax": P},
                         labels={"target": "Objetivo F(μ, ν)", "sinkhorn": "Transformer de "
                                 "Sinkhorn", "softmax": "Última capa softmax"}, notes=notes,
                         title="Acoplamientos", note=ui["couplings_note"].format(share="10 %"),
                         words={"drawn": ui["drawn"]}, num=locale.numbers("es"))
    assert (fig.layout.title.yanchor, fig.layout.title.y, fig.layout.title.yref) == (
        "top", 1, "container")
    note_lines = fig.layout.title.subtitle.text.count("<br>") + 1
    panel_lines = max(t.text.count("<br>") + 1 for t in fig.layout.annotations[:3])
    assert note_lines >= 2 and panel_lines >= 3  # the Spanish note and panel notes wrap
    assert fig.layout.margin.t == vlab.heading_px(note_lines, panel_lines)
    assert fig.layout.margin.t >= vlab.TITLE_PAD_PX + 30 + 18 * note_lines + 20 * panel_lines
    for t in fig.layout.annotations[:3]:
        for line in t.text.split("<br>")[1:]:
            assert len(re.sub(r"<[^>]+>", "", line)) <= vlab.UNDER_CHARS, line


def test_matrices_show_each_second_marginal_against_b():
    x, a, y, b, P = _pair()
    soft = a[:, None] * np.full((4, 5), 1 / 5)  # rows right, columns uniform: not b
    fig = vlab.matrices({"target": P, "softmax": soft}, b=b)
    bars = [t for t in fig.data if t.type == "bar"]
    ticks = [t for t in fig.data if t.type == "scatter"]
    assert {t.xaxis for t in bars} == {"x", "x2"} and len(ticks) == 2
    np.testing.assert_allclose(np.asarray(ticks[1].y, float), b)
    by = {(t.xaxis, t.meta["cls"]): {k: np.asarray(getattr(t, k), float) for k in
                                     ("x", "y", "base")} for t in bars}
    assert len(by["x", 2]["x"]) == 5 and not len(by["x", 0]["x"]) and not len(by["x", 1]["x"])
    got = P.sum(0)
    np.testing.assert_allclose(by["x", 2]["y"], got[by["x", 2]["x"].astype(int)])
    over, under = by["x2", 0], by["x2", 1]
    cols = soft.sum(0)
    assert set(over["x"]) == set(np.nonzero(cols > b * 1.05 + 0.002)[0])
    k = under["x"].astype(int)
    np.testing.assert_allclose(under["base"], cols[k])  # a box from what it gets to b
    np.testing.assert_allclose(under["base"] + under["y"], b[k])
    assert fig.layout.yaxis.range == fig.layout.yaxis2.range  # one scale for every panel
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert [t.xaxis for t in heat] == ["x3", "x4"]
    with pytest.raises(ValueError, match=r"b must be \(5,\)"):
        vlab.matrices({"target": P}, b=b[:3])


def test_matrices_share_one_colour_scale_and_error_vs_width_is_log_log():
    _, _, _, _, P = _pair()
    fig = vlab.matrices({"target": P, "model": 2 * P})
    assert [t.type for t in fig.data] == ["heatmap", "heatmap"]
    assert {t.zmax for t in fig.data} == {float(2 * P.max())}
    with pytest.raises(ValueError, match="same shape"):
        vlab.matrices({"a": P, "b": P.T})
    w = vlab.error_vs_width([1, 2, 4], {"sinkhorn": [0.5, 0.2, np.nan]})
    assert w.layout.xaxis.type == "log" and w.layout.yaxis.type == "log"
    assert list(w.data[0].x) == [1, 2, 4]
    with pytest.raises(ValueError, match="one value per width"):
        vlab.error_vs_width([1, 2], {"sinkhorn": [0.5]})


@pytest.mark.parametrize("values, texts", [
    ([0.0649, 0.9], ["0.1", "0.2", "0.5"]),
    ([0.25, 0.8], ["0.3", "0.4", "0.5", "0.6", "0.7", "0.8"]),
    ([3e-4, 2.0], ["0.0005", "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1",
                   "0.2", "0.5", "1", "2"]),
    ([1e-7, 1.0], ["1e-07", "1e-06", "1e-05", "0.0001", "0.001", "0.01", "0.1", "1"]),
])
def test_log_ticks_write_every_number_in_full(values, texts):
    t = vlab.log_ticks(values)
    assert t["ticktext"] == texts
    np.testing.assert_allclose(t["tickvals"], [float(s) for s in texts])
    es = vlab.log_ticks(values, numbers("es"))["ticktext"]
    assert es == [s.replace(".", ",") for s in texts]
    assert vlab.log_ticks([1.68, 1.695]) == {} and vlab.log_ticks([np.nan, -1]) == {}


def test_the_curves_and_the_sweep_carry_those_ticks():
    es = numbers("es")
    fig = vlab.loss_curves({"sinkhorn": ([25, 50], [0.9, 0.07])}, num=es)
    assert list(fig.layout.yaxis.ticktext) == ["0,1", "0,2", "0,5"]
    w = vlab.error_vs_width([1, 2, 4], {"sinkhorn": [0.3, 0.2, np.nan]}, num=es)
    assert list(w.layout.yaxis.ticktext) == ["0,2", "0,3"]
