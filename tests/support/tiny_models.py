"""Tiny randomly initialised sentence-transformers models, one per architecture, built
offline: each tokenizer is trained here with ``tokenizers`` on a few sentences, each model
is a 2-layer, 4-head encoder with random weights, saved as a sentence-transformers folder
(Transformer → mean Pooling → Normalize) exactly as ``SentenceTransformer.save`` writes it.

``build(kind, folder)`` returns the folder. Kinds: the supported architectures in
:data:`SUPPORTED_KINDS` and ``"deberta-v2"``, an architecture sinkscope does not read.
"""

from __future__ import annotations

import json
from pathlib import Path

CORPUS = [
    "The bank of the river.", "She sat on the river bank and watched the water.",
    "He went to the bank to deposit his money.", "The committee postponed the meeting.",
    "Le chat dort sur le canapé près de la fenêtre.", "El perro corre en el parque verde.",
    "A quick brown fox jumps over the lazy dog.", "Tokenization splits unbelievably long words.",
    "Where did Marie Curie do most of her research?", "Paris, at the Radium Institute.",
]
SUPPORTED_KINDS = ("bert", "multilingual-minilm", "roberta", "xlm-roberta", "distilbert",
                   "mpnet")
MAX_SEQ_LENGTH = 24
LAYERS, HEADS = 2, 4
WORDPIECE_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def _wordpiece(specials: list[str], size: int = 300, unk: str = "[UNK]") -> dict[str, int]:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token=unk))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(CORPUS * 5, trainers.WordPieceTrainer(vocab_size=size,
                                                                   special_tokens=specials))
    return tok.get_vocab()


def _bpe(specials: list[str], size: int = 400) -> tuple[dict[str, int], list[tuple[str, str]]]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(CORPUS * 5, trainers.BpeTrainer(
        vocab_size=size, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return model["vocab"], merges


def _unigram(specials: list[str], size: int = 250) -> list[tuple[str, float]]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.train_from_iterator(CORPUS * 5, trainers.UnigramTrainer(
        vocab_size=size, special_tokens=specials, unk_token="<unk>"))
    return [tuple(x) for x in json.loads(tok.to_str())["model"]["vocab"]]


def _model_and_tokenizer(kind: str):
    import transformers as tf

    small = dict(hidden_size=32, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                 intermediate_size=37, max_position_embeddings=64)
    if kind == "bert":
        vocab = _wordpiece(WORDPIECE_SPECIALS)
        return tf.BertModel(tf.BertConfig(vocab_size=len(vocab), **small)), \
            tf.BertTokenizer(vocab=vocab)
    if kind == "multilingual-minilm":  # a BERT encoder with an XLM-R (SentencePiece) tokenizer
        vocab = _unigram(ROBERTA_SPECIALS)
        return tf.BertModel(tf.BertConfig(vocab_size=len(vocab), pad_token_id=1, **small)), \
            tf.XLMRobertaTokenizer(vocab=vocab)
    if kind == "roberta":
        vocab, merges = _bpe(ROBERTA_SPECIALS)
        cfg = tf.RobertaConfig(vocab_size=len(vocab), pad_token_id=1, type_vocab_size=1,
                               **{**small, "max_position_embeddings": 66})
        return tf.RobertaModel(cfg), tf.RobertaTokenizer(vocab=vocab, merges=merges)
    if kind == "xlm-roberta":
        vocab = _unigram(ROBERTA_SPECIALS)
        cfg = tf.XLMRobertaConfig(vocab_size=len(vocab), pad_token_id=1, type_vocab_size=1,
                                  **{**small, "max_position_embeddings": 66})
        return tf.XLMRobertaModel(cfg), tf.XLMRobertaTokenizer(vocab=vocab)
    if kind == "distilbert":
        vocab = _wordpiece(WORDPIECE_SPECIALS)
        cfg = tf.DistilBertConfig(vocab_size=len(vocab), dim=32, n_layers=LAYERS,
                                  n_heads=HEADS, hidden_dim=37, max_position_embeddings=64)
        return tf.DistilBertModel(cfg), tf.DistilBertTokenizer(vocab=vocab)
    if kind == "mpnet":
        vocab = _wordpiece(["<s>", "<pad>", "</s>", "[UNK]", "<mask>"])
        cfg = tf.MPNetConfig(vocab_size=len(vocab), **{**small, "max_position_embeddings": 66})
        return tf.MPNetModel(cfg), tf.MPNetTokenizer(vocab=vocab)
    if kind == "deberta-v2":  # disentangled attention: not a model sinkscope reads
        vocab = _wordpiece(WORDPIECE_SPECIALS)
        cfg = tf.DebertaV2Config(vocab_size=len(vocab), **small)
        return tf.DebertaV2Model(cfg), tf.BertTokenizer(vocab=vocab)
    raise ValueError(f"unknown kind {kind!r}")


def build(kind: str, folder: Path, *, seed: int = 0, max_seq_length: int = MAX_SEQ_LENGTH,
          normalize: bool = True) -> Path:
    """Build the tiny ``kind`` model and save it as a sentence-transformers folder."""
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules.transformer import Transformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    torch.manual_seed(seed)
    model, tokenizer = _model_and_tokenizer(kind)
    hf = Path(folder) / "hf"
    model.save_pretrained(hf)
    tokenizer.save_pretrained(hf)
    first = Transformer(str(hf), max_seq_length=max_seq_length)
    modules = [first, Pooling(first.get_embedding_dimension(), "mean")]
    if normalize:
        modules.append(Normalize())
    out = Path(folder) / "st"
    SentenceTransformer(modules=modules, device="cpu").save(str(out))
    return out
