// Drawing frames: the compare maps painted on canvases while a slider moves, and a
// frame's full Plotly.react when it rests.
import {fill, here} from "./format.js";
import {PATCH, compareLimits, shown, titleValues} from "./patch.js";

// A plot div that is hidden (display: none), detached or zero-sized cannot be resized:
// plotly rejects with "Resize must be passed a displayed plot div element".
export const displayed = (gd) =>
  gd.isConnected && gd.offsetParent !== null && gd.clientWidth > 0 && !!gd._fullLayout;

// A plotly redraw of the compare figure costs 50-100 ms here: every data change makes
// plotly.js replot the whole figure (axes and their token labels, legend, colour bar).
// While a slider is moving, the two maps are painted straight onto canvases laid over
// plotly's own maps, with the figure's colour scale and limits (about 1 ms), and their
// titles are rewritten; the full Plotly.react of the frame follows when the slider rests
// (and every half second during a long drag), and the canvases go.
export function parseColor(c) {
  const s = String(c).trim();
  if (s[0] === "#") {
    const h = s.length === 4 ? s.slice(1).split("").map((x) => x + x).join("") : s.slice(1);
    return [0, 2, 4].map((k) => parseInt(h.slice(k, k + 2), 16)).concat([1]);
  }
  const v = s.replace(/[^\d.,]/g, "").split(",").map(Number);
  return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1];
}
export function colorScale(scale) {  // plotly's makeColorScaleFunc: linear in RGB between stops
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
export const axisName = (id) => (id[0] === "x" ? "xaxis" : "yaxis") + id.slice(1);
export function paintMaps(gd, L, f) {
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
  const vals = titleValues(f, meta);
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
export function setLines(node, text) {
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

export function hidePreview(gd) {  // back to what plotly draws: its maps, titles and frame
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
export function applyFrame(gd, L, f) {
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
