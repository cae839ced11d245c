// A keyboard- and pointer-driven slider over fixed stops, shared by the live sliders of the
// main page (scrub.js) and of the Align page (align.js), with their common styles.

// Styles of the sliders, their help marks and notes; the root (.sk-scrub or .sk-align)
// sets the colours.
export const SLIDER_CSS = `
.sk-scrub,.sk-align{font-family:var(--st-font,inherit);color:var(--st-text-color,inherit);
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
.sk-help{display:inline-block;width:.95rem;height:.95rem;line-height:.95rem;text-align:center;
  border:1px solid var(--sk-muted);border-radius:50%;font-size:.62rem;color:var(--sk-muted);
  margin-left:.35rem;cursor:help;vertical-align:.05rem}
.sk-tip{display:none;position:absolute;z-index:1000;top:100%;left:0;width:19rem;
  padding:.5rem .6rem;border-radius:.4rem;font-size:.8rem;line-height:1.35;font-weight:400;
  background:var(--st-secondary-background-color,#f0f2f6);color:var(--st-text-color,#31333f);
  box-shadow:0 2px 10px rgba(0,0,0,.2)}
.sk-helpwrap{position:relative;outline:none}
.sk-helpwrap:hover .sk-tip,.sk-helpwrap:focus .sk-tip{display:block}
`;

let uid = 0;
export const nextId = (prefix) => `${prefix}-${++uid}`;  // ids unique on the page
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
    const id = nextId("sk");
    const head = el("div", "sk-head");
    const lab = el("span", "sk-label", label);
    lab.id = `${id}-label`;
    const wrap = el("span", "sk-helpwrap");
    wrap.tabIndex = 0;
    wrap.setAttribute("aria-label", about);
    const tip = el("span", "sk-tip", help);
    this.wordEls = {lab, wrap, tip};
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
  setWords({label, about, help, ends}) {  // the page's language, after a switch too
    const {lab, wrap, tip} = this.wordEls;
    if (lab.textContent !== label) lab.textContent = label;
    if (wrap.getAttribute("aria-label") !== about) wrap.setAttribute("aria-label", about);
    if (tip.textContent !== help) tip.textContent = help;
    this.ends = ends;
  }
  setStops(stops, labels) {
    this.stops = stops;
    this.labels = labels;
    this.thumb.setAttribute("aria-valuemin", String(stops[0]));
    this.thumb.setAttribute("aria-valuemax", String(stops[stops.length - 1]));
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

// The values a slider sent to the server, oldest first, until the server answers with the
// newest. An answer with an older one comes from a run that a later release overtook (a
// loaded server can finish it after the newer value left): it is stale, and adopting it
// would move the thumb back.
export class Sent {
  constructor(same) {
    this.same = same;
    this.values = [];
  }
  push(v) { this.values = this.values.slice(-7).concat([v]); }
  stale(server) {
    const n = this.values.length;
    if (n && this.same(this.values[n - 1], server)) {  // caught up
      this.values = [];
      return false;
    }
    return this.values.some((v) => this.same(v, server));
  }
}
