"""The served engine against the embedded one, in one run: ``python -m benchmarks.service``
(part of ``make bench``).

Relations per second and p50/p95 latency for 1, 4 and 16 concurrent clients, three ways:

- served, batching on (Ray Serve, one replica, ``max_batch_size`` 16: new texts share a
  forward pass, slider moves on the same texts share a Sinkhorn call),
- served, batching off (the same deployment with ``max_batch_size`` 1),
- embedded (threads of this process calling the engine, as Streamlit sessions do),

on two workloads: *slider moves* (the texts are encoded already; each request is a new ε,
one head, 100 half-steps — what a class moving sliders sends) and *new texts* (every request
a pair nobody sent before: encode and relate — what batching is for). Then the service
under real and hostile load (:mod:`benchmarks.service_limits`: light requests beside heavy
ones, the largest answer of each route, hostile requests, the replica's idle and peak
memory, ``align --engine`` beside the embedded run), the service's memory, and, where CUDA
is present, Sinkhorn on the GPU (float32) against the CPU.

``python -m benchmarks.service --failover`` measures something else: 24 clients on two
replicas, one replica killed mid-run (SIGKILL), every call through ``EngineClient``
(:func:`failover`): requests, failed calls, retries, p50/p95 (docs/serving.md).

Clients and service share this machine's cores, so served figures include the clients'
own work; every figure is printed beside its peers from the same run.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import threading
import time

import numpy as np

from engine.io.bench import machine, p50, p95
from tests.support.server import free_port

CLIENTS = (1, 4, 16)
WORDS = ("river bank money water loan quiet house morning light people walk talk city market "
         "bridge boat stone tree wind rain field road school music story garden night").split()
SLIDER = dict(layer=5, head="mean", half_steps=100)
EPS = list(np.geomspace(0.05, 5, 17))


def texts(seed: int, n: int) -> list[tuple[str, str]]:
    """``n`` new pairs of 14–24-word texts (about 16–26 tokens each)."""
    rng = np.random.default_rng(seed)
    return [(" ".join(rng.choice(WORDS, int(rng.integers(14, 25)))),
             " ".join(rng.choice(WORDS, int(rng.integers(14, 25))))) for _ in range(n)]


def run_clients(n_clients: int, jobs: list, call) -> tuple[float, list[float]]:
    """``n_clients`` threads share ``jobs``; returns (relations per second, latencies)."""
    lock, queue, lat = threading.Lock(), list(jobs), []
    start = threading.Barrier(n_clients)

    def worker(i: int):
        start.wait()
        while True:
            with lock:
                if not queue:
                    return
                job = queue.pop()
            t = time.perf_counter()
            call(i, job)
            with lock:
                lat.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(n_clients) as pool:
        list(pool.map(worker, range(n_clients)))
    return len(jobs) / (time.perf_counter() - t0), lat


class Embedded:
    """The engine in this process: encodings kept in a dict, as the app keeps them."""

    def __init__(self):
        from engine.relation.relate import default_encoder

        self.enc = default_encoder()
        self.cache: dict = {}
        self.lock = threading.Lock()

    def relate(self, i, job):
        from engine import encode_texts, relate_encodings

        (a, b), eps = job
        with self.lock:
            e = self.cache.get((a, b))
        if e is None:
            e = encode_texts(self.enc, a, b, "separate")
            with self.lock:
                self.cache[(a, b)] = e
        return relate_encodings(e, eps=eps, **SLIDER)


class Served:
    """One EngineClient per client thread (each keeps its own connection)."""

    def __init__(self, url: str):
        from engine.serving.client import EngineClient

        self.clients = [EngineClient(url) for _ in range(max(CLIENTS))]

    def relate(self, i, job):
        (a, b), eps = job
        return self.clients[i].relate(a, b, eps=eps, **SLIDER)


WORKLOADS = ("slider moves", "new texts")
FIXED = texts(0, 1)[0]  # the slider workload's pair, encoded before any timing


def jobs(workload: str, n: int, seed: int, scale: float) -> list:
    """The (pair, ε) jobs ``n`` clients share in one timed run."""
    if workload == "slider moves":
        k = max(8, int({1: 12, 4: 16, 16: 32}[n] * scale))
        return [(FIXED, EPS[(seed + j) % len(EPS)]) for j in range(k)]
    return [(p, 1.0) for p in texts(seed, max(4, int({1: 6, 4: 8, 16: 16}[n] * scale)))]


def measure(engines: dict, rounds: int, scale: float) -> dict:
    """Every (workload, clients) for every engine, interleaved: round after round, the
    engines take turns (in a rotating order), so a burst of load from the machine's other
    users falls on all of them alike. Returns {(workload, n, name): (rel/s, p50, p95)}."""
    runs: dict = {}
    for eng in engines.values():
        eng.relate(0, (FIXED, 1.0))
    names = list(engines)
    for rnd in range(rounds):
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for w, workload in enumerate(WORKLOADS):
            for n in CLIENTS:
                for k, name in enumerate(order):
                    js = jobs(workload, n, 1000 * rnd + 100 * w + 10 * n + names.index(name),
                              scale)
                    t = time.perf_counter()
                    _, lat = run_clients(n, js, engines[name].relate)
                    count, secs, lats = runs.get((workload, n, name), (0, 0.0, []))
                    runs[(workload, n, name)] = (count + len(js),
                                                 secs + time.perf_counter() - t, lats + lat)
        print(f"  round {rnd + 1} of {rounds} done", flush=True)
    results = {}
    for workload in WORKLOADS:
        for n in CLIENTS:
            for name in names:
                count, secs, lat = runs[(workload, n, name)]
                results[(workload, n, name)] = (count / secs, p50(lat), p95(lat))
                print(f"  {name:<20} {workload:<13} {n:>2} clients: {count / secs:6.1f} rel/s "
                      f" p50 {p50(lat) * 1e3:7.1f} ms  p95 {p95(lat) * 1e3:7.1f} ms "
                      f"({count} relations)")
    return results


def tree_rss_mb(root: int) -> float:
    """Resident memory of every process descending from ``root`` (not root itself)."""
    from tests.support.server import descendants, rss_mb

    return sum(rss_mb(c) for c in descendants(root))


def wire_rows(embedded: "Embedded") -> None:
    """JSON against NPZ for one head and the 6 × 12 grid: bytes, and the time to write the
    document on the service plus to read it back into a Relation in the client."""
    from engine import encode_texts, relate_encodings
    from engine.serving import wire
    from engine.io.bench import timeit
    from engine.io.export import relation_document, relation_from_dict

    a, b = texts(7, 1)[0]
    e = encode_texts(embedded.enc, a, b, "separate")
    print(f"\nWire formats ({e[0].n} × {e[1].n} tokens; write on the service + read in the "
          "client, p50):")
    for name, kw in (("one head (mean)", SLIDER), ("6 × 12 heads grid",
                                                    dict(layer="all", head="all"))):
        r = relate_encodings(e, eps=0.5, **kw)
        for media in (wire.JSON, wire.NPZ):
            body = wire.dumps(relation_document(r), media)
            ts = timeit(lambda: relation_from_dict(wire.loads(
                wire.dumps(relation_document(r), media), media)), 5)
            print(f"  {name:<18} {media:<19} {len(body) / 1e6:6.2f} MB  {p50(ts) * 1e3:7.1f} ms")


def cuda_rows() -> None:
    """Sinkhorn, 200 half-steps, float32 on CUDA against float64 and float32 on the CPU."""
    import torch

    from engine import sinkhorn
    from engine.io.bench import timeit

    if not torch.cuda.is_available():
        print("\nNo CUDA device here: the GPU comparison is skipped.")
        return
    print(f"\nSinkhorn on {torch.cuda.get_device_name(0)} (float32) against the CPU, "
          "200 half-steps, ε = 1, scores with std 2.4:")
    rng = np.random.default_rng(0)
    for (B, n) in ((72, 128), (1, 2048)):
        S = rng.normal(size=(B, n, n)) * 2.4
        a = np.full(n, 1 / n)
        cpu64 = timeit(lambda: sinkhorn(torch.from_numpy(S), torch.from_numpy(a),
                                        torch.from_numpy(a), 1.0, 200), 3)
        St = torch.tensor(S, dtype=torch.float32, device="cuda")
        at = torch.tensor(a, dtype=torch.float32, device="cuda")
        gpu = timeit(lambda: sinkhorn(St, at, at, 1.0, 200), 10, warmup=2)
        ref = sinkhorn(torch.from_numpy(S), torch.from_numpy(a), torch.from_numpy(a), 1.0, 200)
        diff = (sinkhorn(St, at, at, 1.0, 200).plan.double().cpu() - ref.plan).abs().max()
        print(f"  {B} × {n}²: CPU float64 {p50(cpu64) * 1e3:8.1f} ms, CUDA float32 "
              f"{p50(gpu) * 1e3:7.2f} ms ({p50(cpu64) / p50(gpu):.0f}×), max |Δplan| {diff:.1e}")


def replica_pids(url: str, replicas: int, *, within: float = 30.0) -> dict[str, int]:
    """replica name → process id, asking ``GET /v1/health`` four at a time until
    ``replicas`` answered or ``within`` seconds passed. (Serve's router sends a request to
    a replica that reported its queue in time: on a busy machine one replica can take
    hundreds of calls in a row, one after the other; calls in flight together spread.)"""
    from engine.serving.client import EngineClient

    clients, seen = [EngineClient(url, timeout=10) for _ in range(4)], {}
    deadline = time.monotonic() + within
    with cf.ThreadPoolExecutor(len(clients)) as pool:
        while len(seen) < replicas and time.monotonic() < deadline:
            for h in pool.map(lambda c: c.health(), clients):
                seen[h["replica"]] = int(h["pid"])
    return seen


def failover(url: str, *, clients: int = 24, seconds: float = 20.0, kill_at: float = 5.0,
             replicas: int = 2, retries: int | None = None) -> dict:
    """``clients`` threads call ``EngineClient.relate`` (slider moves on one pair) on
    ``url`` for ``seconds``; ``kill_at`` seconds in, one of the ``replicas`` replicas'
    processes is killed (SIGKILL: no goodbye). Returns the calls made, the calls that
    failed (any exception, with the first few), the clients' retries, p50 and p95 latency
    (s), the pid killed and how long the run took. ``retries``: the clients' (None: their
    default; 0 shows what callers saw before the client retried)."""
    import signal

    from engine.serving.client import EngineClient

    pids = replica_pids(url, replicas)
    if len(pids) < replicas:
        raise RuntimeError(f"only {len(pids)} of {replicas} replicas answered: {pids}")
    victim = sorted(pids.values())[0]
    pair = FIXED
    EngineClient(url).relate(*pair, eps=1.0, **SLIDER)  # encoded once per replica, soon
    lock = threading.Lock()
    lat: list[float] = []
    failures: list[str] = []
    engines = [EngineClient(url, timeout=60, **({} if retries is None else
                                                {"retries": retries}))
               for _ in range(clients)]
    t0 = time.perf_counter()
    stop = t0 + seconds
    start = threading.Barrier(clients + 1)

    def worker(i: int) -> None:
        start.wait()
        k = i
        while time.perf_counter() < stop:
            k += clients
            t = time.perf_counter()
            try:
                engines[i].relate(*pair, eps=float(EPS[k % len(EPS)]), **SLIDER)
            except Exception as e:  # a failed call: what the run must not see
                with lock:
                    failures.append(f"{type(e).__name__}: {e}"[:300])
                continue
            with lock:
                lat.append(time.perf_counter() - t)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    start.wait()
    time.sleep(max(0.0, t0 + kill_at - time.perf_counter()))
    os.kill(victim, signal.SIGKILL)
    killed_at = time.perf_counter() - t0
    for t in threads:
        t.join(timeout=seconds + 120)
    return {"clients": clients, "replicas": replicas, "requests": len(lat) + len(failures),
            "failures": len(failures), "first_failures": failures[:3],
            "retries": sum(e.retried for e in engines), "p50": p50(lat), "p95": p95(lat),
            "killed_pid": victim, "killed_at": killed_at,
            "seconds": time.perf_counter() - t0}


def failover_rows(seconds: float, retries: int | None = None) -> int:
    """The failover run on its own local Ray instance (two replicas, 2 CPUs), printed."""
    from engine.serving import service as svc

    print(f"machine: {machine()}")
    with svc.local_ray(num_cpus=2):
        url = svc.start(svc.build(replicas=2), port=free_port())
        r = failover(url, seconds=seconds, kill_at=seconds / 4, retries=retries)
    shown = "default" if retries is None else retries
    print(f"Replica failure (client retries: {shown}): {r['clients']} clients, "
          f"{r['replicas']} replicas, one killed "
          f"(SIGKILL) {r['killed_at']:.1f} s into a {r['seconds']:.1f} s run:")
    print(f"  {r['requests']} calls through EngineClient, {r['failures']} failed, "
          f"{r['retries']} retries; p50 {r['p50'] * 1e3:.0f} ms, p95 {r['p95'] * 1e3:.0f} ms")
    for f in r["first_failures"]:
        print(f"  failed: {f}")
    return 0 if r["failures"] == 0 else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.service")
    p.add_argument("--quick", action="store_true", help="fewer requests and rounds")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--failover", action="store_true",
                   help="only the replica-failure run (24 clients, one of two replicas killed)")
    p.add_argument("--seconds", type=float, default=40.0, help="length of the failover run")
    p.add_argument("--retries", type=int, default=None,
                   help="the clients' retries in the failover run (0: none; default: theirs)")
    args = p.parse_args(argv)
    if args.failover:
        return failover_rows(args.seconds, args.retries)
    scale = 0.5 if args.quick else 1.0
    rounds = 1 if args.quick else args.rounds
    import torch

    torch.set_num_threads(1)
    print(f"machine: {machine()}")
    from engine.serving import service as svc
    from engine.serving.client import EngineClient

    from ray import serve

    embedded = Embedded()
    with svc.local_ray(num_cpus=2):
        url = svc.start(svc.build(replicas=1), port=free_port())  # batching: the default
        # The same deployment without batching, beside it as a second application.
        serve.run(svc.build(replicas=1, max_batch_size=1), name="unbatched",
                  route_prefix="/unbatched")
        print(f"served engines: {url} (batching) and {url}/unbatched (max_batch_size 1), "
              "one replica each, Ray Serve on a local Ray instance with 2 CPUs")
        engines = {"served, batching": Served(url),
                   "served, no batching": Served(url + "/unbatched"), "embedded": embedded}
        results = measure(engines, rounds, scale)
        st = EngineClient(url)._call("GET", "/v1/stats")
        print(f"  (the batching replica: requests per encode batch {st['batch_sizes']}, "
              f"{st['forward_passes']} forward passes; jobs share a pass only at equal padded "
              "length, so that results stay bit-identical to the embedded engine; requests "
              f"per relate batch {st['relate_batch_sizes']})")
        replica_mb = EngineClient(url).health()["memory_mb"]
        ray_mb = tree_rss_mb(os.getpid())
        serve.delete("unbatched")  # one replica left, for the load of benchmarks.service_limits
        from benchmarks import service_limits

        service_limits.run(url)
    service_limits.transport_rows()
    wire_rows(embedded)
    from tests.support.server import peak_rss_mb

    print("\nRatios (same run):")
    for workload in ("slider moves", "new texts"):
        for n in CLIENTS:
            b = results[(workload, n, "served, batching")]
            u = results[(workload, n, "served, no batching")]
            e = results[(workload, n, "embedded")]
            print(f"  {workload:<13} {n:>2} clients: batching/no batching throughput "
                  f"{b[0] / u[0]:4.2f}×; served/embedded throughput {b[0] / e[0]:4.2f}×; "
                  f"served p50 − embedded p50 {(b[1] - e[1]) * 1e3:+7.1f} ms")
    one = results[("slider moves", 1, "served, batching")][1] - \
        results[("slider moves", 1, "embedded")][1]
    gain = {w: results[(w, 16, "served, batching")][0] / results[(w, 16, "served, no batching")][0]
            for w in WORKLOADS}
    print(f"\nTargets: served slider-move overhead p50 {one * 1e3:.1f} ms (target ≤ 15 ms); "
          f"batching at 16 clients {gain['slider moves']:.2f}× the throughput of one at a "
          f"time on slider moves, {gain['new texts']:.2f}× on new texts (target ≥ 3×).")
    print(f"Memory: one replica {replica_mb:.0f} MB resident; all Ray processes (GCS, raylet, "
          f"Serve controller, proxy, both replicas, workers) {ray_mb:.0f} MB; this process "
          f"with the embedded engine peaked at {peak_rss_mb(os.getpid()):.0f} MB.")
    cuda_rows()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
