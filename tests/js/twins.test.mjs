// Each browser function against its Python twin, on fixtures tests/test_js.py writes.
// Run through pytest (it writes the fixtures): SINKSCOPE_JS_FIXTURES names the file.
import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {test} from "node:test";

import {fittedTicks} from "../../sinkscope_app/js/axes.js";
import {fill, fmt, language} from "../../sinkscope_app/js/format.js";
import {decodeLattice, decodeTexts} from "../../sinkscope_app/js/lattice.js";
import {binEdges, classes, compareLimits, differenceLimit, edgeScale, nodeHover, patchCompare,
        patchDifference, patchGraph, topEdges} from "../../sinkscope_app/js/patch.js";
import {SK} from "../../sinkscope_app/js/state.js";

if (!process.env.SINKSCOPE_JS_FIXTURES) {
  throw new Error("no fixtures: run these through pytest tests/test_js.py, which writes them " +
                  "from the Python functions and names the file in SINKSCOPE_JS_FIXTURES");
}
const FIX = JSON.parse(readFileSync(process.env.SINKSCOPE_JS_FIXTURES, "utf8"));
// the English page's words and half-step texts, as scrub.py sends them
const EN = language(FIX.words_en, undefined, FIX.steps.stops, FIX.steps.en);
SK.lang = EN;
const num = (x) => (x === "inf" ? Infinity : x === "-inf" ? -Infinity : x === "nan" ? NaN : x);
const f64 = (a) => Float64Array.from(a);
const close = (got, want, what, tol = 1e-12) => {
  assert.ok(Math.abs(got - want) <= tol * Math.max(1, Math.abs(want)), `${what}: ${got} != ${want}`);
};

test("fmt writes every number as engine.relation.summary.fmt", () => {
  for (const {x, out} of FIX.fmt) assert.equal(fmt(num(x)), out, `fmt(${x})`);
});

test("fill as viz._axes.fill", () => {
  for (const {template, values, out} of FIX.fill) assert.equal(fill(template, values), out);
});

test("token ticks thinned to the chart's size as viz.theme._thin_axis", () => {
  for (const c of FIX.thin) {
    const name = c.horizontal ? "xaxis" : "yaxis";
    const layout = {margin: {l: 0, r: 0, t: 0, b: 0}, font: {size: c.font},
                    [name]: {...c.axis, domain: [0, 1], tickfont: {size: c.font}}};
    const ticks = {[name]: {vals: c.axis.tickvals, text: c.axis.ticktext, em: c.em}};
    const out = fittedTicks(layout, ticks, c.length, c.length)[name];
    assert.deepEqual(out.vals, c.vals, `${name} of ${c.axis.tickvals.length} at ${c.length} px`);
    assert.deepEqual(out.text, c.text);
  }
});

test("classes as viz._traces.classes", () => {
  for (const c of FIX.classes) assert.deepEqual(classes(c.sums, c.target), c.classes);
});

test("colour limits as heatmaps.compare_limits and difference_limit", () => {
  for (const c of FIX.limits) {
    const L = {n: c.n, m: c.m, a: c.a, b: c.b};
    const hi = compareLimits(L, f64(c.soft), f64(c.sink), c.scale);
    close(hi.softmax, c.compare.softmax, "softmax");
    close(hi.sinkhorn, c.compare.sinkhorn, "sinkhorn");
    const d = differenceLimit(f64(c.soft), f64(c.sink), FIX.tolerance);
    close(d.lim, c.difference.lim, "difference");
    assert.equal(d.identical, c.difference.identical);
  }
});

test("graph edges, bins, scale and hover as viz._data and viz.bipartite", () => {
  for (const c of FIX.edges) {
    const plan = f64(c.plan);
    const e = topEdges(plan, c.n, c.m, c.top_k, c.threshold, c.max_edges);
    assert.deepEqual(e.i, c.edges.i);
    assert.deepEqual(e.j, c.edges.j);
    e.mass.forEach((x, q) => close(x, c.edges.mass[q], "mass"));
    close(edgeScale(plan), c.scale, "edge scale");
    assert.deepEqual(binEdges(e.mass, c.scale, FIX.n_bins), c.bins);
    const sums = Array.from({length: c.n}, (_, i) => {
      let s = 0;
      for (let j = 0; j < c.m; j++) s += plan[i * c.m + j];
      return s;
    });
    c.hover_a.forEach((want, k) => assert.equal(
      nodeHover(k, "a", c.la, c.lb, c.w, plan, sums, c.n, c.m), want));
  }
});

