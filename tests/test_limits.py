"""Bounds on one served request, without Ray: the price of each route and its 413 message
(engine.serving.limits), the lanes, the solver's cancel token and deadline
(engine.solver.cancel), the streamed JSON (engine.serving.stream, byte for byte the
wire's), the client's typed errors, ``align --engine``'s chunks and retries, and the
command line checking its output paths and reading hostile lines before any work."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given, settings as hsettings, strategies as st

from engine import settings
from engine.errors import SettingsError
from engine.io.cli import main
from engine.serving import limits, stream, wire
from engine.serving.client import (EngineBusy, EngineClient, EngineUnavailable,
                                   RequestTimedOut, RequestTooLarge)
from engine.solver import sinkhorn
from engine.solver.cancel import Cancelled, DeadlineExceeded, Token, scope
from tests.support.engine_server import scripted

DATA = Path(__file__).parent / "data" / "align"


def request(**kw):
    base = dict(layer=-1, head="mean", half_steps=100, eps_values=None, steps=[1],
                max_bytes=3_000_000)
    return SimpleNamespace(**{**base, **kw})


# --------------------------------------------------------------------------- prices
def test_relate_price_counts_cells_half_steps_and_heads_and_names_the_limit():
    p = limits.relate_price(request(half_steps=1000), 160, 160, 6, 12)
    assert p.work == 160 * 160 * 1000 and p.check() is p and p.light is False
    grid = limits.relate_price(request(layer="all", head="all", half_steps=1000), 160, 160,
                               6, 12)
    assert grid.work == 160 * 160 * 1000 * 72 <= settings.CONFIG.serve_work_relate
    # the app's largest heads grid is within the work budget; its answer (5 arrays of
    # 72 × 160² float64: 88 MiB as NPZ) is not within SINKSCOPE_SERVE_MAX_ANSWER
    for media in (wire.NPZ, wire.JSON):
        with pytest.raises(limits.WorkTooLarge, match="SINKSCOPE_SERVE_MAX_ANSWER") as e:
            grid.check(media)
        assert e.value.code == "answer" and e.value.params["limit"] == 32 * 2**20
        assert e.value.params["work"] >= 72 * 5 * 160 * 160 * 8
    assert "Accept: application/x-npz" in str(e.value)
    mid = limits.relate_price(request(layer="all", head="all", half_steps=1000), 100, 100,
                              6, 12)
    assert mid.check(wire.NPZ) is mid
    with pytest.raises(limits.WorkTooLarge, match="as JSON"):
        mid.check(wire.JSON)
    with pytest.raises(limits.WorkTooLarge) as e:
        limits.relate_price(request(half_steps=100_000), 256, 256, 6, 12).check()
    msg = str(e.value)
    for words in ("6,553,600,000", "2,000,000,000", "SINKSCOPE_SERVE_WORK_RELATE",
                  "256 × 256 token pairs × 100,000 half-steps", "fewer half-steps"):
        assert words in msg, msg
    assert isinstance(e.value, SettingsError) and e.value.code == "work"
    assert e.value.params["limit"] == settings.CONFIG.serve_work_relate
    assert limits.relate_price(request(), 20, 20, 6, 12).light  # a slider move


def test_every_route_prices_its_own_shape(monkeypatch):
    cfg = settings.CONFIG
    path = limits.eps_path_price(request(half_steps=4000), 256, 256)
    assert path.work == 256 * 256 * 4000 * 12 <= cfg.serve_work_eps_path
    with pytest.raises(limits.WorkTooLarge, match="64 ε values"):
        limits.eps_path_price(request(half_steps=100_000, eps_values=[1.0] * 64),
                              256, 256).check()
    lat = limits.lattice_price(request(eps_values=[1.0, 0.5, 0.5], steps=[10, 100]), 64, 64)
    assert lat.work == 2 * 3 * 64 * 64 * 8  # distinct ε × (steps with 1) × cells × 8 bytes
    with pytest.raises(limits.WorkTooLarge, match="SINKSCOPE_SERVE_WORK_LATTICE"):
        limits.lattice_price(request(eps_values=list(np.geomspace(0.01, 10, 128)),
                                     steps=list(range(1, 129))), 64, 64).check()
    with pytest.raises(limits.WorkTooLarge, match="SINKSCOPE_SERVE_WORK_RELATE"):  # its solve
        limits.lattice_price(request(eps_values=list(np.geomspace(0.01, 10, 128)),
                                     steps=[10_000]), 60, 60).check()
    rank = limits.rank_price(10, [5, 7])
    assert rank.work == (2 * 10 * 7 + 2 * 7 * 7 + 10 * 10) * limits.RANK_HALF_STEPS
    # What the solver holds at once: 50 candidates of 256 tokens are within the work budget
    # but their batch (50 × 256 × 256 × 8 bytes) is over SINKSCOPE_SERVE_BATCH_BYTES.
    big = limits.rank_price(256, [256] * 50)
    assert big.work <= cfg.serve_work_rank
    with pytest.raises(limits.WorkTooLarge, match=r"25\.0 MiB .*50 candidates × 256 × 256"
                       r" token pairs × 8 bytes.*SINKSCOPE_SERVE_BATCH_BYTES"):
        big.check()
    limits.rank_price(200, [200] * 50).check(wire.NPZ)  # 50 plans of 200²: 15 MiB as NPZ
    with pytest.raises(limits.WorkTooLarge, match="as JSON"):
        limits.rank_price(200, [200] * 50).check(wire.JSON)
    with pytest.raises(limits.WorkTooLarge, match="64 ε values × 256 × 256 token pairs × 8"):
        limits.eps_path_price(request(half_steps=100, eps_values=[1.0] * 64), 256, 256).check()
    al = limits.align_price([("a b c", "d e"), ("x", "y z w")])
    assert al.work == 3 * 2 + 1 * 3 and not al.light  # alignments: always the heavy lane
    monkeypatch.setattr(settings, "CONFIG", settings.Config.from_env(
        {"SINKSCOPE_SERVE_WORK_ALIGN": "8"}))
    with pytest.raises(limits.WorkTooLarge, match="9 word pairs .* allows 8"):
        al.check()


def test_answers_are_bounded_by_what_they_hold():
    """The bound of an answer is its values at their largest written size: the longest
    float repr and a comma in JSON, 8 bytes in NPZ (lists stay JSON inside NPZ)."""
    longest = json.dumps([-2.2250738585072014e-308] * 2, separators=(",", ":"))
    assert len(longest) - 2 == 2 * limits.VALUE_BYTES[wire.JSON]["floats"] - 1
    a = limits.Answer(floats=10, listed=2, ints=3, chars=4, octets=5)
    assert a.bytes(wire.JSON) == limits.DOC_BYTES + 250 + 50 + 33 + 24 + 20
    assert a.bytes(wire.NPZ) == limits.DOC_BYTES + 80 + 50 + 33 + 24 + 5
    from engine.relation.relate import ERROR_POINTS

    assert limits.KEPT_ERRORS == ERROR_POINTS + 2  # what a relation keeps per head
    # The longest history a relation keeps: 72 heads × 100,000 half-steps of a 2-word pair
    # is far within the limit (the solver's 14.4 million errors are not sent).
    p = limits.relate_price(request(layer="all", head="all", half_steps=100_000), 4, 4, 6, 12)
    assert p.answer.bytes(wire.JSON) < 8 * 2**20 and p.check(wire.JSON) is p
    al = limits.align_price([("a " * 400, "b " * 400)] * 2, values=True)
    assert al.answer.listed >= 2 * 400 * 400 and al.answer.ints >= 4 * 2 * 400 * 400
    with pytest.raises(limits.WorkTooLarge, match="values: false"):
        limits.align_price([("a " * 400, "b " * 400)] * 20, values=True).check(wire.NPZ)


def test_heavy_requests_wait_for_their_slot_and_light_ones_do_not():
    async def scenario():
        lanes = limits.Lanes(slots=1)
        first = await lanes.acquire(1.0)
        t = time.monotonic()
        with pytest.raises(limits.Busy, match="busy"):
            await lanes.acquire(0.2)  # the slot stays taken
        assert 0.15 < time.monotonic() - t < 1.0 and lanes.waiting == 0
        waiter = asyncio.ensure_future(lanes.acquire(5.0))
        await asyncio.sleep(0.05)
        assert not waiter.done() and lanes.running == 1
        first()
        first()  # a second release does nothing
        second = await asyncio.wait_for(waiter, 1.0)
        assert lanes.running == 1
        second()
        assert lanes.running == 0 and not lanes.heavy.locked()

    asyncio.run(scenario())


# --------------------------------------------------------------------------- cancel
def problem(n: int = 200, B: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    S = torch.from_numpy(rng.normal(size=(B, n, n)) * 3)
    w = torch.full((n,), 1 / n, dtype=torch.float64)
    return S, w


@pytest.mark.parametrize("method", ["auto", "log"])
def test_a_cancelled_solve_stops_within_a_second(method):
    S, w = problem()
    sinkhorn(S, w, w, 1e-3, 3, method=method)  # torch's first calls, before the clock
    token, fired = Token(), []
    threading.Timer(0.3, lambda: (fired.append(time.monotonic()), token.cancel())).start()
    with pytest.raises(Cancelled):
        sinkhorn(S, w, w, 1e-3, 100_000, tol=1e-300, method=method, cancel=token)
    assert time.monotonic() - fired[0] < 1.0


def test_a_deadline_stops_every_solve_inside_its_scope_with_a_message():
    S, w = problem(B=4)
    sinkhorn(S, w, w, 1e-3, 3)
    token = Token(0.4, limit="SINKSCOPE_X")
    with pytest.raises(DeadlineExceeded) as e, scope(token):
        for _ in range(3):  # any number of solves: the scope's one deadline
            sinkhorn(S, w, w, 1e-3, 50_000, tol=1e-300)
    assert time.monotonic() - token.deadline < 1.0
    assert "0.4 s (SINKSCOPE_X)" in str(e.value) and "fewer half-steps" in str(e.value)
    assert isinstance(e.value, SettingsError)


@hsettings(max_examples=15, deadline=None)
@given(n=st.integers(2, 12), eps=st.floats(0.05, 5), steps=st.integers(1, 120),
       seed=st.integers(0, 10))
def test_a_token_that_never_fires_changes_nothing(n, eps, steps, seed):
    """Polling is all a token adds: the same plans, bit for bit."""
    S, w = problem(n, 2, seed)
    plain = sinkhorn(S, w, w, eps, steps)
    with scope(Token(3600)):
        scoped = sinkhorn(S, w, w, eps, steps)
    polled = sinkhorn(S, w, w, eps, steps, cancel=Token())
    assert torch.equal(plain.plan, scoped.plan) and torch.equal(plain.plan, polled.plan)
    assert torch.equal(plain.row_err, polled.row_err)


# --------------------------------------------------------------------------- streaming
def documents():
    """Documents shaped as the engine's: nested dicts and lists, words, None, numpy
    scalars, arrays of every dtype the engine writes, ±inf and NaN among them (the served
    engine's real documents are compared in tests/test_service.py)."""
    rng = np.random.default_rng(0)
    f = rng.normal(size=7)
    f[[0, 6]] = -np.inf
    yield {"schema": "sinkscope.relation/1", "model": "m", "settings": {"eps": 0.5,
           "layer": "all", "pool_words": False}, "tokens_a": ["[CLS]", "é", "\"q\""],
           "a": np.full(7, 1 / 7), "f": f, "plans": rng.random((2, 3, 7, 5)),
           "converged": np.array([[True, False]]), "steps": np.arange(4, dtype=np.int64),
           "payload": rng.integers(0, 256, 300).astype(np.uint8), "hidden":
           rng.normal(size=(2, 7, 4)).astype(np.float32), "kl": np.float64(np.inf),
           "cost": np.float32(1.25), "history": None, "notices": [{"code": "x",
           "level": "info", "message": "ε ≤ 0.1", "params": {"eps": 0.1}}],
           "summary": {"entropy": float("nan"), "nested": [[1, 2.5], []]}}
    yield {"plans": rng.random((2, 150, 150))}  # many rows


def test_streamed_json_is_the_wires_json_byte_for_byte():
    for doc in documents():
        for size in (7, 1 << 20):
            assert b"".join(stream.json_chunks(doc, size)) == wire.dumps(doc, wire.JSON)
        assert stream.dumps(doc, wire.NPZ) == wire.dumps(doc, wire.NPZ)
    body = bytes(range(256)) * 5000
    assert b"".join(stream.slices(body, 4096)) == body


finite = st.floats(allow_nan=True, allow_infinity=True, width=64)


@hsettings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
       kind=st.sampled_from(["f8", "f4", "i8", "u1", "?"]), data=st.data())
