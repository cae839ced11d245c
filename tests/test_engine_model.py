"""The real packaged model: Q/K reproduce its attentions; relate() modes, limits, errors."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from engine import (Encoder, ModelError, SettingsError, TextError, encode_texts, relate,
                    relate_encodings, settings, softmax_attention)
from engine.relation.relate import default_encoder

A = "The bank of the river."
B = "She sat on the river bank and watched the water."

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def enc() -> Encoder:
    return default_encoder()


def own_softmax(e):
    S = np.einsum("lhid,lhjd->lhij", e.q.astype(np.float64), e.k.astype(np.float64))
    return torch.softmax(torch.from_numpy(S / np.sqrt(e.q.shape[-1])), -1).numpy()


def test_encoding_shapes_and_tokens(enc):
    e = enc.encode(A)
    assert e.tokens[0] == "[CLS]" and e.tokens[-1] == "[SEP]"
    assert e.tokens.count("the") == 2
    n = e.n
    assert e.hidden.shape == (7, n, 384)
    assert e.q.shape == e.k.shape == (6, 12, n, 32)
    assert e.attentions.shape == (6, 12, n, n)
    assert e.special.tolist() == [True] + [False] * (n - 2) + [True]
    assert e.word_ids[0] == -1 and e.word_ids[1] == 0


def test_q_k_reproduce_model_attentions_every_layer_and_head_padded_batch(enc):
    # two texts of different lengths share one padded forward pass
    ea, eb = enc.encode_many([A, B + " It was a quiet, grey afternoon in early spring."])
    assert ea.n < eb.n
    for e in (ea, eb):
        assert np.abs(own_softmax(e) - e.attentions).max() <= 1e-5
    alone = enc.encode(A)
    assert np.abs(alone.q - ea.q).max() <= 1e-4  # padding does not change A


def test_joint_pair_segments_and_attentions(enc):
    p = enc.encode_pair(A, B)
    assert set(p.segment.tolist()) == {0, 1}
    assert p.tokens.count("[SEP]") == 2
    assert np.abs(own_softmax(p) - p.attentions).max() <= 1e-5


def test_half_step_one_is_softmax_on_real_scores(enc):
    r = relate(A, B, encoder=enc, layer=5, head=3, half_steps=1, eps=0.7)
    assert np.abs(r.coupling.plan - r.softmax_plan).max() <= 1e-12
    np.testing.assert_allclose(r.attention, softmax_attention(r.scores, 0.7), atol=1e-12)


def test_relate_separate_defaults(enc):
    r = relate(A, B, encoder=enc)
    n, m = len(r.tokens_a), len(r.tokens_b)
    assert r.scores.shape == r.softmax_plan.shape == r.coupling.plan.shape == (n, m)
    assert r.a[0] == 0 and r.a[-1] == 0 and r.b[0] == 0
    np.testing.assert_allclose(r.coupling.plan.sum(1), r.a, atol=1e-6)
    np.testing.assert_allclose(r.coupling.plan.sum(0), r.b, atol=1e-6)
    # softmax is not a coupling: its column marginal misses b
    assert r.summary.softmax_col_err > 0.1
    assert r.summary.sinkhorn_col_err < 1e-6 and r.summary.converged
    assert r.summary.exact_cost <= r.summary.cost + 1e-9
    h = r.coupling.history
    np.testing.assert_array_equal(h.steps, np.arange(1, 101))
    # the solver's own record ends where the coupling ends
    assert h.cost[-1] == pytest.approx(r.coupling.cost, rel=1e-12, abs=1e-12)
    assert h.entropy[-1] == pytest.approx(r.coupling.entropy, rel=1e-12, abs=1e-12)
    # ... and starts at softmax: cost and entropy of diag(a)·softmax(S)
    P = r.softmax_plan
    assert h.cost[0] == pytest.approx(-(P * r.scores).sum(), rel=1e-12)
    assert h.entropy[0] == pytest.approx(-(P[P > 0] * np.log(P[P > 0])).sum(), rel=1e-12)
    assert r.points_a.shape[0] == n and r.hidden_a.shape == (n, 384)


def test_long_runs_keep_a_bounded_convergence_history(enc):
    """At most ~1,000 half-steps of marginal errors per head, log-spaced pairs (a row step
    and its column step) and the last; each one the solver's own error at that half-step."""
    from engine import sinkhorn
    from engine.relation.relate import ERROR_POINTS

    T = 20_000
    r = relate("river bank", "the bank", encoder=enc, layer=5, head=3, half_steps=T, tol=1e-300)
    c = r.coupling
    steps = c.err_steps
    assert c.half_steps_run == T and steps[-1] == T and steps[:2].tolist() == [1, 2]
    assert len(steps) <= ERROR_POINTS + 2 and c.row_err.shape == c.col_err.shape == steps.shape
    assert np.all(np.diff(steps) > 0) and np.all(steps[steps % 2 == 1] + 1 <= T)
    full = sinkhorn(r.scores, r.a, r.b, r.eps, T, tol=1e-300)
    np.testing.assert_allclose(c.row_err, full.row_err[steps - 1], rtol=0, atol=1e-15)
    np.testing.assert_allclose(c.col_err, full.col_err[steps - 1], rtol=0, atol=1e-15)
    grid = relate("river bank", "the bank", encoder=enc, layer="all", head="all",
                  half_steps=3000, tol=1e-300).coupling
    assert grid.row_err.shape == (6, 12, len(grid.err_steps)) and grid.err_steps[-1] == 3000
    short = relate("river bank", "the bank", encoder=enc, layer=5, head=3, half_steps=1000)
    assert short.coupling.err_steps is None and short.coupling.row_err.shape == (1000,)


