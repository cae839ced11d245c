// State shared by every instance of the components (one page may mount several).
export const SK = (globalThis.__sinkscope = globalThis.__sinkscope || {
  lattices: new Map(),  // id -> {promise, value: Lattice|null, error|null}
  texts: new Map(),     // id -> {promise, value: FrameTexts|null, error|null}
  charts: new Set(),    // plot divs; gd.__sk = {bind, config}
  scrub: null,          // the sliders' controller
  stats: {redraws: 0, last: 0, frame: null, served: 0, commits: 0},
  keyCommitMs: 450,     // keys: the value goes to the server once they pause this long
});

// A component's argument with its payload as Python built it: sinkscope sends a dict as a
// one-element list (live.py's `sent`, which spares Streamlit's dataframe scan); bytes and
// anything else come as they are. Every other field of the argument is kept.
export function unwrap(component) {
  const d = component.data;
  return Array.isArray(d) && d.length === 1 ? {...component, data: d[0]} : component;
}

// A binary payload (engine.relation.frames's, align_live.py's): a 4-byte magic, the JSON
// header's size (uint32 at byte 4), the header from byte 8, then one deflate stream:
// {header, body} with the body inflated.
export async function readPayload(bytes, magic) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (String.fromCharCode(...u8.subarray(0, 4)) !== magic) {
    throw new Error(`not a sinkscope payload (no ${magic} header)`);
  }
  const size = new DataView(u8.buffer, u8.byteOffset, u8.byteLength).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + size)));
  const stream = new Blob([u8.subarray(8 + size)]).stream()
    .pipeThrough(new DecompressionStream("deflate"));
  return {header, body: await new Response(stream).arrayBuffer()};
}

// A binary payload decoded once per id (its header's) into `cache` as {promise, value,
// error}, the newest `keep` kept; `ready(id)` once it is decoded. Bytes without a readable
// header are ignored.
export function keepDecoded(cache, data, decode, ready, keep) {
  const u8 = data instanceof Uint8Array ? data : new Uint8Array(data);
  let id;
  try {
    const size = new DataView(u8.buffer, u8.byteOffset, u8.byteLength).getUint32(4, true);
    id = JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + size))).id;
  } catch (err) {
    return;
  }
  if (cache.has(id)) return;
  const entry = {value: null, error: null};
  entry.promise = decode(u8).then((x) => {
    entry.value = x;
    ready(id);
    return x;
  }).catch((err) => { entry.error = err; });
  cache.set(id, entry);
  while (cache.size > keep) cache.delete(cache.keys().next().value);
}
