"""The model loads through transformers alone, exactly as sentence-transformers loads it.

sinkscope reads a sentence-transformers folder's own files (modules.json, the Transformer
module's sentence_bert_config.json, the pooling and normalisation configs) and loads the
transformer and its fast tokenizer with transformers; the library's modules load only for a
head sinkscope does not compute itself. Every per-token output and every sentence embedding
must equal, bit for bit, what the library's own load gives, on every architecture.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from engine import Encoder
from engine.models import encoder as encoder_module
from engine.models import registry
from engine.models.architectures import ARCHITECTURES
from tests.support.tiny_models import SUPPORTED_KINDS

TEXTS = ["The bank of the river.", "Le chat dort sur le canapé près de la fenêtre.",
         "A quick brown fox jumps over the lazy dog near the bank, unbelievably."]
FIELDS = ("hidden", "q", "k", "attentions", "bias", "embedding", "word_ids", "special",
          "segment")


def library_load(monkeypatch, folder) -> Encoder:
    """The same folder loaded through ``SentenceTransformer`` (the loader used before)."""
    with monkeypatch.context() as m:
        m.setattr(encoder_module, "_plain_text_encoder", lambda *a: None)
        return Encoder.load(str(folder))


def assert_same(new, ref) -> None:
    assert new.tokens == ref.tokens and new.texts == ref.texts
    assert (new.truncated, new.n_dropped, new.max_tokens) == (ref.truncated, ref.n_dropped,
                                                              ref.max_tokens)
    for field in FIELDS:
        a, b = getattr(new, field), getattr(ref, field)
        assert (a is None) == (b is None), field
        if a is not None:
            assert a.dtype == b.dtype and a.shape == b.shape, field
            np.testing.assert_array_equal(a, b, err_msg=field)  # atol 0


def check_identical(monkeypatch, folder) -> None:
    new, ref = Encoder.load(str(folder)), library_load(monkeypatch, folder)
    assert new._st is None and ref._st is not None  # the new load did not use the library
    for attr in ("n_layers", "n_heads", "d_head", "max_tokens", "pooling", "mean_pooled"):
        assert getattr(new, attr) == getattr(ref, attr), attr
    assert new.tokenizer.model_max_length == ref.tokenizer.model_max_length
    assert new.model.config.to_dict() == ref.model.config.to_dict()
    long = " ".join(TEXTS * 30)  # cut by the token limit
    for e_new, e_ref in zip(new.encode_many([*TEXTS, long]), ref.encode_many([*TEXTS, long])):
        assert_same(e_new, e_ref)
    assert_same(new.encode_pair(TEXTS[0], TEXTS[1]), ref.encode_pair(TEXTS[0], TEXTS[1]))
    assert_same(new.encode(long, attentions=False), ref.encode(long, attentions=False))
    # the library's own modules, loaded on first use, give the same embeddings too
    new._native_head = None
    for e_new, e_ref in zip(new.encode_many(TEXTS), ref.encode_many(TEXTS)):
        np.testing.assert_array_equal(e_new.embedding, e_ref.embedding)
    assert [type(m).__name__ for m in new._head] == [type(m).__name__ for m in ref._head]


@pytest.mark.parametrize("kind", SUPPORTED_KINDS)
def test_tiny_models_load_bit_identical(monkeypatch, tiny_models, kind):
    check_identical(monkeypatch, tiny_models[kind])


@pytest.mark.slow
@pytest.mark.model
def test_packaged_model_loads_bit_identical(monkeypatch):
    check_identical(monkeypatch, registry.default_model_path())


def test_lower_casing_and_unusual_heads(monkeypatch, tiny_models, tmp_path):
    """do_lower_case adds the library's lowercasing; a [CLS]-pooled head is computed here;
    a max-pooled one loads the library's Pooling on first use. All as the library does."""
    import shutil

    for mode, native in (("cls", True), ("max", False)):
        folder = tmp_path / mode
        shutil.copytree(tiny_models["roberta"], folder)
        cfg_file = folder / "sentence_bert_config.json"
        cfg = json.loads(cfg_file.read_text())
        cfg_file.write_text(json.dumps({**cfg, "do_lower_case": True}))
        pooling = folder / "1_Pooling" / "config.json"
        pool = {k: v for k, v in json.loads(pooling.read_text()).items()
                if not k.startswith("pooling_mode")}
        pooling.write_text(json.dumps({**pool, "pooling_mode": mode}))
        new = Encoder.load(str(folder))
        assert (new._native_head is not None) == native and new.pooling == mode
        ref = library_load(monkeypatch, folder)
        shout = "THE BANK OF THE RIVER."
        for e_new, e_ref in zip(new.encode_many([shout, TEXTS[1]]),
                                ref.encode_many([shout, TEXTS[1]])):
            assert_same(e_new, e_ref)
        assert new.encode(shout).tokens == new.encode(shout.lower()).tokens


@pytest.mark.slow  # a fresh process imports torch and transformers
def test_model_load_skips_sentence_transformers(tiny_models):
    """Loading a model and encoding text imports neither sentence-transformers nor the
    scikit-learn and pandas it brings."""
    code = ("import sys; from engine import Encoder; e = Encoder.load(sys.argv[1]); "
            "e.encode_many(['The bank.', 'A river.']); e.encode_pair('a', 'b'); "
            "print(sorted(m for m in ('sentence_transformers', 'sklearn', 'pandas') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(tiny_models["bert"])],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_registry_imports_no_torch(tiny_models):
    """The allow-list and the picker's descriptions need neither torch nor transformers."""
    code = ("import sys; from engine.models.registry import allowed_models, describe; "
            "allowed_models(); print(describe('all-MiniLM-L6-v2').label); "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr
    label, loaded = out.stdout.strip().splitlines()[-2:]
    assert label == "all-MiniLM-L6-v2 · BERT · 6 layers × 12 heads · 256 tokens"
    assert loaded == "[]"


def test_registry_families_match_the_architectures():
    assert [(n, t, o) for n, t, o in registry.FAMILIES] == [
        (a.name, a.model_types, a.position_offset) for a in ARCHITECTURES]
    assert encoder_module.describe is registry.describe  # re-exported for old imports


def test_describe_from_files_equals_transformers_config(tiny_models):
    """describe() reads config.json as a file; it must say what transformers' reader says."""
    from transformers import AutoConfig

    for kind, folder in tiny_models.items():
        sub = registry.transformer_folder(folder, registry.read_modules(folder))
        info = registry._describe(kind, str(folder))
        cfg = AutoConfig.from_pretrained(str(sub), local_files_only=True)
        assert (info.n_layers, info.n_heads) == (cfg.num_hidden_layers,
                                                 cfg.num_attention_heads), kind
        assert info.supported == (kind != "deberta-v2")
