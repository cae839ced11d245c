// sinkscope's client side: charts updated in place, and the live ε / half-step sliders.
//
// One module for three st.components.v2 components (live.py, scrub.py), told apart by
// their data:
//   chart    {spec, src, config, height, bind?}  one plotly div per key, Plotly.react;
//            "bind" names the lattice whose frames may be swapped into the figure.
//   lattice  raw bytes (scrub.py's payload): every (ε, half-step) frame, decoded once.
//   scrub    {role: "scrub", ...}: both sliders and the metric strip. On every input
//            event it redraws the bound charts from the lattice (no server round trip);
//            on release it sends the value to the server (URL, exports, other views).
// The figures' structure comes from viz: traces and layouts carry "meta" naming their
// parts, and the JS only swaps arrays, ranges and titles in them.
// State shared by all instances lives on window.__sinkscope.

const SK = (window.__sinkscope = window.__sinkscope || {
  lattices: new Map(),  // id -> {promise, lattice|null, error|null}
  charts: new Set(),    // plot divs; gd.__sk = {bind, config}
  scrub: null,          // the sliders' controller
  stats: {redraws: 0, last: 0, frame: null, served: 0, commits: 0},
  keyCommitMs: 450,     // keys: the value goes to the server once they pause this long
});

// ---------------------------------------------------------------- numbers and text
// engine.relation.summary.fmt, to the letter: 3 significant digits; |x| < 1e-3 or ≥ 1e5 in
// scientific notation with 2 decimals; 0 as "0"; ±inf as "∞"/"−∞"; NaN as "n/a".
const pad = (s) => s.replace(/e([+-])(\d)$/, "e$10$2");
function gfmt(x, p) {  // Python's format(x, ".{p}g")
  const s = x.toPrecision(p);
  if (s.includes("e")) {
    let [mant, ex] = s.split("e");
    if (mant.includes(".")) mant = mant.replace(/\.?0+$/, "");
    return pad(mant + "e" + ex);
  }
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}
export function fmt(x) {
  x = Number(x);
  if (Number.isNaN(x)) return "n/a";
  if (!Number.isFinite(x)) return x > 0 ? "∞" : "−∞";
  if (x === 0) return "0";
  const ax = Math.abs(x);
  if (ax < 1e-3 || ax >= 1e5) return pad(x.toExponential(2));
  return gfmt(x, 3);
}
const halfStepsText = (t) => `${t.toLocaleString("en-US")} half-step${t === 1 ? "" : "s"}`;
const fill = (template, vals) =>
  String(template).replace(/\{(\w+)\}/g, (m, k) => (k in vals ? vals[k] : m));
SK.fmt = fmt;

// ---------------------------------------------------------------- plotly.js
const loadPlotly = (src) => {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__sinkscopePlotly) {
    window.__sinkscopePlotly = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src;
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => {
        window.__sinkscopePlotly = null;
        reject(new Error("plotly.js could not be loaded from the server"));
      };
      document.head.appendChild(s);
    });
  }
  return window.__sinkscopePlotly;
};

// A plot div that is hidden (display: none), detached or zero-sized cannot be resized:
// plotly rejects with "Resize must be passed a displayed plot div element".
const displayed = (gd) =>
  gd.isConnected && gd.offsetParent !== null && gd.clientWidth > 0 && !!gd._fullLayout;

// ---------------------------------------------------------------- the lattice
class Lattice {
  constructor(h, buf) {
    Object.assign(this, {id: h.id, n: h.n, m: h.m, eps: h.eps, steps: h.steps, tol: h.tol,
                         a: Float64Array.from(h.a), b: Float64Array.from(h.b), keys: h.metrics,
                         zeroMass: h.zero_mass});
    const view = (name, Type) => {
      const [off, len] = h.sections[name];
      return new Type(buf, off, len / Type.BYTES_PER_ELEMENT);
    };
    const Q = h.bits === 16 ? Uint16Array : Uint8Array;
    this.E = h.eps.length; this.T = h.steps.length; this.nm = h.n * h.m;
    this.q = view("plans", Q);
    this.qa = view("attention", Q);
    this.planScale = view("plan_scale", Float64Array);
    this.attScale = view("attention_scale", Float64Array);
    this.metrics = view("metrics", Float64Array);
    this.rowDiff = view("row_diff", Float32Array);
    this.colDiff = view("col_diff", Float32Array);
    const {E, T, nm, q} = this;  // undo the delta coding along t (modulo 2^bits)
    for (let i = 0; i < E; i++) {
      for (let k = 1; k < T; k++) {
        const base = (i * T + k) * nm, prev = base - nm;
        for (let c = 0; c < nm; c++) q[base + c] += q[prev + c];
      }
    }
    this.cache = new Map();
  }
  epsIndex(e) {  // exact, else null
    const i = this.eps.findIndex((x) => Math.abs(x - e) <= 1e-9 * Math.abs(e));
    return i < 0 ? null : i;
  }
  nearestEps(e) {
    let best = 0;
    for (let i = 1; i < this.E; i++) {
      if (Math.abs(Math.log(this.eps[i] / e)) < Math.abs(Math.log(this.eps[best] / e))) best = i;
    }
    return best;
  }
  nearestStep(t) {  // the largest held count ≤ t (the frame nearest on the way there)
    let best = 0;
    for (let k = 0; k < this.T; k++) if (this.steps[k] <= t) best = k;
    return best;
  }
  frame(i, k) {
    const key = i * this.T + k;
    if (this.cache.has(key)) return this.cache.get(key);
    const {n, m, nm, T} = this;
    const plan = (ii, kk) => {
      const out = new Float64Array(nm), s = this.planScale[ii], off = (ii * T + kk) * nm;
      for (let c = 0; c < nm; c++) out[c] = this.q[off + c] * s;
      return out;
    };
    const sums = (diff, target, ii, kk, size) => {
      const out = new Float64Array(size), off = (ii * T + kk) * size;
      for (let c = 0; c < size; c++) out[c] = target[c] + diff[off + c];
      return out;
    };
    const att = new Float64Array(nm), sa = this.attScale[i];
    for (let c = 0; c < nm; c++) att[c] = this.qa[i * nm + c] * sa;
    const met = {};
    this.keys.forEach((name, j) => { met[name] = this.metrics[key * this.keys.length + j]; });
    const f = {
      i, k, eps: this.eps[i], steps: this.steps[k], att, metrics: met,
      soft: plan(i, 0), sink: k === 0 ? null : plan(i, k),
      softRows: sums(this.rowDiff, this.a, i, 0, n), softCols: sums(this.colDiff, this.b, i, 0, m),
      sinkRows: sums(this.rowDiff, this.a, i, k, n), sinkCols: sums(this.colDiff, this.b, i, k, m),
    };
    if (f.sink === null) f.sink = f.soft;  // half-step 1 is softmax
    if (this.cache.size > 64) this.cache.delete(this.cache.keys().next().value);
    this.cache.set(key, f);
    return f;
  }
}

