"""A replica's batching without Ray (engine.serving.batching): which jobs share a forward
pass, that every request gets its own result in order, that one failing pass or answer
leaves the others standing, that concurrent requests for the same texts wait for one
encoding, when a relation joins a batch, and the overload bounds Serve is given."""

from __future__ import annotations

import asyncio
import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from engine.errors import SettingsError, TextError
from engine.models.encoder import clean_text
from engine.serving import batching
from engine.serving.batching import Batcher, Overload
from engine.serving.cache import EncodingCache, Job


@dataclasses.dataclass(frozen=True)
class FakeEncoding:
    """Stands for an Encoding: the text it came from and arrays the cache can size."""

    text: str
    hidden: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(4))
    q: None = None
    k: None = None
    attentions: None = None


class FakeEncoder:
    """Records every forward pass; a text containing "boom" makes its pass fail."""

    def __init__(self, name: str = "fake"):
        self.name = name
        self.passes: list[list[str]] = []

    def encode_many(self, texts, attentions=False):
        texts = [t.text for t in texts]
        self.passes.append(texts)
        if any("boom" in t for t in texts):
            raise RuntimeError("forward pass failed")
        return [FakeEncoding(t) for t in texts]

    def encode_pair(self, a, b):
        self.passes.append([a.text, b.text])
        return FakeEncoding(f"{a.text} | {b.text}")


def job(*texts: str, length: int = 10, mode: str = "separate", bucket: int = 1) -> Job:
    return Job(model="fake", mode=mode, texts=tuple(clean_text(t) for t in texts),
               length=length, bucket=bucket)


class ListBatcher:
    """What ``serve.batch`` does, in a few lines: calls made in the same moment are handed
    to ``fn`` as one list, and each caller gets its own element back."""

    def __init__(self, fn, wait_s: float = 0.01):
        self.fn, self.wait_s = fn, wait_s
        self.pending: list[tuple] = []
        self.sizes: list[int] = []

    async def __call__(self, item):
        future = asyncio.get_running_loop().create_future()
        self.pending.append((item, future))
        if len(self.pending) == 1:
            asyncio.get_running_loop().call_later(self.wait_s, self._flush)
        return await future

    def _flush(self):
        items, self.pending = self.pending, []
        self.sizes.append(len(items))

        async def run():
            for (_, fut), r in zip(items, await self.fn([i for i, _ in items])):
                fut.set_result(r)

        asyncio.ensure_future(run())


def test_jobs_share_a_pass_only_with_the_same_pass_key_in_order_of_arrival():
    jobs = [job("a", length=12), job("b", length=7), job("c", length=12),
            job("d", "e", length=7, mode="joint"), job("f", length=7),
            job("g", length=30, bucket=32), job("h", length=2, bucket=32)]
    assert batching.pass_groups(jobs) == [[0, 2], [1, 4], [3], [5, 6]]


def test_encode_jobs_gives_each_job_its_encodings_and_a_failing_pass_only_its_own_error():
    enc = FakeEncoder()
    jobs = [job("one", "uno", length=5), job("boom", length=9), job("two", "dos", length=5),
            job("left", "right", mode="joint"), job("also", length=9)]
    out = batching.encode_jobs(jobs, {"fake": enc})
    assert [tuple(e.text for e in out[i][0]) for i in (0, 2)] == [("one", "uno"),
                                                                ("two", "dos")]
    assert out[3][0][0].text == "left | right"
    assert all(out[i][1] == len(jobs) for i in (0, 2, 3))  # the batch they came in
    for i in (1, 4):  # "boom" and "also" shared the failing pass of length 9
        assert isinstance(out[i], RuntimeError) and "forward pass failed" in str(out[i])
    assert sorted(map(tuple, enc.passes)) == sorted(
        [("one", "uno", "two", "dos"), ("boom", "also"), ("left", "right")])


