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


# ------------------------------------------------ the verdict on the command line, no model
def _fake_scores(monkeypatch):
    """score_corpus without the model: scores that favour the gold links, with noise."""
    from engine.alignment import api

    def fake(pairs, *, encoder=None, source=api.DEFAULT_SOURCE, progress=None, **kw):
        pairs = api.as_pairs(pairs)
        rng = np.random.default_rng(0)
        S = []
        for p in pairs:
            s = rng.normal(0, 0.3, p.shape)
            for i, j in p.sure:
                s[i, j] += 1.0
            S.append(s)
        return api.Scored(pairs, tuple(S), tuple(np.ones(p.shape[0], bool) for p in pairs),
                          tuple(np.ones(p.shape[1], bool) for p in pairs), source)

    monkeypatch.setattr(api, "score_corpus", fake)


def test_json_carries_the_verdict_and_the_table_ranks(monkeypatch, capsys, tmp_path):
    _fake_scores(monkeypatch)
    rows = (DATA / "pairs.tsv").read_text().splitlines()
    f = tmp_path / "p.tsv"
    f.write_text("\n".join(rows[:9] + [rows[9].rsplit("\t", 1)[0] + "\t"]) + "\n")
    assert main(["align", "--pairs", str(f), "--json", "--bootstrap", "200", "--quiet"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n_pairs"] == 9 and doc["n_gold"] == 8  # an empty gold cell: no gold
    assert doc["ranked"][0] == doc["best"]
    totals = [doc["methods"][m]["scores"]["macro"]["total_f1"] for m in doc["ranked"]]
    assert totals == sorted(totals, reverse=True)
    best = doc["best"]
    against = [p for p in doc["paired"] if p["vs"] == best]
    assert [p["method"] for p in against] == doc["ranked"][1:]
    transport = [p["method"] for p in doc["paired"] if p["vs"] == "softmax-argmax"]
    assert set(transport) >= set(TRANSPORT) - {best} and "softmax-both" not in transport
    for p in doc["paired"]:
        assert set(p) == {"method", "vs", "delta_total_f1", "ci95", "p"}
        lo, hi = p["ci95"]
        assert lo <= p["delta_total_f1"] <= hi and 0 <= p["p"] <= 1
        assert (p["p"] < 0.05) == (lo > 0 or hi < 0)  # one test: p and its interval agree
        want = (doc["methods"][p["method"]]["scores"]["macro"]["total_f1"]
                - doc["methods"][p["vs"]]["scores"]["macro"]["total_f1"])
        assert p["delta_total_f1"] == pytest.approx(want, abs=1e-12)
    assert doc["methods"]["unbalanced"]["settings"] == {"method": "unbalanced",
                                                        "threshold": 0.42, "tau": 4.94,
                                                        "eps": 0.1}
    assert doc["command"] == f"python -m engine align --pairs {f} --bootstrap 200"
    assert main(["align", "--pairs", str(f), "--bootstrap", "200", "--quiet"]) == 0
    table = capsys.readouterr().out
    assert "9 pairs (8 with gold, scored)" in table
    names = re.findall(r"^(\S+)\s+[01]\.\d{3}", table, re.M)
    assert names == doc["ranked"]
    assert re.search(rf"^{best}\s.*\s+best\s+\S", table, re.M)
    for m in doc["ranked"][1:]:
        delta = doc["methods"][m]["scores"]["macro"]["total_f1"] - doc["methods"][best][
            "scores"]["macro"]["total_f1"]
        assert re.search(rf"^{m}\s.*\s{delta:+.3f}\s+\S+=", table, re.M)
    assert "threshold=0.42 tau=4.94 eps=0.1" in table
    assert "Paired on the same 8 pairs" in table and "transport against softmax-argmax" in table


TRANSPORT = ("sinkhorn-argmax", "sinkhorn-threshold", "exact", "partial", "unbalanced")


@pytest.mark.parametrize("argv", [
    ["--method", "unbalanced", "--threshold", "0.3", "--tau", "1"],
    ["--set", "partial:mass=0.5,threshold=0.2", "--set", "softmax-argmax:direction=union",
     "--lowercase", "--source", "attention", "--layer", "1", "--head", "4"],
    ["--method", "softmax-both", "--set", "softmax-both:temperature=0.5", "--bootstrap", "0"],
])
def test_the_command_line_reproduces_the_settings(argv, monkeypatch, capsys, tmp_path):
    """The JSON's command, run again, gives the same settings (and the same command)."""
    import shlex

    _fake_scores(monkeypatch)
    f = tmp_path / "my pairs.tsv"
    f.write_text((DATA / "pairs.tsv").read_text())
    assert main(["align", "--pairs", str(f), "--json", "--quiet", *argv]) == 0
    doc = json.loads(capsys.readouterr().out)
    again = shlex.split(doc["command"])
    assert again[:4] == ["python", "-m", "engine", "align"]
    assert main(again[3:] + ["--json", "--quiet"]) == 0
    doc2 = json.loads(capsys.readouterr().out)
    assert {k: v["settings"] for k, v in doc2["methods"].items()} == \
        {k: v["settings"] for k, v in doc["methods"].items()}
    assert doc2["source"] == doc["source"] and doc2["command"] == doc["command"]


@pytest.mark.parametrize("value, message", [
    ("partial", "METHOD:KEY=VALUE"), ("nope:tau=1", "METHOD:KEY=VALUE"),
    ("unbalanced:tau", "not KEY=VALUE"), ("unbalanced:rho=1", "not KEY=VALUE"),
    ("unbalanced:tau=big", "tau must be a number"), ("softmax-argmax:direction=up", "direction"),
    ("unbalanced:tau=-1", "tau, eps and temperature must be > 0"),
])
def test_bad_settings_are_a_message(value, message, monkeypatch, capsys):
    _fake_scores(monkeypatch)
    assert main(["align", "--pairs", str(DATA / "pairs.tsv"), "--set", value, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
