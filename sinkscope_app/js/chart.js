// Charts updated in place: one plotly div per key, Plotly.react on every new figure.
import {fitTicks, refitTicks, tokenHover, tokenTicks} from "./axes.js";
import {fill} from "./format.js";
import {displayed, hidePreview} from "./paint.js";
import {SK} from "./state.js";

export const loadPlotly = (src) => {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__sinkscopePlotly) {
    window.__sinkscopePlotly = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src;
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => {
        window.__sinkscopePlotly = null;
        reject(new Error("plotly.js could not be loaded from the server"));
      };
      document.head.appendChild(s);
    });
  }
  return window.__sinkscopePlotly;
};

export const whenIdle = (fn) => (window.requestIdleCallback
  ? {idle: window.requestIdleCallback(fn, {timeout: 1500})} : {timer: setTimeout(fn, 300)});
export const cancelIdle = (h) => (h.idle !== undefined ? window.cancelIdleCallback(h.idle)
                                                 : clearTimeout(h.timer));
export function mountChart({parentElement, data}) {
  if (!data.spec) {  // preload: start fetching plotly.js, draw nothing
    loadPlotly(data.src).catch(() => {});
    return;
  }
  let gd = parentElement.querySelector(":scope > div.sinkscope-chart");
  if (!gd) {
    gd = document.createElement("div");
    gd.className = "sinkscope-chart";
    gd.style.width = "100%";
    parentElement.appendChild(gd);
    let queued = false;
    gd.__observer = new ResizeObserver(() => {
      if (queued || !displayed(gd) || !window.Plotly) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        if (displayed(gd)) {
          Promise.resolve(window.Plotly.Plots.resize(gd)).then(() => refitTicks(gd))
            .catch(() => {});
        }
      });
    });
    gd.__observer.observe(gd);
  }
  // A fixed height and full containment: plotly measures its labels while it draws, and
  // each measurement then lays out this chart alone, not the whole page (~30 % faster).
  gd.style.height = data.height + "px";
  gd.style.contain = "strict";
  const bind = data.bind || null;
  if (gd.__idle) { cancelIdle(gd.__idle); gd.__idle = null; }
  const draw = async () => {
    try {
      const Plotly = await loadPlotly(data.src);
      const fig = JSON.parse(data.spec);
      gd.__ticks = tokenTicks(fig.layout, data.tick_em);
      await Plotly.react(gd, {data: fig.data, layout: fitTicks(gd, fig.layout),
                              config: data.config});
      if (fig.layout && fig.layout.meta && fig.layout.meta.hover) tokenHover(gd);
      const old = gd.__sk;
      gd.__sk = {bind, config: data.config,
                 shown: bind ? `${bind.lattice}:server:${bind.eps}:${bind.steps}` : null,
                 canvas: old && old.canvas, painted: old && old.painted,
                 frame: bind ? `${bind.eps},${bind.steps}` : "", source: "server"};
      hidePreview(gd);
      gd.dataset.source = "server";
      if (bind) {
        gd.dataset.frame = `${bind.eps},${bind.steps}`;
        SK.charts.add(gd);
        SK.stats.served += 1;
        if (SK.scrub) SK.scrub.chartReady(gd);
      } else {
        SK.charts.delete(gd);
      }
    } catch (err) {
      gd.textContent = fill(data.failed, {error: err.message});  // live.py, FAILED
    }
  };
  // The server's exact figure of the frame the browser already shows from the lattice
  // changes nothing visible: draw it when the page is idle, not in the middle of a drag.
  const sameFrame = bind && gd.__sk && gd.dataset.source === "browser" &&
    gd.__sk.bind && gd.__sk.bind.lattice === bind.lattice &&
    gd.dataset.frame === `${bind.eps},${bind.steps}`;
  if (sameFrame) gd.__idle = whenIdle(() => { gd.__idle = null; draw(); });
  else draw();
  return () => {
    SK.charts.delete(gd);
    if (gd.__observer) gd.__observer.disconnect();
    if (window.Plotly && gd._fullLayout) window.Plotly.purge(gd);
  };
}