def test_concurrent_requests_are_batched_and_each_gets_its_own_result():
    async def main():
        enc = FakeEncoder()
        b = Batcher({"fake": enc}, EncodingCache(1 << 20))
        serve_batch = ListBatcher(b.encode)
        jobs = [job(f"text {i}", length=5 + i % 2) for i in range(6)] + [job("boom x")]
        got = await asyncio.gather(*(b.encodings(j, serve_batch) for j in jobs),
                                   return_exceptions=True)
        return b, enc, serve_batch, jobs, got

    b, enc, serve_batch, jobs, got = asyncio.run(main())
    assert serve_batch.sizes == [7]  # one batch, three forward passes (lengths 5, 6, 10)
    assert b.batches == {7: 1} and b.passes == 3 == len(enc.passes)
    for j, r in zip(jobs[:6], got[:6]):
        encodings, size = r
        assert encodings[0].text == j.texts[0].text and size == 7
    assert isinstance(got[6], RuntimeError)
    assert b.stats()["batch_sizes"] == {"7": 1} and b.stats()["forward_passes"] == 3
    assert b.stats()["cache"]["entries"] == 6  # the failed job is not cached


def test_the_same_texts_wait_for_one_encoding_then_come_from_the_cache():
    async def main():
        enc = FakeEncoder()
        b = Batcher({"fake": enc}, EncodingCache(1 << 20))
        serve_batch = ListBatcher(b.encode)
        j = job("the bank of the river", "a river bank")
        first = await asyncio.gather(*(b.encodings(j, serve_batch) for _ in range(5)))
        again = await b.encodings(j, serve_batch)
        return enc, b, first, again

    enc, b, first, again = asyncio.run(main())
    assert len(enc.passes) == 1 and all(r == first[0] for r in first)
    assert first[0][1] == 1  # one job in its batch
    assert again == (first[0][0], 0)  # 0: from the cache
    assert not b.inflight


def test_relate_items_writes_each_answer_and_keeps_errors_per_request():
    items = [("e1", "r1", "json"), ("e2", "bad", "json"), ("e3", "r3", "npz"),
             ("e4", "r4", "unwritable")]

    def relate(pairs):
        assert [r for _, r in pairs] == ["r1", "bad", "r3", "r4"]
        return [TextError("Text B is empty") if r == "bad" else {"r": r} for _, r in pairs]

    def dump(doc, media):
        if media == "unwritable":
            raise ValueError("cannot write")
        return f"{doc['r']}:{media}".encode()

    out = batching.relate_items(items, relate, dump, clock=lambda: 7.0)
    assert out[0] == (b"r1:json", 7.0, 4) and out[2] == (b"r3:npz", 7.0, 4)
    assert isinstance(out[1], TextError) and isinstance(out[3], ValueError)


def test_a_relation_alone_runs_at_once_and_joins_a_batch_only_while_others_run():
    async def main():
        b = Batcher({}, EncodingCache(1 << 20), max_batch_size=16)
        seen_batches = []

        async def relate_batch(item):
            seen_batches.append(item)
            if item == "fails":
                return SettingsError("layer out of range")
            return (b"joined", 2.0, 3)

        slow_started = asyncio.Event()
        release = asyncio.Event()

        def slow_work():  # a long relation in a worker thread
            loop.call_soon_threadsafe(slow_started.set)
            asyncio.run_coroutine_threadsafe(release.wait(), loop).result()
            return b"alone", 1.0

        loop = asyncio.get_running_loop()
        alone = await b.solve("first", lambda: (b"quick", 0.5), relate_batch)
        long = asyncio.ensure_future(b.solve("long", slow_work, relate_batch))
        await slow_started.wait()
        assert b.relating == 1
        joined = await b.solve("second", lambda: (b"never", 0.0), relate_batch)
        with pytest.raises(SettingsError, match="layer"):
            await b.solve("fails", lambda: (b"never", 0.0), relate_batch)
        unbatched = await b.solve("doc", lambda: (b"document", 0.1), None)
        release.set()
        long_r = await long
        b.max_batch_size = 1  # batching off: never joins, even while another runs
        off = await b.solve("third", lambda: (b"own", 0.2), relate_batch)
        return b, alone, joined, unbatched, long_r, off, seen_batches

    b, alone, joined, unbatched, long_r, off, seen = asyncio.run(main())
    assert alone == (b"quick", 0.5, 1) and long_r == (b"alone", 1.0, 1)
    assert joined == (b"joined", 2.0, 3) and unbatched == (b"document", 0.1, 1)
    assert off == (b"own", 0.2, 1)
    assert seen == ["second", "fails"] and b.relating == 0


