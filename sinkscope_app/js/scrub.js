// The live sliders and the metric strip: frames from the lattice while dragging, the
// value to the server on release.
import {fill, language} from "./format.js";
import {applyFrame, paintMaps} from "./paint.js";
import {SLIDER_CSS, Sent, Slider, el, nextId} from "./slider.js";
import {SK} from "./state.js";

// Styles of the metric strip (the sliders' own are slider.js's).
export const CSS = `
.sk-metrics{display:grid;grid-template-columns:repeat(auto-fit,minmax(6.6rem,1fr));
  gap:.2rem .4rem;border-top:1px solid var(--sk-line);border-bottom:1px solid var(--sk-line);
  padding:.25rem 0;margin-bottom:.1rem}
.sk-metric{position:relative;outline:none;border-radius:.3rem;padding:0 .25rem;cursor:help}
.sk-metric:focus-visible{box-shadow:0 0 0 .15rem rgba(255,75,75,.45)}
.sk-mlabel{font-size:.7rem;line-height:1.15;color:var(--sk-muted);display:block}
.sk-mvalue{font-size:1rem;font-weight:600;font-variant-numeric:tabular-nums}
.sk-mdetail{font-size:.66rem;line-height:1.15;color:var(--sk-muted);display:block}
[data-testid="stMainBlockContainer"]{padding-top:3.2rem}
.sk-metric:hover .sk-tip,.sk-metric:focus .sk-tip{display:block}
`;

