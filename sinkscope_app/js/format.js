// Numbers and text, as the Python side writes them (tests/js checks each against its
// Python twin on fixtures the tests write from Python).
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
export const halfStepsText = (t) => `${t.toLocaleString("en-US")} half-step${t === 1 ? "" : "s"}`;
export const fill = (template, vals) =>
  String(template).replace(/\{(\w+)\}/g, (m, k) => (k in vals ? vals[k] : m));
const ENTITIES = {"&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": "\"", "&#x27;": "'",
                  "&#39;": "'"};
export const unescapeHtml = (t) => String(t).replace(/&(?:lt|gt|amp|quot|#x27|#39);/g,
                                                 (e) => ENTITIES[e]);
// Characters of East Asian width W or F (unicodedata.east_asian_width), by block.
const WIDE = new RegExp("[\\u1100-\\u115f\\u231a\\u231b\\u2329\\u232a\\u23e9-\\u23ec\\u23f0\\u23f3" +
  "\\u25fd\\u25fe\\u2614\\u2615\\u2648-\\u2653\\u267f\\u2693\\u26a1\\u26aa\\u26ab\\u26bd" +
  "\\u26be\\u26c4\\u26c5\\u26ce\\u26d4\\u26ea\\u26f2\\u26f3\\u26f5\\u26fa\\u26fd\\u2705" +
  "\\u270a\\u270b\\u2728\\u274c\\u274e\\u2753-\\u2755\\u2757\\u2795-\\u2797\\u27b0\\u27bf" +
  "\\u2b1b\\u2b1c\\u2b50\\u2b55\\u2e80-\\u303e\\u3041-\\u33ff\\u3400-\\u4dbf\\u4e00-\\ua4cf" +
  "\\ua960-\\ua97f\\uac00-\\ud7a3\\uf900-\\ufaff\\ufe10-\\ufe19\\ufe30-\\ufe6f\\uff00-\\uff60" +
  "\\uffe0-\\uffe6\\u{1f004}\\u{1f0cf}\\u{1f18e}\\u{1f191}-\\u{1f19a}\\u{1f200}-\\u{1f251}" +
  "\\u{1f300}-\\u{1f64f}\\u{1f680}-\\u{1f6ff}\\u{1f7e0}-\\u{1f7eb}\\u{1f90c}-\\u{1f9ff}" +
  "\\u{1fa70}-\\u{1faff}\\u{20000}-\\u{3fffd}]", "u");
export const textPx = (t, size) => {  // viz.theme.text_px (of the label as shown)
  let w = 0;
  for (const ch of unescapeHtml(t)) w += size * (WIDE.test(ch) ? 1 : 0.62);
  return w;
};

// engine.relation.summary.rows for one frame's metrics ``s`` after ``steps`` half-steps;
// ``label`` and ``help`` by key (the server's), ``zeroMass`` summary.ZERO_MASS.
export function metricRows(s, steps, label, help, zeroMass) {
  const row = (key, value, detail = "") => ({key, label: label[key], value, detail,
                                            help: help[key]});
  const kl = !Number.isFinite(s.kl_to_product) && s.kl_to_product > 0 &&
             s.zero_weight_mass > zeroMass
    ? row("kl_to_product", "∞", `${fmt(s.zero_weight_mass)} of π's mass on weight-0 tokens`)
    : row("kl_to_product", fmt(s.kl_to_product));
  let costDetail = `exact OT ${fmt(s.exact_cost)} · softmax ${fmt(s.softmax_cost)}`;
  if (s.cost < s.exact_cost - 1e-9 * Math.max(1, Math.abs(s.exact_cost))) {
    costDetail += " · below exact OT: π is not a coupling yet";
  }
  return [
    row("softmax_col_err", fmt(s.softmax_col_err)),
    row("sinkhorn_row_err", fmt(s.sinkhorn_row_err)),
    row("sinkhorn_col_err", fmt(s.sinkhorn_col_err)),
    row("cost", fmt(s.cost), costDetail),
    row("entropy", fmt(s.entropy)),
    kl,
    row("l1_to_exact", fmt(s.l1_to_exact)),
    row("converged", s.converged ? "yes" : "no", halfStepsText(steps)),
  ];
}
