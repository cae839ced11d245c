"""Each job kind on the embedded engine (engine.jobs.local), on tiny data: the Lab's
training (Stop keeps each model's best weights; the held-out view from its weights) and
sweep (Stop keeps the widths reached), a corpus aligned by every method (the Align page's
own table and verdict; Stop keeps the pairs aligned so far, labelled partial) on the real
model, and an aligner trained and the Lab's text comparison on a tiny model (the zips hold
aligners that load)."""

from __future__ import annotations

import io
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from engine.jobs import results, text
from engine.jobs.errors import JobError
from engine.jobs.local import LocalJobs
from tests.test_aligner import synthetic_pairs

DATA = Path(__file__).parent / "data" / "align" / "pairs.tsv"
LAB = {"models": ["sinkhorn", "softmax"], "train_pairs": 32, "heldout_pairs": 8, "width": 4,
       "depth": 1, "half_steps": 10, "eval_every": 5}


def run(jobs: LocalJobs, body: dict, stop_when=None, timeout: float = 240):
    """Start a job, Stop it once ``stop_when(status)`` holds, wait; (status, result)."""
    st = jobs.submit(body)
    end = time.monotonic() + timeout
    stopped = False
    while True:
        s = jobs.status(st["id"])
        if s["state"] not in ("waiting", "running"):
            break
        if stop_when is not None and not stopped and stop_when(s):
            jobs.stop(st["id"])
            stopped = True
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)
    doc, files = jobs.outcome(st["id"])
    return s, results.read(doc), files


def test_lab_training_stopped_keeps_each_model_s_best_weights_and_predicts_from_them():
    from engine.lab.training import heldout_pairs, plan_errors, predict
    from sinkscope_app.engines import Embedded

    jobs = LocalJobs(slots=1, every=0.0)
    body = {"kind": "lab_train", "settings": {**LAB, "steps": 5000}}
    s, r, _ = run(jobs, body, lambda s: s["info"].get("model") == "sinkhorn"
                  and s["info"].get("step", 0) >= 20)
    assert s["state"] == "stopped" and r.status == "stopped"
    assert list(r.runs) == ["sinkhorn"] and r.runs["sinkhorn"].stopped == "requested"
    steps, l1 = r.curves["sinkhorn"]
    assert 20 <= steps[-1] < 5000 and r.curves["softmax"] == ((), ())
    assert r.runs["sinkhorn"].heldout_l1 == pytest.approx(min(l1), abs=1e-6)  # the best kept
    # The held-out view from the weights: what the engine's own predict gives.
    eng = Embedded()
    p = eng.lab_predict(r.settings["sinkhorn"], r.weights, size=8, pair=3)
    model = rebuild(r.settings["sinkhorn"], r.weights["sinkhorn"])
    pairs, plans = heldout_pairs(r.settings["sinkhorn"], 8)
    one = pairs.take([3])
    P = predict(model, one)
    np.testing.assert_array_equal(p.plans["sinkhorn"], P[0])
    np.testing.assert_array_equal(p.target, plans[3])
    assert p.errors["sinkhorn"]["l1"] == plan_errors(P, plans[3:4], one)[0]
    assert (p.pair, p.n_pairs, p.x.shape) == (3, 8, (8, 2))
    other = eng.lab_predict(r.settings["sinkhorn"], r.weights, size=12, pair=99)
    assert other.pair == 15 and other.plans["sinkhorn"].shape == (12, 12)  # 16 fresh pairs
    with pytest.raises(JobError) as e:
        eng.lab_predict(r.settings["sinkhorn"].__class__(width=8), r.weights, size=8)
    assert e.value.code == "job_weights"


def rebuild(settings, weights):
    import torch

    from engine.lab.training import build

    model = build(settings)
    model.load_state_dict({k: torch.as_tensor(v) for k, v in weights.items()})
    return model.eval()


def test_the_sweep_stopped_keeps_the_widths_reached():
    jobs = LocalJobs(slots=1, every=0.0)
    body = {"kind": "lab_sweep", "settings": {**LAB, "models": ["softmax"], "steps": 4}}
    s, r, _ = run(jobs, body, lambda s: s["info"].get("done", 0) >= 2)
    assert r.status == "stopped" and r.widths == (1, 2, 4, 8, 16, 32) and r.steps == 4
    e = r.errors["softmax"]
    reached = int(np.isfinite(e).sum())
    assert 2 <= reached < 6 and np.isfinite(e[:reached]).all() and np.isnan(e[reached:]).all()