// ------------------------------------------------------------------ whole figures
const frame = (f) => ({...f, soft: f64(f.soft), sink: f64(f.sink), att: f64(f.att),
                       softRows: f64(f.softRows), softCols: f64(f.softCols),
                       sinkRows: f64(f.sinkRows), sinkCols: f64(f.sinkCols)});
const lattice = (L) => ({...L, a: f64(L.a), b: f64(L.b)});
const flat = (v) => (Array.isArray(v) ? v.flatMap(flat) : [v]);
const sameValues = (got, want, what) => {
  const g = flat(got ?? []), w = flat(want ?? []);
  assert.equal(g.length, w.length, `${what}: ${g.length} values, Python has ${w.length}`);
  g.forEach((x, q) => {
    if (typeof w[q] === "number" && typeof x === "number") close(x, w[q], `${what}[${q}]`, 1e-9);
    else assert.deepEqual(x, w[q], `${what}[${q}]`);
  });
};
const PATCHES = {compare: patchCompare, difference: patchDifference, graph: patchGraph};

test("a frame patched into a figure is the figure Python builds for it", () => {
  for (const c of FIX.patches) {
    const gd = {data: c.before.data, layout: c.before.layout};
    const [data, layout] = PATCHES[c.kind](gd, lattice(c.L), frame(c.f));
    const want = c.after;
    assert.equal(data.length, want.data.length, c.name);
    data.forEach((tr, q) => {
      const py = want.data[q], part = `${c.name} trace ${q} (${JSON.stringify(tr.meta)})`;
      for (const key of ["x", "y", "z", "base", "hovertext", "zmin", "zmax"]) {
        if (key in py || key in tr) sameValues(tr[key], py[key], `${part} ${key}`);
      }
      if (py.customdata && tr.meta && ["cols", "rows"].includes(tr.meta.part)) {
        sameValues(tr.customdata, py.customdata, `${part} customdata`);
      }
    });
    const texts = (lay) => [(lay.title || {}).text, ...(lay.annotations || []).map((a) => a.text)];
    assert.deepEqual(texts(layout), texts(want.layout), `${c.name} titles`);
    for (const [name, ax] of Object.entries(want.layout)) {
      // an axis that matches another takes that one's range in plotly.js
      if (/^[xy]axis\d*$/.test(name) && ax.range && !ax.matches) {
        sameValues(layout[name].range, ax.range, `${c.name} ${name}`);
      }
      if (/^coloraxis\d*$/.test(name)) close(layout[name].cmax, ax.cmax, `${c.name} ${name}`);
    }
  }
});

test("a lattice payload decodes as engine.relation.frames.decode", async () => {
  const L = await decodeLattice(Buffer.from(FIX.lattice.bytes, "base64"));
  const want = FIX.lattice;
  assert.deepEqual([L.n, L.m, L.E, L.T], [want.n, want.m, want.eps.length, want.steps.length]);
  for (let i = 0; i < L.E; i++) {
    for (let k = 0; k < L.T; k++) {
      const f = L.frame(i, k), at = `frame ${i}, ${k}`;
      assert.deepEqual([f.eps, f.steps], [want.eps[i], want.steps[k]], at);
      sameValues(Array.from(f.sink), want.plans[i][k], `${at} plan`);
      sameValues(Array.from(f.soft), want.plans[i][0], `${at} softmax plan`);
      sameValues(Array.from(f.att), want.attention[i], `${at} attention`);
      sameValues(Array.from(f.sinkRows), want.row_sums[i][k], `${at} rows`);
      sameValues(Array.from(f.sinkCols), want.col_sums[i][k], `${at} columns`);
    }
  }
});

test("a frame's texts are the ones scrub.texts_payload ships for it", async () => {
  const X = await decodeTexts(Buffer.from(FIX.lattice.texts, "base64"));
  const want = FIX.lattice.read_texts, E = want.eps.length, T = want.max_err.length / E;
  assert.equal(X.id, want.id);
  for (let i = 0; i < E; i++) {
    for (let k = 0; k < T; k++) {
      const t = X.at(i, k), q = i * T + k;
      assert.deepEqual([t.eps, t.max_err, t.converged],
                       [want.eps[i], want.max_err[q], want.converged[q]]);
      for (const [key, v] of Object.entries(want.values)) {
        assert.deepEqual(t.rows[key], [v[q], (want.details[key] || [])[q] ?? ""], key);
      }
    }
  }
});
