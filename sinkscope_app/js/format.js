import {SK} from "./state.js";

// Numbers and templates, as the Python side writes them (tests/js checks each against its
// Python twin on fixtures the tests write from Python). The metric strip's and the titles'
// numbers are not written here: the server sends their texts (scrub.py, frame_texts).
// engine.relation.summary.fmt, to the letter: 3 significant digits; |x| < 1e-3 or ≥ 1e5 in
// scientific notation with 2 decimals; 0 as "0"; ±inf as "∞"/"−∞"; NaN as "n/a".
export const pad = (s) => s.replace(/e([+-])(\d)$/, "e$10$2");
export function gfmt(x, p) {  // Python's format(x, ".{p}g")
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

// engine.relation.summary.Numbers: how the page's language writes a number, from the
// payload's spec {decimal, group, nan}: fmt's digits in every language, its own marks.
export function numberFormat(spec) {
  const p = {decimal: ".", group: ",", nan: "n/a", ...(spec || {})};
  if (p.decimal === "." && p.group === "," && p.nan === "n/a") return fmt;
  const swap = (s) => s.replace(/[.,]/g, (c) => (c === "." ? p.decimal : p.group));
  return (x) => (Number.isNaN(Number(x)) ? p.nan : swap(fmt(x)));
}

// The page's language for what the browser writes while a slider moves: its number format,
// its words and "N half-steps" at each half-step stop, all from the payload (scrub.py: no
// word is written here). Until a payload names them, numbers are English (fmt).
export function language(words, spec, stepStops = [], stepsTexts = []) {
  const texts = new Map(stepStops.map((t, k) => [t, stepsTexts[k]]));
  return {num: numberFormat(spec), words: {...(words || {})},
          steps: (t) => texts.get(t) ?? String(t)};
}
export const ENGLISH = language();
export const here = () => SK.lang || ENGLISH;  // the page's language, set by the sliders
export const fill = (template, vals) =>
  String(template).replace(/\{(\w+)\}/g, (m, k) => (k in vals ? vals[k] : m));
