// The sliders' bookkeeping of values sent to the server (sinkscope_app/js/slider.js).
import assert from "node:assert/strict";
import {test} from "node:test";

import {Sent} from "../../sinkscope_app/js/slider.js";

test("an answer for a value a later release overtook is stale; the newest catches up", () => {
  const sent = new Sent((p, q) => p.t === q.t);
  assert.equal(sent.stale({t: 5}), false);  // nothing sent: the server's value is news
  sent.push({t: 1});
  sent.push({t: 2});
  sent.push({t: 3});
  assert.equal(sent.stale({t: 1}), true);   // the run for 1 finished after 3 left
  assert.equal(sent.stale({t: 2}), true);
  assert.equal(sent.stale({t: 9}), false);  // a value never sent (the server's own)
  assert.equal(sent.stale({t: 3}), false);  // the newest: caught up, and forgotten
  assert.equal(sent.stale({t: 1}), false);
  for (let t = 0; t < 20; t++) sent.push({t});
  assert.equal(sent.values.length, 8);      // the last few only
});
