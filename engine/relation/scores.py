"""From encodings to measures and scores: token weights, word pooling, S = Q Kᵀ / √d_head."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SettingsError, TextError
from ..settings import WEIGHTS
from ..types import Encoding



@dataclass(frozen=True)
class Side:
    """One text's atoms at the granularity shown (tokens or words).

    Attributes:
        tokens: n labels. special: (n,) bool. hidden: (L+1, n, d). q, k: (L, H, n, d_head).
        groups: for each atom, the indices (within the encoding) of the tokens it pools.
    """

    tokens: tuple[str, ...]
    special: np.ndarray
    hidden: np.ndarray
    q: np.ndarray
    k: np.ndarray
    groups: tuple[tuple[int, ...], ...]


def side(e: Encoding, *, pool_words: bool = False, segment: int | None = None) -> Side:
    """Select one text's tokens (a segment of a joint pair, or all) and optionally pool words.

    Word pooling merges subword labels ("bank", "##s" → "banks"), and mean-pools hidden
    states, queries and keys over each word's subwords; special tokens stay on their own.
    """
    idx = np.arange(e.n) if segment is None else np.flatnonzero(e.segment == segment)
    tokens = [e.tokens[i] for i in idx]
    special, word_ids = e.special[idx], e.word_ids[idx]
    hidden, q, k = e.hidden[:, idx], e.q[:, :, idx], e.k[:, :, idx]
    if not pool_words:
        return Side(tuple(tokens), special, hidden, q, k, tuple((int(i),) for i in idx))
    groups: list[list[int]] = []
    for j, w in enumerate(word_ids):
        if w >= 0 and groups and word_ids[groups[-1][0]] == w:
            groups[-1].append(j)
        else:
            groups.append([j])
    labels = tuple(_merge([tokens[j] for j in g]) for g in groups)

    def pool(x: np.ndarray, axis: int) -> np.ndarray:
        return np.stack([x.take(g, axis=axis).mean(axis=axis) for g in groups], axis=axis)

    return Side(labels, np.array([bool(special[g[0]]) for g in groups]),
                pool(hidden, 1), pool(q, 2), pool(k, 2),
                tuple(tuple(int(idx[j]) for j in g) for g in groups))


def _merge(pieces: list[str]) -> str:
    """Join WordPiece pieces: ["bank", "##s"] → "banks"."""
    out = pieces[0]
    for p in pieces[1:]:
        out += p[2:] if p.startswith("##") else p
    return out


def weights(s: Side, kind: str = "content", *, layer: int = -1,
            name: str = "The text") -> np.ndarray:
    """Weights of one text's atoms, summing to 1.

    Args:
        s: the text's atoms.
        kind: "content" (uniform over non-special tokens; special tokens get 0),
            "uniform" (uniform over all tokens), or "norm" (∝ the hidden state's norm at
            ``layer``, special tokens 0).

    Returns:
        (n,) nonnegative weights summing to 1.
    """
    if kind not in WEIGHTS:
        raise SettingsError(f"weights must be one of {', '.join(WEIGHTS)}; got {kind!r}.")
    n = len(s.tokens)
    content = ~s.special
    if not content.any():
        raise TextError.of("text_unreadable", name=name)
    if kind == "uniform":
        return np.full(n, 1.0 / n)
    if kind == "content":
        w = content.astype(np.float64)
    else:
        w = np.linalg.norm(s.hidden[layer].astype(np.float64), axis=-1) * content
    return w / w.sum()


def scores(qa: np.ndarray, kb: np.ndarray) -> np.ndarray:
    """S = Q Kᵀ / √d_head for queries (..., n, d) and keys (..., m, d) → (..., n, m)."""
    d = qa.shape[-1]
    return np.einsum("...id,...jd->...ij", qa.astype(np.float64), kb.astype(np.float64)) / np.sqrt(d)


def check_layer_head(layer, head, n_layers: int, n_heads: int) -> tuple[int | str, int | str]:
    """Validate a layer (index, negative from the end, or "all") and a head (index, "mean",
    or "all"); return them normalised to nonnegative indices or the strings."""
    if layer == "all":
        pass
    else:
        layer = _index(layer, n_layers, "layer")
    if head in ("mean", "all"):
        pass
    else:
        head = _index(head, n_heads, "head")
    if (layer == "all") != (head == "all"):
        raise SettingsError('Use layer="all" together with head="all" for the whole grid.')
    return layer, head


def _index(x, size: int, name: str) -> int:
    try:
        i = int(x)
    except (TypeError, ValueError, OverflowError):  # OverflowError: ±inf
        raise SettingsError(f"{name} must be a whole number from 0 to {size - 1}, got {x!r}.") from None
    if isinstance(x, float) and not float(x).is_integer():
        raise SettingsError(f"{name} must be a whole number from 0 to {size - 1}, got {x!r}.")
    if not -size <= i < size:
        raise SettingsError(f"{name} {i} is out of range: the model has {size} {name}s "
                            f"(0 to {size - 1}).", code="out_of_range",
                            params={"name": name, "value": i, "size": size})
    return i % size
