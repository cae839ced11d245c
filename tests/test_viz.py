"""Figure builders: structure, values against the input plans, labels, escaping, speed.

Relations are built from random numpy arrays by a small factory below (a numpy
log-domain Sinkhorn, no torch, no model), so these tests run anywhere in well under a
minute.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.types import Coupling, History, Projection, Relation, Summary
from viz import bipartite, clouds, diagnostics, grid, heatmaps, theme

TOKENS_A = ("[CLS]", "the", "bank", "of", "the", "<b>river</b>", "[SEP]")
TOKENS_B = ("[CLS]", "a", "<script>alert(1)</script>", "river", "bank", "R&D", "the",
            "the", "[SEP]")
MARKUP = ("<b>river", "<script>", "</script>")


# ----------------------------------------------------------------------------- factory

def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    mx = np.max(x, axis=axis, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(mx, axis) + np.log(np.sum(np.exp(x - mx), axis=axis))


def sinkhorn_np(S, a, b, eps, half_steps):
    """Row-first log-domain Sinkhorn with per-half-step L1 marginal errors."""
    with np.errstate(divide="ignore"):
        log_a, log_b = np.log(a), np.log(b)
    f, g = np.zeros(len(a)), np.zeros(len(b))
    row_err, col_err = [], []
    plan = None
    for t in range(half_steps):
        if t % 2 == 0:
            f = eps * (log_a - _logsumexp((S + g[None, :]) / eps, axis=1))
        else:
            g = eps * (log_b - _logsumexp((S + f[:, None]) / eps, axis=0))
        plan = np.exp((f[:, None] + g[None, :] + S) / eps)
        row_err.append(np.abs(plan.sum(1) - a).sum())
        col_err.append(np.abs(plan.sum(0) - b).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = np.where(plan > 0, np.log(np.where(plan > 0, plan, 1.0)), 0.0)
    return Coupling(plan=plan, f=f, g=g, row_err=np.array(row_err), col_err=np.array(col_err),
                    converged=np.array(max(row_err[-1], col_err[-1]) < 1e-6),
                    cost=float(np.sum(-S * plan)), entropy=float(-np.sum(plan * logp)),
                    eps=eps, half_steps_run=half_steps, tol=1e-6,
                    history=History(steps=np.arange(1, half_steps + 1),
                                    cost=np.linspace(1.0, 0.5, half_steps),
                                    entropy=np.linspace(2.0, 3.0, half_steps)))


def northwest(a, b):
    """A valid coupling of a and b (north-west corner rule): permutation-like, sparse."""
    a, b = a.copy(), b.copy()
    plan = np.zeros((len(a), len(b)))
    i = j = 0
    while i < len(a) and j < len(b):
        t = min(a[i], b[j])
        plan[i, j] = t
        a[i] -= t
        b[j] -= t
        if a[i] <= 1e-15:
            i += 1
        else:
            j += 1
    return plan


def text_weights(n, rng):
    w = rng.uniform(0.5, 1.5, n)
    if n >= 3:
        w[0] = w[-1] = 0.0  # special tokens
    return w / w.sum()


def make_relation(n=7, m=9, *, seed=0, eps=0.5, half_steps=20, tokens_a=None, tokens_b=None):
    rng = np.random.default_rng(seed)
    S = rng.normal(0.0, 1.5, (n, m))
    a, b = text_weights(n, rng), text_weights(m, rng)
    z = S / eps
    attention = np.exp(z - z.max(1, keepdims=True))
    attention /= attention.sum(1, keepdims=True)
    coupling = sinkhorn_np(S, a, b, eps, half_steps)
    exact = northwest(a, b)
    summary = Summary(softmax_col_err=1.0, sinkhorn_row_err=0.0, sinkhorn_col_err=0.0,
                      cost=coupling.cost, entropy=coupling.entropy, kl_to_product=0.0,
                      mutual_information=0.0, zero_weight_mass=0.0,
                      exact_cost=float(np.sum(-S * exact)), l1_to_exact=0.0,
                      l1_to_product=0.0, softmax_cost=0.0, converged=True)
    ta = tokens_a if tokens_a is not None else ([f"a{i}" for i in range(n)] if n != 7 else TOKENS_A)
    tb = tokens_b if tokens_b is not None else ([f"b{j}" for j in range(m)] if m != 9 else TOKENS_B)
    return Relation(
        text_a="A", text_b="B", tokens_a=tuple(ta), tokens_b=tuple(tb), a=a, b=b, scores=S,
        attention=attention, softmax_plan=a[:, None] * attention, coupling=coupling,
        exact_plan=exact, product=np.outer(a, b), summary=summary, layer=2, head=5, eps=eps,
        half_steps=half_steps, mode="separate", weights="uniform", pool_words=False,
        points_a=rng.normal(size=(n, 4)), points_b=rng.normal(size=(m, 4)))


def make_projection(n=7, m=9, *, dim=2, corr=0.8, seed=1):
    rng = np.random.default_rng(seed)
    return Projection(xy_a=rng.normal(size=(n, dim)), xy_b=rng.normal(size=(m, dim)),
                      method="pca", space="qk", dim=dim, distance_cost_corr=corr, explained=0.6)


@pytest.fixture
def rel():
    return make_relation()


# ----------------------------------------------------------------------------- helpers

def strings(obj):
    """Every string in a parsed figure JSON (keys excluded)."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from strings(v)


def parsed(fig: go.Figure) -> dict:
    """The figure's JSON parsed strictly (NaN or Infinity literals raise)."""
    def no_constants(name):
        raise ValueError(f"JSON constant {name} in figure")
    return json.loads(pio.to_json(fig), parse_constant=no_constants)


def assert_escaped(fig: go.Figure, must_contain=("&lt;b&gt;river&lt;\u002fb&gt;",)):
    texts = list(strings(parsed(fig)))
    joined = "\n".join(texts)
    for raw in MARKUP:
        assert raw not in joined, f"raw token markup {raw!r} reached the figure"
    for esc in must_contain:
        assert esc.replace("\u002f", "/") in joined


def heatmap_traces(fig):
    return [t for t in fig.data if isinstance(t, go.Heatmap)]


def all_builders(rel, proj):
    c = rel.coupling
    K = 4
    plans = np.stack([rel.coupling.plan] * K)
    return {
        "compare": heatmaps.compare(rel),
        "compare_conditional": heatmaps.compare(rel, view="conditional", theme="dark"),
        "difference": heatmaps.difference(rel),
        "heatmap": heatmaps.heatmap(rel.attention, rel.tokens_a, rel.tokens_b, title="attention"),
        "graph": bipartite.graph(rel),
        "graph_one": bipartite.graph(rel, which="softmax", highlight=("a", 2)),
        "cloud2": clouds.cloud(rel, make_projection(len(rel.a), len(rel.b))),
        "cloud3": clouds.cloud(rel, proj),
        "convergence": diagnostics.convergence(c, current=3),
        "eps_path": diagnostics.eps_path([2.0, 1.0, 0.5, 0.1], plans, rel.exact_plan,
                                         rel.tokens_a, rel.tokens_b),
        "grid": grid.grid(np.ones((2, 3, 4, 5)), np.arange(6.0).reshape(2, 3), selected=(1, 2)),
    }


