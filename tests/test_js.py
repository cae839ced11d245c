"""The browser's numbers and labels against the Python functions they follow.

The live sliders redraw figures in the browser (``sinkscope_app/js``) from frames the
server precomputed. What Python can compute once, it ships as data; what is left in
JavaScript follows Python functions: number formatting, token ticks, marginal classes,
colour limits, the graph's edges and hover, the metric strip, the figure patches and the
payload's decoding. This test writes fixtures from the Python side (inputs and what Python
makes of them) and runs ``node --test tests/js`` on them: each JS function must give what
its Python twin gives. Node (≥ 20) is needed to run the tests, not the app.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import os
import re
import shutil
import string
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import plotly.graph_objects as go
import pytest

from engine.relation.summary import fmt
from engine.solver import references
from engine.types import Summary
from tests.test_viz import make_relation, sinkhorn_np
from viz import _axes, _data, _traces, bipartite, heatmaps, theme

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
STEPS = [1, 2, 3, 10, 20, 50, 99, 999, 1000, 12345, 123456]  # half-step stops: the metric strip's counts


def num(x: float):
    """A float for JSON: ±inf and NaN as strings the JS side turns back."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _lists(node):
    """plotly's typed arrays ({"dtype", "bdata", "shape"}) as nested lists."""
    if isinstance(node, dict):
        if set(node) >= {"dtype", "bdata"}:
            arr = np.frombuffer(base64.b64decode(node["bdata"]), dtype=node["dtype"])
            if "shape" in node:
                arr = arr.reshape([int(x) for x in str(node["shape"]).split(",")])
            return arr.tolist()
        return {k: _lists(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_lists(v) for v in node]
    return node


def plain(obj):
    """A figure, numpy arrays or dicts of them as plain JSON lists, as the browser holds
    them once plotly.js has read a figure."""
    if hasattr(obj, "to_plotly_json"):
        obj = obj.to_plotly_json()
    return _lists(json.loads(json.dumps(obj, default=lambda o: np.asarray(o).tolist())))


def numbers(rng: np.random.Generator) -> list[float]:
    """Numbers around every boundary of fmt: 1e-3, 1e5, rounding at 3 digits, signs."""
    edges = [0.0, -0.0, 1.0, -1.0, 1e-3, 9.9949e-4, 9.9951e-4, 1e5, 99999.4, 99950.0, 99949.9,
             0.1, 0.125, 0.0125, 1.005, 2.675, 12345.6, 1e-300, 5e-324, 1e300, 123.456,
             0.99951, 0.9995, 9.995, 99.95, 999.5, 1e-7, -3.14159, float("inf"),
             float("-inf"), float("nan")]
    mags = 10.0 ** rng.uniform(-12, 12, 300)
    signs = rng.choice([-1.0, 1.0], 300)
    return edges + list(mags * signs) + list(np.round(rng.uniform(0, 2, 50), 4))


def summaries(rng: np.random.Generator) -> list[dict]:
    """Metric sets like a frame's, with the cases summary.rows treats apart."""
    out = []
    for k in range(12):
        s = dict(softmax_col_err=rng.uniform(0, 2), sinkhorn_row_err=10.0 ** rng.uniform(-17, 0),
                 sinkhorn_col_err=0.0 if k % 2 else 10.0 ** rng.uniform(-9, -1),
                 cost=rng.normal(), entropy=rng.uniform(0, 5), kl_to_product=rng.uniform(0, 2),
                 mutual_information=0.0, zero_weight_mass=0.0, exact_cost=rng.normal() - 1,
                 l1_to_exact=rng.uniform(0, 2), l1_to_product=0.0, softmax_cost=rng.normal(),
                 converged=bool(k % 3))
        if k in (3, 4):  # π puts mass on weight-0 tokens: KL is infinite
            s.update(kl_to_product=math.inf, zero_weight_mass=10.0 ** rng.uniform(-6, -1))
        if k == 5:  # infinite KL but the mass there is rounding
            s.update(kl_to_product=math.inf, zero_weight_mass=1e-15)
        if k in (6, 7):  # cost below exact OT: not a coupling yet
            s.update(cost=s["exact_cost"] - 0.5)
        out.append(s)
    return out


def frame_of(r) -> dict:
    """What the browser's lattice gives for relation r's frame (lattice.js, Lattice.frame),
    with the texts the server sends for it (scrub.frame_texts; lattice.js, FrameTexts.at)."""
    soft, sink = r.softmax_plan, r.coupling.plan
    return dict(
        eps=float(r.eps), steps=int(r.coupling.half_steps_run), k=1,
        soft=soft.ravel().tolist(), sink=sink.ravel().tolist(),
        att=r.attention.ravel().tolist(),
        softRows=soft.sum(1).tolist(), softCols=soft.sum(0).tolist(),
        sinkRows=sink.sum(1).tolist(), sinkCols=sink.sum(0).tolist(),
        text=dict(eps=fmt(r.eps), rows=dict(softmax_col_err=[fmt(references.l1(
                      soft.sum(0), r.b, axes=-1)), ""]),
                  max_err=fmt(max(references.l1(sink.sum(1), r.a, axes=-1),
                                  references.l1(sink.sum(0), r.b, axes=-1))),
                  converged=bool(np.all(np.asarray(r.coupling.converged)))))


def other_frame(r, *, eps: float, half_steps: int):
    """The same relation (texts, weights, scores) at another ε and half-step count."""
    z = r.scores / eps
    att = np.exp(z - z.max(1, keepdims=True))
    att /= att.sum(1, keepdims=True)
    c = sinkhorn_np(r.scores, r.a, r.b, eps, half_steps)
    return dataclasses.replace(r, eps=eps, half_steps=half_steps, attention=att,
                               softmax_plan=r.a[:, None] * att, coupling=c)


def patches(rng: np.random.Generator) -> list[dict]:
    """Figures of frame 0, frame 1, and what the browser needs to patch 0 into 1."""
    out = []
    for seed, (n, m) in enumerate([(7, 9), (5, 4), (12, 10)]):
        r0 = make_relation(n, m, seed=seed, eps=0.5, half_steps=20)
        r1 = other_frame(r0, eps=float(rng.choice([0.1, 0.3, 2.0])), half_steps=int(rng.choice([3, 50])))
        lat = dict(id="x", n=n, m=m, a=r0.a.tolist(), b=r0.b.tolist())
        builds = {
            "compare": lambda r: heatmaps.compare(r),
            "compare_conditional": lambda r: heatmaps.compare(r, view="conditional", scale="per_plan"),
            "difference": lambda r: heatmaps.difference(r),
            "graph": lambda r: bipartite.graph(r, top_k=2 + seed % 2),
            "graph_highlight": lambda r: bipartite.graph(r, highlight=("b", 1), top_k=None),
        }
        for name, build in builds.items():
            out.append(dict(name=f"{name}/{seed}", kind=name.split("_")[0], L=lat,
                            f=frame_of(r1), before=plain(build(r0)), after=plain(build(r1))))
    return out


def lattice_case() -> dict:
    """A small lattice's payload as the browser gets it (base64) and what
    engine.relation.frames.decode reads; its texts in Spanish and what Python reads."""
    from engine.relation.frames import decode, encode
    from engine.relation.lattice import lattice

    rng = np.random.default_rng(5)
    a, b = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(4))
    a[1] = 0.0  # a weight-0 token
    lat = lattice(rng.normal(size=(3, 4)), a / a.sum(), b, [0.1, 1.0], [1, 3, 20])
    from sinkscope_app import scrub

    data, bits = encode(lat, "small", max_bytes=10**6)
    payload = scrub.build(lambda: (data, bits), "small", max_bytes=10**6)
    d = decode(payload.data)  # the browser's copy: no metric numbers
    texts = scrub.texts_payload(payload, "es")
    return dict(bytes=base64.b64encode(payload.data).decode(), n=3, m=4, bits=bits,
                eps=d["eps"], steps=d["steps"], plans=d["plans"].tolist(),
                attention=d["attention"].tolist(), row_sums=d["row_sums"].tolist(),
                col_sums=d["col_sums"].tolist(), texts=base64.b64encode(texts).decode(),
                read_texts=scrub.read_texts(texts))