async function decodeLattice(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (String.fromCharCode(u8[0], u8[1], u8[2], u8[3]) !== "SKL1") {
    throw new Error("not a sinkscope lattice");
  }
  const size = new DataView(u8.buffer, u8.byteOffset, u8.byteLength).getUint32(4, true);
  const h = JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + size)));
  const stream = new Blob([u8.subarray(8 + size)]).stream()
    .pipeThrough(new DecompressionStream("deflate"));
  return new Lattice(h, await new Response(stream).arrayBuffer());
}

function mountLattice({data}) {
  const u8 = data instanceof Uint8Array ? data : new Uint8Array(data);
  const size = new DataView(u8.buffer, u8.byteOffset, u8.byteLength).getUint32(4, true);
  let id;
  try {
    id = JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + size))).id;
  } catch (err) {
    return;
  }
  if (!SK.lattices.has(id)) {
    const entry = {lattice: null, error: null};
    entry.promise = decodeLattice(u8).then((L) => {
      entry.lattice = L;
      if (SK.scrub) SK.scrub.latticeReady(id);
      return L;
    }).catch((err) => { entry.error = err; });
    SK.lattices.set(id, entry);
    while (SK.lattices.size > 3) SK.lattices.delete(SK.lattices.keys().next().value);
  }
}