def traces_in(fig, axes):
    """The traces drawn on the (x, y) axes ``axes``, e.g. ("x3", "y3")."""
    return [t for t in fig.data if (t.xaxis or "x", t.yaxis or "y") == tuple(axes)]


def traces_at(fig, row, col):
    """The traces drawn in subplot (row, col) of a make_subplots figure."""
    sp = fig.get_subplot(row, col)
    return traces_in(fig, (sp.xaxis.plotly_name.replace("axis", ""),
                           sp.yaxis.plotly_name.replace("axis", "")))


def data_traces(fig, axes):
    """The traces on ``axes`` that draw data (not the legend's entries, which hold none)."""
    return [t for t in traces_in(fig, axes) if t.meta]


def compare_part(plan, part):
    """Axes of compare's "map", "cols" (bars above) or "rows" (bars beside) for a plan."""
    return heatmaps.AXES[plan][("map", "cols", "rows").index(part)]


def bar_values(traces, axis):
    """Combine the per-class bar traces of one marginal into a position -> value dict."""
    out = {}
    for t in traces:
        if isinstance(t, go.Bar):
            pos, val = (t.x, t.y) if axis == "x" else (t.y, t.x)
            if t.base is not None:  # below target: a box from the sum (its base) upwards
                val = t.base
            out.update(zip(np.asarray(pos, dtype=int).tolist(), np.asarray(val, dtype=float).tolist()))
    return np.array([out[k] for k in sorted(out)])


def assert_finite(fig):
    """No NaN or inf in any trace's coordinates, values or custom data (frames included)."""
    traces = list(fig.data) + [t for fr in (fig.frames or ()) for t in fr.data]
    for t in traces:
        for key in ("x", "y", "z", "customdata"):
            val = getattr(t, key, None)
            if val is None:
                continue
            flat = np.asarray(val, dtype=object).ravel()
            nums = np.array([v for v in flat if isinstance(v, (int, float, np.number))], dtype=float)
            assert np.isfinite(nums).all(), f"{t.type}.{key} has NaN/inf"


# ----------------------------------------------------------------------------- theme