export class Scrub {
  constructor(root) {
    this.root = el("div", "sk-scrub");
    const style = el("style", null, SLIDER_CSS + CSS);
    const sliders = el("div", "sk-sliders");
    const boxE = el("div"), boxT = el("div");
    sliders.append(boxE, boxT);
    this.note = el("div", "sk-note");
    this.note.setAttribute("aria-live", "polite");
    this.strip = el("div", "sk-metrics");
    this.strip.setAttribute("role", "group");
    this.root.append(style, sliders, this.note, this.strip);
    root.append(this.root);
    this.boxes = [boxE, boxT];
    this.lastSent = null;
    this.sent = new Sent(same);
    this.prevData = null;
    this.timer = null;
    this.data = null;
  }
  build(data) {
    const input = (how) => this.input(how);
    const release = (how) => this.release(how);
    const [e, t] = this.words(data);
    this.eps = new Slider(this.boxes[0], {...e, onInput: input, onRelease: release});
    this.steps = new Slider(this.boxes[1], {...t, onInput: input, onRelease: release});
    this.built = true;
  }
  words(data) {  // every word shown comes from scrub.py (WORDS), in the page's language
    const w = data.words;
    this.strip.setAttribute("aria-label", w.metrics);
    return [{label: w.eps_label, about: fill(w.about, {label: w.eps_label}), help: data.help.eps,
             ends: (s) => fill(w.eps_value, {value: s})},
            {label: w.steps_label, about: fill(w.about, {label: w.steps_label}),
             help: data.help.steps, ends: (s) => s}];
  }
  update(data, setStateValue) {
    this.setStateValue = setStateValue;
    this.data = data;
    // every chart writes the page's language
    SK.lang = language(data.words, data.numbers, data.step_stops, data.steps_texts);
    if (!this.built) this.build(data);
    const [e, t] = this.words(data);  // a language switch keeps the sliders: new words
    this.eps.setWords(e);
    this.steps.setWords(t);
    this.eps.setStops(data.eps_stops, data.eps_labels);
    this.steps.setStops(data.step_stops, data.step_labels);
    const server = {eps: data.eps, steps: data.steps};
    const adopt = !this.prevData || !same(server, this.prevData);
    this.prevData = server;
    if (adopt && !this.sent.stale(server) && !same(server, this.lastSent)) {
      this.lastSent = server;
      this.eps.set(data.eps_index);  // the stops nearest the server's values (scrub.py)
      this.steps.set(data.steps_index);
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
    return entry && entry.value ? entry.value : null;
  }
  texts() {  // the lattice's frames' texts in the page's language (scrub.py, texts_payload)
    const entry = this.data && this.data.texts ? SK.texts.get(this.data.texts) : null;
    return entry && entry.value ? entry.value : null;
  }
  live() { return !!this.lattice() && !!this.texts(); }
  latticeReady(id) {
    if (this.data && (this.data.lattice === id || this.data.texts === id)) {
      this.setNote(this.serverNote());
      if (!same(this.value(), this.prevData)) this.requestFrame();
    }
  }
  chartReady(gd) {  // a chart got the server's figure: bring it to the frame shown
    const L = this.lattice();
    if (!L || !this.live() || gd.__sk.bind.lattice !== L.id) return;
    const v = this.value(), b = gd.__sk.bind;
    if (v.eps !== b.eps || v.steps !== b.steps) this.requestFrame();
  }
  showValues() {
    this.eps.valueEl.textContent = fill(this.data.words.eps_value,
                                        {value: this.eps.labels[this.eps.index]});
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
    this.urlTimer = setTimeout(() => this.writeUrl(), 200);
    clearTimeout(this.timer);
    if (this.live()) {
      this.requestFrame();
      // keys: send the value once the person pauses; pointer: on release
      if (how === "key") this.timer = setTimeout(() => this.commit(), SK.keyCommitMs);
    } else if (how === "key") {
      this.commit();
    } else {
      this.setNote(this.data.words.release);
    }
  }
  release() {
    clearTimeout(this.timer);
    clearTimeout(this.urlTimer);
    this.writeUrl();
    this.commit();
  }
  writeUrl() {  // each stop's value as the address writes it (scrub.py, url_eps); no url: a notebook
    if (this.data.url) writeUrl(this.data.url, this.data.url_eps[this.eps.index], this.value().steps);
  }
  commit() {
    const v = this.value();
    if (same(v, this.lastSent)) return;
    this.lastSent = v;
    this.sent.push(v);
    SK.stats.commits += 1;
    if (this.setStateValue) this.setStateValue("frame", v);
  }
  requestFrame() {
    if (this.raf) return;
    this.raf = requestAnimationFrame(() => { this.raf = null; this.draw(); });
  }
  draw() {
    const L = this.lattice(), X = this.texts();
    if (!L || !X) return;
    const v = this.value();
    const at = this.data.frames;  // the lattice's frame of each stop (scrub.py, frame_stops)
    const i = at.eps[this.eps.index], k = at.steps[this.steps.index];
    if (!(i < L.E && k < L.T)) return;
    const held = L.eps[i] === v.eps && L.steps[k] === v.steps;
    const t0 = performance.now();
    const f = {...L.frame(i, k), text: X.at(i, k)};
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
    if (!held) {
      this.setNote(fill(this.data.words.nearest, {
        eps: f.text.eps, steps: SK.lang.steps(f.steps),
        want_eps: this.eps.labels[this.eps.index], want_steps: SK.lang.steps(v.steps)}));
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
      parts.push(this.data.words.softmax_note);
    }
    return parts.join(" ");
  }
  setNote(text) { if (this.note.textContent !== text) this.note.textContent = text; }
  frameMetrics(f) {  // the server's rows with frame f's values and details (frame_texts)
    return this.data.metrics.map((r) => {
      const [value, detail] = f.text.rows[r.key];
      return {...r, value, detail};
    });
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
        tip.id = nextId("sk-tip");
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

export const inView = (gd) => {
  const r = gd.getBoundingClientRect();
  return r.bottom > 0 && r.top < (window.innerHeight || 0) && r.width > 0;
};
export const same = (p, q) => !!p && !!q && p.eps === q.eps && p.steps === q.steps;
export function writeUrl(keys, epsText, steps) {  // keys: the URL's names of ε and t
  const u = new URL(window.location.href);
  if (u.searchParams.get(keys.eps) === epsText &&
      u.searchParams.get(keys.steps) === String(steps)) {
    return;
  }
  u.searchParams.set(keys.eps, epsText);
  u.searchParams.set(keys.steps, String(steps));
  window.history.replaceState(window.history.state, "", u.href);
}

export function mountScrub({parentElement, data, setStateValue}) {
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
