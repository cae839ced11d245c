"""Long work as jobs of a session (sinkscope_app.jobs): progress, Stop as a cooperative
cancel that keeps partial results, the same inputs never started twice, and a machine-wide
limit on heavy jobs under which a second job waits and knows its place in line."""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest

from engine import settings
from sinkscope_app import jobs


@pytest.fixture
def slots(tmp_path, monkeypatch):
    """The machine's slots in a folder of this test's own, one slot."""
    s = jobs.Slots(tmp_path / "slots")
    monkeypatch.setattr(jobs, "SLOTS", s)
    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(settings.CONFIG, heavy_jobs=1))
    return s


def counting(gate: threading.Event, n: int = 50):
    """Work that counts to ``n``, keeping what it has counted, held at 3 until ``gate``."""
    def work(job: jobs.Job):
        job.result = []
        for k in range(n):
            if k == 3:
                gate.wait(10)
            job.check()
            job.result.append(k)
            job.report((k + 1) / n, done=k + 1, total=n)
            time.sleep(0.002)
        return job.result
    return work


def test_a_job_reports_progress_and_its_result_and_the_same_key_is_the_same_job(slots):
    store, gate = {}, threading.Event()
    job = jobs.start(store, "count", "k1", counting(gate))
    assert jobs.start(store, "count", "k1", counting(gate)) is job  # a rerun finds it
    assert jobs.get(store, "count") is job and job.active
    gate.set()
    assert job.wait(10)
    assert job.state == "done" and job.result == list(range(50)) and job.progress == 1.0
    assert job.info == {"done": 50, "total": 50} and job.seconds > 0
    again = jobs.start(store, "count", "k2", counting(threading.Event(), 2))
    assert again is not job and again.wait(10) and again.result == [0, 1]


def test_stop_is_a_cooperative_cancel_that_keeps_the_partial_result(slots):
    store, gate = {}, threading.Event()
    job = jobs.start(store, "count", "k", counting(gate))
    while len(job.result or []) < 3:
        time.sleep(0.01)
    job.stop()
    gate.set()
    assert job.wait(10)
    assert job.state == "stopped" and job.result == [0, 1, 2]  # what it had reached


def test_a_second_heavy_job_waits_while_the_limit_is_reached_and_knows_its_place(slots):
    store_a, store_b, store_c = {}, {}, {}
    gate = threading.Event()
    first = jobs.start(store_a, "count", "a", counting(gate, 5))
    while first.state != "running":
        time.sleep(0.01)
    second = jobs.start(store_b, "count", "b", counting(threading.Event(), 2))
    third = jobs.start(store_c, "count", "c", counting(threading.Event(), 2))
    deadline = time.monotonic() + 5
    while (second.place, third.place) != (1, 2) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert second.state == third.state == "waiting"
    assert (second.place, third.place) == (1, 2)  # first come, first served
    assert not list(slots.folder.glob("*")) or first.state == "running"
    gate.set()
    assert first.wait(10) and second.wait(10) and third.wait(10)
    assert [j.state for j in (first, second, third)] == ["done"] * 3
    assert second.place == third.place == 0
    assert second.ended <= third.started + 1e-6  # one at a time


def test_a_waiting_job_stopped_never_runs(slots):
    gate = threading.Event()
    first = jobs.start({}, "count", "a", counting(gate, 5))
    while first.state != "running":
        time.sleep(0.01)
    waiting = jobs.start({}, "count", "b", counting(threading.Event(), 2))
    while waiting.place != 1:
        time.sleep(0.01)
    waiting.stop()
    assert waiting.wait(10) and waiting.state == "stopped" and waiting.result is None
    gate.set()
    assert first.wait(10) and first.state == "done"


def test_a_failing_job_keeps_its_error_and_a_light_job_takes_no_slot(slots):
    def broken(job):
        raise ValueError("no pairs")

    job = jobs.start({}, "bad", "k", broken, heavy=False)
    assert job.wait(10) and job.state == "failed" and str(job.error) == "no pairs"
    assert not list(slots.folder.glob("slot-*"))  # never asked for a slot


def test_watch_draws_until_the_job_ends(slots):
    job = jobs.start({}, "quick", "k", lambda j: [j.report(k / 10) for k in range(10)])
    drawn = []
    jobs.watch(job, lambda j: drawn.append(j.state), every=0.01)
    assert drawn and drawn[-1] == "done" and not job.active


def test_stop_keeps_a_sweeps_partial_results(slots):
    """The Lab's "Error vs width" sweep, run as a job and stopped at its second width,
    keeps the error it reached (NaN for the widths not reached)."""
    from engine.lab.training import LabSettings
    from sinkscope_app.lab import runs

    s = LabSettings(target="quantile", width=4, depth=1, steps=40, train_pairs=32,
                    heldout_pairs=4)
    job = jobs.start({}, "lab_sweep", "k", runs.sweep(s, ["context-free"]))
    deadline = time.monotonic() + 60
    while job.info.get("width", 0) < 2 and job.active and time.monotonic() < deadline:
        time.sleep(0.005)
    job.stop()
    assert job.wait(60) and job.state == "stopped"
    e = job.result["errors"]["context-free"]
    assert np.isfinite(e[0]) and np.isnan(e[-1]), e  # width 1 kept, width 32 never run