def thin_cases(rng: np.random.Generator, labels: list[str]) -> list[dict]:
    """Token axes thinned by viz.theme._thin_axis, with the widest label's width the chart
    ships (live.label_widths)."""
    from sinkscope_app import live

    out = []
    for k in range(30):
        size = int(rng.integers(2, 80))
        text = [labels[int(q)] * int(rng.integers(1, 3)) for q in rng.integers(0, len(labels), size)]
        axis = dict(tickvals=list(range(size)), ticktext=text, range=[-0.5, size - 0.5],
                    tickangle=[0, -45, -90, 30][k % 4])
        horizontal, length, font = bool(k % 2), float(rng.uniform(80, 1200)), [11, 13, 18][k % 3]
        name = "xaxis" if horizontal else "yaxis"
        thinned = dict(axis)
        theme._thin_axis(thinned, length, font, horizontal=horizontal)
        out.append(dict(axis=axis, horizontal=horizontal, length=length, font=font,
                        em=live.label_widths(go.Figure(layout={name: axis}))[name],
                        vals=thinned["tickvals"], text=thinned["ticktext"]))
    return out


def fixtures() -> dict:
    from sinkscope_app import scrub

    rng = np.random.default_rng(19)
    xs = numbers(rng)
    labels = ["the", "W", "&lt;b&gt;", "R&amp;D", "中文", "한국어", "ｆｕｌｌ", "😀 ok", "naïve",
              "Ελληνικά", "ﬁ", "…", "[CLS]", "##ing", "かな", "‽", "⌚", "𠀀"]
    cls_cases = []
    for k in range(40):
        m = int(rng.integers(1, 12))
        target = rng.dirichlet(np.ones(m)) if k % 4 else np.zeros(m)
        sums = target * rng.uniform(0.8, 1.2, m) if k % 3 else rng.dirichlet(np.ones(m))
        cls_cases.append(dict(sums=sums.tolist(), target=target.tolist(),
                              classes=[c.tolist() for c in _traces.classes(sums, target)],
                              bars=[plain(_traces.class_bars(sums, target, j)) for j in range(3)]))
    lim_cases = []
    for k in range(30):
        n, m = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        soft, sink = rng.uniform(size=(n, m)) ** 3, rng.uniform(size=(n, m)) ** 3
        a, b = rng.uniform(size=n) * (rng.uniform(size=n) > 0.3), rng.uniform(size=m) * (rng.uniform(size=m) > 0.3)
        if k % 5 == 0:
            sink = soft + 1e-15 * rng.normal(size=(n, m))  # identical up to rounding
        if k == 1:
            soft = sink = np.zeros((n, m))
        for scale in heatmaps.SCALES:
            lims = heatmaps.compare_limits(soft, sink, a, b, scale=scale)
            lim, same = heatmaps.difference_limit(soft, sink)
            lim_cases.append(dict(n=n, m=m, soft=soft.ravel().tolist(), sink=sink.ravel().tolist(),
                                  a=a.tolist(), b=b.tolist(), scale=scale,
                                  compare={k2: v[1] for k2, v in lims.items()},
                                  difference=dict(lim=lim, identical=same)))
    edge_cases = []
    for k in range(30):
        n, m = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        plan = rng.uniform(size=(n, m)) ** 4 * (rng.uniform(size=(n, m)) > 0.2)
        if k % 6 == 0:
            plan = np.round(plan, 1)  # ties: the order must be stable in both
        top_k = [None, 0, 1, 2, 3][k % 5]
        thr = [0.0, 0.05][k % 2]
        max_edges = [None, 5, 600][k % 3]
        i, j, mass = _data.top_edges(plan, top_k=top_k, threshold=thr, max_edges=max_edges)
        scale = bipartite.edge_scale(plan)
        w = rng.uniform(size=n) * (rng.uniform(size=n) > 0.2)
        la, lb = [f"a{q}" for q in range(n)], [f"b{q}" for q in range(m)]
        edge_cases.append(dict(
            n=n, m=m, plan=plan.ravel().tolist(), top_k=top_k, threshold=thr, max_edges=max_edges,
            edges=dict(i=i.tolist(), j=j.tolist(), mass=mass.tolist()), scale=scale,
            bins=[x.tolist() for x in _data.bin_edges(mass, scale, bipartite.N_BINS)],
            hover_a=[bipartite.node_hover(q, "a", la, lb, w, plan) for q in range(n)],
            w=w.tolist(), la=la, lb=lb))
    return dict(
        spanish=spanish(rng, xs),
        thin=thin_cases(rng, labels),
        fmt=[dict(x=num(x), out=fmt(x)) for x in xs],
        steps=dict(stops=STEPS, en=[scrub.steps_text(t) for t in STEPS]),
        lattice=lattice_case(),
        fill=[dict(template=t, values=v, out=_axes.fill(t, **v)) for t, v in (
            ("ε={eps}, {steps}", {"eps": "0.5", "steps": "2 half-steps"}),
            ("{a}{a} {b} {missing}", {"a": "x", "b": "{a}"}),
            ("no fields", {"eps": "1"}))],
        classes=cls_cases, limits=lim_cases, tolerance=heatmaps.IDENTICAL, edges=edge_cases,
        n_bins=bipartite.N_BINS,
        words_en=_english_words(),
        patches=patches(rng))