def test_streamed_json_of_any_array_is_the_wires(shape, kind, data):
    size = int(np.prod(shape))
    if kind in ("f8", "f4"):
        x = np.array(data.draw(st.lists(finite, min_size=size, max_size=size)))
        with np.errstate(over="ignore"):  # float64 beyond float32's range: ±inf
            x = x.astype(kind)
    elif kind == "?":
        x = np.array(data.draw(st.lists(st.booleans(), min_size=size, max_size=size)), bool)
    else:
        x = np.array(data.draw(st.lists(st.integers(0, 255), min_size=size, max_size=size)),
                     dtype=kind)
    doc = {"a": x.reshape(shape), "n": [np.float64("inf"), 1.5, {"k": "é"}], "s": None,
           "v": np.float32(0.1)}
    assert b"".join(stream.json_chunks(doc, 3)) == wire.dumps(doc, wire.JSON)


# --------------------------------------------------------------------------- client
def err(kind: str, message: str) -> bytes:
    return json.dumps({"error": {"type": kind, "message": message}}).encode()


def test_client_raises_typed_errors_for_limits_deadlines_and_a_busy_engine():
    with scripted((413, {}, err("WorkTooLarge", "needs 9; allows 8 (SINKSCOPE_X)"))) as (u, _):
        with pytest.raises(RequestTooLarge, match="allows 8") as e:
            EngineClient(u).relate("a", "b")
        assert isinstance(e.value, SettingsError) and e.value.status == 413
    with scripted((408, {}, err("DeadlineExceeded", "past its deadline of 60 s"))) as (u, seen):
        with pytest.raises(RequestTimedOut, match="deadline of 60 s"):
            EngineClient(u, timeout=20).relate("a", "b")
        assert len(seen) == 1  # never sent again: it would take as long
        # The engine is told to stop a little before the client gives up.
        assert 17 < float(seen.headers[0]["X-Sinkscope-Deadline"]) < 19.5
    plain = (408, {"Content-Type": "text/plain"}, b"Request 1 timed out after 120.0s.")
    with scripted(plain) as (u, _):  # Serve's own timeout
        with pytest.raises(RequestTimedOut, match="ask for less"):
            EngineClient(u).relate("a", "b")
    busy = (503, {"Retry-After": "0"}, err("Busy", "busy"))
    with scripted(busy) as (u, seen):
        with pytest.raises(EngineBusy, match="busy .*Try again") as e:
            EngineClient(u, retries=2).relate("a", "b")
        assert isinstance(e.value, EngineUnavailable) and len(seen) == 3


