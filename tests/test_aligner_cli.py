"""``python -m engine train-aligner`` and ``align --aligner``: outputs, exit statuses, messages.

Everything runs in-process through ``engine.io.cli.main`` on the tiny BERT and the
synthetic relation of tests/test_aligner.py.
"""

from __future__ import annotations

import json

import pytest

from engine.io.cli import main
from tests.test_aligner import synthetic_pairs


def write_pairs(path, pairs, gold: bool = True):
    rows = ["text_a\ttext_b" + ("\tgold" if gold else "")]
    for p in pairs:
        links = " ".join(f"{i}-{j}" for i, j in sorted(p.sure))
        rows.append(f"{p.text_a}\t{p.text_b}" + (f"\t{links}" if gold else ""))
    path.write_text("\n".join(rows) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def files(tiny_models, tmp_path_factory):
    d = tmp_path_factory.mktemp("aligner-cli")
    return {"model": str(tiny_models["bert"]),
            "train": write_pairs(d / "train.tsv", synthetic_pairs(32, 0)),
            "dev": write_pairs(d / "dev.tsv", synthetic_pairs(16, 1)),
            "nogold": write_pairs(d / "nogold.tsv", synthetic_pairs(4, 2), gold=False),
            "dir": d}


def train_args(files, out, *extra):
    return ["train-aligner", "--train", files["train"], "--dev", files["dev"], "--out", str(out),
            "--model", files["model"], "--layer", "2", "--top", "1", "--epochs", "1",
            *extra]


@pytest.fixture(scope="module")
def trained_dir(files):
    out = files["dir"] / "aligner"
    assert main(train_args(files, out, "--quiet")) == 0
    return out


def test_train_aligner_prints_exactly_the_documented_json(files, tmp_path, capsys):
    out = tmp_path / "new"
    assert main(train_args(files, out, "--json", "--final", "softmax", "--seed", "3")) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert set(doc) == {"dev_total_f1", "theta", "epochs", "seconds"}
    assert 0 <= doc["dev_total_f1"] <= 1 and doc["epochs"] == 1 and doc["seconds"] > 0
    assert "epoch 1/1 [" in captured.err and "dev total F1" in captured.err  # the progress bar
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors"]
    config = json.loads((out / "config.json").read_text())
    assert config["settings"]["final"] == "softmax" and config["settings"]["seed"] == 3
    assert config["theta"] == doc["theta"] and config["base_model"] == files["model"]


def test_the_table_names_the_kept_epoch(files, tmp_path, capsys):
    assert main(train_args(files, tmp_path / "t", "--quiet")) == 0
    out = capsys.readouterr().out
    assert "epoch 1: loss" in out and "(kept)" in out and "written to" in out


@pytest.mark.parametrize("extra, message", [
    (["--top", "3"], "top (3) cannot exceed layer (2)"),
    (["--epochs", "0"], "epochs must be a whole number from 1 to 50, got 0"),
    (["--batch", "100000"], "batch must be a whole number from 1 to 512"),
    (["--device", "tpu"], "--device must be one of cpu, cuda"),
])
def test_settings_out_of_range_fail_before_any_work(files, tmp_path, capsys, extra, message):
    args = train_args(files, tmp_path / "x", *extra)
    args[args.index("--train") + 1] = str(tmp_path / "no-such-file.tsv")  # never read
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_an_unwritable_out_fails_before_reading_the_files(files, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    for out, message in ((tmp_path / "file", "exists and is not a folder"),
                         (tmp_path / "no" / "such" / "dir", "cannot be written")):
        args = train_args(files, out)
        args[args.index("--train") + 1] = str(tmp_path / "no-such-file.tsv")
        assert main(args) == 2
        assert message in capsys.readouterr().err


def test_cuda_without_a_gpu_is_refused_with_the_fix(files, tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(train_args(files, tmp_path / "x", "--device", "cuda")) == 2
    assert "device 'cuda' is not available here (no CUDA GPU); use --device cpu" in \
        capsys.readouterr().err


def test_training_pairs_without_gold_are_refused(files, tmp_path, capsys):
    args = train_args(files, tmp_path / "x")
    args[args.index("--train") + 1] = files["nogold"]
    assert main(args) == 2
    assert "the training file needs gold links for every pair; pair 1 has none" in \
        capsys.readouterr().err


def test_align_scores_the_aligner_as_the_method_trained(files, trained_dir, tmp_path, capsys):
    links = tmp_path / "links.txt"
    assert main(["align", "--pairs", files["dev"], "--aligner", str(trained_dir), "--model",
                 files["model"], "--layer", "2", "--method", "softmax-argmax", "--bootstrap",
                 "0", "--json", "--quiet"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["methods"]) == {"softmax-argmax", "trained"}
    trained = doc["methods"]["trained"]
    assert trained["settings"]["method"] == "trained" and trained["settings"]["final"] == "sinkhorn"
    assert 0 <= trained["scores"]["macro"]["total_f1"] <= 1
    assert main(["align", "--pairs", files["dev"], "--aligner", str(trained_dir), "--model",
                 files["model"], "--layer", "2", "--dev", files["dev"], "--bootstrap", "0",
                 "--out", str(links), "--quiet"]) == 0
    table = capsys.readouterr().out
    assert "trained" in table and "final=sinkhorn" in table and "unbalanced" in table
    assert len(links.read_text().splitlines()) == 16  # no --method: the trained links


def test_trained_is_a_method_wherever_a_method_is_named(files, trained_dir, tmp_path, capsys):
    """--method trained (alone, its θ by --threshold or --set), --out writing its links,
    the JSON's alignments, and the command that reproduces the run."""
    links, other = tmp_path / "links.txt", tmp_path / "other.txt"
    base = ["align", "--pairs", files["dev"], "--aligner", str(trained_dir), "--model",
            files["model"], "--layer", "2", "--bootstrap", "0", "--quiet"]
    assert main(base + ["--method", "trained", "--threshold", "0.2", "--out", str(links),
                        "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["methods"]) == {"trained"} and doc["ranked"] == ["trained"]
    assert doc["methods"]["trained"]["settings"]["threshold"] == 0.2
    assert doc["alignments"]["method"] == "trained"
    assert [p["pharaoh"] for p in doc["alignments"]["pairs"]] == links.read_text().splitlines()
    assert " --method trained" in doc["command"] and "trained:threshold=0.2" in doc["command"]
    assert main(base + ["--method", "trained", "--set", "trained:threshold=0.2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["methods"] == doc["methods"]
    # --out follows --method: another method's links with the aligner beside it
    assert main(base + ["--method", "softmax-argmax", "--out", str(other)]) == 0
    assert "trained" in capsys.readouterr().out
    assert len(other.read_text().splitlines()) == 16
    for extra, words in ((["--tau", "2"], "--tau do not apply to --method trained"),
                         (["--threshold", "1.5"], "0 ≤ θ < 1")):
        assert main(base + ["--method", "trained", *extra]) == 2
        assert words in capsys.readouterr().err
    no_aligner = [w for w in base if w not in ("--aligner", str(trained_dir))]
    assert main(no_aligner + ["--method", "trained"]) == 2
    assert "--method trained needs --aligner" in capsys.readouterr().err


def test_the_trained_theta_is_set_and_the_command_reproduces_a_tuned_run(files, trained_dir,
                                                                         capsys):
    """θ tuned on --dev is written in the run's command as --set trained:threshold=θ, and
    that command (without --dev) gives the same trained scores; a wrong --set is refused
    before any work."""
    base = ["align", "--pairs", files["dev"], "--aligner", str(trained_dir), "--model",
            files["model"], "--layer", "2", "--method", "softmax-argmax", "--bootstrap", "0",
            "--json", "--quiet"]
    assert main(base + ["--dev", files["dev"]]) == 0
    tuned = json.loads(capsys.readouterr().out)
    theta = tuned["methods"]["trained"]["settings"]["threshold"]
    assert f"--set trained:threshold={theta:.3g}" in tuned["command"]
    assert main(base + ["--set", f"trained:threshold={theta}"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["methods"]["trained"]["settings"]["threshold"] == theta
    assert again["methods"]["trained"]["scores"] == tuned["methods"]["trained"]["scores"]
    for bad, words in [("trained:threshold=1.5", "0 ≤ θ < 1"),
                       ("trained:tau=2", "takes only threshold")]:
        assert main(base + ["--set", bad]) == 2
        assert words in capsys.readouterr().err
    no_aligner = [w for w in base if w not in ("--aligner", str(trained_dir))]
    assert main(no_aligner + ["--set", "trained:threshold=0.3"]) == 2
    assert "needs --aligner" in capsys.readouterr().err


def test_align_refuses_an_aligner_of_another_base_model(files, trained_dir, tiny_models,
                                                        capsys):
    assert main(["align", "--pairs", files["dev"], "--aligner", str(trained_dir), "--model",
                 str(tiny_models["roberta"]), "--layer", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "was trained on the base model" in err and "align with the model it was trained " \
        "on" in err
    assert main(["align", "--pairs", files["dev"], "--aligner", str(files["dir"]),
                 "--quiet"]) == 2
    assert "is not a trained aligner" in capsys.readouterr().err


def test_one_lookup_resolves_a_name_to_one_loaded_aligner(files, trained_dir, monkeypatch):
    """engine.aligner.registry: the operator's aligners (SINKSCOPE_ALIGNERS, read when
    looked up) load once per process; register(name, aligner) adds one (an aligner a job
    trained), which hides a listed one of that name; infos lists them without loading."""
    from engine import settings
    from engine.aligner import registry
    from engine.aligner.config import AlignerError

    monkeypatch.setattr(settings, "CONFIG", settings.Config.from_env(
        {"SINKSCOPE_ALIGNERS": f"tiny={trained_dir};gone={files['dir'] / 'nothing'}"}))
    registry.forget()
    try:
        ok, broken = registry.infos()
        assert [(a.name, a.base_model, a.final, a.registered) for a in ok] == [
            ("tiny", files["model"], "sinkhorn", False)]
        assert [name for name, _ in broken] == ["gone"]
        first = registry.lookup("tiny")
        assert registry.lookup("tiny") is first and first.name == "tiny"  # loaded once
        with pytest.raises(AlignerError, match="choose one of: gone, tiny") as e:
            registry.lookup("nope")
        assert e.value.code == "not_listed"
        registry.register("mine", first)
        assert registry.lookup("mine") is first and registry.names()[0] == "mine"
        assert [a.name for a in registry.infos()[0]] == ["mine", "tiny"]
        assert registry.infos()[0][0].registered
    finally:
        registry.forget()
    assert registry.names() == ["gone", "tiny"]  # forgotten: only the operator's list
