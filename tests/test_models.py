"""Models through sentence-transformers: every supported architecture checked against its
own attention, its own pooling and its own token limit; bad folders refused with a message.

Each architecture is a tiny random model built here and saved as a sentence-transformers
folder (``tests/support/tiny_models.py``, tokenizers trained offline); the real packaged
all-MiniLM-L6-v2 is checked where it matters.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from engine import Encoder, ModelError, relate, settings
from engine.models.architectures import SUPPORTED
from engine.models.encoder import describe, pooled_mean, unit
from engine.relation.relate import POSITION_BIAS_NOTE, default_encoder
from tests.support.tiny_models import HEADS, LAYERS, MAX_SEQ_LENGTH, SUPPORTED_KINDS, build

TEXTS = ["The bank of the river.", "Le chat dort sur le canapé.",
         "A quick brown fox jumps over the lazy dog near the bank."]
ARCH = {"bert": "BERT", "multilingual-minilm": "BERT", "roberta": "RoBERTa",
        "xlm-roberta": "RoBERTa", "distilbert": "DistilBERT", "mpnet": "MPNet"}


def allow(monkeypatch, **models) -> None:
    """The operator's allow-list for one test (settings are read once per process)."""
    spec = ";".join(f"{k}={v}" for k, v in models.items())
    monkeypatch.setattr(settings, "CONFIG", settings.Config.from_env({"SINKSCOPE_MODELS": spec}))


@pytest.fixture(scope="module")
def encoders(tiny_models) -> dict[str, Encoder]:
    return {kind: Encoder.load(str(tiny_models[kind])) for kind in SUPPORTED_KINDS}


def logits(e) -> np.ndarray:
    """The model's attention logits from the encoding: QKᵀ/√d_head (+ its position bias)."""
    S = np.einsum("lhid,lhjd->lhij", e.q.astype(np.float64), e.k.astype(np.float64))
    S = S / np.sqrt(e.q.shape[-1])
    return S if e.bias is None else S + e.bias


def softmax(S: np.ndarray) -> np.ndarray:
    return torch.softmax(torch.from_numpy(S), -1).numpy()


# ----------------------------------------------------------------- attention, every architecture

@pytest.mark.parametrize("kind", SUPPORTED_KINDS)
def test_softmax_of_scores_is_the_models_attention_padded_batch(encoders, kind):
    enc = encoders[kind]
    assert enc.arch.name == ARCH[kind] and (enc.n_layers, enc.n_heads) == (LAYERS, HEADS)
    batch = enc.encode_many(TEXTS)  # three lengths, one padded forward pass
    assert len({e.n for e in batch}) == 3
    for e in batch:
        assert e.attentions.shape == (LAYERS, HEADS, e.n, e.n)
        assert np.abs(softmax(logits(e)) - e.attentions).max() <= 1e-5
        assert (e.bias is not None) == (kind == "mpnet")
    alone = enc.encode(TEXTS[0])
    assert np.abs(alone.q - batch[0].q).max() <= 1e-5  # padding changes nothing
    assert np.abs(alone.k - batch[0].k).max() <= 1e-5


@pytest.mark.parametrize("kind", SUPPORTED_KINDS)
def test_self_and_joint_modes_reproduce_the_models_attention(encoders, kind):
    """Softmax at ε = 1 (one half-step) of the engine's scores is the model's attention on
    every layer and head: the whole matrix in self mode, the A→B block in joint mode."""
    enc = encoders[kind]
    own = enc.encode(TEXTS[2]).attentions
    r = relate(TEXTS[2], encoder=enc, mode="self", layer="all", head="all", eps=1.0,
               half_steps=1, weights="uniform")
    assert r.attention.shape == own.shape
    assert np.abs(r.attention - own).max() <= 1e-5
    j = relate(TEXTS[0], TEXTS[1], encoder=enc, mode="joint", layer="all", head="all",
               eps=1.0, half_steps=1)
    assert j.model_attention.shape == j.attention.shape == (LAYERS, HEADS, *j.scores.shape[2:])
    assert np.abs(j.attention - j.model_attention).max() <= 1e-5
    pair = enc.encode_pair(TEXTS[0], TEXTS[1])
    assert np.abs(softmax(logits(pair)) - pair.attentions).max() <= 1e-5
    assert set(pair.segment.tolist()) == {0, 1} and pair.special.sum() >= 3


