"""``python -m engine align`` end to end, and the alignment API on the real model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from engine.io.cli import main, parser

DATA = Path(__file__).parent / "data" / "align"
FLAGS = ("--pairs", "--gold", "--dev", "--method", "--source", "--layer", "--head", "--tau",
         "--threshold", "--out", "--json")


def test_help_lists_the_flags_and_methods(capsys):
    with pytest.raises(SystemExit):
        parser().parse_args(["align", "--help"])
    text = capsys.readouterr().out
    for flag in FLAGS:
        assert flag in text
    for name in ("softmax-argmax", "softmax-both", "similarity-threshold", "sinkhorn-argmax",
                 "sinkhorn-threshold", "exact", "partial", "unbalanced"):
        assert name in text


@pytest.mark.parametrize("content, message", [
    ("text_a\ttext_b\tgold\na b\tc d\t0-7\n", r"line 2: link 0-7 is out of range"),
    ("\x00\x01", "not a text file"),
])
def test_bad_file_is_a_message_not_a_traceback(tmp_path, capsys, content, message):
    f = tmp_path / "p.tsv"
    f.write_text(content)
    assert main(["align", "--pairs", str(f), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and "Traceback" not in err


def test_gold_file_with_the_wrong_number_of_lines(tmp_path, capsys):
    g = tmp_path / "g.txt"
    g.write_text("0-0\n")
    assert main(["align", "--pairs", str(DATA / "pairs.tsv"), "--gold", str(g)]) == 2
    assert "1 lines but there are 20 pairs" in capsys.readouterr().err


@pytest.fixture(scope="module")
def few(tmp_path_factory) -> Path:
    lines = (DATA / "pairs.tsv").read_text().splitlines()
    f = tmp_path_factory.mktemp("align") / "few.tsv"
    f.write_text("\n".join(lines[:7]) + "\n")
    return f


@pytest.mark.model
@pytest.mark.slow
def test_cli_end_to_end(few, tmp_path, capsys):
    out = tmp_path / "links.txt"
    rc = main(["align", "--pairs", str(few), "--method", "unbalanced", "--tau", "0.5",
               "--out", str(out), "--json", "--bootstrap", "50", "--quiet"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n_pairs"] == 6 and list(doc["methods"]) == ["unbalanced"]
    assert doc["methods"]["unbalanced"]["settings"]["tau"] == 0.5
    sc = doc["methods"]["unbalanced"]["scores"]
    for k in ("f1", "aer", "null_f1", "total_f1"):
        assert 0 <= sc["macro"][k] <= 1 and 0 <= sc["micro"][k] <= 1
        lo, hi = sc["macro_ci"][k]
        assert lo <= sc["macro"][k] <= hi
    assert sc["macro"]["f1"] > 0.5  # MiniLM aligns these easy paraphrases
    lines = out.read_text().splitlines()
    assert len(lines) == 6
    for line, al in zip(lines, doc["alignments"]["pairs"]):
        assert re.fullmatch(r"(\d+-\d+( \d+-\d+)*)?", line)
        assert line == al["pharaoh"]
    # the table with every method, settings tuned on a dev file
    assert main(["align", "--pairs", str(few), "--dev", str(few), "--bootstrap", "0",
                 "--quiet"]) == 0
    table = capsys.readouterr().out
    assert "tuned on dev" in table
    for name in ("softmax-argmax", "exact", "partial", "unbalanced"):
        assert re.search(rf"^{name}\s+[01]\.\d{{3}}", table, re.M)


@pytest.mark.model
def test_align_pairs_batched_equals_one_by_one_and_round_trips():
    from engine.alignment.api import Alignment, align, align_pairs

    pairs = [("the cat sat on the mat", "a cat was sitting on the mat", "1-1 2-3 3-4 4-5 5-6"),
             ("he bought a new car", "he purchased a brand new vehicle", "0-0 1-1 3-4 4-5"),
             ("i like tea", "i enjoy green tea very much", "0-0 1-1 2-3")]
    batch = align_pairs(pairs, method="sinkhorn-threshold", threshold=0.4)
    for (a, b, g), got in zip(pairs, batch):
        alone = align(a, b, gold=g, method="sinkhorn-threshold", threshold=0.4)
        assert alone.links == got.links
        np.testing.assert_allclose(alone.values, got.values, atol=1e-6)
        assert alone.scores == pytest.approx(got.scores)
        back = Alignment.from_dict(json.loads(json.dumps(got.to_dict())))
        assert back.links == got.links and back.null_b == got.null_b
        assert set(got.null_a) == set(range(len(a.split()))) - {i for i, _ in got.links}
    att = align_pairs(pairs[:1], source="attention", layer=1, head=3, method="softmax-argmax")
    assert att[0].source == {"source": "attention", "layer": 1, "head": 3, "center": False}
    assert att[0].values.shape == (6, 7)


@pytest.mark.model
@pytest.mark.slow
def test_tune_on_dev_reports_test():
    from engine.alignment.api import tune
    from engine.alignment.readers import read_pairs

    pairs = read_pairs(DATA / "pairs.tsv")
    t = tune(pairs[:6], pairs[6:10], methods=("softmax-argmax", "sinkhorn-threshold"),
             bootstrap=0)
    assert set(t.settings) == set(t.dev) == set(t.test) == {"softmax-argmax",
                                                             "sinkhorn-threshold"}
    assert t.test["sinkhorn-threshold"].n_pairs == 4
    # the dev score at the picked threshold is the best over the threshold grid
    from engine.alignment.api import evaluate_grid, score_corpus
    from engine.alignment.score import METRICS

    res = evaluate_grid(score_corpus(pairs[:6]), "sinkhorn-threshold")
    mean = res.metric_sums[0, 0] / 6
    p, r = mean[:, METRICS.index("total_precision")], mean[:, METRICS.index("total_recall")]
    best = np.max(np.where(p + r > 0, 2 * p * r / np.maximum(p + r, 1e-12), 0))
    assert t.dev["sinkhorn-threshold"].macro["total_f1"] == pytest.approx(best, abs=1e-9)
    assert json.loads(json.dumps(t.to_dict()))["settings"]["softmax-argmax"]["direction"] == \
        "intersection"
