"""A corpus made ready for the aligner: texts tokenised once, the frozen layers run once.

Each text is split on whitespace (the gold's words), tokenised by the base model's
tokenizer (as :func:`engine.alignment.sources.encode_words` does), and run through the
frozen lower layers once; the states of the first fine-tuned layer's input are kept per
text (``(T, d)`` float32), so an epoch runs only the fine-tuned layers. A word's vector is
the mean of its subword tokens' states; a word with no token (cut at the token limit) is
not valid: it takes no part and gets no link.

:func:`batch` pads pairs into one :class:`Batch`: the A texts then the B texts, each (T, d)
padded to one length, with the pooling matrix from tokens to words and the gold links.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from ..alignment.readers import Pair
from ..alignment.sources import word_index, words_text


@dataclass(frozen=True)
class Text:
    """One text's tokens and cached states.

    Attributes:
        n_words: whitespace words. owner: (T,) the word of each token (−1: special).
        states: (T, d) float32 input of the first fine-tuned layer (on the model's device).
        valid: (n_words,) bool, words with at least one token.
    """

    n_words: int
    owner: np.ndarray
    states: torch.Tensor = field(repr=False)
    valid: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class Corpus:
    """Pairs with their two texts ready: ``texts[2k]`` is pair k's A, ``texts[2k+1]`` its B."""

    pairs: tuple[Pair, ...]
    texts: tuple[Text, ...] = field(repr=False)

    def __len__(self) -> int:
        return len(self.pairs)

    def shape(self, k: int) -> tuple[int, int]:
        return self.texts[2 * k].n_words, self.texts[2 * k + 1].n_words

    def tokens(self, k: int) -> int:
        return max(len(self.texts[2 * k].owner), len(self.texts[2 * k + 1].owner))


@dataclass(frozen=True)
class Batch:
    """Pairs padded for one forward pass (B pairs, 2B texts).

    Attributes:
        h: (2B, T, d) cached states, A texts first. mask: (2B, T) bool, real tokens.
        pool: (2B, W, T) word pooling (each valid word's row averages its tokens).
        mask_a: (B, n), mask_b: (B, m) bool, valid words. gold: (B, n, m) bool sure links
            between valid words (all False without gold). index: the pairs' indices.
    """

    h: torch.Tensor
    mask: torch.Tensor
    pool: torch.Tensor
    mask_a: torch.Tensor
    mask_b: torch.Tensor
    gold: torch.Tensor
    index: tuple[int, ...]


def _owners(tokenizer, texts: Sequence[str], n_words: Sequence[int], max_tokens: int) -> list:
    return [word_index(tokenizer, t, max_tokens, n) for t, n in zip(texts, n_words)]


def prepare(pairs: Sequence[Pair], aligner, *, batch_size: int = 64,
            progress: Callable[[int, int], None] | None = None) -> Corpus:
    """Tokenise every text of ``pairs`` and cache the frozen layers' states.

    Args:
        pairs: :class:`Pair` s (texts lower-cased first when the aligner's settings say so).
        aligner: an :class:`~engine.aligner.model.Aligner` (its base encoder and layers).
        batch_size: texts per frozen forward pass (texts of similar length go together).
        progress: called with (texts done, total).
    """
    from ..models.encoder import clean_text

    enc = aligner.encoder
    if aligner.settings.lowercase:
        pairs = [p.lower() for p in pairs]
    words = [w for p in pairs for w in (p.words_a, p.words_b)]
    cleaned = [clean_text(words_text(w)).text for w in words]
    lock = getattr(enc, "_tokenizing", None) or nullcontext()
    with lock:
        owners = _owners(enc.tokenizer, cleaned, [len(w) for w in words], enc.max_tokens)
        ids = [enc.tokenizer(t, truncation=True, max_length=enc.max_tokens,
                             split_special_tokens=True)["input_ids"] for t in cleaned]
    order = sorted(range(len(ids)), key=lambda k: (len(ids[k]), k))
    states: list[torch.Tensor | None] = [None] * len(ids)
    pad = enc.tokenizer.pad_token_id or 0
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        T = max(len(ids[k]) for k in chunk)
        x = torch.full((len(chunk), T), pad, dtype=torch.long)
        mask = torch.zeros((len(chunk), T), dtype=torch.long)
        for r, k in enumerate(chunk):
            x[r, :len(ids[k])] = torch.tensor(ids[k])
            mask[r, :len(ids[k])] = 1
        h = aligner.frozen_states(x.to(aligner.device), mask.to(aligner.device))
        for r, k in enumerate(chunk):
            states[k] = h[r, :len(ids[k])].clone()
        if progress is not None:
            progress(min(start + batch_size, len(order)), len(order))
    texts = []
    for w, o, s in zip(words, owners, states):
        valid = np.zeros(len(w), dtype=bool)
        valid[o[o >= 0]] = True
        texts.append(Text(len(w), o, s, valid))
    return Corpus(tuple(pairs), tuple(texts))


def batch(corpus: Corpus, index: Sequence[int], *, gold: bool = True) -> Batch:
    """The pairs ``index`` of ``corpus`` padded into one :class:`Batch`."""
    B = len(index)
    texts = [corpus.texts[2 * k] for k in index] + [corpus.texts[2 * k + 1] for k in index]
    T = max(len(t.owner) for t in texts)
    W = max(t.n_words for t in texts)
    first = texts[0].states
    h = first.new_zeros((2 * B, T, first.shape[-1]))
    mask = torch.zeros((2 * B, T), dtype=torch.bool)
    rows, words, toks, weights = [], [], [], []
    for r, t in enumerate(texts):
        h[r, :len(t.owner)] = t.states
        mask[r, :len(t.owner)] = True
        tok = np.flatnonzero(t.owner >= 0)
        w = t.owner[tok]
        cnt = np.bincount(w, minlength=t.n_words)
        rows.append(np.full(len(tok), r))
        words.append(w)
        toks.append(tok)
        weights.append(1.0 / cnt[w])
    pool = torch.zeros((2 * B, W, T), dtype=first.dtype)
    idx = tuple(torch.from_numpy(np.concatenate(v)) for v in (rows, words, toks))
    pool[idx] = torch.from_numpy(np.concatenate(weights)).to(first.dtype)
    n = max(corpus.texts[2 * k].n_words for k in index)
    m = max(corpus.texts[2 * k + 1].n_words for k in index)
    mask_a = torch.zeros((B, n), dtype=torch.bool)
    mask_b = torch.zeros((B, m), dtype=torch.bool)
    G = torch.zeros((B, n, m), dtype=torch.bool)
    for r, k in enumerate(index):
        ta, tb = corpus.texts[2 * k], corpus.texts[2 * k + 1]
        mask_a[r, :ta.n_words] = torch.from_numpy(ta.valid)
        mask_b[r, :tb.n_words] = torch.from_numpy(tb.valid)
        if gold and corpus.pairs[k].has_gold:
            ij = np.array(sorted(corpus.pairs[k].sure), dtype=np.int64).reshape(-1, 2)
            G[r, ij[:, 0], ij[:, 1]] = True
    G &= mask_a[:, :, None] & mask_b[:, None, :]
    dev = first.device
    return Batch(h, mask.to(dev), pool.to(dev), mask_a.to(dev), mask_b.to(dev), G.to(dev),
                 tuple(int(k) for k in index))


def length_batches(corpus: Corpus, size: int, rng: np.random.Generator | None = None,
                   window: int = 50) -> list[list[int]]:
    """Pair indices in batches of ``size`` pairs of similar length.

    Without ``rng``: sorted by length (for evaluation). With it (training): shuffled, then
    sorted by length within windows of ``window`` batches, and the batches shuffled, so
    each epoch's batches differ but pad little.
    """
    n = len(corpus)
    if rng is None:
        order = sorted(range(n), key=lambda k: (corpus.tokens(k), k))
        return [order[s:s + size] for s in range(0, n, size)]
    perm = rng.permutation(n)
    out = []
    span = size * window
    for s in range(0, n, span):
        part = sorted(perm[s:s + span].tolist(), key=corpus.tokens)
        out += [part[i:i + size] for i in range(0, len(part), size)]
    return [out[i] for i in rng.permutation(len(out))]
