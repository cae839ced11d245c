// Figure patches: frame f of lattice L swapped into a figure viz built. Pure functions
// of the figure's data and layout (no DOM); each follows a viz function named beside it.
import {fill, here} from "./format.js";

export const max = (arr) => { let v = -Infinity; for (const x of arr) if (x > v) v = x; return v; };
export const to2D = (flat, n, m) => {
  const out = new Array(n);
  for (let i = 0; i < n; i++) out[i] = Array.from(flat.subarray(i * m, (i + 1) * m));
  return out;
};
export function rowNormalise(p, n, m) {
  const out = new Float64Array(n * m);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = 0; j < m; j++) s += p[i * m + j];
    if (s > 0) for (let j = 0; j < m; j++) out[i * m + j] = p[i * m + j] / s;
  }
  return out;
}
export function classes(sums, target) {  // viz.heatmaps._classes: above, below, on target
  const out = [[], [], []], len = Math.max(1, target.length);
  for (let j = 0; j < sums.length; j++) {
    const tol = 0.05 * target[j] + 0.01 / len, d = sums[j] - target[j];
    out[d > tol ? 0 : d < -tol ? 1 : 2].push(j);
  }
  return out;
}
export function shown(L, f, view) {
  if (view === "joint") return [f.soft, f.sink];
  if (f.k > 0) return [f.att, rowNormalise(f.sink, L.n, L.m)];
  // half-step 1: π(j | i) is softmax itself on every row of weight > 0 (and 0 elsewhere);
  // taken from the attention, not from the separately rounded plan, so that "identical"
  // holds here exactly as on the server
  const out = new Float64Array(L.n * L.m);
  for (let i = 0; i < L.n; i++) {
    if (L.a[i] > 0) out.set(f.att.subarray(i * L.m, (i + 1) * L.m), i * L.m);
  }
  return [f.att, out];
}

// viz.heatmaps.compare_limits: each map's peak over the cells of tokens with weight
// (a_i > 0, b_j > 0; all cells when none), shared by both maps or per plan.
export function compareLimits(L, soft, sink, scale) {
  const {n, m} = L, rows = [], cols = [];
  for (let i = 0; i < n; i++) if (L.a[i] > 0) rows.push(i);
  for (let j = 0; j < m; j++) if (L.b[j] > 0) cols.push(j);
  const all = !rows.length || !cols.length;
  const peak = (z) => {
    let hi = -Infinity;
    if (all) hi = max(z);
    else for (const i of rows) for (const j of cols) if (z[i * m + j] > hi) hi = z[i * m + j];
    return hi > 0 ? hi : 1;
  };
  const hi = {softmax: peak(soft), sinkhorn: peak(sink)};
  if (scale !== "per_plan") hi.softmax = hi.sinkhorn = Math.max(hi.softmax, hi.sinkhorn);
  return hi;
}

// viz.heatmaps.difference_limit: ±max|Δ|, or ±the largest mass when |Δ| is rounding noise.
export function differenceLimit(soft, sink, tolerance) {
  let peak = 0, delta = 0;
  for (let c = 0; c < soft.length; c++) {
    peak = Math.max(peak, Math.abs(soft[c]), Math.abs(sink[c]));
    delta = Math.max(delta, Math.abs(sink[c] - soft[c]));
  }
  if (delta <= tolerance * peak) return {lim: peak > 0 ? peak : 1, identical: true};
  return {lim: delta, identical: false};
}

// What frame ``f``'s titles are filled with ({eps}, {steps}, the errors, the not-converged
// note of ``meta``): texts the server wrote in the page's language (f.text, scrub.py's
// frame_texts; the softmax column error is the metric strip's).
export function titleValues(f, meta) {
  const t = f.text;
  return {eps: t.eps, steps: here().steps(f.steps), softmax_col_err: t.rows.softmax_col_err[0],
          max_err: t.max_err, not_converged: t.converged ? "" : meta.not_converged};
}

