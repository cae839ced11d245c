"""A class on one engine: ``python -m benchmarks.classroom``.

N students (N = 1, 8 and 30 by default) each do what the pages do, at once:

- **Lab**: Train with the Lab page's defaults (``sinkscope_app.lab.params.DEFAULTS``: the
  three models, 400 steps), a ``lab_train`` job;
- **Align**: one corpus of 200 pairs (an ``align_corpus`` job at the page's settings): the
  first 200 pairs of ``../shared/data/align/wiki-dev.tsv`` when the repository has that
  folder beside it, else 200 pairs made up here (``--corpus`` names another file);
- **main page**: while those jobs run, a slider release every ``--think`` seconds (a
  ``relate`` of the student's own pair at another ε or half-step count, as
  ``compute.relation`` asks on a release), and a look at each unfinished job
  (``GET /v1/jobs/{id}``); once both jobs have ended, their results.

against three engines (``--configs``): **embedded** (the engine in the front end's
process: the sessions are threads of that process, as a Streamlit server hosts them, and
the jobs its threads) and **served1** / **served2** (``python -m engine serve`` with 1 or
2 replicas; the front end's process then holds only the sessions' HTTP calls). Each
engine's front end is a process of its own (``sinkscope_app.engines`` picks the engine from
``SINKSCOPE_ENGINE``, as the app does), run after a warm-up (a model load, a few slider
moves alone: the "alone" figures, one small job of each kind).

Per configuration and N it prints: the time until the last student's result (both jobs
ended, results fetched), the slider p50 and p95 while trainings run (a ``lab_train`` job
running when the release was sent), the CPU seconds of the front end's process and of the
served engine's whole process tree (Ray's GCS, raylet, Serve's controller and proxy, the
replicas, the job workers), the front end's peak memory and whether it ever loaded torch.
Jobs run ``SINKSCOPE_HEAVY_JOBS`` at a time per engine (``--job-slots``), whatever the
replicas: on this 2-core machine no configuration can finish a class sooner than the
jobs' CPU time allows. Every process it starts (the front ends, the engine and Ray's
processes) is stopped on every path, Ctrl-C included.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from tests.support.server import (ROOT, cpu_seconds, descendants, die_with_parent, free_port,
                                  peak_rss_mb)

STUDENTS = (1, 8, 30)
CONFIGS = {"embedded": 0, "served1": 1, "served2": 2}  # name → replicas (0: embedded)
CORPUS_PAIRS = 200
THINK_S = 1.0  # seconds between a student's slider releases (and looks at the jobs)
LIMIT_S = 7200.0  # a class that has not ended by then is given up (its students say so)
SHARED_CORPUS = ROOT.parent / "shared" / "data" / "align" / "wiki-dev.tsv"
ALONE_MOVES = 20  # slider releases timed alone, in the warm-up
EPS_RANGE = (0.05, 10.0)  # the ε stops students wander over (the slider's)
MAX_STEPS = 1000  # and the half-step stops (the slider's end)


# --------------------------------------------------------------------------- figures
def summary(latencies: list[float]) -> dict[str, float]:
    """p50 and p95 in ms (NaN when there are none) and how many."""
    if not latencies:
        return {"n": 0, "p50_ms": float("nan"), "p95_ms": float("nan")}
    xs = np.asarray(latencies) * 1e3
    return {"n": len(xs), "p50_ms": float(np.percentile(xs, 50)),
            "p95_ms": float(np.percentile(xs, 95))}


def tree_cpu(root: int) -> float:
    """CPU seconds so far of ``root`` and every live descendant, each with the children it
    has reaped (a Ray worker that ended counts in its raylet's). 0 when ``root`` is gone."""
    return sum(cpu_seconds(p, reaped=True) for p in {root} | descendants(root))


def _start_time(pid: int) -> str | None:
    """A process's start time (its identity beside its pid), None when it is gone or a
    zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def snapshot(root: int) -> dict[int, str]:
    """``root``'s descendants now: pid → start time (see :func:`sweep`)."""
    out = {}
    for pid in descendants(root):
        t = _start_time(pid)
        if t is not None:
            out[pid] = t
    return out


def survivors(snap: dict[int, str]) -> list[int]:
    """The processes of a :func:`snapshot` still alive (the same start time)."""
    return sorted(pid for pid, t in snap.items() if _start_time(pid) == t)


def sweep(snap: dict[int, str], wait_s: float = 5.0) -> list[int]:
    """SIGKILL the processes of a :func:`snapshot` still alive (a descendant that left its
    process group, or outlived its parent); the ones killed."""
    left = survivors(snap)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    end = time.monotonic() + wait_s
    while survivors(snap) and time.monotonic() < end:
        time.sleep(0.05)
    return left


# --------------------------------------------------------------------------- the workload
WORDS = ("the a river bank money water loan quiet house morning light people walk talk city "
         "market bridge boat stone tree wind rain field road school music story garden night "
         "old new small large green red teacher student book letter window door table "
         "chair summer winter came went saw found gave took left kept").split()


def generated_corpus(n: int, seed: int = 0) -> list[dict]:
    """``n`` pairs with gold links: text A of 12–36 words, text B the same words with about
    one in five dropped, one in five replaced, and a word or two inserted; gold links the
    words kept (0-based Pharaoh text)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        a = [str(w) for w in rng.choice(WORDS, int(rng.integers(12, 37)))]
        b, links = [], []
        for i, w in enumerate(a):
            r = rng.random()
            if r < 0.2:
                continue
            if rng.random() < 0.1:
                b.append(str(rng.choice(WORDS)))
            links.append(f"{i}-{len(b)}")
            b.append(w if r > 0.4 else str(rng.choice(WORDS)))
        out.append({"text_a": " ".join(a), "text_b": " ".join(b), "gold": " ".join(links)})
    return out


def corpus(path: str | None, n: int = CORPUS_PAIRS) -> tuple[list[dict], str]:
    """The first ``n`` pairs of the file ``path`` (default: the shared Wiki development set
    when it exists), read as the Align page reads an upload; else :func:`generated_corpus`.
    (pairs as job data, the file's name)."""
    file = Path(path) if path else SHARED_CORPUS
    if path is None and not file.exists():
        return generated_corpus(n), "generated.tsv"
    from engine.alignment.readers import decode, parse_pairs

    pairs = parse_pairs(decode(file.read_bytes(), file.name), name=file.name)
    return [p.to_dict() for p in pairs[:n]], file.name


def lab_body() -> dict:
    """The Lab page's Train with its defaults, as a ``lab_train`` job's body."""
    from sinkscope_app.lab.params import DEFAULTS

    d = DEFAULTS
    return {"kind": "lab_train", "settings": {
        "models": list(d["lab_models"]), "target": d["lab_target"],
        "width": int(d["lab_width"]), "depth": int(d["lab_depth"]),
        "eps": float(d["lab_eps"]), "steps": int(d["lab_steps"]),
        "train_pairs": int(d["lab_train_pairs"]),
        "heldout_pairs": int(d["lab_heldout_pairs"])}, "data": {}}


def corpus_body(pairs: list[dict], name: str, bootstrap: int | None = None) -> dict:
    """The Align page's corpus view on a file of ``pairs``, as an ``align_corpus`` job's
    body (the page's settings: the default model, no lower-casing, its bootstrap)."""
    from engine.jobs.spec import BOOTSTRAP
    from engine.settings import DEFAULT_MODEL

    return {"kind": "align_corpus",
            "settings": {"model": DEFAULT_MODEL, "lowercase": False,
                         "bootstrap": BOOTSTRAP if bootstrap is None else bootstrap},
            "data": {"pairs": pairs, "name": name, "one_based": False, "gold_column": True}}


def slider_stops() -> tuple[list[float], list[int], float, int]:
    """The main page's ε and half-step stops (within :data:`EPS_RANGE` and
    :data:`MAX_STEPS`) and its defaults."""
    from engine.settings import DEFAULT_EPS, DEFAULT_HALF_STEPS
    from sinkscope_app.main.params import EPS_OPTIONS, HALF_STEP_OPTIONS

    eps = [float(e) for e in EPS_OPTIONS if EPS_RANGE[0] <= e <= EPS_RANGE[1]]
    steps = [int(s) for s in HALF_STEP_OPTIONS if s <= MAX_STEPS]
    return eps, steps, float(DEFAULT_EPS), int(DEFAULT_HALF_STEPS)


def plan(corpus_pairs: list[dict], name: str, *, students=STUDENTS, think_s: float = THINK_S,
         lab: dict | None = None, corpus_job: dict | None = None,
         limit_s: float = LIMIT_S) -> dict:
    """Everything a front end needs (JSON): the jobs' bodies, each student's pair (pair
    k of the corpus for student k), the slider's stops, the warm-up's small jobs."""
    eps, steps, eps0, steps0 = slider_stops()
    lab = lab or lab_body()
    small_lab = {**lab, "settings": {**lab["settings"], "models": lab["settings"]["models"][:1],
                                     "steps": 2}}
    return {"students": list(students), "think_s": float(think_s), "limit_s": float(limit_s),
            "lab": lab, "corpus": corpus_job or corpus_body(corpus_pairs, name),
            "pairs": [(p["text_a"], p["text_b"]) for p in corpus_pairs],
            "eps": eps, "steps": steps, "eps0": eps0, "steps0": steps0,
            "warm": [small_lab, corpus_body(corpus_pairs[:2], name, bootstrap=0)]}


# --------------------------------------------------------------------------- a front end
class Moves:
    """A student's slider releases: a walk over the slider's stops from the defaults, ε
    moved most often (1–4 stops), else the half-steps (1–3 stops)."""

    def __init__(self, p: dict, seed: int) -> None:
        self.eps, self.steps = p["eps"], p["steps"]
        self.i = min(range(len(self.eps)), key=lambda k: abs(self.eps[k] - p["eps0"]))
        self.j = min(range(len(self.steps)), key=lambda k: abs(self.steps[k] - p["steps0"]))
        self.rng = np.random.default_rng(seed)

    def next(self) -> tuple[float, int]:
        step = int(self.rng.integers(1, 5)) * (1 if self.rng.random() < 0.5 else -1)
        if self.rng.random() < 0.7:
            self.i = self._move(self.i, step, len(self.eps))
        else:
            self.j = self._move(self.j, max(-3, min(3, step)), len(self.steps))
        return self.eps[self.i], self.steps[self.j]

    @staticmethod
    def _move(k: int, step: int, n: int) -> int:
        k2 = k + step
        return k2 if 0 <= k2 < n else k - step if 0 <= k - step < n else k


class Training:
    """Which students' trainings run now, as their last looks saw them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.states: dict[int, str] = {}

    def saw(self, student: int, state: str) -> None:
        with self.lock:
            self.states[student] = state

    def running(self) -> bool:
        with self.lock:
            return "running" in self.states.values()


def student(k: int, eng, p: dict, clock: dict, training: Training, out: dict,
            start: threading.Barrier) -> None:
    """Student ``k``: Train, the corpus, then slider releases and looks at the jobs until
    both have ended, then their results; fills ``out`` (done_s: seconds from the class's
    start to both results, None if not reached; slider: (latency s, training running);
    states: each job's last state; job_s: how long each ran; errors)."""
    from engine.settings import Settings

    out.update(done_s=None, slider=[], states={}, job_s={}, errors=[], looks=0)
    a, b = p["pairs"][k % len(p["pairs"])]
    s = Settings(layer=-1, head="mean")
    moves = Moves(p, seed=k)
    start.wait()
    t0 = clock["t0"]  # the class's start, set as the barrier let everyone go
    try:
        ids = {"lab_train": eng.start_job(p["lab"]).id,
               "align_corpus": eng.start_job(p["corpus"]).id}
        eng.prepare(a, b, s)  # the main page opens on the student's texts
        eng.relate(a, b, s.replace(eps=1.0, half_steps=1))
        eng.relate(a, b, s)
        active = dict(ids)
        end = t0 + p["limit_s"]
        while active and time.monotonic() < end:
            tick = time.monotonic()
            eps, steps = moves.next()
            during = training.running()
            t = time.perf_counter()
            try:  # a refused release or look is counted, and the student goes on
                eng.relate(a, b, s.replace(eps=eps, half_steps=steps))
                out["slider"].append((time.perf_counter() - t, during))
            except Exception as e:
                out["errors"].append(f"student {k}, a release: {type(e).__name__}: {e}"[:300])
            for kind, job_id in list(active.items()):
                try:
                    st = eng.job(job_id)
                except Exception as e:
                    out["errors"].append(f"student {k}, a look: {type(e).__name__}: {e}"[:300])
                    continue
                out["looks"] += 1
                out["states"][kind] = st.state
                if kind == "lab_train":
                    training.saw(k, st.state)
                if not st.active:
                    out["job_s"][kind] = st.seconds
                    del active[kind]
            time.sleep(max(0.0, p["think_s"] - (time.monotonic() - tick)))
        if active:
            out["errors"].append(f"student {k}: jobs still running after {p['limit_s']:.0f} s")
            return
        for kind, job_id in ids.items():
            eng.job_result(job_id)
        out["done_s"] = time.monotonic() - t0
    except Exception as e:  # the table counts it; the run goes on
        out["errors"].append(f"student {k}: {type(e).__name__}: {e}"[:300])
    finally:
        training.saw(k, "ended")


def wait_job(eng, job_id: str, limit_s: float = 600.0):
    """Poll a job until it ends; its last status."""
    end = time.monotonic() + limit_s
    st = eng.job(job_id)
    while st.active and time.monotonic() < end:
        time.sleep(0.1)
        st = eng.job(job_id)
    return st


def warm_up(eng, p: dict) -> dict:
    """Untimed: the model loaded, the first student's texts encoded, :data:`ALONE_MOVES`
    slider releases alone (timed: the "alone" figures) and one small job of each kind
    (a served engine's job worker imports torch and loads the model once)."""
    from engine.settings import Settings

    a, b = p["pairs"][0]
    s = Settings(layer=-1, head="mean")
    eng.prepare(a, b, s)
    moves, alone = Moves(p, seed=10_000), []
    for _ in range(ALONE_MOVES):
        eps, steps = moves.next()
        t = time.perf_counter()
        eng.relate(a, b, s.replace(eps=eps, half_steps=steps))
        alone.append(time.perf_counter() - t)
    states = [wait_job(eng, eng.start_job(body).id).state for body in p["warm"]]
    if states != ["done"] * len(states):
        raise RuntimeError(f"warm-up jobs ended {states}")
    return summary(alone)


def classroom(eng, n: int, p: dict, engine_pid: int | None = None) -> dict:
    """``n`` students at once on ``eng``; the figures of :func:`report`'s rows."""
    training, outs, clock = Training(), [{} for _ in range(n)], {}
    start = threading.Barrier(n + 1, action=lambda: clock.update(t0=time.monotonic()))
    load0 = os.getloadavg()[0]
    cpu_fe0 = cpu_seconds(os.getpid())
    cpu_eng0 = tree_cpu(engine_pid) if engine_pid else None
    threads = [threading.Thread(target=student, args=(k, eng, p, clock, training, outs[k],
                                                      start),
                                name=f"student-{k}", daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    start.wait()
    t0 = clock["t0"]
    shown = t0
    for t in threads:
        while t.is_alive():  # a join with a timeout: Ctrl-C reaches this thread
            t.join(0.5)
            if time.monotonic() - shown > 60:
                shown = time.monotonic()
                ended = sum(o.get("done_s") is not None for o in outs)
                print(f"  {n} students, {shown - t0:.0f} s: {ended} have their results",
                      flush=True)
    wall = time.monotonic() - t0
    cpu_fe = cpu_seconds(os.getpid()) - cpu_fe0
    cpu_eng = tree_cpu(engine_pid) - cpu_eng0 if engine_pid else None
    done = [o["done_s"] for o in outs if o.get("done_s") is not None]
    slider = [x for o in outs for x in o["slider"]]
    job_s = {kind: [o["job_s"][kind] for o in outs if kind in o["job_s"]]
             for kind in ("lab_train", "align_corpus")}
    states: dict[str, int] = {}
    for o in outs:
        for kind, state in o["states"].items():
            states[f"{kind} {state}"] = states.get(f"{kind} {state}", 0) + 1
    return {"students": n, "wall_s": wall, "last_s": max(done) if len(done) == n else None,
            "median_s": float(np.median(done)) if done else None,
            "finished": len(done), "slider_training": summary([t for t, d in slider if d]),
            "slider_all": summary([t for t, _ in slider]),
            "looks": sum(o["looks"] for o in outs), "states": states,
            "job_s": {k: float(np.mean(v)) if v else None for k, v in job_s.items()},
            "errors": [e for o in outs for e in o["errors"]],
            "cpu_front_end": cpu_fe, "cpu_engine": cpu_eng,
            "load": [load0, os.getloadavg()[0]]}


def front_end(plan_file: str, out_file: str, engine_pid: int | None) -> int:
    """One configuration's front end (this process): the warm-up, then each N in turn;
    one JSON line per result in ``out_file``."""
    from sinkscope_app import engines

    p = json.loads(Path(plan_file).read_text())
    eng = engines.current()
    lines = []

    def write(row: dict) -> None:
        lines.append(json.dumps(row))
        Path(out_file).write_text("\n".join(lines) + "\n")

    write({"alone": warm_up(eng, p)})
    for n in p["students"]:
        row = classroom(eng, n, p, engine_pid)
        print(f"  {n} students: last result {_s(row['last_s'])}, "
              f"{len(row['errors'])} errors", flush=True)
        write(row)
    write({"front_end": {"peak_mb": peak_rss_mb(os.getpid()), "torch": "torch" in sys.modules}})
    return 0


# --------------------------------------------------------------------------- the run
def _s(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f} s"


def _ms(d: dict) -> str:
    return "—" if not d["n"] else f"{d['p50_ms']:.0f} / {d['p95_ms']:.0f} ({d['n']})"


def describe(name: str, slots: int) -> str:
    replicas = CONFIGS[name]
    if not replicas:
        return (f"{name}: the engine in the front end's process (sessions and jobs are its "
                f"threads; {slots} job(s) at a time)")
    return (f"{name}: python -m engine serve --replicas {replicas} on this machine's local Ray "
            f"(the front end's process holds only the sessions' HTTP calls; {slots} job(s) at "
            f"a time, {replicas} replica(s))")


def report(name: str, rows: list[dict], slots: int) -> list[str]:
    """A configuration's table (one row per N), as printed."""
    alone = next((r["alone"] for r in rows if "alone" in r), None)
    fe = next((r["front_end"] for r in rows if "front_end" in r), None)
    out = ["", describe(name, slots)]
    if alone:
        out.append(f"  slider alone after the warm-up, p50 / p95 ms (n): {_ms(alone)}")
    out.append(f"  {'students':>8}  {'last result':>11}  {'median':>8}  "
               f"{'slider p50 / p95 ms while training (n)':>38}  {'all moves':>16}  "
               f"{'CPU s front end':>15}  {'engine':>7}  {'errors':>6}  load")
    for r in rows:
        if "students" not in r:
            continue
        eng = "in it" if r["cpu_engine"] is None else f"{r['cpu_engine']:.0f}"
        out.append(f"  {r['students']:>8}  {_s(r['last_s']):>11}  {_s(r['median_s']):>8}  "
                   f"{_ms(r['slider_training']):>38}  {_ms(r['slider_all']):>16}  "
                   f"{r['cpu_front_end']:>15.0f}  {eng:>7}  {len(r['errors']):>6}  "
                   f"{r['load'][0]:.1f}→{r['load'][1]:.1f}")
        js = r["job_s"]
        out.append(f"{'':>12}each job ran, mean: training {_s(js['lab_train'])}, corpus "
                   f"{_s(js['align_corpus'])}; {r['looks']} looks at jobs")
        for e in r["errors"][:3]:
            out.append(f"      {e}")
        bad = {k: v for k, v in r["states"].items() if not k.endswith(" done")}
        if bad:
            out.append(f"      jobs not done: {bad}")
    if fe:
        out.append(f"  front end: peak {fe['peak_mb']:.0f} MB, torch "
                   f"{'loaded' if fe['torch'] else 'never loaded'}")
    return out


def markdown(results: dict[str, list[dict]]) -> list[str]:
    """Every configuration's rows as one Markdown table (docs/performance.md)."""
    out = ["| engine | students | last result | slider p50 / p95 while training | "
           "CPU s: front end / engine | front end peak | load |",
           "|---|---|---|---|---|---|---|"]
    for name, rows in results.items():
        fe = next((r["front_end"] for r in rows if "front_end" in r), {})
        for r in rows:
            if "students" not in r:
                continue
            st = r["slider_training"]
            sl = "—" if not st["n"] else f"{st['p50_ms']:.0f} / {st['p95_ms']:.0f} ms"
            eng = "(in it)" if r["cpu_engine"] is None else f"{r['cpu_engine']:.0f}"
            peak = f"{fe['peak_mb']:.0f} MB" if fe else "—"
            out.append(f"| {name} | {r['students']} | {_s(r['last_s'])} | {sl} | "
                       f"{r['cpu_front_end']:.0f} / {eng} | {peak} | "
                       f"{r['load'][0]:.0f}→{r['load'][1]:.0f} |")
    return out


def run_config(name: str, plan_file: Path, folder: Path, env: dict) -> list[dict]:
    """One configuration: its engine (served), its front end, the rows it wrote; every
    process stopped, whatever happens."""
    from tests.support.engine_server import EngineProcess

    replicas = CONFIGS[name]
    out_file = folder / f"{name}.jsonl"
    engine, snap, proc = None, {}, None
    try:
        child_env = dict(env)
        engine_pid = None
        if replicas:
            engine = EngineProcess(free_port(), "--replicas", str(replicas),
                                   log=folder / f"{name}-engine.log")
            t = time.monotonic()
            engine.start(timeout=600)
            print(f"  engine ready in {time.monotonic() - t:.0f} s ({engine.url})", flush=True)
            child_env["SINKSCOPE_ENGINE"] = engine.url
            engine_pid = engine.proc.pid
        else:
            child_env["SINKSCOPE_ENGINE"] = "embedded"
        cmd = [sys.executable, "-m", "benchmarks.classroom", "--front-end", str(plan_file),
               "--out", str(out_file)] + (["--engine-pid", str(engine_pid)] if engine_pid else [])
        proc = subprocess.Popen(cmd, cwd=ROOT, env=child_env, preexec_fn=die_with_parent())
        while proc.poll() is None:
            if engine is not None:
                snap.update(snapshot(engine.proc.pid))  # Ray's processes as they come
            time.sleep(1.0)
        if proc.returncode:
            print(f"  the front end exited with {proc.returncode}", flush=True)
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if engine is not None:
            if engine.proc is not None:
                snap.update(snapshot(engine.proc.pid))
            engine.stop()
            left = [f"{pid} {_name(pid)}" for pid in survivors(snap)]
            sweep(snap)
            if left:
                print(f"  killed {len(left)} of the engine's processes left after its stop: "
                      f"{', '.join(left)}", flush=True)
    if not out_file.exists():
        return []
    return [json.loads(line) for line in out_file.read_text().splitlines() if line]


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()[:60]
    except OSError:
        return "?"


def _terminate(signum, frame) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the run as Ctrl-C does: every finally runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.classroom", description=__doc__
                                 .split("\n\n")[0])
    ap.add_argument("--students", default=",".join(map(str, STUDENTS)),
                    help="class sizes, comma-separated (default 1,8,30)")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="engines, comma-separated: " + ", ".join(CONFIGS))
    ap.add_argument("--think", type=float, default=THINK_S,
                    help="seconds between a student's slider releases (default 1)")
    ap.add_argument("--corpus", default=None,
                    help="a file of pairs (its first 200 are aligned; default: "
                         "../shared/data/align/wiki-dev.tsv, else pairs made up here)")
    ap.add_argument("--job-slots", type=int, default=None,
                    help="jobs at once per engine (SINKSCOPE_HEAVY_JOBS; default: its own)")
    ap.add_argument("--front-end", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--engine-pid", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    # Ctrl-C stops the run even when a shell started it in the background (which ignores
    # SIGINT); SIGTERM stops it the same way.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.front_end:
        try:
            return front_end(args.front_end, args.out, args.engine_pid)
        except KeyboardInterrupt:
            os._exit(130)  # the sessions' and jobs' threads end with the process
    students = [int(x) for x in args.students.split(",") if x.strip()]
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or not students or min(students) < 1:
        ap.error(f"--configs takes {', '.join(CONFIGS)}; --students whole numbers ≥ 1")
    signal.signal(signal.SIGTERM, _terminate)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if args.job_slots is not None:
        env["SINKSCOPE_HEAVY_JOBS"] = str(args.job_slots)
        os.environ["SINKSCOPE_HEAVY_JOBS"] = str(args.job_slots)
    from engine import settings

    slots = settings.Config.from_env(env).heavy_jobs
    pairs, name = corpus(args.corpus)
    folder = Path(tempfile.mkdtemp(prefix="sinkscope-classroom-"))
    plan_file = folder / "plan.json"
    plan_file.write_text(json.dumps(plan(pairs, name, students=students, think_s=args.think)))
    started = time.strftime("%Y-%m-%d %H:%M")
    print(f"{started}; {os.cpu_count()} cores ({platform.machine()}), python "
          f"{platform.python_version()}, load {os.getloadavg()[0]:.1f}; corpus: {len(pairs)} "
          f"pairs of {name}; students {students}; a slider release every {args.think:g} s; "
          f"files in {folder}", flush=True)
    results: dict[str, list[dict]] = {}
    try:
        for c in configs:
            print(f"\n{c} …", flush=True)
            t = time.monotonic()
            results[c] = run_config(c, plan_file, folder, env)
            print("\n".join(report(c, results[c], slots)), flush=True)
            print(f"  ({time.monotonic() - t:.0f} s with start and warm-up)", flush=True)
    except KeyboardInterrupt:
        print("\nstopped: every process it started is stopped", flush=True)
        return 130
    print(f"\nAll of it (started {started}; `python -m benchmarks.classroom "
          f"{' '.join(argv if argv is not None else sys.argv[1:])}`):")
    print("\n".join(markdown(results)))
    if os.cpu_count() and os.cpu_count() <= 2:
        print(f"\nOn {os.cpu_count()} cores the engine's jobs, replicas and the front end share "
              "the same CPUs: expect no speed-up from replicas or a cluster here.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
