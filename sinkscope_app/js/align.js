// The Align page's live θ, τ and m sliders: links, figures and this pair's scores redrawn
// in the browser from the values the server shipped (align_live.py), the value to the
// server on release.
//
// One component ("sinkscope_align", its own bundle: state, format, patch, paint, scrub,
// align), told apart by its data:
//   payload  raw bytes (SKA1): header (words, gold, thresholds, grid) + V (G, n, m) float32.
//   controls {role: "align", ...}: the sliders, the links line and the scores line.
// The rules are Python's, tested against it on fixtures (tests/test_align_js.py):
// links V > θ (engine.alignment.extract), counts and metrics (engine.alignment.score), the
// figures' link and node traces (viz.align.matrix and graph), numbers as f"{x:.3f}".
import {fill, numberFormat} from "./format.js";
import {Slider, el} from "./scrub.js";
import {SK, keepDecoded, unwrap} from "./state.js";

export const A = SK.align || (SK.align = {
  payloads: new Map(),  // id -> {promise, value: payload|null, error|null}
  ctl: null,            // the controls on the page
  stats: {redraws: 0, commits: 0, last: 0, ms: []},
  keyCommitMs: 450,     // keys: the value goes to the server once they pause this long
});

// ------------------------------------------------------------------ pure: the maths
export const byCell = (p, q) => p[0] - q[0] || p[1] - q[1];

export function linksAt(V, off, n, m, theta) {  // extract.links_of: V > θ, row-major
  const out = [];
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < m; j++) if (V[off + i * m + j] > theta) out.push([i, j]);
  }
  return out;
}

const key = (i, j) => i * 65536 + j;
const cellSet = (cells) => new Set((cells || []).map(([i, j]) => key(i, j)));

export function classify(links, sure, possible) {  // viz.align.classify
  const out = {miss: [], miss_possible: [], link: [], hit: [], hit_possible: [], false: []};
  const L = [...links].sort(byCell);
  if (sure === null && possible === null) {
    out.link = L;
    return out;
  }
  const S = cellSet(sure), P = cellSet(possible);
  for (const c of S) P.add(c);
  const Aset = cellSet(L);
  for (const c of L) {
    const k = key(c[0], c[1]);
    if (S.has(k)) out.hit.push(c);
    else if (P.has(k)) out.hit_possible.push(c);
    else out.false.push(c);
  }
  const cells = (set) => [...set].map((k) => [Math.floor(k / 65536), k % 65536]).sort(byCell);
  out.miss = cells(new Set([...S].filter((k) => !Aset.has(k))));
  out.miss_possible = cells(new Set([...P].filter((k) => !S.has(k) && !Aset.has(k))));
  return out;
}

export function unaligned(links, n, m) {  // viz.align.unaligned
  const ra = new Set(links.map((c) => c[0])), rb = new Set(links.map((c) => c[1]));
  const a = [], b = [];
  for (let i = 0; i < n; i++) if (!ra.has(i)) a.push(i);
  for (let j = 0; j < m; j++) if (!rb.has(j)) b.push(j);
  return [a, b];
}

export function counts(links, n, m, sure, possible) {  // score.mask_counts, null_gold "sure"
  const S = cellSet(sure), P = cellSet(possible);
  for (const c of S) P.add(c);
  let pred = 0, ps = 0, pp = 0;
  for (const [i, j] of links) {
    pred += 1;
    if (S.has(key(i, j))) ps += 1;
    if (P.has(key(i, j))) pp += 1;
  }
  const [pa, pb] = unaligned(links, n, m);
  const [ga, gb] = unaligned([...S].map((k) => [Math.floor(k / 65536), k % 65536]), n, m);
  const gaS = new Set(ga), gbS = new Set(gb);
  const hit = pa.filter((i) => gaS.has(i)).length + pb.filter((j) => gbS.has(j)).length;
  return [pred, ps, pp, S.size, pa.length + pb.length, ga.length + gb.length, hit];
}

