// The notebook widget (sinkscope.show, anywidget): the app's own components mounted in a
// notebook's output, with no server beyond the kernel.
//
// The widget's model holds what the page's components get (sinkscope/notebook.py):
//   view     {kind: "relation"|"alignment", controls, charts: [chart data]}: the sliders'
//            data (scrub.py's slider_data, align_live.py's controls) and each chart's
//            (browser.py's chart_data), bound to the payload;
//   payload  the lattice's bytes (SKL1) or the pair's (SKA1); texts: the frames' texts.
// A released slider sets the model's "frame" (or "choice"), as the page's state.
// plotly.js is the kernel's copy (the installed plotly package), sent once per page on
// request and loaded from a blob: URL, so nothing is fetched from the network.
import {mountAlign, mountPayload} from "./align.js";
import {mountChart} from "./chart.js";
import {fmt} from "./format.js";
import {mountLattice} from "./lattice.js";
import {mountScrub} from "./scrub.js";
import {SK} from "./state.js";

SK.fmt = fmt;

export const bytesOf = (v) => (v instanceof DataView
  ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength)
  : v instanceof ArrayBuffer ? new Uint8Array(v) : v);

// plotly.js as a classic script from a blob: URL. A page with an AMD loader (the classic
// notebook's require.js) would make plotly.js register there instead of window.Plotly:
// the loader is hidden while the script runs.
export function loadScript(url) {
  return new Promise((resolve, reject) => {
    const define = window.define;
    window.define = undefined;
    const s = document.createElement("script");
    s.src = url;
    s.onload = () => { window.define = define; resolve(window.Plotly); };
    s.onerror = () => { window.define = define; reject(new Error("plotly.js did not load")); };
    document.head.appendChild(s);
  });
}

export function ensurePlotly(model) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__sinkscopeWidgetPlotly) {
    window.__sinkscopeWidgetPlotly = new Promise((resolve, reject) => {
      const onMsg = (msg, buffers) => {
        if (!msg || msg.kind !== "plotly") return;
        model.off("msg:custom", onMsg);
        const blob = new Blob([buffers[0]], {type: "text/javascript"});
        loadScript(URL.createObjectURL(blob)).then(resolve, reject);
      };
      model.on("msg:custom", onMsg);
      model.send({ask: "plotly"});
    }).catch((err) => { window.__sinkscopeWidgetPlotly = null; throw err; });
  }
  return window.__sinkscopeWidgetPlotly;
}

async function render({model, el}) {
  const view = model.get("view");
  const root = document.createElement("div");
  root.className = "sinkscope-widget";
  el.appendChild(root);
  try {
    await ensurePlotly(model);
  } catch (err) {
    root.textContent = view.failed.replace("{error}", err.message);
    return undefined;
  }
  const controls = document.createElement("div");
  root.appendChild(controls);
  const boxes = view.charts.map(() => root.appendChild(document.createElement("div")));
  const set = (name, value) => {  // what the page's component state would get
    model.set(name, value);
    model.save_changes();
  };
  const stops = [];
  if (view.kind === "relation") {
    mountLattice({data: bytesOf(model.get("payload"))});
    mountLattice({data: bytesOf(model.get("texts"))});
    stops.push(mountScrub({parentElement: controls, data: view.controls, setStateValue: set}));
  } else {
    mountPayload({data: bytesOf(model.get("payload"))});
    stops.push(mountAlign({parentElement: controls, data: view.controls, setStateValue: set}));
  }
  view.charts.forEach((data, k) => stops.push(mountChart({parentElement: boxes[k], data})));
  return () => stops.forEach((stop) => { if (stop) stop(); });
}

export default {render};