def _english_words() -> dict:
    """The sliders' words the page sends in English (scrub.WORDS)."""
    from sinkscope_app import scrub
    return dict(scrub.WORDS)


def node_hover_in(k, side, tokens, partner_names, w, plan, words, num) -> str:
    """viz.bipartite.node_hover with the words and number format of a language (the
    browser's twin when the page is not in English)."""
    sums = plan.sum(axis=1 if side == "a" else 0)
    head = words["node"].format(SIDE=side.upper(), k=k, label=tokens[k], side=side,
                                weight=num(w[k]), verb=words["sends" if side == "a"
                                                             else "receives"],
                                sum=num(sums[k]))
    row = plan[k] if side == "a" else plan[:, k]
    order = [p for p in np.argsort(-row, kind="stable")[:5] if row[p] > 0]
    return head + ("<br>".join(f"  → {partner_names[p]}  {num(row[p])}" for p in order)
                   if order else words["no_mass"])


def spanish(rng: np.random.Generator, xs: list[float]) -> dict:
    """What the browser writes on a Spanish page, as Python writes it: numbers
    (summary.numbers("es")), the sliders' step labels and the graph's hovers, with the
    words and number format the payload carries."""
    from engine.relation.summary import numbers as numbers_of
    from sinkscope_app import locale as i18n, scrub

    es = numbers_of("es")
    words = {**scrub.WORDS, **i18n.texts("main", "es")["sliders"]["words"]}
    more = list(10.0 ** rng.uniform(-7, 6, 200) * rng.choice([-1.0, 1.0], 200))
    more += [1234.5, -1235.5, 12345.5, 99999.5, 4.78e-05, 9.7e-05, 5e-06, 4.9e-06, 0.00015]
    hovers = []
    for k in range(8):
        n, m = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        plan = rng.uniform(size=(n, m)) ** 4 * (rng.uniform(size=(n, m)) > 0.3) * 1e-3 ** (k % 3)
        w = rng.uniform(size=n)
        la, lb = [f"a{q}" for q in range(n)], [f"b{q}" for q in range(m)]
        hovers.append(dict(n=n, m=m, plan=plan.ravel().tolist(), w=w.tolist(), la=la, lb=lb,
                           out=[node_hover_in(q, "a", la, lb, w, plan, words, es)
                                for q in range(n)]))
    return dict(spec=dataclasses.asdict(es), words=words,
                num=[dict(x=num(x), out=es(x)) for x in [*xs, *more]],
                hovers=hovers,
                steps=dict(stops=STEPS, texts=[scrub.steps_text(t, words, es) for t in STEPS]))


