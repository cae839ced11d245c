"""The Lab's text comparison as a job (sinkscope_app.lab.runs), on a tiny model: the split,
progress per epoch, Stop keeping the best epoch so far, paired intervals, the download.

The tiny random BERT (tests/support/tiny_models.py) learns the synthetic relation of
tests/test_aligner.py: identity links between content words, with filler words left
unaligned in the gold.
"""

from __future__ import annotations

import io
import time
import zipfile
from dataclasses import replace

import numpy as np
import pytest

from engine.lab.errors import LabError
from sinkscope_app import jobs
from sinkscope_app.lab import runs
from tests.test_aligner import synthetic_pairs


@pytest.fixture(scope="module")
def tiny(tiny_models):
    from engine.models.encoder import Encoder

    return Encoder.load(str(tiny_models["bert"]), device="cpu")


def wait_for(cond, seconds: float = 120.0) -> None:
    end = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)


def test_split_holds_out_the_last_quarter_and_caps_the_training_pairs():
    pairs = synthetic_pairs(40, 0)
    sp = runs.split(pairs, 20)
    assert sp.test == tuple(pairs[30:]) and sp.dev == tuple(pairs[25:30])
    assert sp.train == tuple(pairs[:20]) and sp.unused == 5
    with pytest.raises(LabError, match="at least 4 pairs with gold links, got 3"):
        runs.split(pairs[:3], 10)
    # every filler is unaligned in the gold: the share counts them over all words
    share = runs.null_share(pairs[:5])
    fillers = sum(w in ("the", "of", "and", "to") for p in pairs[:5]
                  for w in p.words_a + p.words_b)
    assert share == pytest.approx(fillers / sum(sum(p.shape) for p in pairs[:5]))


def test_the_job_reports_each_epoch_and_compares_with_paired_intervals(tiny):
    pairs = synthetic_pairs(64, 3)
    s = replace(runs.base_settings(tiny, 2), batch=8, lr=1e-3, head_lr=1e-2, patience=0)
    assert (s.layer, s.top, s.model) == (2, 2, tiny.name)
    shares = []
    job = jobs.start({}, "lab_text", "k", runs.aligners(pairs, tiny, s, 40, bootstrap=200))
    while job.active:
        shares.append(job.progress)
        time.sleep(0.002)
    assert job.state == "done", job.error
    assert shares == sorted(shares) and job.progress == 1.0  # the bar only moves forward
    res = job.result
    assert res["sizes"] == {"train": 40, "dev": 8, "test": 16, "unused": 0}
    assert {final: [e for e, _ in h] for final, h in res["history"].items()} == \
        {"sinkhorn": [1, 2], "softmax": [1, 2]}  # dev total F1 after each epoch
    for final, t in res["trained"].items():
        r = t["run"]
        assert r.dev_total_f1 == max(f for _, f in res["history"][final])
        assert t["score"].n_pairs == 16 and len(t["score"].macro_ci["total_f1"]) == 2
    p = res["paired"][("sinkhorn", "softmax")]
    x, y = (res["trained"][f]["score"].macro["total_f1"] for f in ("sinkhorn", "softmax"))
    assert p.delta == pytest.approx(x - y) and p.ci95[0] <= p.delta <= p.ci95[1]
    u = res["paired"][("sinkhorn", "untrained")]
    assert u.delta == pytest.approx(x - res["untrained"]["score"].macro["total_f1"])


def test_stop_keeps_the_best_epoch_so_far_and_still_compares(tiny, tmp_path):
    pairs = synthetic_pairs(64, 4)
    s = replace(runs.base_settings(tiny, 50), batch=8, lr=1e-3, head_lr=1e-2, patience=0)
    job = jobs.start({}, "lab_text", "k", runs.aligners(pairs, tiny, s, 40, bootstrap=100))
    wait_for(lambda: len((job.result or {}).get("history", {}).get("sinkhorn", [])) >= 2
             or not job.active)
    job.stop()
    assert job.wait(120)
    assert job.state == "stopped", job.error
    res = job.result
    (final,) = res["trained"]  # the softmax aligner was never started
    r = res["trained"]["sinkhorn"]["run"]
    f1s = [f for _, f in res["history"]["sinkhorn"]]
    assert final == "sinkhorn" and r.stopped == "requested" and 2 <= r.epochs < 50
    assert r.dev_total_f1 == max(f1s) and r.best_epoch == 1 + int(np.argmax(f1s))
    assert list(res["paired"]) == [("sinkhorn", "untrained")]

    # The download: a folder that loads back and gives the same links.
    from engine.aligner import checkpoint
    from engine.aligner.extract import align

    blob = runs.aligner_zip(r, "sinkscope-aligner-sinkhorn")
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        assert sorted(z.namelist()) == ["sinkscope-aligner-sinkhorn/config.json",
                                        "sinkscope-aligner-sinkhorn/model.safetensors"]
        z.extractall(tmp_path)
    back = checkpoint.load(tmp_path / "sinkscope-aligner-sinkhorn", encoder=tiny)
    test = pairs[-16:]
    assert [a.links for a in align(back, test)] == [a.links for a in align(r.aligner, test)]