def test_mpnet_bias_is_in_self_and_joint_scores_and_said_to_be_absent_in_separate(encoders):
    enc = encoders["mpnet"]
    e = enc.encode(TEXTS[0])
    assert e.bias.shape == (1, HEADS, e.n, e.n)  # one relative-position bias for all layers
    i = np.arange(e.n)
    for d in (-2, 1, 3):  # it depends only on the offset j − i
        diag = e.bias[0, :, i[: e.n - abs(d)] + max(0, -d), i[: e.n - abs(d)] + max(0, d)]
        assert np.ptp(diag, axis=0).max() <= 1e-6
    s = relate(TEXTS[0], encoder=enc, mode="self", layer=1, head=2)
    np.testing.assert_allclose(s.scores, logits(e)[1, 2], atol=1e-5)
    assert not any(n.kind == "no_position_bias" for n in s.notices)
    sep = relate(TEXTS[0], TEXTS[1], encoder=enc, mode="separate", layer=1, head=2)
    eb = enc.encode(TEXTS[1])
    plain = e.q[1, 2].astype(np.float64) @ eb.k[1, 2].astype(np.float64).T / np.sqrt(e.q.shape[-1])
    np.testing.assert_allclose(sep.scores, plain, atol=1e-5)
    assert [n.message for n in sep.notices if n.kind == "no_position_bias"] == [POSITION_BIAS_NOTE]
    mean = relate(TEXTS[0], encoder=enc, mode="self", layer=0, head="mean")
    np.testing.assert_allclose(mean.scores, logits(e)[0].mean(0), atol=1e-5)
    grid = relate(TEXTS[0], encoder=enc, mode="self", layer="all", head="all")
    np.testing.assert_allclose(grid.scores, logits(e), atol=1e-5)


def test_word_pooling_averages_the_full_logits_with_the_bias(encoders):
    enc = encoders["mpnet"]
    text = "Riverbanks overflowed, unbankably."  # words the tiny vocabulary splits
    e = enc.encode(text)
    r = relate(text, encoder=enc, mode="self", layer=1, head=0, pool_words=True)
    assert len(r.tokens_a) < e.n
    G = np.zeros((len(r.tokens_a), e.n))
    groups, w = [], e.word_ids
    for j in range(e.n):  # rebuild the word groups from word ids
        if w[j] >= 0 and groups and w[groups[-1][0]] == w[j]:
            groups[-1].append(j)
        else:
            groups.append([j])
    for i, g in enumerate(groups):
        G[i, g] = 1 / len(g)
    np.testing.assert_allclose(r.scores, G @ logits(e)[1, 0] @ G.T, atol=1e-5)


@pytest.mark.parametrize("kind", ["roberta", "xlm-roberta", "mpnet"])
def test_text_is_text_and_labels_are_readable(encoders, kind):
    enc = encoders[kind]
    e = enc.encode("x <s> </s> <pad> [CLS] y")
    assert e.special.sum() == 2 and e.special[0] and e.special[-1]  # only the added ones
    assert not any(t.startswith("Ġ") and len(t) > 1 for t in e.tokens)  # "Ġbank" → "bank"


# ----------------------------------------------------------------- pooling and the token limit