const ratio = (num, den, other) => (den > 0 ? num / den : other === 0 ? 1 : 0);
const f1 = (p, r) => (p + r > 0 ? 2 * p * r / (p + r) : 0);
export function metrics(c) {  // score.metrics_from_counts, the same operations in order
  const [A_, AS, AP, S, Np, Ng, Nh] = c;
  const p = ratio(AP, A_, S), r = ratio(AS, S, A_);
  const den = A_ + S;
  const aer = den > 0 ? 1 - (AS + AP) / den : 0;
  const npr = ratio(Nh, Np, Ng), nre = ratio(Nh, Ng, Np);
  const tp = ratio(AP + Nh, A_ + Np, S + Ng), tr = ratio(AS + Nh, S + Ng, A_ + Np);
  return {precision: p, recall: r, f1: f1(p, r), aer, null_precision: npr, null_recall: nre,
          null_f1: f1(npr, nre), total_precision: tp, total_recall: tr, total_f1: f1(tp, tr)};
}

export function fixed3(x) {  // Python's f"{x:.3f}": exact decimal value, ties to even
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  const neg = x < 0 || Object.is(x, -0);
  const s = Math.abs(x).toFixed(100);
  const [int, dec] = s.split(".");
  const rest = dec.slice(3);
  let n = BigInt(int + dec.slice(0, 3));
  const tail = rest.replace(/0+$/, "");
  if (tail > "5" || (tail === "5" && n % 2n === 1n)) n += 1n;  // above a half, or a tie to odd
  const digits = n.toString().padStart(4, "0");
  return `${neg ? "-" : ""}${digits.slice(0, -3)}.${digits.slice(-3)}`;
}

export const pharaoh = (links) => links.map(([i, j]) => `${i}-${j}`).join(" ");  // links_text

export function scoresText(words, method, s) {  // align_page: the scores line
  if (!s) return "";
  const v = {method};
  const mark = words.decimal || ".";  // the page language's decimal mark (align_live.WORDS)
  for (const k of ["precision", "recall", "f1", "aer", "null_f1", "total_f1"]) {
    v[k] = fixed3(s[k]).replace(".", mark);
  }
  return fill(words.pair_scores_live, v);
}
export const linksText = (words, links) =>
  `${fill(words.links_count, {count: links.length})} · ${fill(words.links_line,
                                                              {links: pharaoh(links) || "∅"})}`;

// ------------------------------------------------------------------ pure: the figures
export function planOf(V, off, n, m) {  // LivePayload.plan: rows, null where no part
  return Array.from({length: n}, (_, i) => Array.from({length: m}, (_, j) => {
    const v = V[off + i * m + j];
    return v >= 0 ? v : null;
  }));
}