@pytest.mark.model
def test_a_corpus_job_is_the_engine_s_comparison_and_a_stopped_one_keeps_its_pairs(monkeypatch):
    """The Align page's corpus is this job: every method's links and scores are what
    ``engine.alignment.api.compare_methods`` gives for the same pairs (the command line's
    table), ranked the same; Stop keeps the pairs aligned so far, scored, partial."""
    from engine.alignment.api import compare_methods, method_of, score_corpus
    from engine.alignment.extract import METHODS
    from engine.alignment.readers import links_text, read_pairs
    from sinkscope_app.engines import Embedded

    pairs = read_pairs(DATA)[:6]
    eng = Embedded()
    want = compare_methods(score_corpus(pairs, encoder=eng.model("all-MiniLM-L6-v2"),
                                        lowercase=True),
                           {m: method_of(m) for m in METHODS}, bootstrap=1000, ranked=True)
    body = {"kind": "align_corpus", "settings": {"lowercase": True},
            "data": {"pairs": [p.to_dict() for p in pairs], "name": "pairs.tsv"}}
    s, c, _ = run(LocalJobs(eng.model, slots=1, every=0.0), body)
    assert s["state"] == "done" and c.status == "done" and not c.partial
    assert c.methods == tuple(METHODS) and c.pairs == tuple(p.to_dict() for p in pairs)
    for m, als in want.alignments.items():
        assert c.links[m] == tuple(links_text(a.links) for a in als), m
        assert c.f1[m] == tuple(a.scores["f1"] for a in als), m
        assert c.scores[m]["macro"] == pytest.approx(want.scores[m].macro, abs=1e-12)
    assert c.n_gold == 6 and c.gold_column and c.command == "python -m engine align " \
        "--pairs pairs.tsv --lowercase"
    v, w = c.verdict, want.verdict
    assert [r.method for r in v.ranked] == [r.method for r in w.ranked] and v.best == w.best
    assert [(p.method, p.vs, p.delta) for p in v.against_baseline()] == \
        [(p.method, p.vs, p.delta) for p in w.against_baseline()]
    # Stop after the first chunk of two pairs: those two, scored and ranked, partial.
    monkeypatch.setattr(text, "CHUNK", 2)
    s, c, _ = run(LocalJobs(eng.model, slots=1, every=0.0), body,
                  lambda s: s["info"].get("done", 0) >= 2)
    assert s["state"] == "stopped" and c.partial and c.n_total == 6
    assert 2 <= len(c.pairs) < 6 and c.pairs == tuple(p.to_dict() for p in pairs)[:len(c.pairs)]
    assert c.n_gold == len(c.pairs) and c.verdict.n_pairs == len(c.pairs)
    assert all(len(v) == len(c.pairs) for v in c.links.values())


@pytest.fixture(scope="module")
def tiny(tiny_models):
    from engine.models.encoder import Encoder

    return Encoder.load(str(tiny_models["bert"]), device="cpu")


def as_dicts(pairs):
    return [p.to_dict() for p in pairs]


def test_an_aligner_job_gives_a_zip_that_loads(tiny, tmp_path):
    from engine.aligner import checkpoint

    pairs = synthetic_pairs(12, 1)
    body = {"kind": "train_aligner",
            "settings": {"name": "tiny-aligner", "model": tiny.name, "layer": 2, "top": 1,
                         "epochs": 2, "batch": 4, "patience": 0},
            "data": {"train": as_dicts(pairs[:8]), "dev": as_dicts(pairs[8:])}}
    s, r, files = run(LocalJobs(lambda name: tiny, models=lambda: [tiny.name], slots=1, every=0.0), body)
    assert s["state"] == "done" and s["files"] == ["aligner"] and r.files == ("aligner",)
    assert r.run.epochs == 2 and len(r.history) == 2 and 1 <= r.run.best_epoch <= 2
    with zipfile.ZipFile(io.BytesIO(files["aligner"])) as z:
        assert sorted(z.namelist()) == ["tiny-aligner/config.json",
                                        "tiny-aligner/model.safetensors"]
        z.extractall(tmp_path)
    back = checkpoint.load(tmp_path / "tiny-aligner", encoder=tiny)
    assert back.theta == pytest.approx(r.run.theta) and back.name == "tiny-aligner"


def test_the_text_comparison_job_compares_three_with_paired_intervals(tiny):
    pairs = synthetic_pairs(24, 3)
    body = {"kind": "compare_text", "settings": {"model": tiny.name, "epochs": 1,
                                                 "bootstrap": 50},
            "data": {"pairs": as_dicts(pairs)}}
    s, r, files = run(LocalJobs(lambda name: tiny, models=lambda: [tiny.name], slots=1, every=0.0), body)
    assert s["state"] == "done" and r.status == "done"
    assert r.sizes == {"train": 15, "dev": 3, "test": 6, "unused": 0}
    assert r.untrained["method"] and r.untrained["score"].n_pairs == 6
    assert set(r.trained) == {"sinkhorn", "softmax"} == set(files) == set(r.files)
    assert set(r.paired) == {("sinkhorn", "untrained"), ("softmax", "untrained"),
                             ("sinkhorn", "softmax")}
    for p in r.paired.values():
        lo, hi = p.ci95
        assert lo <= p.delta <= hi and 0 <= p.p <= 1  # 0: no resample crossed 0
    assert r.history["sinkhorn"] == ((1, r.trained["sinkhorn"].run.dev_total_f1),)