def test_errors_carry_their_code_over_the_wire_and_the_app_words_them():
    from engine.serving.routes import error
    from sinkscope_app import locale

    price = limits.relate_price(request(half_steps=100_000), 256, 256, 6, 12)
    with pytest.raises(limits.WorkTooLarge) as e:
        price.check()
    body = error(413, "WorkTooLarge", str(e.value), e.value.code, e.value.params).body
    doc = json.loads(body)["error"]
    assert doc["code"] == "work" and doc["params"]["work"] == 6_553_600_000
    with scripted((413, {}, body)) as (u, _):
        with pytest.raises(RequestTooLarge) as got:
            EngineClient(u).relate("a", "b")
    assert got.value.code == "work" and got.value.params == doc["params"]
    es = locale.error(got.value, "es")
    assert "6\u00a0553\u00a0600\u00a0000" in es and "Pide menos" in es
    en = locale.error(got.value, "en")  # the engine's facts in a sentence for a visitor
    assert "6,553,600,000" in en and "Ask for less" in en
    assert "SINKSCOPE_" not in en + es  # an operator's setting is not a visitor's (issue 42)
    late = error(408, "DeadlineExceeded", "past its deadline", "deadline", {}).body
    with scripted((408, {}, late)) as (u, _):
        with pytest.raises(RequestTimedOut) as got:
            EngineClient(u).relate("a", "b")
    assert "límite de tiempo" in locale.error(got.value, "es")
    plain = json.loads(error(422, "SettingsError", "no code").body)["error"]
    assert "code" not in plain and "params" not in plain


