// The browser's words and numbers on a Spanish page (?lang=es) against Python's, on the
// "spanish" fixtures tests/test_js.py writes: the number format the payload names and the
// graph's hovers.
import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {test} from "node:test";

import {fmt, language, numberFormat} from "../../sinkscope_app/js/format.js";
import {nodeHover} from "../../sinkscope_app/js/patch.js";

if (!process.env.SINKSCOPE_JS_FIXTURES) {
  throw new Error("no fixtures: run these through pytest tests/test_js.py");
}
const FIX = JSON.parse(readFileSync(process.env.SINKSCOPE_JS_FIXTURES, "utf8")).spanish;
const num = (x) => (x === "inf" ? Infinity : x === "-inf" ? -Infinity : x === "nan" ? NaN : x);
const ES = language(FIX.words, FIX.spec, FIX.steps.stops, FIX.steps.texts);

test("numbers as engine.relation.summary.numbers('es'): fmt's digits, decimal commas", () => {
  const es = numberFormat(FIX.spec);
  for (const {x, out} of FIX.num) assert.equal(es(num(x)), out, `numbers("es")(${x})`);
  assert.equal(numberFormat(undefined), fmt);  // no spec: English, fmt exactly
});

test("graph hovers in Spanish", () => {
  for (const c of FIX.hovers) {
    const plan = Float64Array.from(c.plan);
    const sums = Array.from({length: c.n}, (_, i) => {
      let s = 0;
      for (let j = 0; j < c.m; j++) s += plan[i * c.m + j];
      return s;
    });
    c.out.forEach((want, k) => assert.equal(
      nodeHover(k, "a", c.la, c.lb, c.w, plan, sums, c.n, c.m, ES), want));
  }
});
