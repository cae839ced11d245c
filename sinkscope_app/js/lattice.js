// The ε × half-step lattice: every frame of one relation, decoded once (scrub.py's
// payload, engine.relation.frames's layout), and the texts of its frames in the page's
// language (scrub.py, texts_payload).
import {SK, keepDecoded, readPayload} from "./state.js";

export class Lattice {
  constructor(h, buf) {
    Object.assign(this, {id: h.id, n: h.n, m: h.m, eps: h.eps, steps: h.steps, tol: h.tol,
                         a: Float64Array.from(h.a), b: Float64Array.from(h.b)});
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
    const f = {
      i, k, eps: this.eps[i], steps: this.steps[k], att,
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

export async function decodeLattice(bytes) {
  const {header, body} = await readPayload(bytes, "SKL1");
  return new Lattice(header, body);
}

// What the page writes with each frame, as scrub.py's frame_texts wrote it: frame (i, k)
// is entry i·T + k of each list. No number is formatted here.
export class FrameTexts {
  constructor(h, t, T) { Object.assign(this, {id: h.id, T, ...t}); }
  at(i, k) {  // {eps, rows: {key: [value, detail]}, max_err, converged} of frame (i, k)
    const q = i * this.T + k, rows = {};
    for (const [key, v] of Object.entries(this.values)) {
      rows[key] = [v[q], this.details[key] ? this.details[key][q] : ""];
    }
    return {eps: this.eps[i], rows, max_err: this.max_err[q], converged: this.converged[q]};
  }
}

export async function decodeTexts(bytes) {
  const {header, body} = await readPayload(bytes, "SKT1");
  const t = JSON.parse(new TextDecoder().decode(body));
  return new FrameTexts(header, t, t.max_err.length / t.eps.length);
}

export function mountLattice({data}) {  // a lattice (SKL1) or its texts (SKT1)
  const u8 = data instanceof Uint8Array ? data : new Uint8Array(data);
  const texts = String.fromCharCode(...u8.subarray(0, 4)) === "SKT1";
  keepDecoded(texts ? SK.texts : SK.lattices, u8, texts ? decodeTexts : decodeLattice,
              (id) => { if (SK.scrub) SK.scrub.latticeReady(id); }, texts ? 6 : 3);
}
