"""What relates the words: scores S (n, m) between the whitespace words of two texts.

- ``source="attention"``: the model's attention logits S = Q_A K_Bᵀ / √d_head of a layer
  and head (``head="mean"``: averaged over heads), each text encoded in its own context
  (the paper's Q(μ, x) and K(ν, y)).
- ``source="hidden"``: cosine similarity of the layer's hidden states (what SimAlign and
  OTAlign align with); ``center=True`` subtracts the mean word vector of the corpus first.

Subword vectors are mean-pooled over each whitespace word (gold alignments are over
``str.split()`` words); special tokens take no part. A word the model does not read (cut
at its token limit) gets no vector: it is marked invalid and receives no links. Texts are
encoded many at a time, in padded forward passes.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import unicodedata
import weakref
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import SettingsError, TextError

SOURCES = ("attention", "hidden")


@dataclass(frozen=True)
class Source:
    """Settings of what relates the words.

    Attributes:
        kind: "attention" or "hidden". layer: attention layer 0 … L−1, or hidden-state
        index 0 … L (0 = embeddings); negative counts from the end. head: a head index or
        "mean" (attention only). center: centre hidden states over the corpus.
    """

    kind: str = "hidden"
    layer: int = 3
    head: int | str = "mean"
    center: bool = False

    def __post_init__(self):
        if self.kind not in SOURCES:
            raise SettingsError(f"source must be 'attention' or 'hidden', got {self.kind!r}.")
        if isinstance(self.layer, bool) or not isinstance(self.layer, (int, np.integer)):
            raise SettingsError(f"layer must be a whole number, got {self.layer!r}.")
        if self.head != "mean" and (isinstance(self.head, bool)
                                    or not isinstance(self.head, (int, np.integer))):
            raise SettingsError(f"head must be a whole number or 'mean', got {self.head!r}.")

    def check(self, n_layers: int, n_heads: int) -> "Source":
        """The same source with layer and head as nonnegative indices of this model."""
        top = n_layers if self.kind == "hidden" else n_layers - 1
        size = top + 1
        if not -size <= self.layer < size:
            what = "hidden-state indices 0" if self.kind == "hidden" else "attention layers 0"
            raise SettingsError(f"layer {self.layer} is out of range: the model has {what} "
                                f"to {top}.")
        head = self.head
        if head != "mean":
            if not -n_heads <= head < n_heads:
                raise SettingsError(f"head {head} is out of range: the model has heads 0 to "
                                    f"{n_heads - 1}.")
            head = int(head) % n_heads
        return Source(self.kind, int(self.layer) % size, head, self.center)

    def to_dict(self) -> dict:
        return {"source": self.kind, "layer": self.layer, "head": self.head,
                "center": self.center}


@dataclass(frozen=True)
class Words:
    """One text's whitespace words with pooled vectors.

    Attributes:
        words: the words. valid: (n,) bool, words the model read.
        hidden: (L+1, n, d) float32 hidden states (0 for invalid words).
        q, k: (L, n, H·d_head) float32 queries and keys, heads side by side.
        n_heads: H.
    """

    words: tuple[str, ...]
    valid: np.ndarray
    hidden: np.ndarray | None
    q: np.ndarray | None
    k: np.ndarray | None
    n_heads: int


def words_text(words: Sequence[str]) -> str:
    """The text the encoder reads for these whitespace words: each word normalised (NFC,
    control characters removed) and the words joined by one space, so the text holds
    exactly ``len(words)`` words in order (a word of control characters only becomes a
    zero-width space, which no word-piece tokenizer reads: that word gets no tokens).
    """
    out = []
    for w in words:
        w = unicodedata.normalize("NFC", w.encode("utf-8", "replace").decode("utf-8"))
        w = "".join(ch for ch in w if unicodedata.category(ch) != "Cc" and not ch.isspace())
        out.append(w or "\u200b")
    return " ".join(out)


def word_index(tokenizer, text: str, max_tokens: int, n_words: int) -> np.ndarray:
    """For each token of ``text`` as the encoder tokenises it, its whitespace word (−1 for
    special tokens)."""
    enc = tokenizer(text, truncation=True, max_length=max_tokens, return_offsets_mapping=True,
                    split_special_tokens=True)
    seq = enc.sequence_ids() if hasattr(enc, "sequence_ids") else [0] * len(enc["input_ids"])
    return token_words(text, enc["offset_mapping"], seq, n_words)


def token_words(text: str, offsets: Sequence, seq: Sequence, n_words: int) -> np.ndarray:
    """Each token's whitespace word (−1 for special tokens) from the tokenizer's character
    offsets and sequence ids (None for the special tokens it adds)."""
    owner = np.full(len(text) + 1, -1, dtype=np.int64)
    w, inside = -1, False
    for c, ch in enumerate(text):
        if ch.isspace():
            inside = False
        else:
            if not inside:
                w += 1
                inside = True
            owner[c] = w
    out = np.full(len(offsets), -1, dtype=np.int64)
    for t, ((s, e), sid) in enumerate(zip(offsets, seq)):
        if sid is None or e <= s:
            continue
        ws = owner[s:e]
        ws = ws[ws >= 0]
        if len(ws):
            out[t] = min(int(ws[0]), n_words - 1)
    return out


def _pool(idx: np.ndarray, special: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, T) mean-pooling matrix from each token's word (special tokens take no part) and
    the words (n,) that got at least one token."""
    pool = np.zeros((n, len(idx)), dtype=np.float32)
    for t, wi in enumerate(idx):
        if wi >= 0 and not special[t]:
            pool[wi, t] = 1.0
    cnt = pool.sum(1)
    valid = cnt > 0
    pool /= np.where(valid, cnt, 1.0)[:, None]
    return pool, valid