def test_the_python_twin_of_the_graph_hover_is_the_figure_s_in_english():
    from sinkscope_app import scrub

    rng = np.random.default_rng(3)
    plan, w = rng.uniform(size=(4, 5)) ** 3, rng.uniform(size=4)
    la, lb = [f"a{q}" for q in range(4)], [f"b{q}" for q in range(5)]
    for k in range(4):
        assert node_hover_in(k, "a", la, lb, w, plan, scrub.WORDS, fmt) == \
            bipartite.node_hover(k, "a", la, lb, w, plan)


@pytest.mark.slow
def test_browser_functions_match_their_python_twins(tmp_path):
    assert NODE, "Node ≥ 20 (`node`) is needed to test the browser code; apt-get install nodejs"
    path = tmp_path / "fixtures.json"
    path.write_text(json.dumps(fixtures(), allow_nan=False), encoding="utf-8")
    run = subprocess.run([NODE, "--test", "--test-reporter=tap", str(ROOT / "tests" / "js")],
                         env={**os.environ, "SINKSCOPE_JS_FIXTURES": str(path)},
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    assert "# fail 0" in out and re.search(r"^# pass [1-9]", out, re.M), out[-2000:]


def test_the_bundle_is_the_js_files_without_their_imports():
    from sinkscope_app import live
    assert "import {" not in live.JS and live.JS.count("export default") == 1
    for name in live.JS_FILES:
        assert f"// ---- js/{name}.js" in live.JS
    from sinkscope_app.browser import WIDGET_FILES, bundle

    widget = bundle(WIDGET_FILES)  # the notebook widget's module: one default export, its own
    assert "import {" not in widget and widget.count("export default") == 1
    assert widget.rstrip().endswith("export default {render};")
    for path in (ROOT / "sinkscope_app" / "js").glob("*.js"):  # what a file imports is bundled
        files = WIDGET_FILES if path.stem in ("widget", "align") else live.JS_FILES
        for name in re.findall(r'^import\s*\{[^}]*\}\s*from\s*"\./([\w-]+)\.js";',
                               path.read_text(encoding="utf-8"), re.M):
            assert name in files, (path.name, name)


def test_the_sliders_words_come_from_python():
    from sinkscope_app import scrub
    assert scrub.step_labels([1, 2, 1000]) == ["1 half-step = softmax", "2 half-steps",
                                               "1,000 half-steps"]
    fields = {k: {f for _, f, _, _ in string.Formatter().parse(v) if f}
              for k, v in scrub.WORDS.items()}
    # the fields scrub.js fills in each text
    assert fields["nearest"] == {"eps", "steps", "want_eps", "want_steps"}
    assert fields["about"] == {"label"} and fields["eps_value"] == {"value"}
    js = (ROOT / "sinkscope_app" / "js" / "scrub.js").read_text(encoding="utf-8")
    used = set(re.findall(r"words\.(\w+)|\bw\.(\w+)", js))
    assert {a or b for a, b in used} <= set(scrub.WORDS)  # no word the payload lacks
    for name in ("scrub", "format", "patch", "paint"):  # and none written in the JS itself
        code = (ROOT / "sinkscope_app" / "js" / f"{name}.js").read_text(encoding="utf-8")
        for text in scrub.WORDS.values():
            assert f'"{text}"' not in code and (len(text) < 12 or text not in code), \
                (name, text)
    chart = (ROOT / "sinkscope_app" / "js" / "chart.js").read_text(encoding="utf-8")
    assert "fill(data.failed" in chart and "could not be drawn" not in chart
    from sinkscope_app import live
    assert "{error}" in live.FAILED
    assert scrub.URL_KEYS == {"eps": "eps", "steps": "steps"}
    assert "searchParams.set(keys.eps" in js  # the URL's names come with the payload


def test_label_widths_are_theme_text_px_of_the_widest_label():
    from sinkscope_app import live

    labels = ["the", "中文", "R&amp;D", "😀 ok"]
    fig = go.Figure(layout={"xaxis": {"tickvals": [0, 1, 2, 3], "ticktext": labels},
                            "yaxis3": {"tickvals": [0], "ticktext": ["a"]},
                            "yaxis": {"title": {"text": "no tick text"}}})
    assert live.label_widths(fig) == {"xaxis": max(theme.text_px(t, 1) for t in labels),
                                      "yaxis3": theme.text_px("a", 1)}
    assert theme.text_px("中文", 13) == 13 * live.label_widths(
        go.Figure(layout={"xaxis": {"ticktext": ["中文"]}}))["xaxis"]


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_shipped_half_step_texts_are_the_metric_strip_s(lang):
    """The browser writes "N half-steps" from the texts the sliders ship (scrub.steps_text):
    the metric strip's own words (sinkscope_app.metrics.rows) for every count."""
    from engine.relation.summary import numbers as numbers_of
    from sinkscope_app import locale, metrics, scrub

    words = {**scrub.WORDS, **locale.texts("main", lang)["sliders"]["words"]}
    s = summaries(np.random.default_rng(1))[0]
    for t in STEPS:
        r = SimpleNamespace(summary=Summary(**s), coupling=SimpleNamespace(half_steps_run=t))
        assert scrub.steps_text(t, words, numbers_of(lang)) == metrics.rows(r, lang)[-1].detail
    assert scrub.step_labels([1, 12345], words, numbers_of(lang))[1] == scrub.steps_text(
        12345, words, numbers_of(lang))


def test_the_sliders_ship_the_stops_python_snaps_to():
    from sinkscope_app import scrub
    from sinkscope_app.main.params import EPS_OPTIONS, HALF_STEP_OPTIONS

    for eps, steps in [(0.5, 40), (0.52, 41), (1e9, 1e12), (1e-9, 0), (0.0105, 1)]:
        i, k = scrub.nearest_stops(eps, steps, EPS_OPTIONS, HALF_STEP_OPTIONS)
        assert scrub.parse_value({"frame": {"eps": eps, "steps": steps}}, EPS_OPTIONS,
                                 HALF_STEP_OPTIONS) == (EPS_OPTIONS[i], HALF_STEP_OPTIONS[k])
    assert scrub.nearest_stops(float("nan"), 3, EPS_OPTIONS, HALF_STEP_OPTIONS)[1] == 2


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_address_gets_python_s_text_of_each_stop(lang, monkeypatch):
    """While a slider moves the browser writes each ε stop's text as the address writes it
    (``inputs.written``, shipped as url_eps), not its label: a Spanish label says "0,5",
    which the page could not read back from a link."""
    from engine.relation.summary import numbers as numbers_of
    from sinkscope_app import inputs, scrub
    from sinkscope_app.main.params import EPS_OPTIONS, HALF_STEP_OPTIONS

    got = {}
    monkeypatch.setattr(scrub, "component", lambda name: lambda **kw: got.update(kw))
    scrub.sliders(key="s", eps=0.5, steps=100, eps_stops=EPS_OPTIONS,
                  step_stops=HALF_STEP_OPTIONS, lattice=None, metrics=[], note="",
                  help={"eps": "", "steps": ""}, on_change=None, num=numbers_of(lang))
    [data] = got["data"]
    assert data["url_eps"] == [inputs.written(float(e)) for e in EPS_OPTIONS]
    assert [inputs.to_float(t) for t in data["url_eps"]] == [float(e) for e in EPS_OPTIONS]
    if lang == "es":
        assert "0,5" in data["eps_labels"] and "0,5" not in data["url_eps"]
    js = (ROOT / "sinkscope_app" / "js" / "scrub.js").read_text(encoding="utf-8")
    assert "data.url_eps[" in js and "labels[this.eps.index], this.value" not in js


def test_the_sliders_ship_the_lattice_frame_of_each_stop():
    """The browser shows, for each stop, the frame scrub.frame_stops names (it no longer
    searches the lattice itself): the stop's own frame where the grid holds it, else the
    grid's ε nearest on a log scale and the largest half-step count below."""
    from engine.relation.frames import grid
    from sinkscope_app import scrub
    from sinkscope_app.main.params import EPS_OPTIONS, HALF_STEP_OPTIONS

    eps, steps = grid(EPS_OPTIONS, HALF_STEP_OPTIONS, max_half_steps=40, max_eps_values=9)
    at = scrub.frame_stops(EPS_OPTIONS, HALF_STEP_OPTIONS, eps, steps)
    for e, i in zip(EPS_OPTIONS, at["eps"]):
        assert i == int(np.argmin(np.abs(np.log(eps) - np.log(e))))
        assert (eps[i] == e) == (e in eps)
    for t, k in zip(HALF_STEP_OPTIONS, at["steps"]):
        assert steps[k] == (t if t <= 40 else 40) and steps[k] <= t
    full = scrub.frame_stops(EPS_OPTIONS, HALF_STEP_OPTIONS, EPS_OPTIONS, HALF_STEP_OPTIONS)
    assert full == {"eps": list(range(len(EPS_OPTIONS))), "steps": list(range(len(HALF_STEP_OPTIONS)))}
    js = "".join((ROOT / "sinkscope_app" / "js" / f"{n}.js").read_text(encoding="utf-8")
                 for n in ("lattice", "scrub"))
    assert "nearestEps" not in js and "data.frames" in js


# ------------------------------------------------------------------ the frames' texts
def shipped(lang: str, S, a, b, eps, steps, metrics=None):
    """(lattice, payload, the texts the page ships in ``lang``, as the browser reads them)
    of one small lattice, its metric numbers replaced by ``metrics`` where given."""
    from engine.relation.frames import encode
    from engine.relation.lattice import lattice
    from sinkscope_app import scrub

    lat = lattice(S, a, b, eps, steps)
    data, bits = encode(lat, "x", max_bytes=10**7)
    payload = scrub.build(lambda: (data, bits), "x", max_bytes=10**7)
    if metrics is not None:
        payload = dataclasses.replace(payload, metrics=metrics(payload.metrics))
    return lat, payload, scrub.read_texts(scrub.texts_payload(payload, lang))


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_shipped_texts_are_the_metric_strip_of_every_frame(lang):
    """The browser's metric strip for frame (i, k) (js/scrub.js, frameMetrics) is
    sinkscope_app.metrics.rows of that frame's numbers, in the page's language: the page
    ships the texts (scrub.texts_payload) and the browser formats no number."""
    from engine.relation.frames import METRICS
    from engine.relation.summary import numbers as numbers_of
    from sinkscope_app import metrics, scrub

    rng = np.random.default_rng(8)
    cases = summaries(rng)  # infinite KL, cost below exact OT, not converged, tiny errors

    def special(mx):  # the first frames take the special cases
        mx = {key: np.array(v) for key, v in mx.items()}
        for q, s in enumerate(cases):
            for key, v in s.items():
                mx[key][divmod(q, mx[key].shape[1])] = v
        return mx

    a, b = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(5))
    lat, payload, t = shipped(lang, rng.normal(size=(4, 5)), a, b, [0.05, 0.3, 1.0, 4.0],
                              [1, 2, 3, 20, 1000], special)
    E, T = lat.shape
    assert t["id"] == scrub.texts_id("x", lang) and len(t["max_err"]) == E * T
    assert t["eps"] == [numbers_of(lang)(e) for e in lat.eps]
    seen = set()
    for i in range(E):
        for k in range(T):
            q = i * T + k
            s = Summary(**{key: payload.metrics[key][i, k] for key in METRICS})
            r = SimpleNamespace(summary=s,
                                coupling=SimpleNamespace(half_steps_run=int(lat.steps[k])))
            for row in metrics.rows(r, lang):
                got = (t["values"][row.key][q], t["details"].get(row.key, [""] * (E * T))[q])
                assert got == (row.value, row.detail), (lang, i, k, row.key)
                seen.add((row.key, row.value == "∞", bool(row.detail)))
            assert t["converged"][q] == bool(s.converged)
    assert {("kl_to_product", True, True), ("cost", False, True)} <= seen


