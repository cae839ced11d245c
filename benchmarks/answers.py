"""The largest answer of each served route, bounded and measured: ``python -m benchmarks.answers``.

Every route bounds its answer's size from the request's shape before computing
(:class:`engine.serving.limits.Answer`) and refuses one that could exceed
``SINKSCOPE_SERVE_MAX_ANSWER`` (32 MiB). For the largest requests the defaults allow (and a
few just over), this prices each request as the served engine does, computes its document
in this process (the replica's own answer functions, no Ray) and writes it as JSON and NPZ:
the bound, the size written, and 413 where the price refuses it. A written size above its
bound is a bug (the run stops on it). Figures in docs/serving.md.
"""

from __future__ import annotations

import time

import numpy as np

from engine.serving import answers, limits, schemas, stream, wire

WORDS = ("river bank money water loan quiet house morning light people walk talk city "
         "market bridge boat stone tree wind rain field road school music story garden "
         "night").split()
MEDIA = (wire.NPZ, wire.JSON)
NAMES = {wire.NPZ: "npz", wire.JSON: "json"}


def text(tokens: int, seed: int = 0) -> str:
    """Words the packaged model reads as ``tokens`` tokens with [CLS] and [SEP]."""
    rng = np.random.default_rng(seed)
    return " ".join(rng.choice(WORDS, max(tokens - 2, 1)))


def cases() -> list[tuple[str, object]]:
    """(what, request) of the largest requests the defaults allow, and some just over."""
    grid = {"layer": "all", "head": "all", "half_steps": 1}
    eps12 = [float(e) for e in np.geomspace(10, 0.03, 12)]
    lat_eps = [float(e) for e in np.geomspace(0.05, 5, 41)]
    steps = [int(t) for t in np.unique(np.geomspace(1, 1000, 40).round())][:28]
    return [
        ("relate, heads grid, 2 words, 100,000 half-steps", schemas.RelateRequest(
            text_a="river bank", text_b="the bank", layer="all", head="all",
            half_steps=100_000, tol=1e-300)),
        ("relate, heads grid 56 × 56 tokens", schemas.RelateRequest(
            text_a=text(56, 1), text_b=text(56, 2), **grid)),
        ("relate, heads grid 100 × 100 tokens", schemas.RelateRequest(
            text_a=text(100, 3), text_b=text(100, 4), **grid)),
        ("relate, heads grid 160 × 160 tokens", schemas.RelateRequest(
            text_a=text(160, 5), text_b=text(160, 6), **grid)),
        ("relate, 256 × 256 tokens, 1,000 half-steps", schemas.RelateRequest(
            text_a=text(256, 7), text_b=text(256, 8), layer=5, head=3, half_steps=1000)),
        ("eps_path, 256 × 256 tokens, 12 ε", schemas.EpsPathRequest(
            text_a=text(256, 7), text_b=text(256, 8), layer=5, head=3, eps_values=eps12,
            half_steps=200)),
        ("lattice, 64 × 64 tokens, 41 ε × 28 steps", schemas.LatticeRequest(
            text_a=text(64, 9), text_b=text(64, 10), layer=5, head=3, eps_values=lat_eps,
            steps=steps, max_bytes=8 * 2**20 - 2**17)),
        ("rank, 50 candidates of 100 tokens", schemas.RankRequest(
            text_a=text(100, 11), candidates=[text(100, 12 + k) for k in range(50)])),
        ("align, 256 pairs of 30 words, values", schemas.AlignRequest(
            pairs=[{"text_a": text(32, 100 + k), "text_b": text(32, 400 + k)}
                   for k in range(256)], values=True)),
        ("align/live, 64 × 64 words, unbalanced (41 τ)", schemas.AlignLiveRequest(
            text_a=text(66, 13), text_b=text(66, 14), method="unbalanced")),
        ("project, 256 × 256 tokens, hidden, 3-d", schemas.ProjectRequest(
            text_a=text(256, 7), text_b=text(256, 8), layer=5, head=3, space="hidden",
            dim=3)),
        ("toy, the coupling at ε = 0.02", schemas.ToyRequest(plan="coupling", eps=0.02)),
    ]