# --------------------------------------------------------------------------- the CLI
def alignments(n: int) -> bytes:
    one = {"words_a": ["a"], "words_b": ["b"], "links": [[0, 0]], "pharaoh": "0-0",
           "null_a": [], "null_b": [], "method": {}, "source": {}, "scores": None}
    return json.dumps({"schema": "sinkscope.alignments/1", "model": "m",
                       "alignments": [one] * n}).encode()


def corpus(tmp_path, n: int) -> Path:
    f = tmp_path / "p.tsv"
    f.write_text("text_a\ttext_b\n" + "".join(f"a{i}\tb{i}\n" for i in range(n)))
    return f


def test_align_engine_retries_a_failed_chunk_and_never_drops_one(tmp_path, capsys,
                                                                 monkeypatch):
    from engine.alignment import remote

    monkeypatch.setattr(remote, "CHUNK", 2)
    monkeypatch.setattr(remote, "IN_FLIGHT", 1)
    monkeypatch.setattr(remote.time, "sleep", lambda s: None)
    failed = (500, {}, err("InternalError", "a replica died"))  # sent again by the CLI
    out = tmp_path / "links.txt"
    with scripted(failed, (200, {}, alignments(2))) as (u, seen):
        assert main(["align", "--pairs", str(corpus(tmp_path, 6)), "--engine", u,
                     "--method", "softmax-both", "--out", str(out), "--quiet"]) == 0
    assert len(seen) == 4 and out.read_text() == "0-0\n" * 6  # 3 chunks, one twice
    with scripted(failed) as (u, seen):
        assert main(["align", "--pairs", str(corpus(tmp_path, 6)), "--engine", u,
                     "--method", "softmax-both", "--out", str(out), "--quiet"]) == 2
    e = capsys.readouterr().err
    assert "Pairs 1–2 could not be aligned" in e and "Traceback" not in e
    assert len(seen) == remote.RETRIES + 1


