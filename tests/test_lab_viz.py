"""The Lab's figure builders (viz.lab): traces, panels and axes, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

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
    titles = [t.text for t in fig.layout.annotations]
    assert titles[0] == "target" and titles[1].startswith("sinkhorn<br>")
    lines = [t for t in fig.data if t.mode == "lines"]
    points = [t for t in fig.data if t.mode == "markers"]
    assert len(points) == 4 and {len(t.x) for t in points} == {4, 5}
    in_panel2 = [t for t in lines if t.xaxis == "x2"]
    assert sum(len(t.x) for t in in_panel2) == 3 * 4  # four segments, None-separated
    assert max(t.line.width for t in in_panel2) > max(t.line.width for t in lines
                                                      if t.xaxis == "x")
    with pytest.raises(ValueError, match=r"plan 'bad' must be \(4, 5\)"):
        vlab.couplings(x, a, y, b, {"bad": P.T})


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