def encode_words(texts: Sequence[str], encoder, *, keep: Source | None = None,
                 batch_size: int = 32, progress: Callable[[int, int], None] | None = None
                 ) -> list[Words]:
    """Encode texts (padded forward passes of ``batch_size`` texts) and pool subwords to
    whitespace words.

    With ``keep`` (one layer of one source) the model runs only up to that layer, on texts
    batched by length (:func:`layer_words`), when it can; otherwise every layer is encoded.

    Args:
        texts: the texts, split on whitespace into the gold's words.
        encoder: an :class:`~engine.models.encoder.Encoder`.
        keep: keep only what this source needs (one layer); None keeps every layer.
        progress: called with (texts done, total) after each forward pass.

    Raises:
        TextError: an empty text.
    """
    from ..models.encoder import clean_text

    words = [tuple(t.split()) for t in texts]
    for k, w in enumerate(words):
        if not w:
            raise TextError(f"text {k + 1} is empty; every pair needs two texts.")
    cleaned = [clean_text(words_text(w)) for w in words]
    if keep is not None:
        out = layer_words(words, cleaned, encoder, keep, batch_size=batch_size,
                          progress=progress)
        if out is not None:
            return out
    out: list[Words] = []
    total = len(texts)
    for start in range(0, total, batch_size):
        encs = encoder.encode_many(cleaned[start:start + batch_size], attentions=False)
        for w, c, e in zip(words[start:start + batch_size], cleaned[start:], encs):
            idx = word_index(encoder.tokenizer, c.text, encoder.max_tokens, len(w))
            if len(idx) != e.n:  # pragma: no cover - the tokeniser disagrees with itself
                raise TextError("The tokenizer gave different tokens twice; report this.")
            n = len(w)
            pool, valid = _pool(idx, e.special, n)
            L, H, _, dh = e.q.shape
            hidden = q = k = None
            if keep is None or keep.kind == "hidden":
                hs = e.hidden if keep is None else e.hidden[[keep.layer]]
                hidden = np.einsum("wt,ltd->lwd", pool, hs).astype(np.float32)
            if keep is None or keep.kind == "attention":
                qs = e.q if keep is None else e.q[[keep.layer]]
                ks = e.k if keep is None else e.k[[keep.layer]]
                q = np.einsum("wt,lhtd->lwhd", pool, qs).reshape(len(qs), n, H * dh)
                k = np.einsum("wt,lhtd->lwhd", pool, ks).reshape(len(ks), n, H * dh)
                q, k = q.astype(np.float32), k.astype(np.float32)
            out.append(Words(w, valid, hidden, q, k, H))
        if progress is not None:
            progress(len(out), total)
    return out