@pytest.mark.parametrize("flags, words", [
    (["--dev", "x"], "--dev is not available with --engine"),
    (["--center"], "--center is not available"),
    (["--out", "/nonexistent/x"], "could not write /nonexistent/x: the folder /nonexistent "
                                  "does not exist; create it or give --out another path")])
def test_align_engine_refuses_what_it_cannot_honour_before_any_work(tmp_path, capsys,
                                                                    flags, words):
    with scripted((200, {}, alignments(1))) as (u, seen):
        assert main(["align", "--pairs", str(corpus(tmp_path, 3)), "--engine", u,
                     *flags]) == 2
    assert words in capsys.readouterr().err and not seen


def test_output_paths_are_checked_before_any_work(tmp_path, capsys, monkeypatch):
    from engine.alignment import api
    from engine.lab import training

    def never(*a, **k):
        raise AssertionError("worked before checking the output path")

    monkeypatch.setattr(api, "score_corpus", never)
    monkeypatch.setattr(training, "train", never)
    pairs = str(DATA / "pairs.tsv")
    for argv, words in ((["align", "--pairs", pairs, "--out", "/nonexistent/x"],
                         "could not write /nonexistent/x: the folder /nonexistent does not"),
                        (["align", "--pairs", pairs, "--out", str(tmp_path)], "is a folder"),
                        (["lab", "--save", "/nonexistent/m.safetensors"],
                         "give --save another path")):
        assert main(argv) == 2
        err_text = capsys.readouterr().err
        assert words in err_text and "Traceback" not in err_text


def test_a_deeply_nested_jsonl_line_is_a_line_numbered_message(tmp_path, capsys):
    f = tmp_path / "p.jsonl"
    f.write_text('{"text_a": "a", "text_b": "b"}\n{"x": ' + "[" * 100_000 + "]" * 100_000
                 + "}\n")
    assert main(["align", "--pairs", str(f), "--quiet"]) == 2
    e = capsys.readouterr().err
    assert "p.jsonl, line 2: not a JSON object (nested too deeply)" in e
    assert "Traceback" not in e and "RecursionError" not in e