def test_escape_makes_markup_literal():
    assert theme.escape("<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;"
    assert theme.escape("R&D") == "R&amp;D"
    assert theme.escape('<a href="u">') == '&lt;a href="u"&gt;'
    assert theme.escape("a\nb") == "a\\nb"
    assert "<" not in theme.escape_gl("<b>x</b>") and "\u2039b\u203a" in theme.escape_gl("<b>x</b>")


def test_thin_ticks_keeps_positions_and_shortens_without_splitting_entities():
    labels = [theme.escape(f"<t{i}>") for i in range(60)]
    vals, text = theme.thin_ticks(labels, max_ticks=40)
    assert len(vals) <= 40 and vals[0] == 0 and np.all(np.diff(vals) > 0)
    assert text == [labels[v] for v in vals]
    assert theme.thin_ticks(["the", "the"], 40) == ([0, 1], ["the", "the"])
    short = theme.shorten(theme.escape("<" * 30), 16)
    assert short.endswith("…") and short.count("&lt;") == 15 and "&l…" not in short


def test_apply_sets_light_and_dark_templates():
    light = theme.apply(go.Figure(), "light", height=300, width=400)
    dark = theme.apply(go.Figure(), "dark")
    assert light.layout.height == 300 and light.layout.width == 400
    assert light.layout.template.layout.paper_bgcolor != dark.layout.template.layout.paper_bgcolor
    with pytest.raises(ValueError, match="theme"):
        theme.apply(go.Figure(), "sepia")


# ----------------------------------------------------------------------------- heatmaps

def test_compare_structure_values_and_shared_scale(rel):
    fig = heatmaps.compare(rel)
    maps = heatmap_traces(fig)
    assert len(maps) == 2 and len(fig.data) == 2 + 2 * 2 * 4 + 4  # + the legend's entries
    np.testing.assert_allclose(maps[0].z, rel.softmax_plan)
    np.testing.assert_allclose(maps[1].z, rel.coupling.plan)
    assert maps[0].coloraxis == maps[1].coloraxis == "coloraxis"
    assert "coloraxis2" not in fig.layout.to_plotly_json()
    assert fig.layout.coloraxis.cmin == 0.0
    inner = np.ix_(rel.a > 0, rel.b > 0)  # weight-0 tokens do not set the scale
    assert fig.layout.coloraxis.cmax == pytest.approx(
        max(rel.softmax_plan[inner].max(), rel.coupling.plan[inner].max()))
    soft_err = np.abs(rel.softmax_plan.sum(0) - rel.b).sum()
    titles = [a.text for a in fig.layout.annotations]
    assert any(t.startswith("Softmax") and theme.fmt(soft_err) in t for t in titles)
    assert any(t.startswith("Sinkhorn") and "20 half-steps" in t for t in titles)


def test_compare_ticks_keep_repeated_tokens(rel):
    fig = heatmaps.compare(rel)
    xa, ya = fig.layout.xaxis, fig.layout.yaxis
    assert list(ya.ticktext) == theme.escape_all(TOKENS_A) and len(ya.ticktext) == 7
    assert list(ya.tickvals) == list(range(7)) and list(ya.range) == [6.5, -0.5]
    assert list(xa.tickvals) == list(range(9)) and list(xa.ticktext).count("the") == 2
    assert heatmap_traces(fig)[0].y.tolist() == list(range(7))  # numeric, not categorical


@pytest.mark.parametrize("name, plan_of", [("softmax", lambda r: r.softmax_plan),
                                           ("sinkhorn", lambda r: r.coupling.plan)])
def test_compare_marginal_bars_equal_plan_sums_and_targets(rel, name, plan_of):
    fig = heatmaps.compare(rel)
    plan = plan_of(rel)
    col_traces = data_traces(fig, compare_part(name, "cols"))
    row_traces = data_traces(fig, compare_part(name, "rows"))
    assert [t.type for t in data_traces(fig, compare_part(name, "map"))] == ["heatmap"]
    np.testing.assert_allclose(bar_values(col_traces, "x"), plan.sum(0))
    np.testing.assert_allclose(bar_values(row_traces, "y"), plan.sum(1))
    col_target = [t for t in col_traces if t.name == "target b"][0]
    row_target = [t for t in row_traces if t.name == "target a"][0]
    np.testing.assert_allclose(col_target.y, rel.b)
    np.testing.assert_allclose(row_target.x, rel.a)


def test_compare_colours_over_and_under_attended_columns(rel):
    fig = heatmaps.compare(rel)
    bars = {t.name: t for t in data_traces(fig, compare_part("softmax", "cols"))
            if isinstance(t, go.Bar)}
    over, under = bars["above target"], bars["below target"]
    diff = rel.softmax_plan.sum(0) - rel.b
    assert over.marker.color == theme.COLOR_OVER and under.marker.line.color == theme.COLOR_UNDER
    assert set(np.asarray(over.x).tolist()) == set(np.nonzero(diff > 0.05 * rel.b + 0.01 / 9)[0].tolist())
    assert len(over.x) > 0 and len(under.x) > 0  # softmax over- and under-attends here
    sink = {t.name: t for t in data_traces(fig, compare_part("sinkhorn", "cols"))
            if isinstance(t, go.Bar)}
    assert len(sink["on target"].x) == 9  # the coupling meets b everywhere


def test_below_target_bars_are_visible_boxes_up_to_the_target(rel):
    # a B token softmax leaves almost alone still shows a bar: a box of its missing mass
    att = rel.attention.copy()
    att[:, 3] = 1e-9  # B3 receives (almost) nothing
    soft = rel.a[:, None] * att / att.sum(1, keepdims=True)
    fig = heatmaps.compare(dataclasses.replace(rel, softmax_plan=soft))
    under = [t for t in data_traces(fig, compare_part("softmax", "cols"))
             if t.type == "bar" and t.name == "below target"][0]
    got, b = soft.sum(0), rel.b
    k = list(under.x).index(3)
    assert under.base[k] == pytest.approx(got[3]) and under.y[k] == pytest.approx(b[3] - got[3])
    assert under.y[k] > 0.5 * b[3]  # as tall as what is missing, not a sliver
    np.testing.assert_allclose(np.asarray(under.base, float) + np.asarray(under.y, float), b[list(under.x)])
    assert under.marker.line.width > 0 and under.marker.color == heatmaps.UNDER_FILL
    assert "%{customdata[3]" in under.hovertemplate  # hover says what it receives
    np.testing.assert_allclose([float(row[3]) for row in under.customdata], got[list(under.x)])
    rows = [t for t in data_traces(fig, compare_part("sinkhorn", "rows"))
            if t.type == "bar" and t.name == "below target"][0]
    assert rows.orientation == "h" and rows.base is not None
    bars = heatmaps.class_bars(np.array([0.0, 0.5, 0.5]), np.array([0.3, 0.4, 0.3]), 1)
    assert list(bars["pos"]) == [0] and list(bars["value"]) == [0.3]
    legend = [t for t in fig.data if t.showlegend and t.name == "below target"][0]
    assert legend.marker.line.color == theme.COLOR_UNDER  # the legend shows the same box


def test_compare_conditional_view_is_row_normalised(rel):
    fig = heatmaps.compare(rel, view="conditional")
    soft, sink = heatmap_traces(fig)
    np.testing.assert_allclose(soft.z, rel.attention)
    z = np.asarray(sink.z)
    np.testing.assert_allclose(z[rel.a > 0].sum(1), 1.0)
    assert np.all(z[rel.a == 0] == 0) and np.isfinite(z).all()
    np.testing.assert_allclose(bar_values(data_traces(fig, compare_part("sinkhorn", "cols")), "x"),
                               rel.coupling.plan.sum(0))
    with pytest.raises(ValueError, match="view"):
        heatmaps.compare(rel, view="marginal")


def test_compare_hover_names_tokens_mass_score_and_cost(rel):
    soft = heatmap_traces(heatmaps.compare(rel))[0]
    cd = np.asarray(soft.customdata, dtype=object)
    assert cd.shape == (7, 9, 4)
    assert cd[5, 2, 0] == "&lt;b&gt;river&lt;/b&gt;" and cd[5, 2, 1] == "&lt;script&gt;alert(1)&lt;/script&gt;"
    np.testing.assert_allclose(cd[..., 2].astype(float), rel.scores)
    np.testing.assert_allclose(cd[..., 3].astype(float), -rel.scores)
    for word in ("%{z", "score S", "cost −S", "%{customdata[0]}", "%{customdata[1]}"):
        assert word in soft.hovertemplate


def test_difference_is_sinkhorn_minus_softmax_on_a_symmetric_diverging_scale(rel):
    fig = heatmaps.difference(rel)
    (tr,) = fig.data
    z = rel.coupling.plan - rel.softmax_plan
    np.testing.assert_allclose(tr.z, z)
    assert tr.zmid == 0 and tr.zmin == pytest.approx(-np.abs(z).max()) and tr.zmax == -tr.zmin
    assert tr.colorscale != heatmaps.heatmap(z, title="").data[0].colorscale  # diverging ≠ mass


def test_heatmap_single_map_and_errors(rel):
    fig = heatmaps.heatmap(rel.attention, rel.tokens_a, rel.tokens_b, title="attention",
                           height=333, width=444)
    assert [t.type for t in fig.data] == ["heatmap"]
    np.testing.assert_allclose(fig.data[0].z, rel.attention)
    assert fig.layout.height == 333 and fig.layout.width == 444
    with pytest.raises(ValueError, match="tokens_a has 3 tokens"):
        heatmaps.heatmap(rel.attention, ["x"] * 3, rel.tokens_b)
    with pytest.raises(ValueError, match="grid"):
        heatmaps.heatmap(np.ones((2, 3, 4, 5)))


def test_all_equal_plan_does_not_crash():
    one = make_relation(1, 1)
    fig = heatmaps.compare(one)
    assert fig.layout.coloraxis.cmax > fig.layout.coloraxis.cmin
    flat = heatmaps.heatmap(np.zeros((3, 4)))
    assert flat.data[0].zmax > flat.data[0].zmin
    diff = heatmaps.heatmap(np.zeros((3, 4)), diverging=True)
    assert diff.data[0].zmax > diff.data[0].zmin
    assert_finite(fig)


# ----------------------------------------------------------------------------- bipartite

def edge_count(traces, name="edges"):
    return sum(list(t.x).count(None) for t in traces if t.name == name)


def test_graph_top_k_edges_count(rel):
    fig = bipartite.graph(rel, top_k=3)
    n_pos = int((rel.a > 0).sum())
    for col in (1, 2):
        assert edge_count(traces_at(fig, 1, col)) == n_pos * 3
    assert edge_count(traces_at(bipartite.graph(rel, top_k=1), 1, 2)) == n_pos
    # None keeps every edge but those lighter than MIN_EDGE of the heaviest shown
    visible = int((rel.coupling.plan >= bipartite.MIN_EDGE * rel.coupling.plan.max()).sum())
    assert 0 < visible <= n_pos * int((rel.b > 0).sum())
    assert edge_count(traces_at(bipartite.graph(rel, top_k=None), 1, 2)) == visible


def test_graph_threshold_and_bins(rel):
    thr = float(np.quantile(rel.coupling.plan[rel.coupling.plan > 0], 0.8))
    fig = bipartite.graph(rel, which="sinkhorn", top_k=None, threshold=thr)
    assert edge_count(fig.data) == int((rel.coupling.plan >= thr).sum())
    edges = [t for t in fig.data if t.name == "edges"]
    assert len(edges) == bipartite.N_BINS and len(fig.data) == bipartite.N_BINS + 2
    widths, opacities = [t.line.width for t in edges], [t.opacity for t in edges]
    assert widths == sorted(widths) and opacities == sorted(opacities)


def test_graph_is_tall_enough_that_nodes_never_touch():
    for n in (2, 12, 17, 30):
        fig = bipartite.graph(make_relation(n, n))
        plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
        assert plot_px >= bipartite.PLOT_MIN_PX  # ≥ 420 px of plot, however short the texts
        room = plot_px / n  # px between two node centres
        for t in (t for t in fig.data if t.name in ("text A", "text B")):
            assert max(t.marker.size) <= bipartite.NODE_FILL * room + 1e-9 or max(t.marker.size) <= 8
    # the note sits under the title, well above the panel titles (on the plots' top edge)
    fig = bipartite.graph(make_relation())
    assert fig.layout.title.subtitle.text and fig.layout.title.yref == "container"
    assert fig.layout.margin.t >= 120
    assert all(a.yanchor == "bottom" and a.y == 1.0 for a in fig.layout.annotations)


def test_graph_scales_each_panel_to_its_own_heaviest_edge():
    # at ε = 1 the coupling is nearly flat next to softmax's peaks: on a shared scale every
    # Sinkhorn edge would fall in the faintest bin
    r = make_relation(12, 12, eps=1.0)
    rng = np.random.default_rng(3)
    flat = np.outer(r.a, r.b) * rng.uniform(0.8, 1.2, (12, 12))  # a coupling near a ⊗ b
    rows = np.full((12, 12), 0.2 / 11)
    rows[:, 1] = 0.8  # softmax sends 80 % of every row to B1
    r = dataclasses.replace(r, softmax_plan=r.a[:, None] * rows,
                            coupling=dataclasses.replace(r.coupling, plan=flat / flat.sum()))
    assert r.softmax_plan.max() > 3 * r.coupling.plan.max()
    fig = bipartite.graph(r)
    for plan in ("softmax", "sinkhorn"):
        bins = [t for t in fig.data if t.meta and t.meta.get("part") == "edges"
                and t.meta["plan"] == plan]
        counts = [list(t.x).count(None) for t in bins]
        assert counts[-1] >= 1, plan  # its heaviest edge is drawn at full width
        if plan == "sinkhorn":  # the flat plan's edges spread over the heavy bins
            assert counts[0] == 0 and sum(counts[2:]) >= 2 * sum(counts) / 3, counts
    from viz._data import bin_edges  # on softmax's scale they would all be faint
    shared = bin_edges(r.coupling.plan.ravel(), r.softmax_plan.max(), bipartite.N_BINS)
    assert [len(x) for x in shared][2:] == [0, 0, 0]
    assert bipartite.edge_scale(r.coupling.plan) == pytest.approx(r.coupling.plan.max())
    assert bipartite.edge_scale(np.zeros((2, 2))) == 1.0


def test_graph_nodes_sizes_labels_and_highlight(rel):
    fig = bipartite.graph(rel, which="softmax", highlight=("a", 2))
    nodes = [t for t in fig.data if t.name in ("text A", "text B")]
    a_nodes = nodes[0]
    assert list(a_nodes.text)[5] == "&lt;b&gt;river&lt;/b&gt;"
    size = np.asarray(a_nodes.marker.size)
    assert size[0] < size[1:-1].min() and list(a_nodes.marker.color)[0] == theme.COLOR_ZERO
    assert np.argmax(size) == np.argmax(rel.a)
    hl = [t for t in fig.data if t.name == "highlight"]
    assert edge_count(hl, "highlight") == 3
    y_a = a_nodes.y[2]
    assert all(t.y[k] == y_a for t in hl for k in range(0, len(t.y), 3))
    assert "heaviest partners" in a_nodes.hovertext[2]
    with pytest.raises(ValueError, match="highlight"):
        bipartite.graph(rel, highlight=("c", 0))


# ----------------------------------------------------------------------------- clouds

def test_cloud_2d_structure_edges_and_note(rel):
    fig = clouds.cloud(rel, make_projection(corr=0.8), top_edges=10)
    assert all(t.type == "scatter" for t in fig.data) and len(fig.data) == clouds.N_BINS + 2
    assert edge_count(fig.data, "coupling") == 10
    a_pts, b_pts = fig.data[-2], fig.data[-1]
    assert a_pts.marker.symbol != b_pts.marker.symbol
    assert np.argmax(a_pts.marker.size) == np.argmax(rel.a)
    assert "ρ = 0.8" in fig.layout.title.text and not fig.layout.annotations
    low = clouds.cloud(rel, make_projection(corr=0.1))
    assert "mislead" in low.layout.annotations[0].text


def test_cloud_3d_uses_scatter3d_with_safe_labels(rel):
    fig = clouds.cloud(rel, make_projection(dim=3), top_edges=5)
    assert all(t.type == "scatter3d" for t in fig.data)
    labels = list(fig.data[-2].text)
    assert labels[5].startswith("\u2039b\u203ariver") and not any("<" in t for t in labels)
    assert edge_count(fig.data, "coupling") == 5
    with pytest.raises(ValueError, match="do not match"):
        clouds.cloud(rel, make_projection(5, 9))


# ----------------------------------------------------------------------------- diagnostics

def test_convergence_errors_on_log_axis_with_floor(rel):
    c = rel.coupling
    fig = diagnostics.convergence(c, current=4)
    row, col = fig.data[0], fig.data[1]
    np.testing.assert_array_equal(row.x, np.arange(1, c.half_steps_run + 1))
    np.testing.assert_allclose(row.y, np.maximum(c.row_err, diagnostics.FLOOR))
    np.testing.assert_allclose(col.y, np.maximum(c.col_err, diagnostics.FLOOR))
    assert min(row.y) >= diagnostics.FLOOR and fig.layout.yaxis.type == "log"
    raw = [r[0] for r in row.customdata]
    assert all(isinstance(v, float) for v in raw)  # numbers, so hover can format them
    np.testing.assert_allclose(raw, c.row_err)
    names = [t.name for t in fig.data]
    assert "cost ⟨−S, π⟩" in names and "entropy H(π)" in names and "half-step 4" in names
    assert sum(s.type == "line" and s.x0 == 4 for s in fig.layout.shapes) == 2
    cost = [t for t in fig.data if t.name.startswith("cost")][0]
    np.testing.assert_allclose(cost.y, c.history.cost)


def test_convergence_exact_zero_and_batched_input():
    c = Coupling(plan=np.eye(2) / 2, f=np.zeros(2), g=np.zeros(2), row_err=np.array([0.0, 0.3]),
                 col_err=np.array([0.5, 0.0]), converged=np.array(False), cost=1.0, entropy=0.7,
                 eps=1.0, half_steps_run=2, tol=1e-6)
    fig = diagnostics.convergence(c)
    assert fig.data[0].y[0] == diagnostics.FLOOR and "floor" in fig.data[0].customdata[0][2]
    assert "not converged" in fig.layout.title.subtitle.text
    batched = Coupling(**{**c.__dict__, "row_err": np.zeros((2, 3)), "col_err": np.zeros((2, 3))})
    with pytest.raises(ValueError, match="one head"):
        diagnostics.convergence(batched)


def test_convergence_of_a_bounded_history_draws_its_kept_half_steps():
    """A long run keeps some half-steps only (engine.relation.relate.bound_errors): the chart
    puts each error at its own half-step, its axis and title still go to T."""
    from engine.relation.relate import bound_errors

    T = 5000
    t = np.arange(1, T + 1)
    full = Coupling(plan=np.eye(2) / 2, f=np.zeros(2), g=np.zeros(2),
                    row_err=np.where(t % 2, 0.0, 1.0 / t), col_err=np.where(t % 2, 1.0 / t, 0.0),
                    converged=np.array(False), cost=1.0, entropy=0.7, eps=1.0,
                    half_steps_run=T, tol=1e-6)
    c = bound_errors(full)
    K = len(c.err_steps)
    assert K <= 1002 and c.err_steps[-1] == T and c.row_err.shape == (K,)
    fig = diagnostics.convergence(c, current=T - 100)
    np.testing.assert_array_equal(fig.data[0].x, c.err_steps)
    np.testing.assert_allclose(fig.data[1].y, np.maximum(1.0 / c.err_steps * (c.err_steps % 2),
                                                         diagnostics.FLOOR))
    assert tuple(fig.layout.xaxis.range) == (0.5, T + 0.5)
    marker = [d for d in fig.data if d.name == "half-step " + str(c.err_steps[
        np.searchsorted(c.err_steps, T - 100, side="right") - 1])]
    assert len(marker) == 1
    with pytest.raises(ValueError, match="err_steps"):
        diagnostics.convergence(Coupling(**{**c.__dict__, "err_steps": c.err_steps[:-1]}))


def test_eps_path_frames_slider_and_buttons(rel):
    eps = [4.0, 1.0, 0.25]
    plans = np.stack([sinkhorn_np(rel.scores, rel.a, rel.b, e, 60).plan for e in eps])
    fig = diagnostics.eps_path(eps, plans, rel.exact_plan, rel.tokens_a, rel.tokens_b)
    assert len(fig.frames) == len(eps) + 1
    assert fig.frames[-1].name == "exact OT"
    np.testing.assert_allclose(fig.frames[-1].data[0].z, rel.exact_plan)
    np.testing.assert_allclose(fig.frames[0].data[0].z, plans[0])
    np.testing.assert_allclose(fig.data[0].z, plans[0])
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["ε=4", "ε=1", "ε=0.25", "exact OT"]
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == ["▶ play", "❚❚ pause"]
    assert fig.data[0].zmax == pytest.approx(max(plans.max(), rel.exact_plan.max()))
    with pytest.raises(ValueError, match="ε values"):
        diagnostics.eps_path(eps[:2], plans, rel.exact_plan)


# ----------------------------------------------------------------------------- grid

def test_grid_tiles_values_and_clickable_centres():
    rng = np.random.default_rng(0)
    plans = rng.uniform(size=(2, 3, 4, 5))
    values = rng.uniform(size=(2, 3))
    fig = grid.grid(plans, values, selected=(1, 2))
    heat, text, centres = fig.data
    assert (heat.type, text.mode, centres.mode) == ("heatmap", "text", "markers")
    z = np.asarray(heat.z)
    gx, gy = max(1, round(0.15 * 5)), max(2, round(0.3 * 5))
    assert z.shape == (2 * 4 + gy, 3 * 5 + 2 * gx)
    np.testing.assert_allclose(z[4 + gy:, 2 * (5 + gx):], plans[1, 2])
    np.testing.assert_allclose(z[:4, :5], plans[0, 0])
    assert np.isnan(z[4:4 + gy]).all()  # gaps stay empty
    assert [tuple(r[:2]) for r in centres.customdata] == [(l, h) for l in range(2) for h in range(3)]
    np.testing.assert_allclose(np.asarray(centres.customdata)[:, 2], values.ravel())
    assert list(text.text) == [theme.fmt(v) for v in values.ravel()]
    (rect,) = fig.layout.shapes
    assert rect.type == "rect" and rect.x0 < 2 * (5 + gx) < rect.x1 and rect.y0 < 4 + gy < rect.y1
    assert heat.hoverinfo == "skip"
    # each number sits on the top edge of its own tile (y reversed: "top" is above it)
    tops = np.repeat(np.arange(2) * (4 + gy) - 0.5, 3)
    np.testing.assert_allclose(text.y, tops)
    assert text.textposition == "top center"


def test_grid_writes_an_infinite_value_as_infinity():
    values = np.array([[np.inf, 0.5]])
    fig = grid.grid(np.ones((1, 2, 3, 3)) / 9, values)
    assert list(fig.data[1].text) == ["∞", "0.5"]
    assert np.isnan(fig.data[2].customdata[0][2]) and fig.data[2].customdata[1][2] == 0.5
    json.loads(fig.to_json())  # valid JSON: no Infinity literal


def test_grid_scales_and_hover_tokens():
    plans = np.ones((2, 2, 3, 3))
    plans[0, 0] = -1.0
    fig = grid.grid(plans, np.zeros((2, 2)), tokens_a=["<b>", "b", "b"], tokens_b=["x", "y", "z"])
    heat = fig.data[0]
    assert heat.zmid == 0 and heat.zmin == -heat.zmax
    assert "&lt;b&gt;" in heat.text[0][0] and "layer 0 · head 0" in heat.text[0][0]
    mass = grid.grid(np.abs(plans), np.zeros((2, 2)), normalise=True)
    assert mass.data[0].zmin == 0 and mass.data[0].zmax == 1.0
    with pytest.raises(ValueError, match="values must be"):
        grid.grid(plans, np.zeros((3, 2)))


def test_grid_72_heads_builds_fast():
    rng = np.random.default_rng(0)
    plans, values = rng.uniform(size=(6, 12, 30, 30)), rng.uniform(size=(6, 12))
    grid.grid(plans[:1, :1], values[:1, :1])  # warm plotly's validators
    t0 = time.perf_counter()
    fig = grid.grid(plans, values, value_name="entropy", selected=(5, 11))
    fig.to_json()
    assert time.perf_counter() - t0 < 2.0
    assert len(fig.data) == 3 and len(fig.data[2].x) == 72


# ----------------------------------------------------------------------------- every builder

def test_every_builder_renders_strict_json_escaped_and_finite(rel):
    figs = all_builders(rel, make_projection(dim=3))
    for name, fig in figs.items():
        assert isinstance(fig, go.Figure), name
        data = parsed(fig)  # strict: no NaN/Infinity literals
        assert data["data"], name
        if name != "grid":  # the grid's gaps are NaN on purpose (drawn empty)
            assert_finite(fig)
        if name in ("grid", "convergence"):  # these show no tokens at all
            assert_escaped(fig, must_contain=())
        elif name != "cloud3":
            assert_escaped(fig)
    assert_escaped(figs["cloud3"], must_contain=("&lt;b&gt;river",))  # hover text


def test_viz_imports_neither_torch_nor_streamlit():
    """viz reads engine's torch-free modules only (types, summary, references, settings)."""
    import subprocess
    import sys
    code = ("import sys, viz; bad = [m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'streamlit', 'transformers', 'ot')]; print(bad); sys.exit(bool(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=".")
    assert out.returncode == 0, out.stdout + out.stderr


# ----------------------------------------------------------------------------- shapes

sizes = st.integers(min_value=1, max_value=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=sizes, m=sizes, seed=st.integers(0, 10_000))
def test_builders_accept_any_small_shape(n, m, seed):
    r = make_relation(n, m, seed=seed)
    cmp = heatmaps.compare(r)
    assert [np.asarray(t.z).shape for t in heatmap_traces(cmp)] == [(n, m), (n, m)]
    assert len(cmp.layout.yaxis.ticktext) == n
    assert np.asarray(heatmaps.difference(r, view="conditional").data[0].z).shape == (n, m)
    g = bipartite.graph(r, top_k=2)
    plan = r.coupling.plan  # each weighted A token's 2 heaviest partners, bar negligible ones
    floor = bipartite.MIN_EDGE * plan.max()  # each panel to its own heaviest edge
    top2 = -np.sort(-plan, axis=1)[:, :2]
    assert edge_count(traces_at(g, 1, 2)) == int((top2 >= floor)[r.a > 0].sum())
    for fig in (cmp, g, clouds.cloud(r, make_projection(n, m, dim=2 + seed % 2)),
                diagnostics.eps_path([1.0], r.coupling.plan[None], r.exact_plan)):
        assert_finite(fig)
        parsed(fig)


@settings(max_examples=20, deadline=None)
@given(L=st.integers(1, 3), H=st.integers(1, 4), n=sizes, m=sizes)
def test_grid_accepts_any_small_shape(L, H, n, m):
    plans = np.random.default_rng(L * H * n * m).uniform(size=(L, H, n, m))
    fig = grid.grid(plans, plans.sum(axis=(2, 3)))
    z = np.asarray(fig.data[0].z)
    assert np.nansum(z) == pytest.approx(plans.sum())
    assert np.isfinite(z).sum() == plans.size and len(fig.data[2].customdata) == L * H


# ----------------------------------------------------------------------------- long texts

def _contrast(fg: str, bg: str) -> float:
    def lum(h):
        r, g, b = (int(h.lstrip("#")[k:k + 2], 16) / 255 for k in (0, 2, 4))
        f = (lambda c: c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b)
    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_token_label_colours_are_readable_on_both_themes():
    for name in ("light", "dark"):
        bg = theme.TEMPLATES[name].layout.paper_bgcolor
        for side in ("a", "b"):
            assert _contrast(theme.text_color(side, name), bg) >= 4.5, (name, side)


def test_long_texts_thin_graph_and_cloud_labels():
    n = m = 350
    r = make_relation(n, m, half_steps=6)
    fig = bipartite.graph(r, which="sinkhorn", top_k=1)
    nodes = [t for t in fig.data if t.name in ("text A", "text B")]
    room = (fig.layout.height - bipartite.MARGIN_T - bipartite.MARGIN_B) / n
    for t in nodes:
        shown = [k for k, s in enumerate(t.text) if s]
        assert 0 < len(shown) <= n * room / bipartite.LABEL_PX + 1
        assert min(np.diff(shown)) * room >= bipartite.LABEL_PX  # no two labels overlap
        assert len(t.hovertext) == n and all(t.hovertext)  # hover still names everyone
    hl = bipartite.graph(r, which="sinkhorn", highlight=("a", 7))
    assert hl.data[-2].text[7] != ""  # the highlighted token is always labelled
    proj = make_projection(n, m)
    cl = clouds.cloud(r, proj)
    pa, pb = cl.data[-2], cl.data[-1]
    xy = np.concatenate([proj.xy_a, proj.xy_b])
    on = np.array([bool(s) for s in (*pa.text, *pb.text)])
    assert 0 < on.sum() <= 60
    unit = (xy - xy.min(0)) / np.ptp(xy, axis=0)
    d = np.linalg.norm(unit[on][:, None] - unit[on][None], axis=-1)
    assert d[np.triu_indices(on.sum(), 1)].min() >= 0.045  # labelled points are spread out
    assert pb.textfont.color == theme.text_color("b", "light")


# ----------------------------------------------------------------------------- pictures

def test_compare_limits_leave_zero_weight_tokens_out():
    a, b = np.array([0.0, 0.5, 0.5]), np.array([0.0, 0.25, 0.75, 0.0])
    soft = np.full((3, 4), 0.01)
    soft[:, 0] = 0.9  # softmax piles mass on [CLS] (weight 0)
    soft[0, :] = 0.7  # and a weight-0 row
    sink = np.full((3, 4), 0.02)
    sink[2, 2] = 0.05
    lim = heatmaps.compare_limits(soft, sink, a, b)
    assert lim == {"softmax": (0.0, 0.05), "sinkhorn": (0.0, 0.05)}  # shared: the larger
    per = heatmaps.compare_limits(soft, sink, a, b, scale="per_plan")
    assert per == {"softmax": (0.0, 0.01), "sinkhorn": (0.0, 0.05)}
    # no token with weight on one side: every cell counts; an all-zero map gets (0, 1)
    assert heatmaps.compare_limits(soft, sink, np.zeros(3), b)["softmax"] == (0.0, 0.9)
    assert heatmaps.compare_limits(np.zeros((3, 4)), np.zeros((3, 4)), a, b,
                                   scale="per_plan")["sinkhorn"] == (0.0, 1.0)
    with pytest.raises(ValueError, match="scale"):
        heatmaps.compare_limits(soft, sink, a, b, scale="log")


def test_compare_per_plan_scales_have_their_own_colour_axis_and_bar(rel):
    fig = heatmaps.compare(rel, scale="per_plan")
    soft, sink = heatmap_traces(fig)
    assert (soft.coloraxis, sink.coloraxis) == ("coloraxis", "coloraxis2")
    inner = np.ix_(rel.a > 0, rel.b > 0)
    assert fig.layout.coloraxis.cmax == pytest.approx(rel.softmax_plan[inner].max())
    assert fig.layout.coloraxis2.cmax == pytest.approx(rel.coupling.plan[inner].max())
    assert fig.layout.coloraxis.cmax != fig.layout.coloraxis2.cmax
    bars = [fig.layout.coloraxis.colorbar, fig.layout.coloraxis2.colorbar]
    assert [c.title.text for c in bars] == ["softmax", "Sinkhorn"]
    spans = sorted((c.y, c.y + c.len) for c in bars)  # stacked, not on top of each other
    assert spans[0][1] <= spans[1][0]
    meta = fig.layout.meta
    assert meta["scale"] == "per_plan"
    assert meta["coloraxes"] == {"softmax": "coloraxis", "sinkhorn": "coloraxis2"}
    assert heatmaps.compare(rel).layout.meta["coloraxes"] == {"softmax": "coloraxis",
                                                             "sinkhorn": "coloraxis"}
    with pytest.raises(ValueError, match="scale"):
        heatmaps.compare(rel, scale="log")


def legend_entries(fig):
    return [(t.name, t.legendrank) for t in fig.data if t.showlegend]


def test_legend_keeps_every_class_in_a_fixed_place():
    # softmax has bars above and below target; a converged coupling has all on target
    figs = [heatmaps.compare(make_relation(eps=eps, half_steps=t, seed=s))
            for eps, t, s in ((0.5, 20, 0), (2.0, 200, 1), (0.5, 1, 2))]
    expect = [("above target", 10), ("below target", 20), ("on target", 30), ("target", 40)]
    for fig in figs:
        assert legend_entries(fig) == expect
        shown = [t for t in fig.data if t.showlegend]
        assert all(t.meta is None and list(t.x) == [None] for t in shown)  # no data
        assert all(not t.showlegend for t in fig.data if t.meta)  # data never in the legend
        assert {t.legendgroup for t in fig.data if t.meta and t.type == "bar"} == {
            "above target", "below target", "on target"}
    sink = [t for t in data_traces(figs[1], compare_part("sinkhorn", "cols")) if t.type == "bar"]
    assert [len(t.x) for t in sink][:2] == [0, 0]  # empty classes, still in the legend
    # the legend sits in its own row at the bottom, never over a title
    lg = figs[0].layout.legend
    assert (lg.yref, lg.y, lg.yanchor, lg.orientation) == ("container", 0, "bottom", "h")


def test_self_mode_names_text_a_twice():
    r = dataclasses.replace(make_relation(), mode="self")
    figs = {"compare": heatmaps.compare(r), "difference": heatmaps.difference(r),
            "heatmap": heatmaps.heatmap(r.attention, r.tokens_a, r.tokens_b, mode="self"),
            "graph": bipartite.graph(r)}
    for name in ("compare", "difference", "heatmap"):
        lay = figs[name].layout
        assert lay.yaxis.title.text == "text A (queries)", name
        assert lay.xaxis.title.text == "text A (keys)", name
    assert figs["compare"].layout.xaxis2.title.text == "text A (keys)"
    assert figs["compare"].layout.title.text.startswith("How text A relates to itself")
    for name, fig in figs.items():
        assert "text B" not in json.dumps(fig.layout.to_plotly_json(), ensure_ascii=False), name
        assert "B[" not in json.dumps([t.hovertemplate for t in fig.data], ensure_ascii=False), name
    assert list(figs["graph"].layout.xaxis.ticktext) == ["text A (queries)", "text A (keys)"]
    path = diagnostics.eps_path([1.0], r.coupling.plan[None], r.exact_plan, r.tokens_a,
                                r.tokens_b, mode="self")
    assert (path.layout.yaxis.title.text, path.layout.xaxis.title.text) == (
        "text A (queries)", "text A (keys)")
    sep = heatmaps.compare(make_relation())
    assert (sep.layout.yaxis.title.text, sep.layout.xaxis.title.text) == ("text A", "text B")
    assert heatmaps.axis_titles("joint") == ("text A", "text B")


def test_difference_says_identical_at_half_step_one_and_keeps_noise_pale():
    r = make_relation(half_steps=1)
    noise = r.coupling.plan - r.softmax_plan
    assert 0 < np.abs(noise).max() < 1e-15  # rounding noise only: half-step 1 is softmax
    fig = heatmaps.difference(r)
    (tr,) = fig.data
    peak = max(r.softmax_plan.max(), r.coupling.plan.max())
    assert "identical" in fig.layout.title.text
    assert tr.zmax == pytest.approx(peak) and tr.zmin == -tr.zmax  # fixed by the plans' peak
    assert np.abs(np.asarray(tr.z)).max() / tr.zmax < 1e-12  # the noise stays at the pale centre
    assert fig.layout.meta["tolerance"] == heatmaps.IDENTICAL
    assert heatmaps.difference_limit(r.softmax_plan, r.coupling.plan) == (pytest.approx(peak), True)
    moved = heatmaps.difference(make_relation(half_steps=20))
    assert "identical" not in moved.layout.title.text
    assert heatmaps.difference_limit(np.zeros((2, 2)), np.zeros((2, 2))) == (1.0, True)


def test_present_scales_every_label_to_18_px(rel):
    for fig in (heatmaps.compare(rel), heatmaps.difference(rel), bipartite.graph(rel),
                diagnostics.convergence(rel.coupling, current=3)):
        before = fig.to_plotly_json()
        as_json = pio.to_json(fig)
        big = theme.present(fig, height=700)
        assert pio.to_json(fig) == as_json  # a copy: the figure is left as it was
        d = big.to_plotly_json()
        sizes = [f["size"] for hover, f in theme._fonts(d, []) if not hover]
        assert sizes and min(sizes) >= theme.PRESENT_PX - 1e-9
        assert big.layout.font.size >= theme.PRESENT_PX and big.layout.height == 700
        k = big.layout.font.size / theme.FONT_SIZE
        old = {**theme.TEMPLATES["light"].layout.margin.to_plotly_json(),
               **(before["layout"].get("margin") or {})}
        assert big.layout.margin.t == pytest.approx(old["t"] * k)
    for name, fig in all_builders(rel, make_projection(len(rel.a), len(rel.b), dim=3)).items():
        big = theme.present(fig)  # every builder's figure, categorical axes included
        sizes = [f["size"] for hover, f in theme._fonts(big.to_plotly_json(), []) if not hover]
        assert min(sizes + [big.layout.font.size]) >= theme.PRESENT_PX - 1e-9, name
        # <sup>/<sub> lines are drawn at 70 % of their font: notes go in the subtitle
        assert not re.search(r"<su[pb]>", big.layout.title.text or ""), name
        if big.layout.title.subtitle.text:
            assert big.layout.title.subtitle.font.size >= theme.PRESENT_PX - 1e-9, name
    cmp = theme.present(heatmaps.compare(rel))
    assert [a.font.size for a in cmp.layout.annotations] == [pytest.approx(16 * 18 / 13)] * 2
    assert cmp.layout.title.font.size == pytest.approx(16 * 18 / 13)
    assert cmp.layout.height == round(heatmaps.compare(rel).layout.height * 18 / 13)


def test_large_maps_carry_their_tokens_once_for_the_hover():
    n = m = 70  # above heatmaps.LARGE cells: hover names positions in the figure itself
    toks = [f"<i>t{k}</i>" for k in range(n)]
    r = make_relation(n, m, tokens_a=toks, tokens_b=[f"u{k}" for k in range(m)])
    for fig in (heatmaps.compare(r), heatmaps.difference(r),
                heatmaps.heatmap(r.attention, r.tokens_a, r.tokens_b)):
        hover = fig.layout.meta["hover"]  # a small map's first two hover lines, raw text
        assert hover["rows"] == [f"A[{k}] {t}" for k, t in enumerate(toks)]
        assert hover["cols"][69] == "B[69] u69"
        for tr in heatmap_traces(fig):
            assert tr.customdata is None and "A[%{y}] → B[%{x}]" in tr.hovertemplate
    assert "hover" not in heatmaps.compare(make_relation()).layout.meta  # small: in the cells
    s = dataclasses.replace(r, mode="self")
    hover = heatmaps.compare(s).layout.meta["hover"]
    assert (hover["rows"][2], hover["cols"][0]) == ("query A[2] <i>t2</i>", "key A[0] u0")
    small = heatmaps.compare(make_relation(3, 2, tokens_a=["x", "y", "z"], tokens_b=["p", "q"]))
    tr = heatmap_traces(small)[0]  # the same lines, filled in by plotly from customdata
    assert tr.hovertemplate.startswith("A[%{y}] %{customdata[0]}<br>B[%{x}] %{customdata[1]}")


def test_cloud_legend_names_the_sides_in_self_mode():
    import dataclasses

    r = dataclasses.replace(make_relation(), mode="self")
    fig = clouds.cloud(r, make_projection())
    assert [t.name for t in fig.data[-2:]] == ["text A (queries)", "text A (keys)"]


# ----------------------------------------------------------------------------- learn figures
def test_learn_exact_plan_stays_visible_over_a_spread_out_plan():
    from engine.lab import toy
    from sinkscope_app.learn.text import WORDS
    from viz import learn as vl
    c = toy.clouds("clusters")
    plan, exact = toy.coupling(c, 1.0).plan, toy.exact(c)  # ε = 1: lines everywhere
    for name in ("light", "dark"):
        fig = vl.plan_and_bars(c.xa, c.a, c.xb, c.b, plan, exact=exact, theme=name,
                               words=WORDS["en"])
        lines = [t for t in fig.data if t.type == "scatter" and t.mode == "lines"]
        dashed = [k for k, t in enumerate(lines) if t.line.dash == "dash"]
        assert len(dashed) == 1 and dashed[0] == len(lines) - 1  # drawn last, on top
        top = lines[-1]
        assert top.line.color == theme.COLOR_ACCENT and top.line.width >= 3 and top.opacity == 1
        halo = lines[-2]  # a solid line of the background's colour under it, wider
        assert halo.line.color == theme.TEMPLATES[name].layout.paper_bgcolor
        assert halo.line.width > top.line.width and list(halo.x) == list(top.x)
        assert not halo.showlegend and top.showlegend


def test_learn_plane_labels_only_the_points_that_matter():
    from sinkscope_app.learn.text import WORDS
    from viz import learn as vl
    rng = np.random.default_rng(0)
    n, m = 14, 16
    a, b = np.full(n, 1 / n), np.full(m, 1 / m)
    a[0] = b[0] = 0.0
    a, b = a / a.sum(), b / b.sum()
    rows = np.full((n, m), 1.0 / m)
    rows[:, 5] += 0.5  # B5 receives far too much; every A point's heaviest pair is B5
    rows[2, 5] += 0.3
    plan = a[:, None] * rows / rows.sum(1, keepdims=True)
    la, lb = [f"a{i}" for i in range(n)], [f"b{j}" for j in range(m)]
    xa, xb = rng.normal(size=(n, 2)), rng.normal(size=(m, 2))
    fig = vl.plan_and_bars(xa, a, xb, b, plan, labels_a=la, labels_b=lb, label_top=3,
                           words=WORDS["en"])
    pts = {t.name: t for t in fig.data if t.type == "scatter" and t.mode == "markers+text"}
    shown_a = [s for s in pts["cloud A"].text if s]
    shown_b = [s for s in pts["cloud B"].text if s]
    assert len(shown_a) == 3 and len(shown_b) == 3
    assert "a2" in shown_a and "b5" in shown_b  # the heaviest pair and the overfull point
    zero = [t for t in fig.data if t.type == "scatter" and t.name == "weighs 0"]
    assert len(zero) == 2 and all(list(t.text) == [""] for t in zero)  # weight 0: no label
    hover = [str(r[0]) for r in pts["cloud A"].customdata]
    assert hover == la[1:]  # hover still names every point
    mask_a, mask_b = vl.labelled(None, a, b, None)
    assert mask_a.all() and mask_b.all()  # without a limit, everyone is labelled
    full = vl.plan_and_bars(xa, a, xb, b, plan, labels_a=la, labels_b=lb, words=WORDS["en"])
    # every point may carry its label: all that have room do (the rest on hover only)
    assert sum(bool(s) for s in [t for t in full.data if t.name == "cloud A"][0].text) > 3


# ----------------------------------------------------------------------------- shared helpers
def test_shared_helpers_live_in_their_own_modules():
    from viz import _axes, _traces
    assert heatmaps.axis_titles is _axes.axis_titles and heatmaps.map_trace is _traces.map_trace
    assert _axes.round_tick(0.5) == 0.2 and _axes.round_tick(1.0) == 0.5
    assert _axes.round_tick(0.0) == 0.0 and _axes.round_tick(0.013) == 0.01
    cells = _axes.domains((1, 1), 0.1)
    assert cells == [[0.0, 0.45], [0.55, 1.0]]
    assert _axes.fill("ε={eps} {left}", eps="1") == "ε=1 {left}"  # unknown fields stay
    above, below, on = _traces.classes(np.array([0.5, 0.1, 0.3]), np.full(3, 0.3))
    assert (list(above), list(below), list(on)) == ([0], [1], [2])
    assert _traces.score_fields(None, (2, 2)) == []
    with pytest.raises(ValueError, match="scores have shape"):
        _traces.score_fields(np.zeros((2, 3)), (2, 2))


def test_grid_height_keeps_cells_square():
    assert grid.square_height(100, 100) == 1100 and grid.square_height(10, 1000) == 300
    assert grid.square_height(50, 100, width=560) == 360
    plans = np.random.default_rng(0).uniform(size=(2, 3, 4, 5))
    fig = grid.grid(plans, np.ones((2, 3)))
    big = np.asarray(fig.data[0].z)
    assert fig.layout.height == grid.square_height(*big.shape)
    with pytest.raises(ValueError, match=r"values must be \(L, H\)"):
        grid.grid(plans, np.ones((3, 2)))


def test_convergence_status_says_what_to_do(rel):
    c = rel.coupling
    ok = dataclasses.replace(c, converged=True, tol=1e-3)
    assert diagnostics.status(ok).startswith("converged: max error")
    bad = dataclasses.replace(c, converged=False)
    assert diagnostics.status(bad).endswith("run more half-steps or raise ε")
    fig = diagnostics.convergence(bad, current=2)
    assert fig.layout.title.subtitle.text == diagnostics.status(bad)