def corpus_mean(words: Sequence[Words], layer: int) -> np.ndarray:
    """The mean word vector (d,) of hidden layer ``layer`` (an index into ``Words.hidden``)
    over every valid word of the corpus: the centre for ``center=True``."""
    total, count = None, 0
    for w in words:
        x = w.hidden[layer][w.valid].astype(np.float64)
        total = x.sum(0) if total is None else total + x.sum(0)
        count += len(x)
    return total / max(count, 1)


def scores(source: Source, wa: Words, wb: Words, *, layer_index: int | None = None,
           mu: np.ndarray | None = None) -> np.ndarray:
    """S (n, m) between two texts' words.

    ``layer_index``: where the source's layer sits in ``Words`` (0 when encoded with
    ``keep=source``; the layer itself when every layer was kept). ``mu``: the corpus
    centre (d,) for centred hidden states.

    Attention: S = (1/H) Σ_h Q_h K_hᵀ/√d_head (or one head); hidden: S_ij = cos(x_i − μ, y_j − μ).
    """
    li = source.layer if layer_index is None else layer_index
    if source.kind == "hidden":
        x = wa.hidden[li].astype(np.float64)
        y = wb.hidden[li].astype(np.float64)
        if mu is not None:
            x, y = x - mu, y - mu
        nx = np.linalg.norm(x, axis=-1, keepdims=True)
        ny = np.linalg.norm(y, axis=-1, keepdims=True)
        S = (x / np.where(nx > 0, nx, 1)) @ (y / np.where(ny > 0, ny, 1)).T
    else:
        H = wa.n_heads
        q = wa.q[li].astype(np.float64)
        k = wb.k[li].astype(np.float64)
        dh = q.shape[-1] // H
        if source.head == "mean":
            S = q @ k.T / (H * np.sqrt(dh))
        else:
            h = int(source.head)
            S = q[:, h * dh:(h + 1) * dh] @ k[:, h * dh:(h + 1) * dh].T / np.sqrt(dh)
    S = np.where(np.outer(wa.valid, wb.valid), S, 0.0)
    return S


# ----------------------------------------------------------------- one layer, many texts
_SHORT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model → {k: model | None}
_SHORT_LOCK = threading.Lock()
PROBE = "The bank of the river, 3 km away: a probe of the first layers."


def first_layers(encoder, k: int):
    """The encoder's model run through its first ``k`` layers only (k = 0: the embeddings),
    sharing its weights and leaving it untouched; its last hidden state is hidden state k.

    Checked once per model and k against the whole model's hidden state k on a probe text;
    None when the model cannot be cut so (then every layer is encoded).
    """
    model, arch = getattr(encoder, "model", None), getattr(encoder, "arch", None)
    if model is None or arch is None or not 0 <= k <= getattr(encoder, "n_layers", -1):
        return None
    with _SHORT_LOCK:
        cache = _SHORT.setdefault(model, {})
        if k not in cache:
            cache[k] = _cut(encoder, model, arch, k)
        return cache[k]


def _cut(encoder, model, arch, k: int):
    """A shallow copy of ``model`` whose layer list holds its first k layers, checked."""
    import torch
    from torch import nn

    def with_layers(mod, path: list[str], layers):
        new = copy.copy(mod)
        new._modules = dict(mod._modules)  # the copy's own children; the original keeps its
        name = path[0]
        new._modules[name] = layers if len(path) == 1 else with_layers(
            mod._modules[name], path[1:], layers)
        return new

    try:
        layers = arch.layers(model)
        path = next(name for name, mod in model.named_modules() if mod is layers)
        short = with_layers(model, path.split("."), nn.ModuleList(list(layers)[:k]))
        enc = _tokens(encoder, [PROBE])
        inputs = _padded(encoder, enc, [0])
        with torch.inference_mode():
            full = model(**inputs, output_hidden_states=True).hidden_states[k]
            got = short(**inputs).last_hidden_state
        if got.shape == full.shape and torch.allclose(got.float(), full.float(), atol=1e-5,
                                                      rtol=1e-4):
            return short
    except Exception:  # any model this cut does not fit: encode every layer instead
        pass
    return None


