"""The Lab's text comparison (the engine's ``compare_text`` job), on a tiny model: the
split the page shows before it sends the job (``engine.jobs.split``), progress that only
moves forward, Stop keeping the aligner in training and skipping the next, its zip.

The tiny random BERT (tests/support/tiny_models.py) learns the synthetic relation of
tests/test_aligner.py: identity links between content words, with filler words left
unaligned in the gold.
"""

from __future__ import annotations

import io
import time
import zipfile

import pytest

from engine.jobs import results
from engine.jobs.local import LocalJobs
from engine.jobs.split import null_share, split
from engine.lab.errors import LabError
from tests.test_aligner import synthetic_pairs


@pytest.fixture(scope="module")
def tiny(tiny_models):
    from engine.models.encoder import Encoder

    return Encoder.load(str(tiny_models["bert"]), device="cpu")


def test_split_holds_out_the_last_quarter_and_caps_the_training_pairs():
    pairs = synthetic_pairs(40, 0)
    sp = split(pairs, 20)
    assert sp.test == tuple(pairs[30:]) and sp.dev == tuple(pairs[25:30])
    assert sp.train == tuple(pairs[:20]) and sp.unused == 5
    with pytest.raises(LabError, match="at least 4 pairs with gold links, got 3"):
        split(pairs[:3], 10)
    # every filler is unaligned in the gold: the share counts them over all words
    share = null_share(pairs[:5])
    fillers = sum(w in ("the", "of", "and", "to") for p in pairs[:5]
                  for w in p.words_a + p.words_b)
    assert share == pytest.approx(fillers / sum(sum(p.shape) for p in pairs[:5]))


def test_stop_keeps_the_aligner_in_training_skips_the_next_and_still_compares(tiny, tmp_path):
    pairs = synthetic_pairs(32, 4)
    body = {"kind": "compare_text", "settings": {"model": tiny.name, "epochs": 20,
                                                 "bootstrap": 50},
            "data": {"pairs": [p.to_dict() for p in pairs]}}
    jobs = LocalJobs(lambda name: tiny, models=lambda: [tiny.name], slots=1, every=0.0)
    st = jobs.submit(body)
    shares, end = [], time.monotonic() + 240
    while True:
        s = jobs.status(st["id"])
        shares.append(s["progress"])
        if s["state"] not in ("waiting", "running"):
            break
        if s["info"].get("stage") == "dev" and s["info"].get("final") == "sinkhorn":
            jobs.stop(st["id"])  # after the Sinkhorn aligner's first epoch was scored
        assert time.monotonic() < end, "timed out"
        time.sleep(0.002)
    assert shares == sorted(shares)  # the bar only moves forward
    doc, files = jobs.outcome(st["id"])
    r = results.read(doc)
    assert s["state"] == "stopped" and r.status == "stopped"
    assert list(r.trained) == ["sinkhorn"] == list(files)  # the softmax one never started
    run = r.trained["sinkhorn"].run
    assert run.stopped == "requested" and 1 <= run.epochs < 20
    assert run.dev_total_f1 == max(f for _, f in r.history["sinkhorn"])
    assert list(r.paired) == [("sinkhorn", "untrained")]
    p = r.paired[("sinkhorn", "untrained")]
    assert p.delta == pytest.approx(r.trained["sinkhorn"].score.macro["total_f1"]
                                    - r.untrained["score"].macro["total_f1"])

    # The download: a folder that loads back, with the run's θ.
    from engine.aligner import checkpoint

    with zipfile.ZipFile(io.BytesIO(files["sinkhorn"])) as z:
        assert sorted(z.namelist()) == ["sinkscope-aligner-sinkhorn/config.json",
                                        "sinkscope-aligner-sinkhorn/model.safetensors"]
        z.extractall(tmp_path)
    back = checkpoint.load(tmp_path / "sinkscope-aligner-sinkhorn", encoder=tiny)
    assert back.theta == pytest.approx(run.theta)