// ---------------------------------------------------------------- figure patches
const max = (arr) => { let v = -Infinity; for (const x of arr) if (x > v) v = x; return v; };
const to2D = (flat, n, m) => {
  const out = new Array(n);
  for (let i = 0; i < n; i++) out[i] = Array.from(flat.subarray(i * m, (i + 1) * m));
  return out;
};
function rowNormalise(p, n, m) {
  const out = new Float64Array(n * m);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = 0; j < m; j++) s += p[i * m + j];
    if (s > 0) for (let j = 0; j < m; j++) out[i * m + j] = p[i * m + j] / s;
  }
  return out;
}
function classes(sums, target) {  // viz.heatmaps._classes: above, below, on target
  const out = [[], [], []], len = Math.max(1, target.length);
  for (let j = 0; j < sums.length; j++) {
    const tol = 0.05 * target[j] + 0.01 / len, d = sums[j] - target[j];
    out[d > tol ? 0 : d < -tol ? 1 : 2].push(j);
  }
  return out;
}
function shown(L, f, view) {
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
function compareLimits(L, soft, sink, scale) {
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
function differenceLimit(soft, sink, tolerance) {
  let peak = 0, delta = 0;
  for (let c = 0; c < soft.length; c++) {
    peak = Math.max(peak, Math.abs(soft[c]), Math.abs(sink[c]));
    delta = Math.max(delta, Math.abs(sink[c] - soft[c]));
  }
  if (delta <= tolerance * peak) return {lim: peak > 0 ? peak : 1, identical: true};
  return {lim: delta, identical: false};
}

function patchCompare(gd, L, f) {
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
  const mx = f.metrics;
  const vals = {eps: fmt(f.eps), steps: halfStepsText(f.steps),
                softmax_col_err: fmt(mx.softmax_col_err),
                max_err: fmt(Math.max(mx.sinkhorn_row_err, mx.sinkhorn_col_err)),
                not_converged: mx.converged ? "" : meta.not_converged};
  const lay = gd.layout;
  const annotations = (lay.annotations || []).map((a, k) =>
    k < meta.titles.length ? {...a, text: fill(meta.titles[k], vals)} : a);
  const out = {...lay, annotations, yaxis3: {...lay.yaxis3, range: [0, colHi]},
               xaxis5: {...lay.xaxis5, range: [0, rowHi]}};
  for (const [plan, axis] of Object.entries(meta.coloraxes)) {
    out[axis] = {...lay[axis], cmin: 0, cmax: hi[plan]};
  }
  return [data, out];
}

function patchDifference(gd, L, f) {
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
                 text: fill(meta.title, {eps: fmt(f.eps), steps: halfStepsText(f.steps),
                                         identical: identical ? meta.identical : ""})};
  return [data, {...gd.layout, title}];
}

// viz._data.top_edges: (i, j, mass) kept for drawing, heaviest first (stable).
function topEdges(plan, n, m, topK, threshold, maxEdges) {
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
function binEdges(mass, scale, nBins = 5) {  // viz._data.bin_edges
  const out = Array.from({length: nBins}, () => []);
  mass.forEach((x, e) => {
    const rel = Math.min(1, Math.max(0, x / (scale > 0 ? scale : 1)));
    out[Math.min(Math.floor(rel * nBins), nBins - 1)].push(e);
  });
  return out;
}
const positions = (size, span) => size === 1 ? [(span - 1) / 2]
  : Array.from({length: size}, (_, k) => k * (span - 1) / (size - 1));
function nodeHover(k, side, labels, partners, w, plan, sums, n, m) {  // viz.bipartite.node_hover
  const along = side === "a" ? m : n;
  const at = (p) => (side === "a" ? plan[k * m + p] : plan[p * m + k]);
  const sum = sums[k];
  const verb = side === "a" ? "sends" : "receives";
  const head = `${side.toUpperCase()}[${k}] ${labels[k]}<br>weight ${side} = ${fmt(w[k])}, ` +
               `${verb} ${fmt(sum)}<br>heaviest partners:<br>`;
  const order = [...Array(along).keys()].sort((p, q) => at(q) - at(p) || p - q)
    .slice(0, 5).filter((p) => at(p) > 0);
  return head + (order.length ? order.map((p) => `  → ${partners[p]}  ${fmt(at(p))}`).join("<br>")
                              : "no mass");
}

function patchGraph(gd, L, f) {
  const meta = gd.layout.meta, {n, m} = L, span = Math.max(n, m);
  const ya = positions(n, span), yb = positions(m, span);
  const plans = {softmax: f.soft, sinkhorn: f.sink};
  const sums = {softmax: {a: f.softRows, b: f.softCols}, sinkhorn: {a: f.sinkRows, b: f.sinkCols}};
  // viz.bipartite.edge_scale: each panel to its own heaviest edge
  const shared = Math.max(...meta.plans.map((p) => max(plans[p])));
  const drawn = {};
  for (const p of meta.plans) {
    const own = max(plans[p]);
    const scale = meta.edge_scale === "per_plan" ? (own > 0 ? own : 1) : shared;
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
  const vals = {eps: fmt(f.eps), steps: halfStepsText(f.steps)};
  const annotations = (gd.layout.annotations || []).map((a, k) =>
    k < meta.titles.length ? {...a, text: fill(meta.titles[k], vals)} : a);
  return [data, {...gd.layout, annotations}];
}

const PATCH = {compare: patchCompare, difference: patchDifference, graph: patchGraph};

// ---------------------------------------------------------------- maps while moving
// A plotly redraw of the compare figure costs 50-100 ms here: every data change makes
// plotly.js replot the whole figure (axes and their token labels, legend, colour bar).
// While a slider is moving, the two maps are painted straight onto canvases laid over
// plotly's own maps, with the figure's colour scale and limits (about 1 ms), and their
// titles are rewritten; the full Plotly.react of the frame follows when the slider rests
// (and every half second during a long drag), and the canvases go.
function parseColor(c) {
  const s = String(c).trim();
  if (s[0] === "#") {
    const h = s.length === 4 ? s.slice(1).split("").map((x) => x + x).join("") : s.slice(1);
    return [0, 2, 4].map((k) => parseInt(h.slice(k, k + 2), 16)).concat([1]);
  }
  const v = s.replace(/[^\d.,]/g, "").split(",").map(Number);
  return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1];
}
function colorScale(scale) {  // plotly's makeColorScaleFunc: linear in RGB between stops
  const stops = scale.map(([t]) => Number(t)), cols = scale.map(([, c]) => parseColor(c));
  return (x) => {
    if (!(x > stops[0])) return cols[0];
    for (let k = 1; k < stops.length; k++) {
      if (x <= stops[k]) {
        const w = (x - stops[k - 1]) / (stops[k] - stops[k - 1] || 1);
        return cols[k].map((c, q) => cols[k - 1][q] + w * (c - cols[k - 1][q]));
      }
    }
    return cols[cols.length - 1];
  };
}
const axisName = (id) => (id[0] === "x" ? "xaxis" : "yaxis") + id.slice(1);
function paintMaps(gd, L, f) {
  const fl = gd._fullLayout, meta = gd.layout && gd.layout.meta, sk = gd.__sk;
  if (!fl || !meta || meta.kind !== "compare" || !displayed(gd) || !fl.coloraxis) return false;
  const key = `${L.id}:${f.i}:${f.k}`;
  if (sk.painted === key) return false;
  if (sk.shown === key) {  // back on the frame plotly shows: just lift the canvases
    if (!sk.painted) return false;
    hidePreview(gd);
    return true;
  }
  const [soft, sink] = shown(L, f, meta.view), z = {softmax: soft, sinkhorn: sink};
  const hi = compareLimits(L, soft, sink, meta.scale);
  sk.scales = sk.scales || {};  // each map with its colour axis's scale and its own limit
  const host = gd.querySelector(".svg-container");
  if (!host) return false;
  sk.canvas = sk.canvas || {};
  for (const tr of gd._fullData) {
    if (!tr.meta || tr.meta.part !== "map") continue;
    const axis = tr.coloraxis || "coloraxis";
    if (!fl[axis]) continue;
    const scale = sk.scales[axis] || (sk.scales[axis] = colorScale(fl[axis].colorscale));
    const top = hi[tr.meta.plan];
    const xa = fl[axisName(tr.xaxis)], ya = fl[axisName(tr.yaxis)];
    let c = sk.canvas[tr.meta.plan];
    if (!c || !c.isConnected) {
      c = document.createElement("canvas");
      c.className = "sk-preview";
      c.setAttribute("aria-hidden", "true");
      Object.assign(c.style, {position: "absolute", pointerEvents: "none",
                              imageRendering: "pixelated"});
      host.appendChild(c);
      sk.canvas[tr.meta.plan] = c;
    }
    if (c.width !== L.m || c.height !== L.n) { c.width = L.m; c.height = L.n; }
    Object.assign(c.style, {left: `${xa._offset}px`, top: `${ya._offset}px`,
                            width: `${xa._length}px`, height: `${ya._length}px`,
                            display: "block"});
    const ctx = c.getContext("2d"), img = ctx.createImageData(L.m, L.n), px = img.data;
    const down = ya.range[0] > ya.range[1];  // token 0 at the top
    const values = z[tr.meta.plan];
    for (let i = 0; i < L.n; i++) {
      const row = down ? i : L.n - 1 - i;
      for (let j = 0; j < L.m; j++) {
        const rgba = scale(values[i * L.m + j] / top), o = 4 * (row * L.m + j);
        px[o] = rgba[0]; px[o + 1] = rgba[1]; px[o + 2] = rgba[2]; px[o + 3] = 255 * rgba[3];
      }
    }
    ctx.putImageData(img, 0, 0);
  }
  const mx = f.metrics;
  const vals = {eps: fmt(f.eps), steps: halfStepsText(f.steps),
                softmax_col_err: fmt(mx.softmax_col_err),
                max_err: fmt(Math.max(mx.sinkhorn_row_err, mx.sinkhorn_col_err)),
                not_converged: mx.converged ? "" : meta.not_converged};
  gd.querySelectorAll(".annotation-text").forEach((t, k) => {
    if (k < meta.titles.length) setLines(t, fill(meta.titles[k], vals));
  });
  sk.painted = key;
  gd.dataset.frame = `${f.eps},${f.steps}`;
  gd.dataset.source = "preview";
  return true;
}
// Rewrite an SVG text plotly drew from ``text`` (our titles: plain text and <br>, no other
// markup): plotly draws each line of a multi-line text as a <tspan class="line">.
function setLines(node, text) {
  const lines = String(text).split(/<br\s*\/?>/i);
  const spans = node.querySelectorAll("tspan.line");
  if (spans.length === lines.length && spans.length > 1) {
    spans.forEach((t, k) => { if (t.textContent !== lines[k]) t.textContent = lines[k]; });
  } else if (!spans.length && lines.length === 1) {
    if (node.textContent !== text) node.textContent = text;
  } else if (spans.length) {  // another number of lines: as many tspans, spaced as plotly's
    const first = spans[0], out = lines.map((line, k) => {
      const t = first.cloneNode(false);
      t.textContent = line;
      if (k === 0 && first.hasAttribute("dy")) t.setAttribute("dy", first.getAttribute("dy"));
      else if (k > 0) t.setAttribute("dy", (spans[1] && spans[1].getAttribute("dy")) || "1.3em");
      return t;
    });
    node.replaceChildren(...out);
  } else {
    node.textContent = lines.join(" ");
  }
}

function hidePreview(gd) {  // back to what plotly draws: its maps, titles and frame
  const sk = gd.__sk;
  if (!sk || !sk.painted) return;
  for (const c of Object.values(sk.canvas || {})) c.style.display = "none";
  const anns = (gd.layout && gd.layout.annotations) || [];
  gd.querySelectorAll(".annotation-text").forEach((t, k) => {
    if (anns[k] && typeof anns[k].text === "string") setLines(t, anns[k].text);
  });
  sk.painted = null;
  gd.dataset.frame = sk.frame || "";
  gd.dataset.source = sk.source || "";
}

// Swap frame f of lattice L into the chart gd (a figure viz built for the same relation).
function applyFrame(gd, L, f) {
  const sk = gd.__sk, meta = gd.layout && gd.layout.meta;
  if (!sk || !meta || !PATCH[meta.kind] || !window.Plotly) return null;
  if (sk.shown === `${L.id}:${f.i}:${f.k}`) return null;
  if (sk.source === "server" && sk.frame === `${f.eps},${f.steps}`) {
    hidePreview(gd);  // the server's exact figure of this frame is drawn already
    return null;
  }
  const [data, layout] = PATCH[meta.kind](gd, L, f);
  const key = `${L.id}:${f.i}:${f.k}`;
  sk.shown = key;
  // No config: react would compare it with the old one (deep copies, ~13 % of a redraw).
  return window.Plotly.react(gd, data, layout).then(() => {
    if (sk.shown !== key) return;
    sk.frame = `${f.eps},${f.steps}`;
    sk.source = "browser";
    if (!sk.painted || sk.painted === key) {  // the canvases showed this frame, or none
      sk.painted = sk.painted && key;
      hidePreview(gd);
      gd.dataset.frame = sk.frame;
      gd.dataset.source = sk.source;
    }
  });
}

// ---------------------------------------------------------------- token hover
// A map above viz.heatmaps.LARGE cells carries no per-cell token strings (they would take
// megabytes): its hover template names positions, A[i] → B[j]. Its layout.meta.hover
// holds the tokens once; when plotly has drawn a map's hover label, it is shown here
// instead with the two tokens named (as text, never HTML: tokens are the user's text).
function tokenHover(gd) {
  if (gd.__skHover) return;
  gd.__skHover = true;
  const tip = document.createElement("div");
  tip.className = "sk-hover";
  tip.setAttribute("role", "tooltip");
  Object.assign(tip.style, {position: "absolute", display: "none", pointerEvents: "none",
                            zIndex: "5", whiteSpace: "pre", padding: "3px 6px",
                            borderRadius: "3px", borderStyle: "solid", borderWidth: "1px",
                            lineHeight: "1.3"});
  gd.style.position = "relative";
  gd.appendChild(tip);
  const hide = () => { tip.style.display = "none"; };
  gd.on("plotly_hover", (ev) => {
    const h = gd.layout && gd.layout.meta && gd.layout.meta.hover;
    const label = gd.querySelector(".hoverlayer g.hovertext");
    const pt = h && ev && ev.points && ev.points.find((p) => p.data && p.data.type === "heatmap");
    if (!pt || !label) {
      if (label) label.style.display = "";
      hide();
      return;
    }
    const nums = label.querySelector("text.nums"), path = label.querySelector("path");
    if (!nums) return;
    const shownLines = [...nums.querySelectorAll("tspan.line")].map((t) => t.textContent);
    const rest = (shownLines.length ? shownLines : [nums.textContent]).slice(1);
    const i = Math.round(Number(pt.y)), j = Math.round(Number(pt.x));
    const [rowName, colName] = h.names;
    const lines = [`${rowName}[${i}] ${h.rows[i] ?? ""}`, `${colName}[${j}] ${h.cols[j] ?? ""}`,
                   ...rest];
    if (tip.textContent !== lines.join("\n")) tip.textContent = lines.join("\n");
    Object.assign(tip.style, {background: path ? path.style.fill : "#fff",
                              borderColor: path ? path.style.stroke : "#444",
                              color: nums.style.fill || "#000",
                              fontFamily: nums.style.fontFamily, fontSize: nums.style.fontSize});
    const box = label.getBoundingClientRect(), host = gd.getBoundingClientRect();
    label.style.display = "none";  // plotly's label, positions only
    tip.style.display = "block";
    const w = tip.offsetWidth, ht = tip.offsetHeight;
    let x = box.left - host.left, y = box.top - host.top;
    if (box.left + box.width / 2 < (ev.event ? ev.event.clientX : box.left)) {
      x = box.right - host.left - w;  // plotly put its label left of the pointer
    }
    x = Math.max(0, Math.min(x, gd.clientWidth - w));
    y = Math.max(0, Math.min(y, gd.clientHeight - ht));
    tip.style.left = `${x}px`;
    tip.style.top = `${y}px`;
  });
  gd.on("plotly_unhover", hide);
  gd.addEventListener("mouseleave", hide);
}

// ---------------------------------------------------------------- token axes
// A token axis (tick text at fixed values, viz.theme.token_axis) shows every k-th label
// where the chart's real width (or height) leaves too little room for all of them: the
// rule of viz.theme._thin_axis, with the size the page gives the chart.
function tokenTicks(layout) {  // the figure's own ticks of each token axis
  const out = {};
  for (const [name, ax] of Object.entries(layout || {})) {
    if (/^[xy]axis\d*$/.test(name) && ax && ax.tickmode === "array" &&
        Array.isArray(ax.tickvals) && Array.isArray(ax.ticktext) &&
        ax.tickvals.every((v) => typeof v === "number")) {
      out[name] = {vals: ax.tickvals, text: ax.ticktext};
    }
  }
  return out;
}
const textPx = (t, size) => {  // viz.theme.text_px
  let w = 0;
  for (const ch of String(t)) w += size * (/[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\uff00-\uff60\uffe0-\uffe6]/.test(ch) ? 1 : 0.62);
  return w;
};
function fittedTicks(layout, ticks, width, height) {
  const m = layout.margin || {}, font = (layout.font && layout.font.size) || 13, out = {};
  for (const [name, t] of Object.entries(ticks)) {
    const ax = layout[name] || {};
    if (ax.showticklabels === false || t.vals.length < 2) continue;
    const horizontal = name[0] === "x", [lo, hi] = ax.domain || [0, 1];
    const len = (hi - lo) * (horizontal ? width - (m.l ?? 80) - (m.r ?? 80)
                                        : height - (m.t ?? 100) - (m.b ?? 80));
    const range = ax.range || [t.vals[0] - 0.5, t.vals[t.vals.length - 1] + 0.5];
    const gap = Math.abs(t.vals[1] - t.vals[0]) * len / Math.max(1e-9, Math.abs(range[1] - range[0]));
    const size = (ax.tickfont && ax.tickfont.size) || font;
    const angle = Math.abs(ax.tickangle || 0) % 180;
    const need = angle === 0 && horizontal
      ? Math.max(...t.text.map((x) => textPx(x, size))) + 0.5 * size
      : size / (horizontal ? Math.max(0.3, Math.abs(Math.sin(angle * Math.PI / 180))) : 1);
    const k = gap > 0 && len > 0 ? Math.max(1, Math.ceil(need / gap)) : 1;
    out[name] = {vals: t.vals.filter((_, q) => q % k === 0),
                 text: t.text.filter((_, q) => q % k === 0)};
  }
  return out;
}
function fitTicks(gd, layout) {  // set the fitted ticks in a layout about to be drawn
  const fit = fittedTicks(layout, gd.__ticks || {}, gd.clientWidth, gd.clientHeight);
  for (const [name, t] of Object.entries(fit)) {
    layout[name] = {...layout[name], tickvals: t.vals, ticktext: t.text};
  }
  return layout;
}
function refitTicks(gd) {  // after a resize: relayout the axes whose ticks change
  if (!gd.__ticks || !gd.layout) return;
  const fit = fittedTicks(gd.layout, gd.__ticks, gd.clientWidth, gd.clientHeight), up = {};
  for (const [name, t] of Object.entries(fit)) {
    const now = gd.layout[name] && gd.layout[name].tickvals;
    if (!now || now.length !== t.vals.length) {
      up[`${name}.tickvals`] = t.vals;
      up[`${name}.ticktext`] = t.text;
    }
  }
  if (Object.keys(up).length) return window.Plotly.relayout(gd, up);
}

// ---------------------------------------------------------------- charts
const whenIdle = (fn) => (window.requestIdleCallback
  ? {idle: window.requestIdleCallback(fn, {timeout: 1500})} : {timer: setTimeout(fn, 300)});
const cancelIdle = (h) => (h.idle !== undefined ? window.cancelIdleCallback(h.idle)
                                                 : clearTimeout(h.timer));
function mountChart({parentElement, data}) {
  if (!data.spec) {  // preload: start fetching plotly.js, draw nothing
    loadPlotly(data.src).catch(() => {});
    return;
  }
  let gd = parentElement.querySelector(":scope > div.sinkscope-chart");
  if (!gd) {
    gd = document.createElement("div");
    gd.className = "sinkscope-chart";
    gd.style.width = "100%";
    parentElement.appendChild(gd);
    let queued = false;
    gd.__observer = new ResizeObserver(() => {
      if (queued || !displayed(gd) || !window.Plotly) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        if (displayed(gd)) {
          Promise.resolve(window.Plotly.Plots.resize(gd)).then(() => refitTicks(gd))
            .catch(() => {});
        }
      });
    });
    gd.__observer.observe(gd);
  }
  // A fixed height and full containment: plotly measures its labels while it draws, and
  // each measurement then lays out this chart alone, not the whole page (~30 % faster).
  gd.style.height = data.height + "px";
  gd.style.contain = "strict";
  const bind = data.bind || null;
  if (gd.__idle) { cancelIdle(gd.__idle); gd.__idle = null; }
  const draw = async () => {
    try {
      const Plotly = await loadPlotly(data.src);
      const fig = JSON.parse(data.spec);
      gd.__ticks = tokenTicks(fig.layout);
      await Plotly.react(gd, {data: fig.data, layout: fitTicks(gd, fig.layout),
                              config: data.config});
      if (fig.layout && fig.layout.meta && fig.layout.meta.hover) tokenHover(gd);
      const old = gd.__sk;
      gd.__sk = {bind, config: data.config,
                 shown: bind ? `${bind.lattice}:server:${bind.eps}:${bind.steps}` : null,
                 canvas: old && old.canvas, painted: old && old.painted,
                 frame: bind ? `${bind.eps},${bind.steps}` : "", source: "server"};
      hidePreview(gd);
      gd.dataset.source = "server";
      if (bind) {
        gd.dataset.frame = `${bind.eps},${bind.steps}`;
        SK.charts.add(gd);
        SK.stats.served += 1;
        if (SK.scrub) SK.scrub.chartReady(gd);
      } else {
        SK.charts.delete(gd);
      }
    } catch (err) {
      gd.textContent = "This chart could not be drawn: " + err.message;
    }
  };
  // The server's exact figure of the frame the browser already shows from the lattice
  // changes nothing visible: draw it when the page is idle, not in the middle of a drag.
  const sameFrame = bind && gd.__sk && gd.dataset.source === "browser" &&
    gd.__sk.bind && gd.__sk.bind.lattice === bind.lattice &&
    gd.dataset.frame === `${bind.eps},${bind.steps}`;
  if (sameFrame) gd.__idle = whenIdle(() => { gd.__idle = null; draw(); });
  else draw();
  return () => {
    SK.charts.delete(gd);
    if (gd.__observer) gd.__observer.disconnect();
    if (window.Plotly && gd._fullLayout) window.Plotly.purge(gd);
  };
}

