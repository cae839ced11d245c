// The Align page's live sliders (sinkscope_app/js/align.js) against Python.
// With SINKSCOPE_ALIGN_FIXTURES (written by tests/test_align_js.py from align_live's
// payloads, engine.alignment's extract and score and viz.align) every link, line and figure
// trace must be Python's; the hand-made cases below hold in any run (tests/test_js.py runs
// this folder).
import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {deflateSync} from "node:zlib";
import {test} from "node:test";

import {cellsAt, decodePayload, graphData, linksText, matrixData, parsePayload, rowsOf,
        scoresText} from "../../sinkscope_app/js/align.js";

const KIND_OF = {linked: ["false", "hit", "hit_possible"], unlinked: [null, "miss", "miss_possible"]};
const NAMES = ["precision", "recall", "f1", "aer", "null_f1", "total_f1"];
const bytesOf = (h, V, scores) => {  // align_live.LivePayload.encode's layout
  const head = Buffer.from(JSON.stringify(h)), size = Buffer.alloc(4);
  size.writeUInt32LE(head.length);
  const body = [Buffer.from(Float32Array.from(V).buffer)];
  if (scores) body.push(Buffer.from(Uint16Array.from(scores).buffer));
  return new Uint8Array(Buffer.concat([Buffer.from("SKA1"), size, head,
                                       deflateSync(Buffer.concat(body))]));
};
const nulls = (x) => JSON.parse(JSON.stringify(x, (k, v) => (Number.isNaN(v) ? null : v)));

test("links, kinds and words without a link on a hand-made 2 × 3 pair", async () => {
  const h = {id: "x", method: "unbalanced", n: 2, m: 3, grid: [], thetas: [0.3, 0.9],
             labels_a: ["a", "b"], labels_b: ["c", "d", "e"], sure: [[0, 0]],
             possible: [[0, 0], [1, 1], [0, 2]], kind_of: KIND_OF, scores: null};
  const P = await decodePayload(bytesOf(h, [0.9, 0.2, NaN, 0.5, 0.31, NaN]));
  const c = cellsAt(P, 0, 0);
  assert.deepEqual(c.links, [[0, 0], [1, 0], [1, 1]]);
  assert.deepEqual(c.kinds, {hit: [[0, 0]], miss_possible: [[0, 2]], false: [[1, 0]],
                             hit_possible: [[1, 1]]});
  assert.deepEqual([c.nullA, c.nullB], [[], [2]]);  // word 2 of B takes no part (NaN)
  const none = cellsAt(P, 0, 1);  // a link where V > θ, strictly
  assert.deepEqual(none.links, []);
  assert.deepEqual(none.kinds, {miss: [[0, 0]], miss_possible: [[0, 2], [1, 1]]});
  assert.deepEqual([none.nullA, none.nullB], [[0, 1], [0, 1, 2]]);
  assert.deepEqual(nulls(rowsOf(P.V, 0, 2, 3)), [[0.8999999761581421, 0.20000000298023224, null],
                                                 [0.5, 0.3100000023841858, null]]);
});

test("the scores line: the shipped digits with the page's decimal mark", async () => {
  const h = {id: "y", method: "partial", n: 1, m: 1, grid: [0.5, 1], thetas: [0.1, 0.2],
             labels_a: ["a"], labels_b: ["b"], sure: [[0, 0]], possible: [[0, 0]],
             kind_of: KIND_OF, scores: NAMES};
  const scores = Array.from({length: 2 * 2 * 6}, (_, q) => [1000, 857, 5, 0, 62, 999][q % 6] + 0);
  const P = await decodePayload(bytesOf(h, [0.5, 1], scores));
  const words = {pair_scores_live: "{method}: P {precision} R {recall} F {f1} AER {aer} " +
                                   "N {null_f1} T {total_f1}", decimal: ","};
  assert.equal(scoresText(words, P, 1, 1), "partial: P 1,000 R 0,857 F 0,005 AER 0,000 " +
                                           "N 0,062 T 0,999");
  assert.equal(scoresText({...words, decimal: "."}, P, 0, 0).slice(0, 18), "partial: P 1.000 R");
  assert.equal(scoresText(words, {...P, scores: null}, 0, 0), "");  // no gold, no scores
  assert.equal(linksText({links_count: "{count} links", links_line: "Links: {links}"}, [[0, 1], [2, 0]]),
               "2 links · Links: 0-1 2-0");
  assert.equal(linksText({links_count: "{count}", links_line: "{links}"}, []), "0 · ∅");
  assert.equal(linksText({links_count: "{count} enlaces", link_count: "1 enlace",  // issue 42
                          links_line: "{links}"}, [[0, 1]]), "1 enlace · 0-1");
});