export function matrixData(old, h, style, z, links) {  // viz.align.matrix's traces
  // old: the figure's traces now; z: the plan's rows (planOf), or null to keep old's
  const {n, m, labels_a: la, labels_b: lb} = h;
  const kinds = classify(links, h.sure, h.possible);
  const pred = ["link", "hit", "hit_possible", "false"].flatMap((k) => kinds[k]);
  const [nullA, nullB] = unaligned(pred, n, m);
  const out = [];
  const heat = old.find((t) => t.meta && t.meta.kind === "plan");
  if (heat && z === null) {  // the same plan (θ moved alone): the same trace, not redrawn
    out.push(heat);
  } else if (heat) {
    const num = numberFormat(style.numbers);  // the page's language (style_of's spec)
    out.push({...heat, z, text: z.map((row, i) => row.map((v, j) =>
      `${la[i]} → ${lb[j]}: ${num(v === null ? NaN : v)}`))});
  }
  const axes = heat ? {xaxis: "x2", yaxis: "y2"} : {xaxis: "x", yaxis: "y"};
  const size = style.size;
  for (const k of style.kinds) {
    const cells = kinds[k];
    if (!cells.length && k !== "link") continue;
    if (k === "link" && !cells.length && h.sure !== null) continue;
    out.push({
      x: cells.map((c) => c[1]), y: cells.map((c) => c[0]), mode: "markers",
      name: style.names[k], legendgroup: k,
      marker: {symbol: style.symbols[k], size, color: style.colors[k],
               line: {width: 2, color: style.colors[k]}},
      text: cells.map(([a, b]) => `${la[a]} – ${lb[b]}: ${style.names[k]}`),
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

export function graphData(h, style, links) {  // viz.align.graph's traces
  const {n, m, labels_a: la, labels_b: lb} = h;
  const kinds = classify(links, h.sure, h.possible);
  const pred = ["link", "hit", "hit_possible", "false"].flatMap((k) => kinds[k]);
  const [nullA, nullB] = unaligned(pred, n, m);
  const {ya, yb} = style;
  const out = [];
  for (const k of style.kinds) {
    const cells = kinds[k];
    if (!cells.length) continue;
    const x = [], y = [];
    for (const [i, j] of cells) { x.push(0, 1, null); y.push(ya[i], yb[j], null); }
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
export function parsePayload(u8, raw) {  // SKA1 + uint32 header size + header + V (float32)
  const size = new DataView(u8.buffer, u8.byteOffset, u8.byteLength).getUint32(4, true);
  const h = JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + size)));
  const V = new Float32Array(raw);
  const G = Math.max(1, h.grid.length);
  if (V.length !== G * h.n * h.m) throw new Error("alignment payload of the wrong size");
  return {...h, G, V};
}

export async function decodePayload(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (String.fromCharCode(u8[0], u8[1], u8[2], u8[3]) !== "SKA1") {
    throw new Error("not a sinkscope alignment payload");
  }
  const size = new DataView(u8.buffer, u8.byteOffset, u8.byteLength).getUint32(4, true);
  const stream = new Blob([u8.subarray(8 + size)]).stream()
    .pipeThrough(new DecompressionStream("deflate"));
  return parsePayload(u8, await new Response(stream).arrayBuffer());
}

export function mountPayload({data}) {
  keepDecoded(A.payloads, data, decodePayload,
              (id) => { if (A.ctl) A.ctl.payloadReady(id); }, 4);
}

// ------------------------------------------------------------------ the controls
const ALIGN_CSS = `
.sk-align{font-family:var(--st-font,inherit);color:var(--st-text-color,inherit);
  --sk-accent:var(--st-primary-color,#ff4b4b);--sk-muted:rgba(128,128,128,.9);
  --sk-line:rgba(128,128,128,.35);}
.sk-align .sk-sliders{display:grid;grid-template-columns:1fr 1fr;gap:0 2.5rem}
.sk-align .sk-head{display:flex;justify-content:space-between;align-items:baseline;
  font-size:.875rem;gap:.5rem}
.sk-align .sk-value{font-weight:600;font-variant-numeric:tabular-nums}
.sk-align .sk-track{position:relative;height:26px;touch-action:none;cursor:pointer}
.sk-align .sk-rail{position:absolute;left:8px;right:8px;top:11px;height:4px;border-radius:2px;
  background:var(--sk-line)}
.sk-align .sk-fill{position:absolute;left:0;top:0;bottom:0;border-radius:2px;
  background:var(--sk-accent)}
.sk-align .sk-thumb{position:absolute;top:5px;width:16px;height:16px;margin-left:-8px;
  border-radius:50%;background:var(--sk-accent);outline:none}
.sk-align .sk-thumb:focus-visible{box-shadow:0 0 0 .2rem rgba(255,75,75,.45)}
.sk-align .sk-ends{display:flex;justify-content:space-between;font-size:.75rem;
  color:var(--sk-muted)}
.sk-align .sk-note{font-size:.8rem;color:var(--sk-muted);min-height:1.1em;margin:.15rem 0}
.sk-align .sk-scores{font-weight:600;font-variant-numeric:tabular-nums;margin:.2rem 0}
.sk-align .sk-links{font-family:var(--st-code-font,monospace);font-size:.85rem;
  white-space:pre-wrap;overflow-wrap:anywhere}
.sk-align .sk-help{display:inline-block;width:.95rem;height:.95rem;line-height:.95rem;
  text-align:center;border:1px solid var(--sk-muted);border-radius:50%;font-size:.62rem;
  color:var(--sk-muted);margin-left:.35rem;cursor:help;vertical-align:.05rem}
.sk-align .sk-tip{display:none;position:absolute;z-index:1000;top:100%;left:0;width:19rem;
  padding:.5rem .6rem;border-radius:.4rem;font-size:.8rem;line-height:1.35;font-weight:400;
  background:var(--st-secondary-background-color,#f0f2f6);color:var(--st-text-color,#31333f);
  box-shadow:0 2px 10px rgba(0,0,0,.2)}
.sk-align .sk-helpwrap{position:relative;outline:none}
.sk-align .sk-helpwrap:hover .sk-tip,.sk-align .sk-helpwrap:focus .sk-tip{display:block}
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
    this.root.append(el("style", null, ALIGN_CSS), sliders, this.note, this.scores, this.links);
    root.append(this.root);
    this.lastSent = null;
    this.prev = null;
  }
  build(data) {
    const w = data.words, input = (how) => this.input(how), release = () => this.release();
    this.theta = new Slider(this.boxes[0], {
      label: w.threshold, about: fill(w.about, {label: w.threshold}), help: w.threshold_help,
      ends: (s) => s, onInput: input, onRelease: release});
    if (data.grid_key) {
      const label = w[data.grid_key];
      this.grid = new Slider(this.boxes[1], {
        label, about: fill(w.about, {label}), help: w[data.grid_key + "_help"] || label,
        ends: (s) => s, onInput: input,
        onRelease: release});
    }
    this.gridKey = data.grid_key;
    this.built = true;
  }
  update(data, setStateValue) {
    this.setStateValue = setStateValue;
    if (this.built && data.grid_key !== this.gridKey) {  // another method: start afresh
      this.boxes.forEach((b) => b.replaceChildren());
      this.built = false;
      this.grid = null;
      this.prev = this.lastSent = null;
    }
    this.data = data;
    if (!this.built) this.build(data);
    this.theta.setStops(data.theta_stops, data.theta_labels, data.theta_stops[0],
                        data.theta_stops[data.theta_stops.length - 1]);
    if (this.grid) {
      this.grid.setStops(data.grid_stops, data.grid_labels, data.grid_stops[0],
                         data.grid_stops[data.grid_stops.length - 1]);
    }
    const server = {theta: data.theta_stops[data.theta],
                    grid: data.grid_key ? data.grid_stops[data.grid] : null};
    const fresh = !this.prev || this.prev.payload !== data.payload;  // another pair or method
    const adopt = fresh || !sameChoice(server, this.prev);
    this.prev = {...server, payload: data.payload};
    if (fresh || (adopt && !sameChoice(server, this.lastSent))) {
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
    A.stats.commits += 1;
    if (this.setStateValue) this.setStateValue("choice", v);
  }
  writeUrl() {
    const u = new URL(window.location.href), names = this.data.url;
    u.searchParams.set(names.theta, this.theta.labels[this.theta.index].replace(/0+$/, "")
      .replace(/\.$/, "") || "0");
    if (this.grid) u.searchParams.set(names[this.gridKey], this.grid.labels[this.grid.index]);
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
    const links = linksAt(P.V, g * nm, P.n, P.m, P.thetas[k]);
    const w = this.data.words;
    const s = P.sure === null ? null : metrics(counts(links, P.n, P.m, P.sure, P.possible));
    const text = scoresText(w, P.method, s);
    if (this.scores.textContent !== text) this.scores.textContent = text;
    const lt = linksText(w, links);
    if (this.links.textContent !== lt) this.links.textContent = lt;
    this.links.dataset.count = String(links.length);
    const shown = this.shownKey();
    const work = [];
    for (const gd of this.charts()) {
      const b = gd.__sk.bind;
      const have = gd.dataset.source === "browser" ? gd.dataset.align : this.serverKey(gd);
      if (have === shown || !window.Plotly) continue;
      const samePlan = have.split(":")[0] === String(g);
      const data = b.chart === "matrix"
        ? matrixData(gd.data, P, this.data.style,
                     samePlan ? null : planOf(P.V, g * nm, P.n, P.m), links)
        : graphData(P, this.data.style, links);
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