// ---------------------------------------------------------------- the sliders
const CSS = `
.sk-scrub{font-family:var(--st-font,inherit);color:var(--st-text-color,inherit);
  --sk-accent:var(--st-primary-color,#ff4b4b);--sk-muted:rgba(128,128,128,.9);
  --sk-line:rgba(128,128,128,.35);}
.sk-sliders{display:grid;grid-template-columns:1fr 1fr;gap:0 2.5rem}
.sk-head{display:flex;justify-content:space-between;align-items:baseline;font-size:.875rem;
  gap:.5rem}
.sk-value{font-weight:600;font-variant-numeric:tabular-nums}
.sk-track{position:relative;height:26px;touch-action:none;cursor:pointer}
.sk-rail{position:absolute;left:8px;right:8px;top:11px;height:4px;border-radius:2px;
  background:var(--sk-line)}
.sk-fill{position:absolute;left:0;top:0;bottom:0;border-radius:2px;background:var(--sk-accent)}
.sk-thumb{position:absolute;top:5px;width:16px;height:16px;margin-left:-8px;border-radius:50%;
  background:var(--sk-accent);outline:none;box-shadow:0 0 0 0 transparent}
.sk-thumb:focus-visible{box-shadow:0 0 0 .2rem rgba(255,75,75,.45)}
.sk-ends{display:flex;justify-content:space-between;font-size:.75rem;color:var(--sk-muted)}
.sk-note{font-size:.8rem;color:var(--sk-muted);min-height:1.1em;margin:.15rem 0 .1rem}
.sk-metrics{display:grid;grid-template-columns:repeat(auto-fit,minmax(6.6rem,1fr));
  gap:.2rem .4rem;border-top:1px solid var(--sk-line);border-bottom:1px solid var(--sk-line);
  padding:.25rem 0;margin-bottom:.1rem}
.sk-metric{position:relative;outline:none;border-radius:.3rem;padding:0 .25rem;cursor:help}
.sk-metric:focus-visible{box-shadow:0 0 0 .15rem rgba(255,75,75,.45)}
.sk-mlabel{font-size:.7rem;line-height:1.15;color:var(--sk-muted);display:block}
.sk-mvalue{font-size:1rem;font-weight:600;font-variant-numeric:tabular-nums}
.sk-mdetail{font-size:.66rem;line-height:1.15;color:var(--sk-muted);display:block}
.sk-help{display:inline-block;width:.95rem;height:.95rem;line-height:.95rem;text-align:center;
  border:1px solid var(--sk-muted);border-radius:50%;font-size:.62rem;color:var(--sk-muted);
  margin-left:.35rem;cursor:help;vertical-align:.05rem}
[data-testid="stMainBlockContainer"]{padding-top:3.2rem}
.sk-tip{display:none;position:absolute;z-index:1000;top:100%;left:0;width:19rem;
  padding:.5rem .6rem;border-radius:.4rem;font-size:.8rem;line-height:1.35;font-weight:400;
  background:var(--st-secondary-background-color,#f0f2f6);color:var(--st-text-color,#31333f);
  box-shadow:0 2px 10px rgba(0,0,0,.2)}
.sk-metric:hover .sk-tip,.sk-metric:focus .sk-tip,.sk-helpwrap:hover .sk-tip,
.sk-helpwrap:focus .sk-tip{display:block}
.sk-helpwrap{position:relative;outline:none}
`;