test("a payload of the wrong size or kind is refused", async () => {
  const h = {id: "z", n: 1, m: 2, grid: [1, 2], thetas: [0.5], scores: null, kind_of: KIND_OF};
  await assert.rejects(decodePayload(bytesOf(h, [0.25, 1, 0])), /wrong size/);
  await assert.rejects(decodePayload(new Uint8Array(Buffer.from("XXXX0000"))), /not a sinkscope/);
  const raw = new ArrayBuffer(16);
  assert.equal(parsePayload(h, raw).V.length, 4);
});

const FILE = process.env.SINKSCOPE_ALIGN_FIXTURES;
if (FILE) {
  const FIX = JSON.parse(readFileSync(FILE, "utf8"));
  const payloads = Promise.all(FIX.cases.map((c) => decodePayload(Buffer.from(c.bytes, "base64"))));

  test("fixtures from Python: payloads decode as align_live.decode", async () => {
    const all = await payloads;
    FIX.cases.forEach((c, q) => {
      const P = all[q];
      assert.equal(P.id, c.header.id);
      assert.deepEqual(nulls(Array.from(P.V)), c.V, c.name);
      assert.deepEqual(P.scores === null ? null : Array.from(P.scores), c.scores, c.name);
    });
  });

  test("fixtures from Python: links, scores and lines at every setting tried", async () => {
    const all = await payloads;
    FIX.cases.forEach((c, q) => {
      const P = all[q];
      for (const s of c.steps) {
        const where = `${c.name} at grid ${s.g}, θ stop ${s.k}`;
        const cells = cellsAt(P, s.g, s.k);
        assert.deepEqual(cells.links, s.links, where);
        assert.equal(scoresText(c.words, P, s.g, s.k), s.scores_line, where);
        assert.equal(linksText(c.words, cells.links), s.links_line, where);
      }
    });
  });

  test("fixtures from Python: the figures' traces as viz.align.matrix and graph", async () => {
    const all = await payloads;
    let drawn = 0, spanish = 0;
    FIX.cases.forEach((c, q) => {
      const P = all[q];
      for (const s of c.steps.filter((x) => x.matrix)) {
        const where = `${c.name} at grid ${s.g}, θ stop ${s.k}`;
        const cells = cellsAt(P, s.g, s.k), z = rowsOf(P.V, s.g * P.n * P.m, P.n, P.m);
        assert.deepEqual(nulls(matrixData(c.before, P, c.style, z, cells)), s.matrix, where);
        assert.deepEqual(graphData(P, c.style, cells), s.graph, where);
        drawn += 1;
        if (c.lang === "es") spanish += 1;
      }
    });
    assert.ok(drawn >= 30, `only ${drawn} figures compared`);
    assert.ok(spanish >= 4, `only ${spanish} Spanish figures compared`);
  });
}

const STYLE = {kinds: ["link"], size: 8, names: {link: "predicted link"},
               symbols: {link: "square"}, colors: {link: "#000"},
               null_names: {a: "A", b: "B"}, null_symbols: {a: "x", b: "y"},
               text_colors: {a: "#111", b: "#222"}, unaligned: "unaligned"};

test("a θ move alone keeps the plan's trace (the same object, not redrawn)", () => {
  const heat = {type: "heatmap", z: [[0.5, 1]], meta: {kind: "plan"}};
  const h = {n: 1, m: 2, labels_a: ["a"], labels_b: ["b", "c"], sure: null, possible: null};
  const cells = {links: [[0, 1]], kinds: {link: [[0, 1]]}, nullA: [], nullB: [0]};
  const kept = matrixData([heat], h, STYLE, null, cells);
  assert.equal(kept[0], heat);
  assert.deepEqual(kept[1].x, [1]);
  assert.deepEqual([kept[2].meta.kind, kept[2].x, kept[2].y], ["null_b", [0], [-1]]);  // b
  assert.deepEqual(kept[2].text, ["b: unaligned"]);
  const redrawn = matrixData([heat], h, STYLE, [[0.25, NaN]],
                             {links: [[0, 0]], kinds: {link: [[0, 0]]}, nullA: [], nullB: [1]});
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
  // "el"–"cat": not in gold; "gato"–"cat" missed
  const cells = {links: [[0, 0]], kinds: {false: [[0, 0]], miss: [[1, 0]]}, nullA: [1], nullB: []};
  const traces = [...graphData(h, style, cells), ...matrixData([], h, style, null, cells)];
  const names = traces.map((t) => t.name);
  for (const want of ["enlace fuera de la referencia", "enlace seguro no encontrado",
                      "palabras de A", "palabras de B", "palabra de A sin alinear"]) {
    assert.ok(names.includes(want), `${want} not in ${names}`);
  }
  const words = JSON.stringify(traces.map((t) => [t.name, t.text, t.hovertext]));
  assert.ok(words.includes("gato: sin alinear"), words);
  assert.doesNotMatch(words, /unaligned|words of|link|gold|missed/);
});
