// The Align page's live θ, τ and m sliders: links, figures and this pair's scores redrawn
// in the browser from the values the server shipped (align_live.py), the value to the
// server on release.
//
// One component ("sinkscope_align", its own bundle: state, format, slider, align), told
// apart by its data:
//   payload  raw bytes (SKA1): header (words, gold, thresholds, each cell's kind by its
//            gold, grid) + V (G, n, m) float32 + the scores line's numbers at every setting.
//   controls {role: "align", ...}: the sliders, the links line and the scores line.
// Python decides all it can (the kinds, the scores, their digits); what is left here, the
// links V > θ (engine.alignment.extract), the words without one and the figures' traces
// (viz.align.matrix and graph), is tested against Python on fixtures (tests/test_align_js.py).
import {fill, numberFormat} from "./format.js";
import {SLIDER_CSS, Sent, Slider, el} from "./slider.js";
import {SK, keepDecoded, readPayload, unwrap} from "./state.js";

export const A = SK.align || (SK.align = {
  payloads: new Map(),  // id -> {promise, value: payload|null, error|null}
  ctl: null,            // the controls on the page
  stats: {redraws: 0, commits: 0, last: 0, ms: []},
  keyCommitMs: 450,     // keys: the value goes to the server once they pause this long
});

// ------------------------------------------------------------------ pure: one setting
// At grid stop g and θ stop k: the links (V > θ, row-major), each cell's kind from the
// header's table (kind_of: viz.align.classify of one cell, linked or not, by its gold) and
// the words of A and of B without a link.
export function cellsAt(P, g, k) {
  const {n, m, V, gold, kind_of: table} = P, off = g * n * m, theta = P.thetas[k];
  const links = [], kinds = {}, rowLinked = new Uint8Array(n), colLinked = new Uint8Array(m);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < m; j++) {
      const c = i * m + j, linked = V[off + c] > theta;
      const kind = (linked ? table.linked : table.unlinked)[gold[c]];
      if (kind) (kinds[kind] || (kinds[kind] = [])).push([i, j]);
      if (linked) {
        links.push([i, j]);
        rowLinked[i] = colLinked[j] = 1;
      }
    }
  }
  const none = (flags) => [...flags.keys()].filter((t) => !flags[t]);
  return {links, kinds, nullA: none(rowLinked), nullB: none(colLinked)};
}

// The scores line at (g, k): the shipped digits of each score with the page's decimal mark.
export function scoresText(words, P, g, k) {
  if (!P.scores) return "";
  const names = P.score_names, at = (g * P.thetas.length + k) * names.length;
  const v = {method: P.method}, mark = words.decimal || ".";  // align_live.WORDS
  names.forEach((name, c) => {
    const s = String(P.scores[at + c]).padStart(4, "0");
    v[name] = s.slice(0, -3) + mark + s.slice(-3);
  });
  return fill(words.pair_scores_live, v);
}
export const linksText = (words, links) =>  // one link: no plural ("1 enlace")
  `${(links.length === 1 && words.link_count) || fill(words.links_count, {count: links.length})}`
  + ` · ${fill(words.links_line, {links: links.map(([i, j]) => `${i}-${j}`).join(" ") || "∅"})}`;

// ------------------------------------------------------------------ pure: the figures
export const rowsOf = (V, off, n, m) =>  // the plan's rows at one grid stop (NaN: no part)
  Array.from({length: n}, (_, i) => Array.from(V.subarray(off + i * m, off + (i + 1) * m)));