let uid = 0;
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
};

class Slider {
  // A real slider: role "slider" on the focusable thumb, aria-valuenow/-valuetext,
  // arrow keys one stop, Page keys a tenth, Home/End; pointer drag on the whole track.
  constructor(root, {label, help, ends, onInput, onRelease}) {
    this.stops = [];
    this.index = 0;
    this.onInput = onInput;
    this.onRelease = onRelease;
    const id = `sk-${++uid}`;
    const head = el("div", "sk-head");
    const lab = el("span", "sk-label", label);
    lab.id = `${id}-label`;
    const wrap = el("span", "sk-helpwrap");
    wrap.tabIndex = 0;
    wrap.setAttribute("aria-label", `About ${label}`);
    const tip = el("span", "sk-tip", help);
    tip.id = `${id}-help`;
    tip.setAttribute("role", "tooltip");
    wrap.setAttribute("aria-describedby", tip.id);
    wrap.append(el("span", "sk-help", "?"), tip);
    const left = el("span");
    left.append(lab, wrap);
    this.valueEl = el("span", "sk-value");
    head.append(left, this.valueEl);
    this.track = el("div", "sk-track");
    const rail = el("div", "sk-rail");
    this.fillEl = el("div", "sk-fill");
    rail.append(this.fillEl);
    this.thumb = el("div", "sk-thumb");
    this.thumb.tabIndex = 0;
    this.thumb.setAttribute("role", "slider");
    this.thumb.setAttribute("aria-labelledby", lab.id);
    this.thumb.setAttribute("aria-describedby", tip.id);
    this.thumb.setAttribute("aria-orientation", "horizontal");
    this.track.append(rail, this.thumb);
    this.endsEl = el("div", "sk-ends");
    this.ends = ends;
    root.append(head, this.track, this.endsEl);

    this.thumb.addEventListener("keydown", (ev) => {
      const big = Math.max(1, Math.round(this.stops.length / 10));
      const moves = {ArrowLeft: -1, ArrowDown: -1, ArrowRight: 1, ArrowUp: 1,
                     PageDown: -big, PageUp: big};
      let next = null;
      if (ev.key in moves) next = this.index + moves[ev.key];
      else if (ev.key === "Home") next = 0;
      else if (ev.key === "End") next = this.stops.length - 1;
      if (next === null) return;
      ev.preventDefault();
      if (this.set(next)) this.onInput("key");
    });
    this.thumb.addEventListener("blur", () => this.onRelease("blur"));
    const fromX = (x) => {
      const r = this.track.getBoundingClientRect(), inner = r.width - 16;
      const frac = Math.min(1, Math.max(0, (x - r.left - 8) / Math.max(1, inner)));
      return Math.round(frac * (this.stops.length - 1));
    };
    this.track.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      ev.preventDefault();
      this.dragging = true;
      this.track.setPointerCapture(ev.pointerId);
      this.thumb.focus({preventScroll: true});
      if (this.set(fromX(ev.clientX))) this.onInput("pointer");
    });
    this.track.addEventListener("pointermove", (ev) => {
      if (!this.dragging) return;
      if (this.set(fromX(ev.clientX))) this.onInput("pointer");
    });
    const up = () => {
      if (!this.dragging) return;
      this.dragging = false;
      this.onRelease("pointer");
    };
    this.track.addEventListener("pointerup", up);
    this.track.addEventListener("pointercancel", up);
  }
  setStops(stops, labels, min, max) {
    this.stops = stops;
    this.labels = labels;
    this.thumb.setAttribute("aria-valuemin", String(min));
    this.thumb.setAttribute("aria-valuemax", String(max));
    this.endsEl.replaceChildren(el("span", null, this.ends(labels[0])),
                                el("span", null, this.ends(labels[labels.length - 1])));
  }
  set(index) {
    index = Math.min(this.stops.length - 1, Math.max(0, index));
    const changed = index !== this.index;
    this.index = index;
    const frac = this.stops.length > 1 ? index / (this.stops.length - 1) : 0;
    this.thumb.style.left = `calc(8px + (100% - 16px) * ${frac})`;
    this.fillEl.style.width = `${frac * 100}%`;
    this.thumb.setAttribute("aria-valuenow", String(this.stops[index]));
    this.thumb.setAttribute("aria-valuetext", this.labels[index]);
    return changed;
  }
  get value() { return this.stops[this.index]; }
}

