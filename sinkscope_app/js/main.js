// sinkscope's client side: charts updated in place, and the live ε / half-step sliders.
//
// One module (live.py bundles js/*.js) for four st.components.v2 components (live.py,
// scrub.py), told apart by their data:
//   chart    {spec, src, config, height, tick_em, bind?}  one plotly div per key,
//            Plotly.react; "bind" names the lattice whose frames may be swapped in.
//   lattice  raw bytes (scrub.py's payloads): every (ε, half-step) frame, decoded once;
//   texts    the same for the texts of its frames in the page's language.
//   scrub    {role: "scrub", ...}: both sliders and the metric strip. On every input
//            event it redraws the bound charts from the lattice (no server round trip);
//            on release it sends the value to the server (URL, exports, other views).
// The figures' structure comes from viz: traces and layouts carry "meta" naming their
// parts (and the axes to rescale), and the JS only swaps arrays, ranges and titles in
// them. What Python can compute once comes as data (words, stops and their texts, label
// widths); what must follow a frame is tested against the Python functions it follows
// (tests/js).
import {fmt} from "./format.js";
import {mountChart} from "./chart.js";
import {mountLattice} from "./lattice.js";
import {mountScrub} from "./scrub.js";
import {SK, unwrap} from "./state.js";

SK.fmt = fmt;

export default function (arg) {
  const component = unwrap(arg);
  const {data} = component;
  if (data instanceof Uint8Array || data instanceof ArrayBuffer) return mountLattice(component);
  if (data && data.role === "scrub") return mountScrub(component);
  return mountChart(component);
}