export function matrixData(old, h, style, z, cells) {  // viz.align.matrix's traces
  // old: the figure's traces now; z: the plan's rows (rowsOf), or null to keep old's;
  // cells: cellsAt's links, kinds and words without a link
  const {labels_a: la, labels_b: lb} = h, {kinds, nullA, nullB} = cells;
  const out = [];
  const heat = old.find((t) => t.meta && t.meta.kind === "plan");
  if (heat && z === null) {  // the same plan (θ moved alone): the same trace, not redrawn
    out.push(heat);
  } else if (heat) {
    const num = numberFormat(style.numbers);  // the page's language (style_of's spec)
    out.push({...heat, z, text: z.map((row, i) => row.map((v, j) =>
      `${la[i]} → ${lb[j]}: ${num(v)}`))});
  }
  const axes = heat ? {xaxis: "x2", yaxis: "y2"} : {xaxis: "x", yaxis: "y"};
  const size = style.size;
  for (const k of style.kinds) {
    const found = kinds[k] || [];
    if (!found.length && k !== "link") continue;
    if (k === "link" && !found.length && h.sure !== null) continue;
    out.push({
      x: found.map((c) => c[1]), y: found.map((c) => c[0]), mode: "markers",
      name: style.names[k], legendgroup: k,
      marker: {symbol: style.symbols[k], size, color: style.colors[k],
               line: {width: 2, color: style.colors[k]}},
      text: found.map(([a, b]) => `${la[a]} – ${lb[b]}: ${style.names[k]}`),
      hoverinfo: "text", meta: {kind: k}, type: "scatter", ...axes});
  }
  for (const [side, idx] of [["a", nullA], ["b", nullB]]) {
    if (!idx.length) continue;
    const names = side === "a" ? la : lb;
    const ones = idx.map(() => -1);
    out.push({
      x: side === "a" ? ones : idx, y: side === "a" ? idx : ones, mode: "markers",
      name: style.null_names[side], legendgroup: "null_" + side,
      marker: {symbol: style.null_symbols[side], size, color: style.text_colors[side]},
      text: idx.map((t) => `${names[t]}: ${style.unaligned}`), hoverinfo: "text",
      meta: {kind: "null_" + side}, type: "scatter", ...axes});
  }
  return out;
}

export function graphData(h, style, cells) {  // viz.align.graph's traces
  const {labels_a: la, labels_b: lb} = h, {kinds, nullA, nullB} = cells;
  const {ya, yb} = style;
  const out = [];
  for (const k of style.kinds) {
    const found = kinds[k] || [];
    if (!found.length) continue;
    const x = [], y = [];
    for (const [i, j] of found) { x.push(0, 1, null); y.push(ya[i], yb[j], null); }
    out.push({x, y, mode: "lines", name: style.names[k], hoverinfo: "skip",
              line: {color: style.colors[k], width: k !== "false" ? 2.5 : 2, dash: style.dash[k]},
              meta: {kind: k}, type: "scatter"});
  }
  for (const [side, labels, ys, nulls] of [["a", la, ya, nullA], ["b", lb, yb, nullB]]) {
    const x0 = side === "a" ? 0 : 1, color = style.text_colors[side], ns = new Set(nulls);
    const keep = labels.map((_, t) => t).filter((t) => !ns.has(t));
    for (const [kind, idx] of [["nodes_" + side, keep], ["null_" + side, nulls]]) {
      if (!idx.length) continue;
      const nul = kind.startsWith("null");
      out.push({
        x: idx.map(() => x0), y: idx.map((t) => ys[t]), mode: "markers+text",
        text: idx.map((t) => (nul ? (side === "a" ? labels[t] + " ∅" : "∅ " + labels[t])
                                 : labels[t])),
        textposition: side === "a" ? "middle left" : "middle right",
        marker: {size: 12, symbol: nul ? "circle-open" : "circle", color,
                 line: {width: 2, color}},
        name: nul ? style.null_names[side] : style.node_names[side],
        hovertext: idx.map((t) => labels[t] + (nul ? ": " + style.unaligned : "")),
        hoverinfo: "text", meta: {kind}, type: "scatter"});
    }
  }
  return out;
}

// ------------------------------------------------------------------ the payload
export function parsePayload(h, raw) {  // align_live.LivePayload.encode's header and body
  const G = Math.max(1, h.grid.length), nm = h.n * h.m;
  const scored = h.scores ? G * h.thetas.length * h.scores.length : 0;
  if (raw.byteLength !== 4 * G * nm + 2 * scored) {
    throw new Error("alignment payload of the wrong size");
  }
  const gold = new Uint8Array(nm);  // per cell: 0 no gold link, 1 sure, 2 possible only
  for (const [i, j] of h.possible || []) gold[i * h.m + j] = 2;
  for (const [i, j] of h.sure || []) gold[i * h.m + j] = 1;
  return {...h, G, gold, V: new Float32Array(raw, 0, G * nm), score_names: h.scores,
          scores: scored ? new Uint16Array(raw, 4 * G * nm, scored) : null};
}

export async function decodePayload(bytes) {
  const {header, body} = await readPayload(bytes, "SKA1");
  return parsePayload(header, body);
}

export function mountPayload({data}) {
  keepDecoded(A.payloads, data, decodePayload,
              (id) => { if (A.ctl) A.ctl.payloadReady(id); }, 4);
}