export function patchCompare(gd, L, f) {
  const meta = gd.layout.meta, {n, m} = L;
  const [soft, sink] = shown(L, f, meta.view);
  const z = {softmax: to2D(soft, n, m), sinkhorn: to2D(sink, n, m)};
  const sums = {softmax: {cols: f.softCols, rows: f.softRows},
                sinkhorn: {cols: f.sinkCols, rows: f.sinkRows}};
  // the legend's entries are traces of their own (fixed, never patched)
  const data = gd.data.map((tr) => {
    const mt = tr.meta || {};
    if (mt.part === "map") return {...tr, z: z[mt.plan]};
    if (mt.part !== "cols" && mt.part !== "rows") return tr;
    const cols = mt.part === "cols";
    const s = sums[mt.plan][mt.part], target = cols ? L.b : L.a;
    const names = cols ? meta.labels_b : meta.labels_a;
    // viz.heatmaps.class_bars: below target, a box from the sum up to the target
    const pos = classes(s, target)[mt.cls], below = mt.cls === 1;
    const val = pos.map((p) => (below ? target[p] - s[p] : s[p]));
    const cd = pos.map((p) => [names[p], target[p], s[p] - target[p], s[p]]);
    const base = below ? {base: pos.map((p) => s[p])} : {};
    return cols ? {...tr, x: pos, y: val, customdata: cd, ...base}
                : {...tr, x: val, y: pos, customdata: cd, ...base};
  });
  const hi = compareLimits(L, soft, sink, meta.scale);
  const colHi = 1.08 * Math.max(1e-12, max(f.softCols), max(f.sinkCols), max(L.b));
  const rowHi = 1.08 * Math.max(1e-12, max(f.softRows), max(f.sinkRows), max(L.a));
  const vals = titleValues(f, meta);
  const lay = gd.layout;
  const annotations = (lay.annotations || []).map((a, k) =>
    k < meta.titles.length ? {...a, text: fill(meta.titles[k], vals)} : a);
  // the mass axes of the column and row bars (viz.heatmaps.AXES; the others match them)
  const {cols: colAxis, rows: rowAxis} = meta.bar_axes;
  const out = {...lay, annotations, [colAxis]: {...lay[colAxis], range: [0, colHi]},
               [rowAxis]: {...lay[rowAxis], range: [0, rowHi]}};
  for (const [plan, axis] of Object.entries(meta.coloraxes)) {
    out[axis] = {...lay[axis], cmin: 0, cmax: hi[plan]};
  }
  return [data, out];
}

export function patchDifference(gd, L, f) {
  const meta = gd.layout.meta, {n, m} = L;
  const [soft, sink] = shown(L, f, meta.view);
  const z = new Float64Array(n * m);
  for (let c = 0; c < n * m; c++) z[c] = sink[c] - soft[c];
  const {lim, identical} = differenceLimit(soft, sink, meta.tolerance);
  const data = gd.data.map((tr) => {
    if (!tr.meta || tr.meta.part !== "diff") return tr;
    const out = {...tr, z: to2D(z, n, m), zmin: -lim, zmax: lim};
    if (Array.isArray(tr.customdata)) {  // [token A, token B, Sinkhorn, softmax, S, −S]
      out.customdata = tr.customdata.map((row, i) => row.map((c, j) =>
        [c[0], c[1], sink[i * m + j], soft[i * m + j], ...c.slice(4)]));
    }
    return out;
  });
  const title = {...gd.layout.title,
                 text: fill(meta.title, {eps: f.text.eps, steps: here().steps(f.steps),
                                         identical: identical ? meta.identical : ""})};
  return [data, {...gd.layout, title}];
}

// viz._data.top_edges: (i, j, mass) kept for drawing, heaviest first (stable).
export function topEdges(plan, n, m, topK, threshold, maxEdges) {
  const keep = new Uint8Array(n * m);
  for (let c = 0; c < n * m; c++) keep[c] = plan[c] > 0 && plan[c] >= threshold ? 1 : 0;
  if (topK) {
    const k = Math.min(topK, m), idx = [...Array(m).keys()];
    for (let i = 0; i < n; i++) {
      const order = idx.slice().sort((p, q) => plan[i * m + q] - plan[i * m + p] || p - q);
      const top = new Uint8Array(m);
      for (let r = 0; r < k; r++) top[order[r]] = 1;
      for (let j = 0; j < m; j++) keep[i * m + j] &= top[j];
    }
  }
  const edges = [];
  for (let c = 0; c < n * m; c++) if (keep[c]) edges.push(c);
  edges.sort((p, q) => plan[q] - plan[p] || p - q);
  const cut = maxEdges == null ? edges : edges.slice(0, maxEdges);
  return {i: cut.map((c) => Math.floor(c / m)), j: cut.map((c) => c % m),
          mass: cut.map((c) => plan[c])};
}
export function binEdges(mass, scale, nBins = 5) {  // viz._data.bin_edges
  const out = Array.from({length: nBins}, () => []);
  mass.forEach((x, e) => {
    const rel = Math.min(1, Math.max(0, x / (scale > 0 ? scale : 1)));
    out[Math.min(Math.floor(rel * nBins), nBins - 1)].push(e);
  });
  return out;
}
// The nodes' heights as viz drew them (a node trace's y; plotly's decoded copy in the page).
export const nodeHeights = (gd, side) => (gd._fullData || gd.data).find((t) =>
  t.meta && t.meta.part === "nodes" && t.meta.side === side).y;
