// The live sliders and the metric strip: frames from the lattice while dragging, the
// value to the server on release.
import {fill, language, metricRows} from "./format.js";
import {applyFrame, paintMaps} from "./paint.js";
import {SK} from "./state.js";

export const CSS = `
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

export let uid = 0;
export const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
};

export class Slider {
  // A real slider: role "slider" on the focusable thumb, aria-valuenow/-valuetext,
  // arrow keys one stop, Page keys a tenth, Home/End; pointer drag on the whole track.
  constructor(root, {label, about, help, ends, onInput, onRelease}) {
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
    wrap.setAttribute("aria-label", about);
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

export class Scrub {
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
    const w = data.words;  // every word shown comes from scrub.py (WORDS)
    this.strip.setAttribute("aria-label", w.metrics);
    this.eps = new Slider(this.boxes[0], {
      label: w.eps_label, about: fill(w.about, {label: w.eps_label}), help: data.help.eps,
      ends: (s) => fill(w.eps_value, {value: s}), onInput: input, onRelease: release});
    this.steps = new Slider(this.boxes[1], {
      label: w.steps_label, about: fill(w.about, {label: w.steps_label}), help: data.help.steps,
      ends: (s) => s, onInput: input, onRelease: release});
    this.built = true;
  }
  update(data, setStateValue) {
    this.setStateValue = setStateValue;
    this.data = data;
    SK.lang = language(data.words, data.numbers);  // every chart writes the page's language
    if (!this.built) this.build(data);
    const stepLabels = data.step_labels;
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
    return entry && entry.value ? entry.value : null;
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
    this.urlTimer = setTimeout(() => writeUrl(this.data.url, this.eps.labels[this.eps.index],
                                              this.value().steps), 200);
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
    writeUrl(this.data.url, this.eps.labels[this.eps.index], this.value().steps);
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
      this.setNote(fill(this.data.words.nearest, {
        eps: SK.lang.num(f.eps), steps: SK.lang.steps(f.steps),
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
  frameMetrics(f) {  // engine.relation.summary.rows for frame f (format.js, metricRows)
    const label = {}, help = {...this.data.metric_help};
    for (const r of this.data.metrics) {
      label[r.key] = r.label;
      help[r.key] = r.help;  // in the page's language
    }
    return metricRows(f.metrics, f.steps, label, help, this.data.zero_mass, SK.lang);
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

export const inView = (gd) => {
  const r = gd.getBoundingClientRect();
  return r.bottom > 0 && r.top < (window.innerHeight || 0) && r.width > 0;
};
export const same = (p, q) => !!p && !!q && p.eps === q.eps && p.steps === q.steps;
export function nearestIndex(stops, x, log) {
  let best = 0;
  const d = (s) => (log ? Math.abs(Math.log(s / x)) : Math.abs(s - x));
  stops.forEach((s, k) => { if (d(s) < d(stops[best])) best = k; });
  return best;
}
export function writeUrl(keys, epsLabel, steps) {  // keys: the URL's names of ε and t
  const u = new URL(window.location.href);
  if (u.searchParams.get(keys.eps) === epsLabel &&
      u.searchParams.get(keys.steps) === String(steps)) {
    return;
  }
  u.searchParams.set(keys.eps, epsLabel);
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
