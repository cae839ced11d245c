// State shared by every instance of the components (one page may mount several).
export const SK = (globalThis.__sinkscope = globalThis.__sinkscope || {
  lattices: new Map(),  // id -> {promise, lattice|null, error|null}
  charts: new Set(),    // plot divs; gd.__sk = {bind, config}
  scrub: null,          // the sliders' controller
  stats: {redraws: 0, last: 0, frame: null, served: 0, commits: 0},
  keyCommitMs: 450,     // keys: the value goes to the server once they pause this long
});
