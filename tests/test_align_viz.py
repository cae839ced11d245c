"""viz.align's builders: trace types, shapes, marker symbols for hits, misses and false
links, unaligned marks, escaped words, and the classification against sure/possible gold."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import viz.align as va

A = ["the", "<b>cat</b>", "sat"]
B = ["a", "cat", "was", "here"]
LINKS = [(0, 0), (1, 1), (2, 3)]
SURE = [(1, 1), (2, 2)]
POSSIBLE = [(0, 0)]


def _by_kind(fig) -> dict:
    return {t.meta["kind"]: t for t in fig.data}


def test_matrix_has_the_plan_beside_the_links_with_gold_kinds_by_shape():
    plan = np.random.default_rng(0).random((3, 4))
    fig = va.matrix(A, B, LINKS, plan=plan, sure=SURE, possible=POSSIBLE, method="unbalanced")
    kinds = _by_kind(fig)
    assert fig.data[0].type == "heatmap" and np.asarray(fig.data[0].z).shape == (3, 4)
    assert set(kinds) == {"plan", "hit", "hit_possible", "false", "miss", "null_b"}
    assert list(zip(kinds["hit"].y, kinds["hit"].x)) == [(1, 1)]
    assert list(zip(kinds["hit_possible"].y, kinds["hit_possible"].x)) == [(0, 0)]
    assert list(zip(kinds["false"].y, kinds["false"].x)) == [(2, 3)]
    assert list(zip(kinds["miss"].y, kinds["miss"].x)) == [(2, 2)]
    symbols = {k: kinds[k].marker.symbol for k in ("hit", "hit_possible", "false", "miss")}
    assert symbols == {"hit": "square", "hit_possible": "diamond", "false": "x",
                       "miss": "circle-open"}
    assert len(set(symbols.values())) == 4  # told apart by shape, not only colour
    assert kinds["hit"].marker.color != kinds["false"].marker.color
    # B's word 2 ("was") has no link: marked above the matrix (y = −1), as ▼
    nb = kinds["null_b"]
    assert list(nb.x) == [2] and list(nb.y) == [-1] and nb.marker.symbol == "triangle-down"
    assert all(t.xaxis == "x2" for t in fig.data[1:])  # links in the right panel
    assert "&lt;b&gt;cat&lt;/b&gt;" in fig.layout.yaxis2.ticktext


def test_matrix_without_gold_draws_plain_links_and_both_unaligned_sides():
    fig = va.matrix(A, B, [(0, 1)])
    kinds = _by_kind(fig)
    assert set(kinds) == {"link", "null_a", "null_b"}
    assert all(t.type == "scatter" for t in fig.data)
    assert list(kinds["null_a"].y) == [1, 2] and list(kinds["null_a"].x) == [-1, -1]
    assert kinds["null_a"].marker.symbol == "triangle-right"
    assert list(kinds["null_b"].x) == [0, 2, 3]


def test_matrix_refuses_bad_input_with_messages():
    with pytest.raises(ValueError, match="outside a 3 × 4 pair"):
        va.matrix(A, B, [(0, 99)])
    with pytest.raises(ValueError, match="expected \\(3, 4\\)"):
        va.matrix(A, B, LINKS, plan=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="at least one word"):
        va.matrix([], B, [])


def test_graph_lines_per_kind_and_open_nodes_for_unaligned_words():
    fig = va.graph(A, B, [(0, 0), (1, 1)], sure=SURE)
    kinds = _by_kind(fig)
    assert {"hit", "false", "miss", "nodes_a", "null_a", "nodes_b", "null_b"} == set(kinds)
    assert kinds["miss"].line.dash == "dot" and kinds["hit"].line.dash == "solid"
    assert kinds["hit"].mode == "lines" and len(kinds["hit"].x) == 3  # one segment + gap
    assert kinds["null_a"].marker.symbol == "circle-open"
    assert kinds["nodes_a"].marker.symbol == "circle"
    assert list(kinds["null_a"].text) == ["sat ∅"]
    assert list(kinds["null_b"].text) == ["∅ was", "∅ here"]
    assert "&lt;b&gt;cat&lt;/b&gt;" in kinds["nodes_a"].text


def test_the_ranking_is_best_first_with_intervals_on_a_zoomed_axis():
    from engine.alignment.verdict import Ranked

    ranked = [Ranked("unbalanced", 1, 0.797, (0.789, 0.805), 0.0, True, {}),
              Ranked("softmax-both", 2, 0.796, (0.789, 0.804), -0.001, False, {}),
              Ranked("exact", 3, 0.781, (0.771, 0.790), -0.016, False, {})]
    fig = va.ranking(ranked, settings={"exact": "θ 0.94"})
    best, others = ({t.meta["kind"]: t for t in fig.data}[k] for k in ("best", "others"))
    assert best.x == (0.797,) and best.y == (0,) and best.marker.symbol == "star"
    assert others.x == (0.796, 0.781) and others.y == (1, 2)
    np.testing.assert_allclose(others.error_x.arrayminus, [0.007, 0.010], atol=1e-12)
    np.testing.assert_allclose(others.error_x.array, [0.008, 0.009], atol=1e-12)
    assert list(fig.layout.yaxis.ticktext) == ["unbalanced", "softmax-both", "exact"]
    lo, hi = fig.layout.xaxis.range  # the methods' range, padded: not 0–1
    assert 0.76 < lo < 0.771 and 0.805 < hi < 0.82
    assert others.text[1].endswith("θ 0.94")
    assert va.zoomed([0.2], [0.9]) == pytest.approx((0.095, 1.0))
    with pytest.raises(ValueError, match="nothing to rank"):
        va.ranking([])


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.data())
def test_classify_partitions_links_and_gold(n, m, data):
    cells = st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, m - 1)))
    links, sure, poss = data.draw(cells), data.draw(cells), data.draw(cells)
    k = va.classify(links, n, m, sure=sure, possible=poss)
    P = poss | sure
    predicted = set(k["hit"]) | set(k["hit_possible"]) | set(k["false"])
    assert predicted == links and not k["link"]
    assert set(k["hit"]) == links & sure and set(k["false"]) == links - P
    assert set(k["miss"]) | set(k["hit"]) == sure
    assert set(k["miss_possible"]) == (P - sure) - links
    na, nb = va.unaligned(links, n, m)
    assert set(na) == set(range(n)) - {i for i, _ in links}
    assert set(nb) == set(range(m)) - {j for _, j in links}


def test_every_word_label_and_note_is_kept_whole():
    """Words of B that would not fit side by side turn, so no page width drops every other
    label; long notes wrap rather than run off the figure."""
    from sinkscope_app.align import ui

    a, b = "the cat sat on the mat".split(), "a cat was sitting on the mat".split()
    fig = va.matrix(a, b, [(1, 1)], plan=np.zeros((6, 7)), method="exact")
    for axis in (fig.layout.xaxis, fig.layout.xaxis2):
        assert list(axis.ticktext) == b and axis.tickangle == -45
    assert va.matrix(["x"], ["y", "z"], []).layout.xaxis.tickangle is None  # short: level
    es = ui("es")["figure"]
    for figure, key in ((va.matrix(a, b, [(1, 1)], sure=[(1, 1)], words=es), "note_gold"),
                        (va.graph(a, b, [(1, 1)], words=es), "graph_note")):
        lines = figure.layout.title.subtitle.text.split("<br>")
        assert " ".join(lines) == es[key] and len(lines) == 2
