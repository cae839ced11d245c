// The Align page's live sliders (sinkscope_app/js/align.js) against Python.
// With SINKSCOPE_ALIGN_FIXTURES (written by tests/test_align_js.py from engine.alignment's
// extract and score and from viz.align) every link, score, line and figure trace must be
// Python's; the hand-made cases below hold in any run (tests/test_js.py runs this folder).
import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {deflateSync} from "node:zlib";
import {test} from "node:test";

import {classify, counts, decodePayload, fixed3, graphData, linksAt, matrixData, metrics,
        planOf, scoresText, linksText, unaligned} from "../../sinkscope_app/js/align.js";

test("links, unaligned words and counts on a hand-made 2 × 3 pair", () => {
  const V = Float32Array.from([0.9, 0.2, -1, 0.5, 0.31, -1]);
  assert.deepEqual(linksAt(V, 0, 2, 3, 0.3), [[0, 0], [1, 0], [1, 1]]);
  assert.deepEqual(linksAt(V, 0, 2, 3, 0.9), []);  // a link where V > θ, strictly
  assert.deepEqual(unaligned([[0, 0]], 2, 3), [[1], [1, 2]]);
  // sure {0-0}, possible {1-1}: |A| 3, |A∩S| 1, |A∩P| 2, |S| 1; no null predicted
  // (word 2 of B is: -1 cells); gold nulls: A1, B1, B2
  const c = counts([[0, 0], [1, 0], [1, 1]], 2, 3, [[0, 0]], [[1, 1]]);
  assert.deepEqual(c, [3, 1, 2, 1, 1, 3, 1]);
  const s = metrics(c);
  assert.equal(s.precision, 2 / 3);
  assert.equal(s.recall, 1);
  assert.equal(s.aer, 1 - 3 / 4);
  assert.equal(s.null_precision, 1);
  assert.equal(s.null_recall, 1 / 3);
  const k = classify([[1, 0], [0, 0], [1, 1]], [[0, 0]], [[1, 1], [0, 2]]);
  assert.deepEqual(k.hit, [[0, 0]]);
  assert.deepEqual(k.hit_possible, [[1, 1]]);
  assert.deepEqual(k.false, [[1, 0]]);
  assert.deepEqual(k.miss_possible, [[0, 2]]);
  assert.deepEqual(classify([[1, 0], [0, 0]], null, null).link, [[0, 0], [1, 0]]);
});

test("empty sets score 1 when both are empty, 0 otherwise (score._ratio)", () => {
  const s = metrics([0, 0, 0, 0, 0, 0, 0]);
  assert.equal(s.precision, 1);
  assert.equal(s.f1, 1);
  assert.equal(s.aer, 0);
  assert.equal(metrics([2, 0, 0, 0, 0, 0, 0]).recall, 0);
});

test("scores written as Python's f\"{x:.3f}\" (ties to even on the exact value)", () => {
  assert.equal(fixed3(0.0625), "0.062");
  assert.equal(fixed3(0.5625), "0.562");
  assert.equal(fixed3(0.0005), "0.001");  // 0.0005 is a little above a half in binary
  assert.equal(fixed3(2 / 3), "0.667");
  assert.equal(fixed3(1), "1.000");
});

test("a payload decodes from its bytes (SKA1, header, zlib float32)", async () => {
  const h = {id: "x", n: 1, m: 2, grid: [1, 2], thetas: [0.5], method: "unbalanced"};
  const head = Buffer.from(JSON.stringify(h));
  const V = Float32Array.from([0.25, 1, 0, 0.75]);
  const size = Buffer.alloc(4);
  size.writeUInt32LE(head.length);
  const bytes = Buffer.concat([Buffer.from("SKA1"), size, head,
                               deflateSync(Buffer.from(V.buffer))]);
  const P = await decodePayload(new Uint8Array(bytes));
  assert.equal(P.G, 2);
  assert.deepEqual(Array.from(P.V), [0.25, 1, 0, 0.75]);
  assert.deepEqual(planOf(P.V, 2, 1, 2), [[0, 0.75]]);
  await assert.rejects(decodePayload(new Uint8Array(Buffer.from("XXXX0000"))), /not a sinkscope/);
});

