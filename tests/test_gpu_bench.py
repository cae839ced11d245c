"""The prepared GPU run (``python -m benchmarks.gpu``) on this machine's CPU, quick sizes:
it must finish, pass its own checks and write every section with finite figures, so that
it cannot rot between the rare runs on a GPU."""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("speed", "batching", "serve", "alignment")
CHECKS = ("encoder", "sinkhorn", "grid", "eps_path", "lattice", "unbalanced", "partial", "lab")
# What today's engine has, every part of it: a broken import must fail here, not read as
# "absent" (the script itself still runs on an older tree).
REQUIRED = {"correctness.encoder", "correctness.sinkhorn", "correctness.grid",
            "correctness.eps_path", "correctness.lattice", "correctness.unbalanced",
            "correctness.partial", "correctness.lab", "speed", "batching", "alignment"}


def numbers(x, path=""):
    """Every number in a JSON document, with where it is."""
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return
    if isinstance(x, (int, float)):
        yield path, x
    elif isinstance(x, dict):
        for k, v in x.items():
            yield from numbers(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from numbers(v, f"{path}[{i}]")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HUB_DISABLE_PROGRESS_BARS": "1", "CUDA_VISIBLE_DEVICES": ""}
    p = subprocess.run([sys.executable, "-m", "benchmarks.gpu", "--quick", "--threads", "1",
                        "--out", str(out)], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=240)
    return p, out


def test_quick_run_passes_and_writes_both_files(run):
    p, out = run
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "every check passed" in p.stdout
    assert (out / "report.md").is_file() and (out / "figures.json").is_file()


def test_figures_have_every_section_with_finite_numbers(run):
    _, out = run
    doc = json.loads((out / "figures.json").read_text())
    assert doc["schema"] == "sinkscope.gpu/1"
    assert set(doc["correctness"]) == set(CHECKS)
    statuses = {f"correctness.{k}": v["status"] for k, v in doc["correctness"].items()}
    statuses.update({k: doc[k]["status"] for k in SECTIONS})
    assert all(s in ("ok", "absent", "skipped") for s in statuses.values()), statuses
    assert all(statuses[k] == "ok" for k in REQUIRED), statuses
    assert doc["non_finite"] == []
    found = list(numbers(doc))
    assert len(found) > 100
    bad = [(where, v) for where, v in found if not math.isfinite(v)]
    assert not bad
    # The small-ε rows are there, finite, within their bound, and on both solver paths.
    rows = doc["correctness"]["sinkhorn"]["rows"]
    small = [r for r in rows if r["eps"] == 0.01 and r["method"] in ("auto", "log")]
    assert {(r["scores"], r["method"]) for r in small} == {
        (s, m) for s in ("model", "wide") for m in ("auto", "log")}
    assert all(r["finite"] and r["ok"] and r["plan_rel"] <= r["bound"] for r in small)
    assert max(r["range_over_eps"] for r in small) > 2000  # where kernel scaling cannot go
    one = [r for r in rows if r["half_steps"] == 1]
    assert len(one) == 2 * len(doc["plan"]["eps"]) and all(r["ok"] for r in one)
    # The model is the packaged architecture with random weights.
    m = doc["model"]
    assert (m["layers"], m["heads"], m["hidden"]) == (6, 12, 384) and "random" in m["weights"]


def test_speed_and_batching_rows_cover_the_plan(run):
    _, out = run
    doc = json.loads((out / "figures.json").read_text())
    speed = doc["speed"]["rows"]
    assert [[r["B"], r["n"]] for r in speed] == doc["plan"]["workloads"]
    assert all(r["ms_100_iter"] > 0 and r["loop_gbps"] > 0 and r["half_steps_to_tol"] >= 1
               for r in speed)
    assert doc["speed"]["figures"]["copy_gbps"] > 0
    rows = doc["batching"]["rows"]
    assert {(r["work"], r["requests"]) for r in rows} == {
        (w, n) for w in ("encode", "relate", "new texts") for n in doc["plan"]["clients"]}
    assert all(r["one_rps"] > 0 and r["batched_rps"] > 0 for r in rows)
    assert set(doc["batching"]["figures"]["speedup_at_16"]) == {"encode", "relate", "new texts"}


def test_report_has_every_section_and_says_it_ran_without_cuda(run):
    _, out = run
    text = (out / "report.md").read_text()
    for heading in ("## The model", "## 1. Correctness", "## 2. Speed", "## 3. Batching",
                    "## 4. Corpus alignment", "## Verdict", "### Lab", "### Partial",
                    "### Unbalanced", "### Live sliders' lattice", "### ε path",
                    "### Heads grid", "### Through `python -m engine serve`"):
        assert heading in text, heading
    assert "No CUDA device here" in text and "Every check passed." in text
    assert not re.search(r"\b(nan|inf)\b", text, re.IGNORECASE)
