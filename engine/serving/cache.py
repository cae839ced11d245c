"""What a replica keeps between requests: encodings (and the Sentences view's measures),
in one least-recently-used store bounded by bytes, keyed by the :class:`Job` that names
them."""

from __future__ import annotations

import collections
from dataclasses import dataclass

from ..models.encoder import CleanText
from ..types import Encoding


@dataclass(frozen=True)
class Job:
    """Texts to encode for one request. ``key`` names the encodings (the cache key);
    ``pass_key`` groups jobs that share one forward pass."""

    model: str
    mode: str
    texts: tuple[CleanText, ...]
    length: int = 0  # padded length of the job's own forward pass (its longest text)
    bucket: int = 1  # jobs whose lengths round up to the same multiple share a pass

    @property
    def key(self) -> tuple:
        return (self.model, self.mode, self.texts)

    @property
    def pass_key(self) -> tuple:
        # On the CPU (bucket 1) jobs share a pass only when their padded length is equal:
        # then every text is encoded exactly as the embedded engine encodes it (measured:
        # the float32 rounding of a text depends on its padded length, not on the other
        # rows). On an accelerator, where results are float32 anyway, lengths within one
        # bucket share a pass. A joint pair is one sequence and is encoded on its own.
        if self.mode == "joint":
            return (self.model, "pair", self.texts)
        return (self.model, "many", -(-self.length // self.bucket))


class EncodingCache:
    """A least-recently-used store of encodings bounded by their arrays' bytes."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: collections.OrderedDict[tuple, tuple[tuple[Encoding, ...], int]] = (
            collections.OrderedDict())
        self.bytes = 0
        self.hits = self.misses = self.evictions = 0

    def get(self, key: tuple) -> tuple[Encoding, ...] | None:
        item = self._items.get(key)
        if item is None:
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return item[0]

    def put(self, key: tuple, encodings: tuple[Encoding, ...], size: int | None = None
            ) -> None:
        """Keep ``encodings`` (or any value whose ``size`` in bytes is given)."""
        if size is None:
            size = sum(x.nbytes for e in encodings for x in (e.hidden, e.q, e.k, e.attentions)
                       if x is not None)
        if size > self.max_bytes or key in self._items:
            return
        self._items[key] = (encodings, size)
        self.bytes += size
        self.shrink()

    def shrink(self) -> None:
        while self.bytes > self.max_bytes and self._items:
            _, (_, size) = self._items.popitem(last=False)
            self.bytes -= size
            self.evictions += 1

    def stats(self) -> dict:
        """The counters ``GET /v1/stats`` reports."""
        return {"entries": len(self), "bytes": self.bytes, "max_bytes": self.max_bytes,
                "hits": self.hits, "misses": self.misses, "evictions": self.evictions}

    def __len__(self) -> int:
        return len(self._items)