@pytest.mark.parametrize("kind", SUPPORTED_KINDS)
def test_pooled_mean_is_the_sentence_transformers_embedding(encoders, kind):
    enc = encoders[kind]
    assert enc.pooling == "mean" and enc.mean_pooled
    ref = enc.st.encode(TEXTS, convert_to_numpy=True)  # the library's own encode
    batch = enc.encode_many(TEXTS, attentions=False)
    emb = np.stack([e.embedding for e in batch])
    assert np.abs(emb - ref).max() <= 1e-5
    assert np.abs(enc.embed(TEXTS) - ref).max() <= 1e-5
    means = np.stack([pooled_mean(e) for e in batch])  # the barycenter of each measure
    assert np.abs(unit(means) - ref).max() <= 1e-5  # (these models normalise)
    assert enc.encode_pair(TEXTS[0], TEXTS[1]).embedding is None


def test_pooled_mean_without_normalisation(tmp_path):
    folder = build("bert", tmp_path / "plain", normalize=False)
    enc = Encoder.load(str(folder))
    ref = enc.st.encode(TEXTS, convert_to_numpy=True)
    means = np.stack([pooled_mean(e) for e in enc.encode_many(TEXTS, attentions=False)])
    assert np.abs(means - ref).max() <= 1e-5 and np.linalg.norm(ref[0]) != pytest.approx(1)


@pytest.mark.model
def test_real_minilm_pooled_mean_is_its_embedding():
    enc = default_encoder()
    assert (enc.arch.name, enc.max_tokens, enc.pooling, enc.mean_pooled) == ("BERT", 256, "mean", True)
    texts = ["The bank of the river.", "She went to the bank to deposit her money.", "word " * 300]
    ref = enc.st.encode(texts, convert_to_numpy=True)
    batch = enc.encode_many(texts, attentions=False)
    assert np.abs(np.stack([e.embedding for e in batch]) - ref).max() <= 1e-5
    assert np.abs(unit(np.stack([pooled_mean(e) for e in batch])) - ref).max() <= 1e-5
    assert batch[2].n == 256 and batch[2].n_dropped == 302 - 256


@pytest.mark.parametrize("kind", SUPPORTED_KINDS)
def test_token_limit_is_the_models_max_seq_length_with_a_notice(encoders, kind):
    enc = encoders[kind]
    assert enc.max_tokens == MAX_SEQ_LENGTH
    long = "the bank of the river " * 20
    r = relate(long, "short text", encoder=enc)
    assert len(r.tokens_a) == MAX_SEQ_LENGTH and r.truncated_a and not r.truncated_b
    cut = [n for n in r.notices if n.kind == "tokens_cut"]
    assert len(cut) == 1 and f"the model's limit of {MAX_SEQ_LENGTH} tokens" in cut[0].message
    pair = enc.encode_pair(long, "short text")
    assert pair.n == MAX_SEQ_LENGTH and pair.truncated and pair.n_dropped > 0


# ----------------------------------------------------------------- names, folders and messages

def test_names_folders_and_picker_info(monkeypatch, tiny_models, encoders):
    allow(monkeypatch, **{f"tiny-{k}": tiny_models[k] for k in SUPPORTED_KINDS})
    for kind in SUPPORTED_KINDS:
        info = describe(f"tiny-{kind}")  # from the configuration files, no weights
        assert info == Encoder(f"tiny-{kind}").info  # = the loaded model, by its name
        assert info.label == (f"tiny-{kind} · {ARCH[kind]} · {LAYERS} layers × {HEADS} heads "
                              f"· {MAX_SEQ_LENGTH} tokens")
    minilm = describe(settings.DEFAULT_MODEL)
    assert minilm.label == "all-MiniLM-L6-v2 · BERT · 6 layers × 12 heads · 256 tokens"
    with pytest.raises(ModelError, match="not on the allow-list"):
        Encoder(str(tiny_models["bert"]))  # a folder is not a name: only Encoder.load takes it
    assert Encoder.load("tiny-bert").name == "tiny-bert"
    assert Encoder.load(str(tiny_models["bert"])).name == str(tiny_models["bert"])