def test_mean_head_scores_are_mean_over_heads(enc):
    ea, eb = encode_texts(enc, A, B, "separate")
    mean = relate_encodings((ea, eb), layer=2, head="mean")
    each = [relate_encodings((ea, eb), layer=2, head=h).scores for h in range(12)]
    np.testing.assert_allclose(mean.scores, np.mean(each, 0), atol=1e-9)
    np.testing.assert_allclose(mean.points_a @ mean.points_b.T / np.sqrt(mean.points_a.shape[1]),
                               mean.scores, atol=1e-5)


def test_joint_mode_matches_models_own_block(enc):
    r = relate(A, B, encoder=enc, mode="joint", layer=4, head=7, eps=1.0, half_steps=1)
    np.testing.assert_allclose(r.model_attention.sum(1), 1, atol=1e-9)
    assert np.abs(r.attention - r.model_attention).max() <= 1e-5


def test_self_mode_and_pooling(enc):
    r = relate("Unbelievably, tokenization splits words.", encoder=enc, mode="self",
               pool_words=True)
    assert r.tokens_a == r.tokens_b
    assert "unbelievably" in r.tokens_a and "tokenization" in r.tokens_a
    assert abs(r.a.sum() - 1) < 1e-12


def test_grid_is_batched(enc):
    g = relate(A, B, encoder=enc, layer="all", head="all", half_steps=60)
    assert g.scores.shape[:2] == (6, 12)
    assert g.summary.softmax_col_err.shape == (6, 12)
    one = relate(A, B, encoder=enc, layer=3, head=5, half_steps=60)
    assert np.abs(g.coupling.plan[3, 5] - one.coupling.plan).max() <= 1e-12


def test_weights_norm_and_uniform(enc):
    r = relate(A, B, encoder=enc, weights="norm")
    assert r.a[0] == 0 and abs(r.a.sum() - 1) < 1e-12 and len(set(np.round(r.a[1:-1], 8))) > 1
    u = relate(A, B, encoder=enc, weights="uniform")
    np.testing.assert_allclose(u.a, 1 / len(u.a))


def test_long_text_is_truncated_with_notice(enc):
    r = relate("word " * 800, "short text", encoder=enc)
    assert r.truncated_a and not r.truncated_b
    assert len(r.tokens_a) == enc.max_tokens == 256  # MiniLM's own max_seq_length
    assert [(n.kind, n.level) for n in r.notices] == [("tokens_cut", "info")]
    assert "Text A was cut to the model's limit of 256 tokens" in r.notices[0].message


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(text_a=""), TextError, "Text A is empty"),
    (dict(text_b="   \n\t"), TextError, "Text B is empty"),
    (dict(eps=0), SettingsError, "ε must be a finite number > 0"),
    (dict(eps=float("nan")), SettingsError, "ε must be a finite number > 0"),
    (dict(half_steps=0), SettingsError, "half_steps must be ≥ 1"),
    (dict(layer=6), SettingsError, "layer 6 is out of range"),
    (dict(head=12), SettingsError, "head 12 is out of range"),
    (dict(head="all"), SettingsError, 'layer="all" together with head="all"'),
    (dict(mode="sideways"), SettingsError, "mode must be one of"),
    (dict(weights="idf"), SettingsError, "weights must be one of"),
    (dict(text_a="\u200b\u200b"), TextError, "Text A has nothing the model can read"),
    (dict(text_b="\ue000"), TextError, "Text B has nothing the model can read"),
])
def test_bad_input_messages(enc, kwargs, error, message):
    args = dict(text_a=A, text_b=B)
    args.update(kwargs)
    with pytest.raises(error, match=message):
        relate(args.pop("text_a"), args.pop("text_b"), encoder=enc, **args)


