// Token axes and token hover: ticks thinned to the chart's real size, and hover labels
// that name the tokens of a map too large to carry them per cell.

// A map above viz.heatmaps.LARGE cells carries no per-cell token strings (they would take
// megabytes): its hover template names positions, A[i] → B[j]. Its layout.meta.hover
// holds each token's hover line once, written by Python; when plotly has drawn a map's
// hover label, it is shown here instead with those two lines (as text, never HTML: tokens
// are the user's text).
export function tokenHover(gd) {
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
    const lines = [h.rows[i] ?? "", h.cols[j] ?? "", ...rest];  // Python's lines, as text
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
// rule of viz.theme._thin_axis, with the size the page gives the chart and its widest
// label as Python measured it (live.py, label_widths: in font sizes).
export function tokenTicks(layout, widths) {  // the figure's own ticks of each token axis
  const out = {};
  for (const [name, ax] of Object.entries(layout || {})) {
    if (/^[xy]axis\d*$/.test(name) && ax && ax.tickmode === "array" &&
        Array.isArray(ax.tickvals) && Array.isArray(ax.ticktext) &&
        ax.tickvals.every((v) => typeof v === "number") && widths && name in widths) {
      out[name] = {vals: ax.tickvals, text: ax.ticktext, em: widths[name]};
    }
  }
  return out;
}
export function fittedTicks(layout, ticks, width, height) {
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
    const need = angle === 0 && horizontal ? t.em * size + 0.5 * size
      : size / (horizontal ? Math.max(0.3, Math.abs(Math.sin(angle * Math.PI / 180))) : 1);
    const k = gap > 0 && len > 0 ? Math.max(1, Math.ceil(need / gap)) : 1;
    out[name] = {vals: t.vals.filter((_, q) => q % k === 0),
                 text: t.text.filter((_, q) => q % k === 0)};
  }
  return out;
}
export function fitTicks(gd, layout) {  // set the fitted ticks in a layout about to be drawn
  const fit = fittedTicks(layout, gd.__ticks || {}, gd.clientWidth, gd.clientHeight);
  for (const [name, t] of Object.entries(fit)) {
    layout[name] = {...layout[name], tickvals: t.vals, ticktext: t.text};
  }
  return layout;
}
export function refitTicks(gd) {  // after a resize: relayout the axes whose ticks change
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