def test_bad_folders_give_clear_messages(monkeypatch, tmp_path, tiny_models):
    broken = tmp_path / "broken"
    shutil.copytree(tiny_models["bert"], broken)
    (broken / "model.safetensors").write_bytes(b"not a model")
    custom = tmp_path / "custom-module"
    shutil.copytree(tiny_models["bert"], custom)
    marker = tmp_path / "module_code_ran"
    (custom / "evil_module.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n"
                                           "class Evil:\n    pass\n")
    modules = json.loads((custom / "modules.json").read_text())
    modules[1]["type"] = "evil_module.Evil"
    (custom / "modules.json").write_text(json.dumps(modules))
    allow(monkeypatch, plain=tiny_models["bert"].parent / "hf", gone=tmp_path / "gone",
          broken=broken, deberta=tiny_models["deberta-v2"], custom=custom)
    cases = {
        "plain": "not a sentence-transformers model \\(it has no modules.json\\)",
        "gone": "does not exist",
        "broken": "Could not load model 'broken'",
        "deberta": "architecture 'deberta-v2' is not supported: sinkscope reads the queries "
                   "and keys of BERT",
        "custom": "Could not load model 'custom'",
        "unlisted": "'unlisted' is not on the allow-list; choose one of: ",
    }
    for name, message in cases.items():
        with pytest.raises(ModelError, match=message):
            Encoder(name)
    assert not marker.exists(), "a module named in modules.json ran its own code"
    with pytest.raises(ModelError, match="or pass a local folder from Python"):
        Encoder.load(str(tmp_path / "nowhere"))
    assert "MPNet (mpnet)" in SUPPORTED and "RoBERTa (roberta/xlm-roberta)" in SUPPORTED
    assert "not supported" in describe("deberta").label


def test_broken_module_files_give_clear_messages(monkeypatch, tmp_path, tiny_models):
    """A folder loaded through transformers alone is refused as the library's loader
    refused it: a broken pooling config, a broken sentence_bert_config.json, a missing
    config.json, or a first module that is not a transformer."""
    def variant(name, edit):
        folder = tmp_path / name
        shutil.copytree(tiny_models["bert"], folder)
        edit(folder)
        return folder

    def first_is_pooling(f):
        modules = json.loads((f / "modules.json").read_text())
        (f / "modules.json").write_text(json.dumps(modules[1:]))

    folders = {
        "pooling": variant("pooling", lambda f: (f / "1_Pooling" / "config.json")
                           .write_text("{not json")),
        "bert-config": variant("bert-config", lambda f: (f / "sentence_bert_config.json")
                               .write_text("[1, 2")),
        "no-config": variant("no-config", lambda f: (f / "config.json").unlink()),
        "no-transformer": variant("no-transformer", first_is_pooling),
    }
    allow(monkeypatch, **folders)
    for name in folders:
        expected = ("does not start with a transformer" if name == "no-transformer"
                    else f"Could not load model '{name}'")
        with pytest.raises(ModelError, match=expected):
            Encoder(name)


@pytest.mark.slow  # a command-line process
def test_cli_model_option(tiny_models, capsys):
    """``--model`` with a local folder (through the CLI's own ``main``, in this process),
    and, as a real command line, exit status 2 for a model not on the allow-list."""
    from engine.io.cli import main

    folder = str(tiny_models["mpnet"])
    args = ["relate", "The bank of the river.", "--mode", "self", "--model", folder,
            "--layer", "1", "--head", "0", "--half-steps", "1", "--json"]
    assert main(args) == 0
    d = json.loads(capsys.readouterr().out)
    e = Encoder.load(folder).encode("The bank of the river.")
    assert d["model"] == folder
    np.testing.assert_allclose(np.array(d["attention"]), e.attentions[1, 0], atol=1e-5)
    cmd = [sys.executable, "-m", "engine", *args[:4], "--model", "no-such-model"]
    bad = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "not on the allow-list" in bad.stderr
    assert "Traceback" not in bad.stderr