// viz.bipartite.node_hover, in ``lang`` (format.js, language; the page's by default)
export function nodeHover(k, side, labels, partners, w, plan, sums, n, m, lang = here()) {
  const {num, words: t} = lang;
  const along = side === "a" ? m : n;
  const at = (p) => (side === "a" ? plan[k * m + p] : plan[p * m + k]);
  const head = fill(t.node, {SIDE: side.toUpperCase(), k, label: labels[k], side,
                             weight: num(w[k]), verb: side === "a" ? t.sends : t.receives,
                             sum: num(sums[k])});
  const order = [...Array(along).keys()].sort((p, q) => at(q) - at(p) || p - q)
    .slice(0, 5).filter((p) => at(p) > 0);
  return head + (order.length ? order.map((p) => `  → ${partners[p]}  ${num(at(p))}`).join("<br>")
                              : t.no_mass);
}

// viz.bipartite.edge_scale: the mass drawn at full width, each panel its own heaviest.
export function edgeScale(plan) {
  const hi = plan.length ? max(plan) : 0;
  return hi > 0 ? hi : 1;
}

export function patchGraph(gd, L, f) {
  const meta = gd.layout.meta, {n, m} = L;
  const ya = nodeHeights(gd, "a"), yb = nodeHeights(gd, "b");
  const plans = {softmax: f.soft, sinkhorn: f.sink};
  const sums = {softmax: {a: f.softRows, b: f.softCols}, sinkhorn: {a: f.sinkRows, b: f.sinkCols}};
  const drawn = {};
  for (const p of meta.plans) {
    const scale = edgeScale(plans[p]);
    const e = topEdges(plans[p], n, m, meta.top_k,
                       Math.max(meta.threshold, (meta.min_edge || 0) * scale), meta.max_edges);
    drawn[p] = {edges: e, bins: binEdges(e.mass, scale)};
    if (meta.highlight) {
      const [side, idx] = meta.highlight;
      const sel = e.mass.map((_, r) => r).filter((r) => (side === "a" ? e.i[r] : e.j[r]) === idx);
      const sub = {i: sel.map((r) => e.i[r]), j: sel.map((r) => e.j[r]),
                   mass: sel.map((r) => e.mass[r])};
      drawn[p].highlight = {edges: sub, bins: binEdges(sub.mass, scale)};
    }
  }
  const data = gd.data.map((tr) => {
    const mt = tr.meta || {};
    if (mt.part === "edges" || mt.part === "highlight") {
      const d = mt.part === "edges" ? drawn[mt.plan] : drawn[mt.plan].highlight;
      const x = [], y = [];
      for (const r of d.bins[mt.bin]) {
        x.push(0, 1, null);
        y.push(ya[d.edges.i[r]], yb[d.edges.j[r]], null);
      }
      return {...tr, x, y};
    }
    if (mt.part === "nodes") {
      const w = mt.side === "a" ? L.a : L.b, size = mt.side === "a" ? n : m;
      const hovertext = Array.from({length: size}, (_, k) =>
        nodeHover(k, mt.side, mt.labels, mt.partners, w, plans[mt.plan], sums[mt.plan][mt.side],
                  n, m));
      return {...tr, hovertext};
    }
    return tr;
  });
  const vals = {eps: f.text.eps, steps: here().steps(f.steps)};
  const annotations = (gd.layout.annotations || []).map((a, k) =>
    k < meta.titles.length ? {...a, text: fill(meta.titles[k], vals)} : a);
  return [data, {...gd.layout, annotations}];
}

export const PATCH = {compare: patchCompare, difference: patchDifference, graph: patchGraph};
