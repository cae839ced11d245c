"""The served engine under real and hostile load (part of ``python -m benchmarks.service``).

On one replica (a local Ray instance with 2 CPUs), in one run:

- light under heavy: a light relate (a slider move on encoded texts) alone, then while two
  heavy relates run (256 × 256 tokens at ε = 0.001, 25,000 half-steps); the target is
  at most max(1 s, 5×) its time alone;
- the largest answer each route allows (its limits: the heads grid at its cell limit,
  texts at the model's token limit, the lattice at its byte budget, …): seconds, size and
  status, as NPZ and as JSON;
- hostile requests (over each budget, a computation past its deadline, a client that
  leaves mid-computation, no Content-Type): their status, and the replica's CPU after a
  client left;
- the replica's idle RSS and its peak over all of the above, less what it keeps by design
  (its encodings and measures, bounded by ``SINKSCOPE_CACHE_MB``), against idle + 2 × the
  largest answer it sent;
- ``python -m engine align --engine URL`` on two replicas (one per core) against the
  embedded run: pairs per second;
- the proxy → replica transport: slider moves per second over Ray's actor calls (Serve's
  default, this service's) against gRPC (Serve's throughput switch, its cap lifted).
"""

from __future__ import annotations

import concurrent.futures as cf
import io
import json
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import urllib3

from tests.support.engine_server import reset_peak
from tests.support.server import ROOT, cpu_seconds, peak_rss_mb, rss_mb

WORDS = ("river bank money water loan quiet house morning light people walk talk city "
         "market bridge boat stone tree wind rain field road school music story garden "
         "night").split()
JSON, NPZ = "application/json", "application/x-npz"
HTTP = urllib3.PoolManager(maxsize=8, retries=False)


def text(tokens: int, seed: int = 0) -> str:
    """Words that the model reads as ``tokens`` tokens with [CLS] and [SEP] (one each)."""
    rng = np.random.default_rng(seed)
    return " ".join(rng.choice(WORDS, tokens - 2))


A, B = text(22, 1), text(24, 2)
T256, U256 = text(256, 3), text(256, 4)
HEAVY = {"text_a": T256, "text_b": U256, "layer": 5, "head": 3, "eps": 0.001,
         "half_steps": 25_000, "tol": 1e-300}


def post(url: str, path: str, body: dict, *, accept: str = NPZ, timeout: float = 300,
         content_type: str | None = JSON) -> tuple[int, int, float, bytes]:
    """(status, bytes, seconds, the first bytes) of one POST."""
    headers = {"Accept": accept, **({"Content-Type": content_type} if content_type else {})}
    t = time.perf_counter()
    r = HTTP.request("POST", url + path, body=json.dumps(body).encode(), headers=headers,
                     timeout=urllib3.Timeout(connect=5, read=timeout))
    return r.status, len(r.data), time.perf_counter() - t, r.data[:300]


def light_under_heavy(url: str, rounds: int = 5) -> tuple[float, float]:
    """(median seconds of a light relate alone, the slowest of ``rounds`` while two heavy
    relates run); the heavy ones are left by their clients after a few seconds."""
    light = lambda k: {"text_a": A, "text_b": B, "layer": 5, "head": 3,  # noqa: E731
                       "eps": float(0.3 + 0.01 * k)}
    post(url, "/v1/relate", light(99))
    alone = float(np.median([post(url, "/v1/relate", light(k))[2] for k in range(rounds)]))

    def heavy(_):
        try:
            post(url, "/v1/relate", HEAVY, timeout=6 + rounds)
        except urllib3.exceptions.HTTPError:
            pass  # the client leaves; the replica stops within a second

    with cf.ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(heavy, i) for i in range(2)]
        time.sleep(2.0)
        under = max(post(url, "/v1/relate", light(k))[2] for k in range(rounds))
        for f in futures:
            f.result()
    return alone, under