// ------------------------------------------------------------------ the controls
const ALIGN_CSS = `
.sk-align .sk-scores{font-weight:600;font-variant-numeric:tabular-nums;margin:.2rem 0}
.sk-align .sk-links{font-family:var(--st-code-font,monospace);font-size:.85rem;
  white-space:pre-wrap;overflow-wrap:anywhere}
`;

export class AlignLive {
  constructor(root) {
    this.root = el("div", "sk-align");
    const sliders = el("div", "sk-sliders");
    this.boxes = [el("div"), el("div")];
    sliders.append(...this.boxes);
    this.note = el("div", "sk-note");
    this.scores = el("div", "sk-scores");
    this.scores.dataset.testid = "skAlignScores";
    this.scores.setAttribute("aria-live", "polite");
    this.links = el("div", "sk-links");
    this.links.dataset.testid = "skAlignLinks";
    this.root.append(el("style", null, SLIDER_CSS + ALIGN_CSS), sliders, this.note, this.scores, this.links);
    root.append(this.root);
    this.lastSent = null;
    this.sent = new Sent(sameChoice);
    this.prev = null;
  }
  build(data) {
    const input = (how) => this.input(how), release = () => this.release();
    const [theta, grid] = this.words(data);
    this.theta = new Slider(this.boxes[0], {...theta, onInput: input, onRelease: release});
    if (grid) this.grid = new Slider(this.boxes[1], {...grid, onInput: input, onRelease: release});
    this.gridKey = data.grid_key;
    this.built = true;
  }
  words(data) {  // the sliders' words in the page's language (align_live.WORDS)
    const w = data.words, label = data.grid_key ? w[data.grid_key] : null;
    return [{label: w.threshold, about: fill(w.about, {label: w.threshold}),
             help: w.threshold_help, ends: (s) => s},
            label && {label, about: fill(w.about, {label}),
                      help: w[data.grid_key + "_help"] || label, ends: (s) => s}];
  }
  update(data, setStateValue) {
    this.setStateValue = setStateValue;
    if (this.built && data.grid_key !== this.gridKey) {  // another method: start afresh
      this.boxes.forEach((b) => b.replaceChildren());
      this.built = false;
      this.grid = null;
      this.prev = this.lastSent = null;
      this.sent = new Sent(sameChoice);
    }
    this.data = data;
    if (!this.built) this.build(data);
    const [theta, grid] = this.words(data);  // a language switch keeps the sliders
    this.theta.setWords(theta);
    if (this.grid && grid) this.grid.setWords(grid);
    this.theta.setStops(data.theta_stops, data.theta_labels);
    if (this.grid) this.grid.setStops(data.grid_stops, data.grid_labels);
    const server = {theta: data.theta_stops[data.theta],
                    grid: data.grid_key ? data.grid_stops[data.grid] : null};
    const fresh = !this.prev || this.prev.payload !== data.payload;  // another pair or method
    const adopt = fresh || !sameChoice(server, this.prev);
    this.prev = {...server, payload: data.payload};
    if (fresh || (adopt && !this.sent.stale(server) && !sameChoice(server, this.lastSent))) {
      this.lastSent = server;
      this.theta.set(data.theta);
      if (this.grid) this.grid.set(data.grid);
    } else {  // keep what the person is moving; redraw the thumbs
      this.theta.set(this.theta.index);
      if (this.grid) this.grid.set(this.grid.index);
    }
    this.showValues();
    if (this.note.textContent !== data.note) this.note.textContent = data.note;
    this.requestDraw();
  }
  payload() {
    const e = this.data ? A.payloads.get(this.data.payload) : null;
    return e && e.value ? e.value : null;
  }
  payloadReady(id) { if (this.data && this.data.payload === id) this.requestDraw(); }
  value() {
    return {theta: this.theta.value, grid: this.grid ? this.grid.value : null};
  }
  showValues() {
    this.theta.valueEl.textContent = this.theta.labels[this.theta.index];
    if (this.grid) this.grid.valueEl.textContent = this.grid.labels[this.grid.index];
  }
  input(how) {
    this.showValues();
    clearTimeout(this.urlTimer);
    this.urlTimer = setTimeout(() => this.writeUrl(), 200);
    clearTimeout(this.timer);
    this.requestDraw();
    if (how === "key") this.timer = setTimeout(() => this.commit(), A.keyCommitMs);
  }
  release() {
    clearTimeout(this.timer);
    clearTimeout(this.urlTimer);
    this.writeUrl();
    this.commit();
  }
  commit() {
    const v = this.value();
    if (sameChoice(v, this.lastSent)) return;
    this.lastSent = v;
    this.sent.push(v);
    A.stats.commits += 1;
    if (this.setStateValue) this.setStateValue("choice", v);
  }
  writeUrl() {  // the stops' values as the address writes them (align_live.controls)
    if (!this.data.url) return;  // a notebook: no address to keep
    const u = new URL(window.location.href), names = this.data.url, vals = this.data.url_values;
    u.searchParams.set(names.theta, vals.theta[this.theta.index]);
    if (this.grid) u.searchParams.set(names[this.gridKey], vals.grid[this.grid.index]);
    if (u.href !== window.location.href) {
      window.history.replaceState(window.history.state, "", u.href);
    }
  }
  requestDraw() {
    if (this.raf) return;
    this.raf = requestAnimationFrame(() => { this.raf = null; this.draw(); });
  }
  charts() {
    return [...SK.charts].filter((gd) => gd.isConnected && gd.__sk && gd.__sk.bind &&
                                         gd.__sk.bind.align === this.data.payload);
  }
  stale() {  // a chart shows the server's figure of other values than the sliders'
    return this.charts().some((gd) => gd.dataset.source === "server" &&
                                       this.serverKey(gd) !== this.shownKey());
  }
  shownKey() { return `${this.grid ? this.grid.index : 0}:${this.theta.index}`; }
  serverKey(gd) {
    const b = gd.__sk.bind;
    return `${this.data.grid_key ? this.data.grid_stops.indexOf(b.grid) : 0}:` +
           `${this.data.theta_stops.indexOf(b.theta)}`;
  }
  draw() {
    const P = this.payload();
    if (!P) {  // until the payload is decoded: the server's lines
      const {scores, links} = this.data.lines || {};
      if (this.scores.textContent !== (scores || "")) this.scores.textContent = scores || "";
      if (this.links.textContent !== (links || "")) this.links.textContent = links || "";
      return;
    }
    const t0 = performance.now();
    const g = this.grid ? this.grid.index : 0, k = this.theta.index, nm = P.n * P.m;
    const cells = cellsAt(P, g, k), w = this.data.words;
    const text = scoresText(w, P, g, k);
    if (this.scores.textContent !== text) this.scores.textContent = text;
    const lt = linksText(w, cells.links);
    if (this.links.textContent !== lt) this.links.textContent = lt;
    this.links.dataset.count = String(cells.links.length);
    const shown = this.shownKey();
    const work = [];
    for (const gd of this.charts()) {
      const b = gd.__sk.bind;
      const have = gd.dataset.source === "browser" ? gd.dataset.align : this.serverKey(gd);
      if (have === shown || !window.Plotly) continue;
      const samePlan = have.split(":")[0] === String(g);
      const data = b.chart === "matrix"
        ? matrixData(gd.data, P, this.data.style,
                     samePlan ? null : rowsOf(P.V, g * nm, P.n, P.m), cells)
        : graphData(P, this.data.style, cells);
      gd.dataset.source = "browser";
      gd.dataset.align = shown;
      work.push(window.Plotly.react(gd, data, gd.layout));
    }
    if (!work.length) return;
    Promise.all(work).then(() => {
      A.stats.redraws += 1;
      A.stats.last = performance.now();
      A.stats.ms = A.stats.ms.concat([A.stats.last - t0]).slice(-200);
    }).catch(() => {});
  }
  destroy() {
    clearTimeout(this.timer);
    clearTimeout(this.urlTimer);
    clearInterval(this.watch);
    if (this.raf) cancelAnimationFrame(this.raf);
  }
}

export const sameChoice = (p, q) => !!p && !!q && p.theta === q.theta && p.grid === q.grid;

export function mountAlign({parentElement, data, setStateValue}) {
  let ctl = parentElement.__skAlign;
  if (!ctl) {
    ctl = new AlignLive(parentElement);
    parentElement.__skAlign = ctl;
    // a chart that got the server's figure after the person moved on: bring it along
    ctl.watch = setInterval(() => {
      if (ctl.data && ctl.payload() && ctl.stale()) ctl.requestDraw();
    }, 150);
  }
  A.ctl = ctl;
  ctl.update(data, setStateValue);
  return () => {
    ctl.destroy();
    if (A.ctl === ctl) A.ctl = null;
  };
}

export default function (arg) {
  const component = unwrap(arg);
  const {data} = component;
  if (data instanceof Uint8Array || data instanceof ArrayBuffer) return mountPayload(component);
  if (data && data.role === "align") return mountAlign(component);
  return undefined;
}