class Scrub {
  constructor(root) {
    this.root = el("div", "sk-scrub");
    const style = el("style", null, CSS);
    const sliders = el("div", "sk-sliders");
    const boxE = el("div"), boxT = el("div");
    sliders.append(boxE, boxT);
    this.note = el("div", "sk-note");
    this.note.setAttribute("aria-live", "polite");
    this.strip = el("div", "sk-metrics");
    this.strip.setAttribute("role", "group");
    this.strip.setAttribute("aria-label", "Metrics of the Sinkhorn plan shown");
    this.root.append(style, sliders, this.note, this.strip);
    root.append(this.root);
    this.boxes = [boxE, boxT];
    this.lastSent = null;
    this.prevData = null;
    this.timer = null;
    this.data = null;
  }
  build(data) {
    const input = (how) => this.input(how);
    const release = (how) => this.release(how);
    this.eps = new Slider(this.boxes[0], {
      label: "ε — entropy (log scale)", help: data.help.eps, ends: (s) => `ε = ${s}`,
      onInput: input, onRelease: release});
    this.steps = new Slider(this.boxes[1], {
      label: "half-steps (1 = softmax)", help: data.help.steps, ends: (s) => s,
      onInput: input, onRelease: release});
    this.built = true;
  }
  update(data, setStateValue) {
    this.setStateValue = setStateValue;
    this.data = data;
    if (!this.built) this.build(data);
    const stepLabels = data.step_stops.map((t) =>
      t === 1 ? "1 half-step = softmax" : halfStepsText(t));
    this.eps.setStops(data.eps_stops, data.eps_labels, data.eps_stops[0],
                      data.eps_stops[data.eps_stops.length - 1]);
    this.steps.setStops(data.step_stops, stepLabels, data.step_stops[0],
                        data.step_stops[data.step_stops.length - 1]);
    this.stepEnds = data.step_stops;
    const server = {eps: data.eps, steps: data.steps};
    const adopt = !this.prevData || !same(server, this.prevData);
    this.prevData = server;
    if (adopt && !same(server, this.lastSent)) {
      this.lastSent = server;
      this.eps.set(nearestIndex(data.eps_stops, data.eps, true));
      this.steps.set(nearestIndex(data.step_stops, data.steps, false));
    } else {  // keep what the person is dragging; just redraw the thumbs
      this.eps.set(this.eps.index);
      this.steps.set(this.steps.index);
    }
    this.showValues();
    if (!this.live() || same(this.value(), server)) {
      this.renderMetrics(data.metrics);
      this.setNote(this.serverNote());
    } else {
      this.requestFrame();
    }
  }
  value() { return {eps: this.eps.value, steps: this.steps.value}; }
  lattice() {
    const entry = this.data && this.data.lattice ? SK.lattices.get(this.data.lattice) : null;
    return entry && entry.lattice ? entry.lattice : null;
  }
  live() { return !!this.lattice(); }
  latticeReady(id) {
    if (this.data && this.data.lattice === id) {
      this.setNote(this.serverNote());
      if (!same(this.value(), this.prevData)) this.requestFrame();
    }
  }
  chartReady(gd) {  // a chart got the server's figure: bring it to the frame shown
    const L = this.lattice();
    if (!L || gd.__sk.bind.lattice !== L.id) return;
    const v = this.value(), b = gd.__sk.bind;
    if (v.eps !== b.eps || v.steps !== b.steps) this.requestFrame();
  }
  showValues() {
    this.eps.valueEl.textContent = `ε = ${this.eps.labels[this.eps.index]}`;
    this.steps.valueEl.textContent = this.steps.labels[this.steps.index];
  }
  busy() {  // a drag in progress, or a key pressed in the last 200 ms
    return this.eps.dragging || this.steps.dragging || performance.now() - this.lastInput < 200;
  }
  input(how) {
    const now = performance.now();
    if (now - (this.lastInput || -1e9) > 250) this.lastFull = now;  // a new burst of input
    this.lastInput = now;
    this.showValues();
    const v = this.value();
    // the address bar: at most every 200 ms (browsers throttle faster history updates)
    clearTimeout(this.urlTimer);
    this.urlTimer = setTimeout(() => writeUrl(this.eps.labels[this.eps.index],
                                              this.value().steps), 200);
    clearTimeout(this.timer);
    if (this.live()) {
      this.requestFrame();
      // keys: send the value once the person pauses; pointer: on release
      if (how === "key") this.timer = setTimeout(() => this.commit(), SK.keyCommitMs);
    } else if (how === "key") {
      this.commit();
    } else {
      this.setNote("Release the slider to recompute on the server.");
    }
  }
  release() {
    clearTimeout(this.timer);
    clearTimeout(this.urlTimer);
    writeUrl(this.eps.labels[this.eps.index], this.value().steps);
    this.commit();
  }
  commit() {
    const v = this.value();
    if (same(v, this.lastSent)) return;
    this.lastSent = v;
    SK.stats.commits += 1;
    if (this.setStateValue) this.setStateValue("frame", v);
  }
  requestFrame() {
    if (this.raf) return;
    this.raf = requestAnimationFrame(() => { this.raf = null; this.draw(); });
  }
  draw() {
    const L = this.lattice();
    if (!L) return;
    const v = this.value();
    const ie = L.epsIndex(v.eps), ks = L.steps.indexOf(v.steps);
    const i = ie === null ? L.nearestEps(v.eps) : ie, k = ks < 0 ? L.nearestStep(v.steps) : ks;
    const t0 = performance.now();
    const f = L.frame(i, k);
    const work = [];
    // While the slider moves: the compare maps on canvases, charts out of view later, and
    // a full redraw of what is in view every half second; at rest, everything exactly.
    const busy = this.busy(), full = !busy || t0 - (this.lastFull || 0) > 500;
    let later = false, painted = false;
    for (const gd of SK.charts) {
      if (!gd.isConnected || !gd.__sk || !gd.__sk.bind || gd.__sk.bind.lattice !== L.id) continue;
      if (busy && !inView(gd)) { later = true; continue; }
      if (busy && gd.layout.meta && gd.layout.meta.kind === "compare" && !full) {
        painted = paintMaps(gd, L, f) || painted;
        later = true;
        continue;
      }
      const p = applyFrame(gd, L, f);
      if (p) work.push(p);
    }
    if (work.length) this.lastFull = t0;
    clearTimeout(this.rest);
    if (later) this.rest = setTimeout(() => this.requestFrame(), 200);
    if (painted) {
      SK.stats.redraws += 1;
      SK.stats.previews = (SK.stats.previews || 0) + 1;
      SK.stats.last = performance.now();
      SK.stats.ms = (SK.stats.ms || []).concat([SK.stats.last - t0]).slice(-200);
      SK.stats.frame = [f.eps, f.steps];
    }
    this.renderMetrics(this.frameMetrics(f));
    if (ie === null || ks < 0) {
      this.setNote(`Showing the nearest precomputed frame (ε = ${fmt(f.eps)}, ` +
                   `${halfStepsText(f.steps)}); ε = ${this.eps.labels[this.eps.index]} with ` +
                   `${halfStepsText(v.steps)} is computed on the server when you let go.`);
    } else {
      this.setNote(this.serverNote(f.steps));
    }
    if (!work.length) return;
    Promise.all(work).then(() => {
      SK.stats.redraws += 1;
      SK.stats.full = (SK.stats.full || 0) + 1;
      SK.stats.last = performance.now();
      SK.stats.ms = (SK.stats.ms || []).concat([SK.stats.last - t0]).slice(-200);
      SK.stats.frame = [f.eps, f.steps];
    }).catch(() => {});
  }
  serverNote(t) {
    const steps = t === undefined ? (this.data ? this.data.steps : 0) : t;
    const parts = [];
    if (this.data && this.data.note) parts.push(this.data.note);
    if (steps === 1) {
      parts.push("Half-step 1: the Sinkhorn plan is softmax, diag(a)·softmax(S/ε) — rows " +
                 "right, columns off by the softmax column error.");
    }
    return parts.join(" ");
  }
  setNote(text) { if (this.note.textContent !== text) this.note.textContent = text; }
  frameMetrics(f) {  // engine.relation.summary.rows for frame f
    const s = f.metrics, help = this.data.metric_help, label = {};
    for (const r of this.data.metrics) label[r.key] = r.label;
    const row = (key, value, detail = "") => ({key, label: label[key], value, detail,
                                              help: help[key]});
    const kl = !Number.isFinite(s.kl_to_product) && s.kl_to_product > 0 &&
               s.zero_weight_mass > this.data.zero_mass
      ? row("kl_to_product", "∞", `${fmt(s.zero_weight_mass)} of π's mass on weight-0 tokens`)
      : row("kl_to_product", fmt(s.kl_to_product));
    return [
      row("softmax_col_err", fmt(s.softmax_col_err)),
      row("sinkhorn_row_err", fmt(s.sinkhorn_row_err)),
      row("sinkhorn_col_err", fmt(s.sinkhorn_col_err)),
      row("cost", fmt(s.cost), `exact OT ${fmt(s.exact_cost)} · softmax ${fmt(s.softmax_cost)}`),
      row("entropy", fmt(s.entropy)),
      kl,
      row("l1_to_exact", fmt(s.l1_to_exact)),
      row("converged", s.converged ? "yes" : "no", halfStepsText(f.steps)),
    ];
  }
  renderMetrics(rows) {
    if (!this.cells || this.cells.length !== rows.length) {
      this.strip.replaceChildren();
      this.cells = rows.map((r) => {
        const cell = el("div", "sk-metric");
        cell.tabIndex = 0;
        const lab = el("span", "sk-mlabel");
        const line = el("div");
        const value = el("div", "sk-mvalue");
        const detail = el("span", "sk-mdetail");
        const tip = el("span", "sk-tip");
        tip.id = `sk-tip-${++uid}`;
        tip.setAttribute("role", "tooltip");
        cell.setAttribute("aria-describedby", tip.id);
        line.append(value, detail);
        cell.append(lab, line, tip);
        cell.dataset.testid = "skMetric";
        this.strip.append(cell);
        return {cell, lab, value, detail, tip};
      });
    }
    rows.forEach((r, k) => {
      const c = this.cells[k];
      c.cell.dataset.key = r.key;
      if (c.lab.textContent !== r.label) c.lab.textContent = r.label;
      if (c.value.textContent !== r.value) c.value.textContent = r.value;
      if (c.detail.textContent !== r.detail) c.detail.textContent = r.detail;
      c.detail.title = r.detail;  // in full, where presentation mode cuts it to one line
      if (c.tip.textContent !== r.help) c.tip.textContent = r.help;
      c.lab.title = r.label;
    });
  }
  destroy() {
    clearTimeout(this.timer);
    clearTimeout(this.urlTimer);
    clearTimeout(this.rest);
    if (this.raf) cancelAnimationFrame(this.raf);
  }
}