def test_special_token_strings_are_text(enc):
    e = enc.encode("[CLS] [SEP] [PAD]")
    assert e.tokens[0] == "[CLS]" and e.tokens.count("[CLS]") == 1 and "pad" in e.tokens
    assert e.special.sum() == 2
    r = relate("[UNK] 😀", "[MASK]", encoder=enc)  # unknown words are content, not markers
    assert r.a[1:-1].sum() == pytest.approx(1.0)


def allow(monkeypatch, models: str) -> None:
    """The operator's allow-list for one test (settings are read once per process)."""
    monkeypatch.setattr(settings, "CONFIG", settings.Config.from_env({"SINKSCOPE_MODELS": models}))


def test_unlisted_model_is_refused(monkeypatch, tmp_path):
    with pytest.raises(ModelError, match="not on the allow-list"):
        Encoder("bert-base-uncased")
    allow(monkeypatch, f"broken={tmp_path}")
    with pytest.raises(ModelError, match="not a sentence-transformers model"):
        Encoder("broken")


@pytest.mark.slow  # a command-line process
def test_cli_json_matches_api(enc, capsys):
    """``python -m engine relate``: the JSON document and the table (through the CLI's own
    ``main``, in this process, where the model is already loaded) and, as a real command
    line, the exit status 2 and message for a bad text."""
    from engine.io.cli import main

    args = ["relate", "The bank of the river.", "She sat on the river bank.", "--layer", "5",
            "--head", "3", "--eps", "0.5", "--half-steps", "50"]
    assert main([*args, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    r = relate("The bank of the river.", "She sat on the river bank.", encoder=enc, layer=5,
               head=3, eps=0.5, half_steps=50)
    assert d["tokens_a"] == list(r.tokens_a) and d["tokens_b"] == list(r.tokens_b)
    assert np.abs(np.array(d["sinkhorn_plan"]) - r.coupling.plan).max() <= 1e-12
    assert np.abs(np.array(d["softmax_plan"]) - r.softmax_plan).max() <= 1e-12
    assert len(d["row_err"]) == 50 and d["summary"]["converged"] is True
    from engine.io.export import relation_from_dict

    back = relation_from_dict(d)  # the document describes the whole relation
    np.testing.assert_array_equal(back.sinkhorn_plan, r.sinkhorn_plan)
    np.testing.assert_array_equal(back.coupling.history.cost, r.coupling.history.cost)
    assert back.summary == r.summary and back.notices == r.notices
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "Softmax column error" in table and "50 half-steps" in table
    cmd = [sys.executable, "-m", "engine", "relate", "", "x"]  # fails before loading a model
    bad = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Text A is empty" in bad.stderr and "Traceback" not in bad.stderr


def test_corrupt_model_file_gives_clear_error(monkeypatch, tmp_path):
    import shutil

    from engine.models.encoder import default_model_path

    folder = tmp_path / "corrupt"
    shutil.copytree(default_model_path(), folder)
    (folder / "model.safetensors").write_bytes(b"not a model")
    allow(monkeypatch, f"corrupt={folder}")
    with pytest.raises(ModelError, match="Could not load model 'corrupt'"):
        Encoder("corrupt")


def test_listed_model_loads_by_path_and_never_runs_remote_code(monkeypatch, tmp_path):
    """A model folder that asks for its own Python code (``auto_map``) loads the library's
    own architecture: the folder's code never runs."""
    import shutil

    from engine.models.encoder import default_model_path

    folder = tmp_path / "custom"
    shutil.copytree(default_model_path(), folder)
    marker = tmp_path / "remote_code_ran"
    code = f"open({str(marker)!r}, 'w').write('ran')\n"
    for sub in [folder, *[p.parent for p in folder.rglob("config.json")]]:
        (sub / "custom_bert.py").write_text(code + "from transformers import BertModel as "
                                            "CustomModel\nfrom transformers import BertConfig "
                                            "as CustomConfig\n")
    for cfg in folder.rglob("config.json"):
        d = json.loads(cfg.read_text())
        if "model_type" not in d:  # a sentence-transformers module's own settings (Pooling)
            continue
        d["auto_map"] = {"AutoConfig": "custom_bert.CustomConfig",
                         "AutoModel": "custom_bert.CustomModel"}
        cfg.write_text(json.dumps(d))
    allow(monkeypatch, f"custom={folder}")
    e = Encoder("custom")
    assert e.n_layers == 6 and e.encode("hello").n == 3
    assert not marker.exists(), "the model folder's own code ran"


@pytest.mark.parametrize("ex_id, pairs", [
    ("bank", [("bank", "bank")]),
    ("paraphrase", [("committee", "panel"), ("postponed", "delayed"), ("meeting", "session")]),
    ("reordered", [("dog", "dog"), ("cat", "cat"), ("chased", "chased"), ("garden", "garden")]),
    ("en-es", [("cat", "gato"), ("sofa", "sofa")]),
])
def test_each_examples_settings_show_what_its_note_says(enc, ex_id, pairs):
    """At an example's own settings the coupling pairs the words its note names (each sends
    most of its mass to its partner); softmax sends theirs to [CLS] and [SEP] instead."""
    from sinkscope_app import examples

    ex = examples.load()[ex_id]
    s = ex["settings"]
    r = relate(ex["a"], ex["b"], encoder=enc, layer=s["layer"], head=s["head"], eps=s["eps"],
               half_steps=s["steps"], pool_words=s.get("pool", False))
    assert r.summary.converged
    for x, y in pairs:
        i, j = r.tokens_a.index(x), r.tokens_b.index(y)
        assert r.sinkhorn_plan[i].argmax() == j and r.sinkhorn_plan[i, j] > 0.5 * r.a[i], (x, y)
        assert r.attention[i, [0, -1]].sum() > 0.5, (x, "most of softmax's mass goes to [CLS]/[SEP]")


def test_the_default_example_s_note_says_what_its_numbers_are(enc):
    """Issue 42: the note said softmax sends the river bank's mass "to [CLS] and [SEP]";
    at the example's own settings [CLS] gets 0.99999997 and [SEP] about 2e-9. Each claim
    of the default example's note, checked against its numbers, in both languages."""
    from sinkscope_app import examples, locale
    from sinkscope_app.main.params import DEFAULTS

    ex = examples.load()[DEFAULTS["ex"]]
    s = ex["settings"]
    r = relate(ex["a"], ex["b"], encoder=enc, layer=s["layer"], head=s["head"], eps=s["eps"],
               half_steps=s["steps"])
    i, j = r.tokens_a.index("bank"), r.tokens_b.index("bank")
    share = r.sinkhorn_plan[i, j] / r.a[i]  # of the river bank's mass, to the money bank
    en, es = ex["note"], locale.texts("main", "es")["examples"][DEFAULTS["ex"]]["note"]
    assert f"Layer {s['layer']} at ε = {s['eps']:g}" in en and "four fifths" in en
    assert f"Capa {s['layer']} con ε = 0,1" in es and "cuatro quintos" in es
    assert 0.75 <= share <= 0.85, share  # about four fifths
    assert r.attention[i, 0] > 0.99 and r.attention[i, -1] < 0.01  # almost all to [CLS]
    assert "[CLS]" in en and "[SEP]" not in en and "[CLS]" in es and "[SEP]" not in es


def test_self_example_keeps_words_on_themselves(enc):
    from sinkscope_app import examples

    ex = examples.load()["self"]
    s = ex["settings"]
    r = relate(ex["a"], encoder=enc, mode="self", layer=s["layer"], head=s["head"],
               eps=s["eps"], half_steps=s["steps"])
    inner = np.flatnonzero(r.a > 0)
    on_diagonal = np.mean([r.sinkhorn_plan[i].argmax() == i for i in inner])
    assert on_diagonal >= 0.8 and all(r.attention[i].argmax() in (0, r.a.size - 1) for i in inner)