def _same_text(got: str, want: str) -> bool:
    """Equal up to numbers that differ by rounding noise (|Δ| ≤ 1e-9 or 1 %), in either
    language's decimal mark (as tests/test_scrub_browser.py compares titles)."""
    number = re.compile(r"-?\d+(?:[.,]\d+)?(?:e[+-]\d+)?")
    if number.sub("#", got) != number.sub("#", want):
        return False
    pairs = zip(number.findall(got), number.findall(want))
    return all(abs(float(x.replace(",", ".")) - float(y.replace(",", "."))) <=
               1e-9 + 1e-2 * abs(float(y.replace(",", "."))) for x, y in pairs)


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_shipped_texts_fill_the_titles_viz_writes_for_every_frame(lang):
    """The titles of the compare, difference and graph figures the browser fills for
    frame (i, k) (js/patch.js, titleValues) are the ones viz writes for that frame, in the
    page's language, from the texts the page ships."""
    from sinkscope_app import locale, scrub

    r0 = make_relation(7, 9, seed=2, eps=0.5, half_steps=20)
    lat, _, t = shipped(lang, r0.scores, r0.a, r0.b, [0.1, 0.5, 2.0], [1, 2, 3, 50])
    w, num = locale.words("main", lang)["figures"], locale.numbers(lang)
    words = {**scrub.WORDS, **locale.texts("main", lang)["sliders"]["words"]}
    E, T = lat.shape
    for i, eps in enumerate(lat.eps):
        for k, steps in enumerate(lat.steps):
            q = i * T + k
            c = dataclasses.replace(r0.coupling, plan=lat.plans[i, k], eps=float(eps),
                                    half_steps_run=int(steps),
                                    converged=np.array(lat.summary.converged[i, k]))
            r = dataclasses.replace(r0, eps=float(eps), half_steps=int(steps), coupling=c,
                                    attention=lat.attention[i], softmax_plan=lat.plans[i, 0])
            vals = dict(eps=t["eps"][i], steps=scrub.steps_text(steps, words, num),
                        softmax_col_err=t["values"]["softmax_col_err"][q],
                        max_err=t["max_err"][q])
            for fig in (heatmaps.compare(r, words=w, num=num),
                        heatmaps.difference(r, words=w, num=num),
                        bipartite.graph(r, words=w, num=num)):
                meta = fig.layout.meta
                if meta["kind"] == "difference":
                    same = heatmaps.difference_limit(r.softmax_plan, c.plan)[1]
                    got = [_axes.fill(meta["title"], **vals,
                                      identical=w["identical"] if same else "")]
                    want = [fig.layout.title.text]
                else:
                    note = "" if t["converged"][q] else meta.get("not_converged", "")
                    got = [_axes.fill(x, **vals, not_converged=note) for x in meta["titles"]]
                    want = [x.text for x in fig.layout.annotations[:len(got)]]
                assert len(got) == len(want) > 0, meta["kind"]
                assert all(_same_text(g, x) for g, x in zip(got, want)), (lang, i, k, got, want)