def price(enc, req) -> limits.Price:
    """The request's price as a replica computes it (token counts from the tokenizer)."""
    def count(texts):
        return [len(ids) for ids in enc.tokenizer(texts, truncation=True,
                                                  max_length=enc.max_tokens,
                                                  split_special_tokens=True)["input_ids"]]

    if isinstance(req, schemas.AlignRequest):
        return limits.align_price([(p.text_a, p.text_b) for p in req.pairs], req.values)
    if isinstance(req, schemas.AlignLiveRequest):
        from engine.alignment.live import MASS_STOPS, TAU_STOPS, grid_of

        grid = grid_of(req.method, TAU_STOPS, MASS_STOPS)[1]
        return limits.live_price(req.text_a, req.text_b, len(grid), req.max_bytes)
    if isinstance(req, schemas.ToyRequest):
        return limits.toy_price(req.t)
    if isinstance(req, schemas.RankRequest):
        lines = answers.candidate_lines(req)
        c = count([req.text_a, *lines])
        return limits.rank_price(c[0], c[1:], len(req.text_a) + sum(map(len, lines)))
    n, m = count([req.text_a, req.text_b])
    if isinstance(req, schemas.EpsPathRequest):
        return limits.eps_path_price(req, n, m)
    if isinstance(req, schemas.LatticeRequest):
        return limits.lattice_price(req, n, m)
    if isinstance(req, schemas.ProjectRequest):
        return limits.project_price(n, m, enc.n_heads * enc.d_head, req.dim)
    return limits.relate_price(req, n, m, enc.n_layers, enc.n_heads, enc.d_head)


def document(enc, req) -> dict:
    """The route's answer, computed in this process."""
    from engine.relation.relate import encode_texts
    from engine.relation.sentences import measures

    if isinstance(req, schemas.AlignRequest):
        return answers.align_answer(enc, req)
    if isinstance(req, schemas.AlignLiveRequest):
        return answers.align_live_answer(enc, req)
    if isinstance(req, schemas.ToyRequest):
        return answers.toy_answer(req)
    if isinstance(req, schemas.RankRequest):
        return answers.rank_answer(enc, req, measures(enc, req.text_a, req.candidates))
    encodings = encode_texts(enc, req.text_a, req.text_b, req.mode)
    if isinstance(req, schemas.EpsPathRequest):
        return answers.eps_path_answer(encodings, req, None)
    if isinstance(req, schemas.LatticeRequest):
        return answers.lattice_answer(encodings, req, None)
    if isinstance(req, schemas.ProjectRequest):
        return answers.project_answer(encodings, req, None)
    return answers.relation_answer(encodings, req, None)


def main() -> None:
    import torch

    from engine.io.bench import machine
    from engine.relation.relate import default_encoder

    torch.set_num_threads(1)
    enc = default_encoder()
    most = limits.max_answer()
    print(f"{machine()}\nlargest answer allowed: {most / 2**20:.0f} MiB "
          f"({limits.ANSWER_ENV})\n")
    print(f"{'request':<48} {'media':<5} {'bound MiB':>9} {'written MiB':>11} {'s':>6}")
    for what, req in cases():
        p = price(enc, req)
        allowed = [m for m in MEDIA if p.answer.bytes(m) <= most]
        doc, secs = None, 0.0
        if allowed:
            t0 = time.perf_counter()
            doc = document(enc, req)
            secs = time.perf_counter() - t0
        for media in MEDIA:
            bound = p.answer.bytes(media)
            if media not in allowed:
                print(f"{what:<48} {NAMES[media]:<5} {bound / 2**20:9.1f} "
                      f"{'413':>11}")
                continue
            size = len(stream.dumps(doc, media))
            assert size <= bound, (what, media, size, bound)
            print(f"{what:<48} {NAMES[media]:<5} {bound / 2**20:9.1f} "
                  f"{size / 2**20:11.2f} {secs:6.1f}", flush=True)


if __name__ == "__main__":
    main()