def largest(url: str) -> list[tuple]:
    """(route and size, media, status, MB, seconds) of the largest answer each route
    allows."""
    grid = 160  # tokens a side: the heads grid's cell limit, 160 × 160
    eps = [float(e) for e in np.geomspace(10, 0.5, 32)]  # 32 × 256² × 8 bytes: the batch limit
    lat_eps = [float(e) for e in np.geomspace(0.05, 5, 48)]
    steps = [int(t) for t in np.unique(np.geomspace(1, 1000, 40).round())][:31]
    cases = [
        ("relate, heads grid 160 × 160", "/v1/relate",
         {"text_a": text(grid, 5), "text_b": text(grid, 6), "layer": "all", "head": "all"}),
        ("relate, 256 × 256 tokens", "/v1/relate", {"text_a": T256, "text_b": U256,
                                                    "layer": 5, "head": 3}),
        ("eps_path, 256², 32 ε", "/v1/eps_path",
         {"text_a": T256, "text_b": U256, "layer": 5, "head": 3, "eps_values": eps,
          "half_steps": 1500, "tol": 1e-9}),
        ("lattice, 64², 48 ε × 32 steps", "/v1/lattice",
         {"text_a": text(64, 7), "text_b": text(64, 8), "layer": 5, "head": 3,
          "eps_values": lat_eps, "steps": steps, "max_bytes": 64 * 2**20}),
        ("rank, 50 candidates of 200", "/v1/rank",
         {"text_a": text(200, 9), "candidates": [text(200, 10 + k) for k in range(50)]}),
        ("align, 256 pairs of 30 words", "/v1/align",
         {"pairs": [{"text_a": text(32, 100 + k), "text_b": text(32, 400 + k)}
                    for k in range(256)], "values": True}),
    ]
    rows = []
    for name, path, body in cases:
        for media in (NPZ, JSON):
            status, size, secs, _ = post(url, path, body, accept=media)
            rows.append((name, media.split("/")[1], status, size / 1e6, secs))
            print(f"  {name:<32} {media.split('/')[1]:<6} HTTP {status}  "
                  f"{size / 1e6:8.2f} MB  {secs:6.2f} s", flush=True)
    return rows


def hostile(url: str, pid: int) -> list[tuple]:
    """The requests of the issue that took the service over, one by one: (what, status,
    seconds)."""
    over = [
        ("relate 256² × 100,000 half-steps", "/v1/relate", {**HEAVY, "half_steps": 100_000}),
        ("eps_path 64 ε × 256² × 100,000", "/v1/eps_path",
         {"text_a": T256, "text_b": U256, "layer": 5, "head": 3,
          "eps_values": [0.01] * 64, "half_steps": 100_000}),
        ("rank 50 candidates of 256 tokens", "/v1/rank",
         {"text_a": T256, "candidates": [text(256, 10 + k) for k in range(50)]}),
        ("lattice 128 ε × 128 steps", "/v1/lattice",
         {"text_a": text(64, 7), "text_b": text(64, 8), "layer": 5, "head": 3,
          "eps_values": [float(e) for e in np.geomspace(0.01, 10, 128)],
          "steps": list(range(1, 129)), "max_bytes": 64 * 2**20}),
    ]
    rows = []
    for name, path, body in over:
        status, _, secs, head = post(url, path, body)
        rows.append((name, status, secs))
    status, _, secs, _ = post(url, "/v1/relate", {"text_a": A, "text_b": B},
                              content_type=None)
    rows.append(("a POST without Content-Type", status, secs))
    t = time.perf_counter()
    try:
        post(url, "/v1/relate", HEAVY, timeout=3)
    except urllib3.exceptions.HTTPError:
        pass
    left = time.perf_counter()
    time.sleep(1.0)
    c0 = cpu_seconds(pid)
    time.sleep(2.0)
    busy = cpu_seconds(pid) - c0
    rows.append((f"a heavy relate left by its client after {left - t:.0f} s: replica CPU "
                 f"{1e3 * busy / 2:.0f} ms/s from 1 s after", None, busy / 2))
    return rows


def align_rows(url: str) -> tuple[int, float, float]:
    """(pairs, pairs/s embedded, pairs/s with --engine) of ``python -m engine align
    --method softmax-both`` on the shared dev corpus (or the tests' pairs, repeated)."""
    from engine.io.cli import main

    from engine.alignment.readers import read_pairs
    from engine.relation.relate import default_encoder

    from benchmarks.align import data_dir

    shared = data_dir()
    path = shared / "mtref-dev.tsv" if shared else ROOT / "tests" / "data" / "align" / "pairs.tsv"
    n = len(read_pairs(path))
    default_encoder()  # loaded before the clock, as the replica's was
    argv = ["align", "--pairs", str(path), "--method", "softmax-both", "--bootstrap", "0",
            "--lowercase", "--quiet", "--json"]
    speeds = []
    for extra in ([], ["--engine", url]):
        out = io.StringIO()
        t = time.perf_counter()
        with redirect_stdout(out), redirect_stderr(io.StringIO()):
            status = main(argv + extra)
        if status != 0:
            raise RuntimeError(f"align {' '.join(extra)} exited {status}")
        speeds.append(n / (time.perf_counter() - t))
        doc = json.loads(out.getvalue())
        links = [p["links"] for p in doc["alignments"]["pairs"]]
        if extra and links != first:
            raise RuntimeError("align --engine gave other links than the embedded run")
        first = links
    return n, speeds[0], speeds[1]