def test_relate_batch_counts_sizes_and_answers_in_order():
    async def main():
        b = Batcher({}, EncodingCache(1 << 20))
        serve_batch = ListBatcher(lambda items: b.relate(
            items, lambda pairs: [{"r": r} for _, r in pairs],
            lambda doc, media: doc["r"].encode(), lambda: 3.0))
        return b, await asyncio.gather(*(serve_batch((None, f"req{i}", "json"))
                                         for i in range(5)))

    b, out = asyncio.run(main())
    assert [o[0] for o in out] == [f"req{i}".encode() for i in range(5)]
    assert all(o[2] == 5 for o in out) and b.stats()["relate_batch_sizes"] == {"5": 1}


def test_measure_and_job_for():
    j = job("a b c", "d e", length=0)
    m = batching.measure(j, lambda texts: [len(t.split()) + 2 for t in texts],
                         accelerator=False)
    assert m.length == 5 and m.bucket == 1 and m.key == j.key
    g = batching.measure(j, lambda texts: [40, 3], accelerator=True)
    assert g.bucket == batching.GPU_BUCKET and g.pass_key == (
        "fake", "many", -(-40 // batching.GPU_BUCKET))
    enc = SimpleNamespace(name="fake")
    req = SimpleNamespace(text_a="Hello\x00 there", text_b="ignored", mode="self")
    assert [t.text for t in batching.job_for(req, enc).texts] == ["Hello  there"]
    with pytest.raises(TextError, match="Text B is empty"):
        batching.job_for(SimpleNamespace(text_a="x", text_b=None, mode="separate"), enc)


def test_overload_bounds_and_the_answer_serve_gives():
    o = Overload()
    assert o.answer() == (503, {"Retry-After": "1"})
    assert Overload(retry_after_s=1.2, status=429).answer() == (429, {"Retry-After": "2"})
    opts = o.serve_options()
    assert opts["max_ongoing_requests"] == 32 and opts["max_queued_requests"] == 64
    assert opts["backpressure"] == {"status_code": 503, "retry_after_s": 1}
    for bad, word in (({"max_queued": 0}, "max_queued"), ({"max_ongoing": 2.5}, "max_ongoing"),
                      ({"retry_after_s": -1}, "retry_after_s"),
                      ({"retry_after_s": float("inf")}, "retry_after_s"),
                      ({"status": 500}, "503 or 429")):
        with pytest.raises(SettingsError, match=word):
            Overload(**bad)


@pytest.mark.slow
def test_the_deployment_is_given_these_bounds():
    """The Serve deployment class (imported, no Ray started) uses the batching's bounds
    and tuning: its queue limits and backpressure answer come from :data:`OVERLOAD`."""
    from engine.serving import deployment

    cfg = deployment.Engine._deployment_config
    assert cfg.max_ongoing_requests == batching.OVERLOAD.max_ongoing
    assert cfg.max_queued_requests == batching.OVERLOAD.max_queued
    assert cfg.backpressure_config.status_code == 503
    assert cfg.backpressure_config.retry_after_s == batching.OVERLOAD.retry_after_s
    assert cfg.user_config == batching.TUNING
