"""The classroom benchmark's own logic (``benchmarks.classroom``): its figures, its CPU
accounting of a process tree, its clean-up of processes that outlive their parent, the job
bodies it sends (the pages' own), and one student on the embedded engine, tiny settings."""

from __future__ import annotations

import math
import subprocess
import sys
import time

import numpy as np
import pytest

from benchmarks import classroom as cr


def test_summary_is_p50_and_p95_in_ms_and_says_when_there_is_nothing():
    s = cr.summary([k / 1000 for k in range(1, 101)])  # 1 … 100 ms
    assert s["n"] == 100
    assert s["p50_ms"] == pytest.approx(50.5) and s["p95_ms"] == pytest.approx(95.05)
    empty = cr.summary([])
    assert empty["n"] == 0 and math.isnan(empty["p50_ms"]) and math.isnan(empty["p95_ms"])


BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def test_tree_cpu_counts_a_child_that_has_ended_and_sweep_kills_what_outlived_its_parent():
    # A parent that runs a child burning 0.4 s of CPU to its end (and reaps it), then starts
    # a grandchild that sleeps on, then burns 0.2 s itself and waits.
    code = (f"import subprocess, sys, time\n"
            f"subprocess.run([sys.executable, '-c', {BURN.format(s=0.4)!r}])\n"
            f"subprocess.Popen(['sleep', '60'])\n"
            f"{BURN.format(s=0.2)}"
            f"print('ready', flush=True)\n"
            f"time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    snap = {}
    try:
        assert parent.stdout.readline().strip() == "ready"
        assert cr.tree_cpu(parent.pid) >= 0.55  # the ended child's 0.4 s is counted
        snap = cr.snapshot(parent.pid)
        assert len(snap) == 1  # the sleeping grandchild
        parent.kill()
        parent.wait(timeout=10)
        assert cr.survivors(snap) == list(snap)  # it outlived its parent
        assert cr.sweep(snap) == list(snap)
        assert cr.survivors(snap) == [] and cr.tree_cpu(parent.pid) == 0.0
    finally:
        parent.kill()
        parent.wait(timeout=10)
        cr.sweep(snap)


def test_the_jobs_are_the_pages_own_and_within_the_engine_s_budgets():
    from engine.jobs.spec import check, price
    from sinkscope_app.lab.params import DEFAULTS as D

    lab = check(cr.lab_body())
    assert lab.models == tuple(D["lab_models"]) and len(lab.models) == 3
    s = lab.settings
    assert (s.target, s.width, s.depth, s.eps, s.steps, s.train_pairs, s.heldout_pairs) == (
        D["lab_target"], D["lab_width"], D["lab_depth"], D["lab_eps"], D["lab_steps"],
        D["lab_train_pairs"], D["lab_heldout_pairs"])
    price(lab).check()

    pairs = cr.generated_corpus(cr.CORPUS_PAIRS)
    assert pairs == cr.generated_corpus(cr.CORPUS_PAIRS)  # the same corpus every run
    body = check(cr.corpus_body(pairs, "generated.tsv"))
    assert len(body.pairs) == 200 and all(p.has_gold and p.sure for p in body.pairs)
    assert body.settings["bootstrap"] == 1000 and not body.settings["lowercase"]
    price(body).check()
    for k, p in enumerate(body.pairs[:20]):  # gold links join equal words where kept
        a, b = p.words_a, p.words_b
        assert 12 <= len(a) <= 36 and any(a[i] == b[j] for i, j in p.sure), k


def test_slider_moves_walk_over_the_main_page_s_stops():
    p = cr.plan(cr.generated_corpus(4), "x.tsv", lab={"kind": "lab_train", "settings": {
        "models": ["sinkhorn"]}, "data": {}})
    moves = cr.Moves(p, seed=3)
    seen = [moves.next() for _ in range(400)]
    assert {e for e, _ in seen} <= set(p["eps"]) and {s for _, s in seen} <= set(p["steps"])
    assert len({e for e, _ in seen}) > 5 and len({s for _, s in seen}) > 3
    assert min(p["eps"]) >= cr.EPS_RANGE[0] and max(p["steps"]) <= cr.MAX_STEPS
    again = cr.Moves(p, seed=3)
    assert [again.next() for _ in range(400)] == seen  # each student's walk, every run


@pytest.mark.model
def test_one_student_on_the_embedded_engine_gets_both_results_and_the_figures_add_up():
    from engine.relation.relate import default_encoder
    from sinkscope_app.engines import Embedded

    class Shared(Embedded):
        def model(self, name):  # the process's packaged model, shared with other tests
            return default_encoder()

    pairs = cr.generated_corpus(4, seed=1)
    lab = {"kind": "lab_train", "data": {}, "settings": {
        "models": ["sinkhorn"], "steps": 30, "train_pairs": 64, "heldout_pairs": 8}}
    p = cr.plan(pairs, "tiny.tsv", students=[1], think_s=0.05, lab=lab,
                corpus_job=cr.corpus_body(pairs, "tiny.tsv", bootstrap=0))
    eng = Shared()
    alone = cr.warm_up(eng, p)
    assert alone["n"] == cr.ALONE_MOVES and alone["p50_ms"] > 0
    t = time.monotonic()
    row = cr.classroom(eng, 1, p)
    took = time.monotonic() - t
    assert row["errors"] == [] and row["finished"] == 1
    assert row["states"] == {"lab_train done": 1, "align_corpus done": 1}
    assert 0 < row["last_s"] == row["median_s"] <= row["wall_s"] <= took
    assert row["slider_all"]["n"] >= 1 and row["looks"] >= 2
    assert row["slider_training"]["n"] <= row["slider_all"]["n"]
    assert row["cpu_front_end"] > 0 and row["cpu_engine"] is None  # the engine is in it
    assert all(0 < s <= row["last_s"] for s in row["job_s"].values())
    rows = [{"alone": alone}, row, {"front_end": {"peak_mb": 500.0, "torch": True}}]
    text = "\n".join(cr.report("embedded", rows, 1))
    assert "slider alone" in text and "torch loaded" in text
    table = cr.markdown({"embedded": rows})
    assert table[2].startswith(f"| embedded | 1 | {row['last_s']:.1f} s |")
    assert np.isfinite(row["slider_all"]["p95_ms"])