const FILE = process.env.SINKSCOPE_ALIGN_FIXTURES;
if (FILE) {
  const FIX = JSON.parse(readFileSync(FILE, "utf8"));

  test("fixtures from Python: f\"{x:.3f}\" and score.metrics_from_counts", () => {
    for (const {x, out} of FIX.fixed3) assert.equal(fixed3(x), out, `fixed3(${x})`);
    for (const {c, out} of FIX.metrics) assert.deepEqual(metrics(c), out, `metrics(${c})`);
  });

  test("fixtures from Python: links, scores and lines at every setting tried", () => {
    for (const c of FIX.cases) {
      const h = c.header, V = Float32Array.from(c.V), nm = h.n * h.m;
      for (const s of c.steps) {
        const where = `${c.name} at grid ${s.g}, θ stop ${s.k}`;
        const links = linksAt(V, s.g * nm, h.n, h.m, h.thetas[s.k]);
        assert.deepEqual(links, s.links, where);
        const got = h.sure === null ? null : metrics(counts(links, h.n, h.m, h.sure, h.possible));
        assert.deepEqual(got, s.scores, where);
        assert.equal(scoresText(c.words || FIX.words, h.method, got), s.scores_line, where);
        assert.equal(linksText(c.words || FIX.words, links), s.links_line, where);
      }
    }
  });

  test("fixtures from Python: the figures' traces as viz.align.matrix and graph", () => {
    let drawn = 0, spanish = 0;
    for (const c of FIX.cases) {
      const h = c.header, V = Float32Array.from(c.V), nm = h.n * h.m;
      for (const s of c.steps.filter((x) => x.matrix)) {
        const where = `${c.name} at grid ${s.g}, θ stop ${s.k}`;
        const z = planOf(V, s.g * nm, h.n, h.m);
        assert.deepEqual(matrixData(c.before, h, c.style, z, s.links), s.matrix, where);
        assert.deepEqual(graphData(h, c.style, s.links), s.graph, where);
        drawn += 1;
        if (c.lang === "es") spanish += 1;
      }
    }
    assert.ok(drawn >= 30, `only ${drawn} figures compared`);
    assert.ok(spanish >= 4, `only ${spanish} Spanish figures compared`);
  });
}

test("a θ move alone keeps the plan's trace (the same object, not redrawn)", () => {
  const heat = {type: "heatmap", z: [[0.5, 1]], meta: {kind: "plan"}};
  const h = {n: 1, m: 2, labels_a: ["a"], labels_b: ["b", "c"], sure: null, possible: null};
  const style = {kinds: ["link"], size: 8, names: {link: "predicted link"},
                 symbols: {link: "square"}, colors: {link: "#000"},
                 null_names: {a: "A", b: "B"}, null_symbols: {a: "x", b: "y"},
                 text_colors: {a: "#111", b: "#222"}, unaligned: "unaligned"};
  const kept = matrixData([heat], h, style, null, [[0, 1]]);
  assert.equal(kept[0], heat);
  assert.deepEqual(kept[1].x, [1]);
  assert.deepEqual([kept[2].meta.kind, kept[2].x, kept[2].y], ["null_b", [0], [-1]]);  // b
  assert.deepEqual(kept[2].text, ["b: unaligned"]);
  const redrawn = matrixData([heat], h, style, [[0.25, null]], [[0, 0]]);
  assert.notEqual(redrawn[0], heat);
  assert.deepEqual(redrawn[0].text, [["a → b: 0.25", "a → c: n/a"]]);
});

test("the redraw writes the words the page sent, in Spanish, and none of its own", () => {
  const h = {n: 2, m: 1, labels_a: ["el", "gato"], labels_b: ["cat"], sure: [[1, 0]],
             possible: [[1, 0]]};
  const style = {kinds: ["miss", "link", "hit", "false"], size: 8, ya: [0, 1], yb: [0.5],
                 names: {miss: "enlace seguro no encontrado", link: "enlace predicho",
                         hit: "enlace en la referencia segura",
                         false: "enlace fuera de la referencia"},
                 symbols: {miss: "circle-open", link: "square", hit: "square", false: "x"},
                 colors: {miss: "#1", link: "#2", hit: "#3", false: "#4"},
                 dash: {miss: "dot", link: "solid", hit: "solid", false: "solid"},
                 null_names: {a: "palabra de A sin alinear", b: "palabra de B sin alinear"},
                 node_names: {a: "palabras de A", b: "palabras de B"},
                 null_symbols: {a: "x", b: "y"}, text_colors: {a: "#111", b: "#222"},
                 unaligned: "sin alinear"};
  const links = [[0, 0]];  // "el"–"cat": not in gold; "gato"–"cat" missed
  const traces = [...graphData(h, style, links), ...matrixData([], h, style, null, links)];
  const names = traces.map((t) => t.name);
  for (const want of ["enlace fuera de la referencia", "enlace seguro no encontrado",
                      "palabras de A", "palabras de B", "palabra de A sin alinear"]) {
    assert.ok(names.includes(want), `${want} not in ${names}`);
  }
  const words = JSON.stringify(traces.map((t) => [t.name, t.text, t.hovertext]));
  assert.ok(words.includes("gato: sin alinear"), words);
  assert.doesNotMatch(words, /unaligned|words of|link|gold|missed/);
});