const inView = (gd) => {
  const r = gd.getBoundingClientRect();
  return r.bottom > 0 && r.top < (window.innerHeight || 0) && r.width > 0;
};
const same = (p, q) => !!p && !!q && p.eps === q.eps && p.steps === q.steps;
function nearestIndex(stops, x, log) {
  let best = 0;
  const d = (s) => (log ? Math.abs(Math.log(s / x)) : Math.abs(s - x));
  stops.forEach((s, k) => { if (d(s) < d(stops[best])) best = k; });
  return best;
}
function writeUrl(epsLabel, steps) {
  const u = new URL(window.location.href);
  if (u.searchParams.get("eps") === epsLabel && u.searchParams.get("steps") === String(steps)) {
    return;
  }
  u.searchParams.set("eps", epsLabel);
  u.searchParams.set("steps", String(steps));
  window.history.replaceState(window.history.state, "", u.href);
}

function mountScrub({parentElement, data, setStateValue}) {
  let ctl = parentElement.__skScrub;
  if (!ctl) {
    ctl = new Scrub(parentElement);
    parentElement.__skScrub = ctl;
  }
  SK.scrub = ctl;
  ctl.update(data, setStateValue);
  return () => {
    ctl.destroy();
    if (SK.scrub === ctl) SK.scrub = null;
  };
}

export default function (component) {
  const {data} = component;
  if (data instanceof Uint8Array || data instanceof ArrayBuffer) return mountLattice(component);
  if (data && data.role === "scrub") return mountScrub(component);
  return mountChart(component);
}