def _tokens(encoder, texts: Sequence[str]):
    """The texts tokenised as the encoder does (cut at its limit), with character offsets."""
    lock = getattr(encoder, "_tokenizing", None) or contextlib.nullcontext()
    with lock:
        return encoder.tokenizer(list(texts), truncation=True, max_length=encoder.max_tokens,
                                 return_offsets_mapping=True, split_special_tokens=True)


def _padded(encoder, enc, idx: Sequence[int]) -> dict:
    """Model inputs (B, T) of the texts ``idx`` of ``enc``, padded on the right."""
    import torch

    ids = [enc["input_ids"][i] for i in idx]
    B, T = len(ids), max(len(x) for x in ids)
    pad = encoder.tokenizer.pad_token_id or 0
    out = {"input_ids": torch.full((B, T), pad, dtype=torch.long),
           "attention_mask": torch.zeros((B, T), dtype=torch.long)}
    if "token_type_ids" in enc:
        out["token_type_ids"] = torch.zeros((B, T), dtype=torch.long)
    for r, i in enumerate(idx):
        n = len(ids[r])
        out["input_ids"][r, :n] = torch.tensor(ids[r])
        out["attention_mask"][r, :n] = 1
        if "token_type_ids" in out:
            out["token_type_ids"][r, :n] = torch.tensor(enc["token_type_ids"][i])
    return {k: v.to(encoder.device) for k, v in out.items()}


def layer_words(words: Sequence[tuple[str, ...]], cleaned: Sequence, encoder, keep: Source, *,
                batch_size: int = 32, progress: Callable[[int, int], None] | None = None
                ) -> list[Words] | None:
    """:func:`encode_words` for one layer: the model runs through that layer only
    (:func:`first_layers`), on batches of texts of similar length (less padding), and the
    source's vectors are pooled to words. None when the model cannot be cut.

    Hidden state k (``keep.kind == "hidden"``) or the queries and keys of attention layer
    k, Q = x_k W_Q (from its input, hidden state k): the same vectors as a whole forward
    pass gives.
    """
    import torch

    short = first_layers(encoder, int(keep.layer))
    if short is None:
        return None
    enc = _tokens(encoder, [c.text for c in cleaned])
    lengths = [len(x) for x in enc["input_ids"]]
    total = len(words)
    order = sorted(range(total), key=lambda i: (lengths[i], i))
    qk = encoder.arch.projections(encoder.arch.layers(encoder.model)[keep.layer]) \
        if keep.kind == "attention" else None
    out: list = [None] * total
    for start in range(0, total, batch_size):
        idx = order[start:start + batch_size]
        with torch.inference_mode():
            x = short(**_padded(encoder, enc, idx)).last_hidden_state
            vecs = [x] if qk is None else [qk[0](x), qk[1](x)]
            vecs = [v.float().cpu().numpy() for v in vecs]
        for r, i in enumerate(idx):
            seq = enc.sequence_ids(i)
            special = np.array([s is None for s in seq], dtype=bool)
            tw = token_words(cleaned[i].text, enc["offset_mapping"][i], seq, len(words[i]))
            pool, valid = _pool(tw, special, len(words[i]))
            pooled = [(pool @ v[r, :lengths[i]])[None].astype(np.float32) for v in vecs]
            hidden, q, k = (pooled[0], None, None) if qk is None else (None, *pooled)
            out[i] = Words(words[i], valid, hidden, q, k, encoder.n_heads)
        if progress is not None:
            progress(min(start + batch_size, total), total)
    return out