def run(url: str) -> None:
    """Every figure of the module docstring, printed; ``url``: a one-replica service."""
    from engine.serving.client import EngineClient

    c = EngineClient(url, timeout=60)
    for kw in ({}, {"layer": "all", "head": "all"}):  # each route once, small: idle is
        c.relate(A, B, **kw)                          # a replica at rest, not a new one
    c.eps_path(A, B, layer=5, head=3, half_steps=50)
    c.lattice(A, B, layer=5, head=3, eps_values=[0.5, 1.0], steps=[1, 10])
    c.rank(A, [B, A])
    c.align([(A, B)])
    pid = int(c.health()["pid"])
    time.sleep(1.0)
    idle = rss_mb(pid)
    reset_peak(pid)
    print(f"\nLight under heavy (one replica; a light relate of {A.count(' ') + 1} × "
          f"{B.count(' ') + 1} words, then again while two 256² × 25,000 half-step relates "
          "run):", flush=True)
    alone, under = light_under_heavy(url)
    print(f"  alone {alone * 1e3:.0f} ms (median of 5); under heavy {under * 1e3:.0f} ms "
          f"(slowest of 5): {under / alone:.1f}× (target ≤ max(1 s, 5×): "
          f"{'met' if under <= max(1.0, 5 * alone) else 'NOT met'})")
    print("\nLargest allowed answers:", flush=True)
    rows = largest(url)
    print("\nHostile requests:", flush=True)
    for what, status, secs in hostile(url, pid):
        print(f"  {what:<34} " + (f"HTTP {status} in {secs:.2f} s" if status else ""))
    top = max(mb for *_, status, mb, _ in rows if status == 200)
    peak = peak_rss_mb(pid)
    kept = c._call("GET", "/v1/stats")["cache"]["bytes"] / 1e6
    print(f"\nReplica memory: idle {idle:.0f} MB (after one small request per route), peak "
          f"{peak:.0f} MB over all of the above, of which {kept:.0f} MB the encodings and "
          f"measures it keeps (SINKSCOPE_CACHE_MB); largest answer sent {top:.0f} MB: "
          f"peak − kept = {peak - kept:.0f} MB against idle + 2 × largest = "
          f"{idle + 2 * top:.0f} MB ({'within' if peak - kept <= idle + 2 * top else 'OVER'})")
    from engine.serving import runtime
    from engine.serving.deployment import build

    runtime.deploy(build(replicas=2))  # one per core: they share the corpus
    n, embedded, served = align_rows(url)
    print(f"\nalign --method softmax-both on {n} pairs: embedded (this process, both cores) "
          f"{embedded:.1f} pairs/s, --engine (two replicas, one core each) {served:.1f} "
          f"pairs/s ({served / embedded:.2f}×); same links", flush=True)


def transport(requests: int = 128, clients: int = 16) -> tuple[float, float]:
    """Relations per second of slider moves from ``clients`` threads on one replica, with
    Serve's proxy reaching it by Ray's actor calls (Serve's default, this service's) and
    by gRPC (RAY_SERVE_USE_GRPC_BY_DEFAULT, its 4 MiB cap lifted): (actor calls, gRPC).
    Each on a local Ray instance of its own, since Ray's processes read the setting when
    they start."""
    import os

    from benchmarks.service import EPS, FIXED, Served, run_clients
    from engine.serving import service as svc
    from tests.support.server import free_port

    rates, before = [], os.environ.get("RAY_SERVE_USE_GRPC_BY_DEFAULT")
    try:
        for grpc in ("0", "1"):
            os.environ["RAY_SERVE_USE_GRPC_BY_DEFAULT"] = grpc
            with svc.local_ray(num_cpus=2):
                served = Served(svc.start(svc.build(replicas=1), port=free_port()))
                jobs = [(FIXED, EPS[k % len(EPS)]) for k in range(requests)]
                served.relate(0, jobs[0])
                rates.append(run_clients(clients, jobs, served.relate)[0])
    finally:
        os.environ.pop("RAY_SERVE_USE_GRPC_BY_DEFAULT")
        if before is not None:
            os.environ["RAY_SERVE_USE_GRPC_BY_DEFAULT"] = before
    return rates[0], rates[1]


def transport_rows() -> None:
    actor, grpc = transport()
    print(f"\nProxy → replica, slider moves from 16 clients on one replica: Ray's actor calls "
          f"(this service) {actor:.1f} rel/s, gRPC (4 MiB cap lifted) {grpc:.1f} rel/s "
          f"(gRPC/actor {grpc / actor:.2f}×)", flush=True)


def main() -> int:
    import torch

    from engine.serving import service as svc
    from tests.support.server import free_port

    torch.set_num_threads(1)  # as the replica (SINKSCOPE_TORCH_THREADS) and the app
    with svc.local_ray(num_cpus=2):
        run(svc.start(svc.build(replicas=1), port=free_port()))
    transport_rows()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
