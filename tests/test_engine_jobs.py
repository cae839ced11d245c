"""The engine's jobs without Ray (engine.jobs): the board's states, place in line, Stop,
partial results, lost jobs, deadline and what it keeps; bodies checked and priced with
codes; the typed readers giving the same objects from a document and from its JSON and NPZ
wire forms; the embedded engine's job methods and the pages' helpers
(sinkscope_app.jobs: submit, follow, stop, restart, result). Fast: fake work functions and
a tiny Lab run."""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time

import numpy as np
import pytest

from engine import settings
from engine.errors import SinkscopeError
from engine.jobs import results, spec
from engine.jobs.board import Board
from engine.jobs.context import Context
from engine.jobs.errors import JobConflict, JobNotFound, JobQueueFull
from engine.jobs.local import LocalJobs
from engine.serving import wire
from engine.serving.limits import WorkTooLarge

TINY_LAB = {"kind": "lab_train", "settings": {"models": ["sinkhorn", "softmax"], "steps": 30,
                                              "train_pairs": 32, "heldout_pairs": 8,
                                              "eval_every": 10, "width": 4, "depth": 1,
                                              "half_steps": 10}}


def counting(gate: threading.Event | None = None, n: int = 40, hold: int = 3):
    """A fake work function: counts to ``n`` (held at ``hold`` until ``gate``), keeping
    the count as its partial result; a stopped one returns what it counted."""
    def work(ctx: Context, sp) -> tuple[dict, dict]:
        done = []
        for k in range(n):
            if k == hold and gate is not None:
                gate.wait(10)
            if ctx.stopping:
                break
            done.append(k)
            ctx.report((k + 1) / n, {"schema": "count", "done": list(done)}, step=k + 1,
                       steps=n)
            time.sleep(0.002)
        return {"schema": "count", "status": "stopped" if ctx.stopping else "done",
                "done": done}, {"file": b"zip!"}
    return work


def local(gate=None, *, slots=1, every=0.0, **kw) -> LocalJobs:
    return LocalJobs(slots=slots, every=every, work={"lab_train": counting(gate, **kw)})


# --------------------------------------------------------------------------- the board
def test_a_job_reports_progress_and_partials_then_its_result_and_files():
    gate = threading.Event()
    jobs = local(gate)
    st = jobs.submit(TINY_LAB)
    assert st["state"] in ("waiting", "running") and st["kind"] == "lab_train"
    while jobs.status(st["id"])["info"].get("step") != 3:
        time.sleep(0.005)
    mid = jobs.status(st["id"])
    assert mid["state"] == "running" and mid["partial"]["done"] == [0, 1, 2]
    assert mid["progress"] == pytest.approx(3 / 40) and mid["place"] == 0
    with pytest.raises(JobConflict) as e:
        jobs.outcome(st["id"])
    assert e.value.code == "job_not_ended"
    gate.set()
    end = jobs.wait(st["id"], 10)
    assert end["state"] == "done" and end["progress"] == 1.0 and end["files"] == ["file"]
    doc, files = jobs.outcome(st["id"])
    assert doc["done"] == list(range(40)) and files == {"file": b"zip!"}


def test_jobs_wait_in_line_with_their_place_and_stop_keeps_what_was_reached():
    gate = threading.Event()
    jobs = local(gate)
    first = jobs.submit(TINY_LAB)
    while jobs.status(first["id"])["info"].get("step") != 3:
        time.sleep(0.005)
    second, third = jobs.submit(TINY_LAB), jobs.submit(TINY_LAB)
    assert [jobs.status(j["id"])["place"] for j in (second, third)] == [1, 2]
    stopped = jobs.stop(second["id"])  # waiting, never started: ends at once, nothing kept
    assert stopped["state"] == "stopped" and stopped["reason"] == "requested"
    with pytest.raises(JobConflict) as e:
        jobs.outcome(second["id"])
    assert e.value.code == "job_no_result"
    assert jobs.status(third["id"])["place"] == 1  # moved up
    jobs.stop(first["id"])
    gate.set()
    end = jobs.wait(first["id"], 10)
    assert end["state"] == "stopped" and end["reason"] == "requested" and end["stop"]
    doc, _ = jobs.outcome(first["id"])
    assert doc["status"] == "stopped" and doc["done"] == [0, 1, 2]  # what it had reached
    assert jobs.wait(third["id"], 10)["state"] == "done"  # the line moves on


def test_two_slots_run_two_jobs_at_once():
    gate = threading.Event()
    jobs = local(gate, slots=2)
    a, b, c = (jobs.submit(TINY_LAB) for _ in range(3))
    deadline = time.monotonic() + 10
    while any(jobs.status(j["id"])["state"] != "running" for j in (a, b)) and \
            time.monotonic() < deadline:
        time.sleep(0.005)
    assert [jobs.status(j["id"])["state"] for j in (a, b)] == ["running", "running"]
    assert jobs.status(c["id"])["place"] == 1
    gate.set()
    assert all(jobs.wait(j["id"], 10)["state"] == "done" for j in (a, b, c))


def test_a_lost_worker_is_recorded_with_what_it_reached_and_never_left_running():
    board = Board(slots=1)
    st = board.submit("lab_train", {})
    (rec,) = board.launchable()
    board.launched(rec.id)
    assert board.begin(rec.id, {"pid": 123}) is False
    assert board.report(rec.id, 0.4, {"step": 4}, {"schema": "count", "done": [1]}) is False
    board.lose(rec.id, "WorkerCrashedError")
    s = board.status(st["id"])
    assert s["state"] == "lost" and s["error"]["code"] == "job_lost"
    assert s["error"]["params"] == {"reason": "WorkerCrashedError"} and s["progress"] == 0.4
    assert board.outcome(rec.id)[0] == {"schema": "count", "done": [1]}  # the partial
    # a late word from the dead (or cancelled) worker changes nothing
    assert board.report(rec.id, 0.9) is True
    board.finish(rec.id, "done", {"late": True})
    assert board.status(rec.id)["state"] == "lost" and board.status(rec.id)["progress"] == 0.4


def test_the_deadline_stops_a_job_with_a_code_keeping_its_partial():
    jobs = LocalJobs(slots=1, every=0.0, deadline_s=0.05,
                     work={"lab_train": counting(n=10_000)})
    st = jobs.wait(jobs.submit(TINY_LAB)["id"], 10)
    assert st["state"] == "stopped" and st["reason"] == "deadline"
    assert st["error"]["code"] == "job_deadline" and st["error"]["params"]["deadline_s"] == 0.05
    doc, _ = jobs.outcome(st["id"])
    assert doc["status"] == "stopped" and 0 < len(doc["done"]) < 10_000


def test_overdue_jobs_are_those_past_deadline_and_grace():
    now = [0.0]
    board = Board(clock=lambda: now[0])
    rid = board.submit("lab_train", {})["id"]
    board.launched(rid)
    board.begin(rid)
    now[0] = 10.0
    assert board.overdue(5.0, 10.0) == []
    now[0] = 15.5
    assert board.overdue(5.0, 10.0) == [rid]


def test_unknown_ids_a_full_line_and_the_results_kept():
    board = Board(slots=1, queue=2, keep_bytes=1000)
    with pytest.raises(JobNotFound) as e:
        board.status("nope")
    assert e.value.code == "job_not_found" and e.value.params == {"id": "nope"}
    ids = [board.submit("lab_train", {})["id"] for _ in range(2)]
    with pytest.raises(JobQueueFull) as e:
        board.submit("lab_train", {})
    assert e.value.code == "job_queue_full" and e.value.params["limit"] == 2
    for rid in ids:  # two results of 800 bytes: only the newest is kept
        board.launched(rid)
        board.begin(rid)
        board.finish(rid, "done", {"x": np.zeros(100)})
    assert list(board.jobs) == [ids[1]]


def test_a_failing_job_is_failed_with_the_engine_s_code():
    def bad(ctx, sp):
        raise SinkscopeError("no", code="needs_gold_pairs", params={"n": 1})

    jobs = LocalJobs(slots=1, every=0.0, work={"lab_train": bad})
    st = jobs.wait(jobs.submit(TINY_LAB)["id"], 10)
    assert st["state"] == "failed" and st["error"]["code"] == "needs_gold_pairs"
    assert st["error"]["params"] == {"n": 1}
    again = jobs.restart(st["id"])  # the same body again
    assert again["id"] != st["id"] and jobs.wait(again["id"], 10)["state"] == "failed"


def test_a_context_reports_at_most_every_so_often_but_polls_stop():
    sent, now = [], [0.0]
    ctx = Context(lambda p, i, part: sent.append((p, i, part)) or len(sent) >= 4,
                  every=1.0, clock=lambda: now[0])
    for k in range(10):
        ctx.report(k / 10, {"k": k}, step=k)
    assert len(sent) == 1 and sent[0] == (0.0, {"step": 0}, {"k": 0})
    now[0] = 1.0
    assert not ctx.stopping and sent[-1][2] == {"k": 9}  # the latest partial, once
    now[0] = 2.0
    assert not ctx.stopping and sent[-1][2] is None  # unchanged: not sent again
    now[0] = 3.0
    assert ctx.stopping and ctx.reason == "requested"


# --------------------------------------------------------------------------- bodies
@pytest.mark.parametrize("body, code, where", [
    ({"kind": "nope"}, "job_kind", None),
    ({"kind": "lab_train", "settings": {"stepz": 1}}, "job_unknown", "settings"),
    ({"kind": "lab_train", "settings": {"models": []}}, "job_body", "settings.models"),
    ({"kind": "align_corpus", "data": {"pairs": []}}, "job_pairs", "data.pairs"),
    ({"kind": "align_corpus", "data": {"pairs": [{"text_a": "a b", "text_b": "c",
                                                  "gold": "0-5"}]}}, "link_out_of_range", None),
    ({"kind": "compare_text", "data": {"pairs": [{"text_a": "a", "text_b": "b"}] * 4}},
     "job_gold", "data.pairs"),
    ({"kind": "train_aligner", "settings": {"name": "../x"},
      "data": {"train": [], "dev": []}}, "job_body", "settings.name"),
])
def test_bad_bodies_are_refused_with_a_code(body, code, where):
    with pytest.raises(SinkscopeError) as e:
        spec.check(body)
    assert e.value.code == code and str(e.value)
    if where:
        assert e.value.params["where"] == where


def test_a_model_or_aligner_the_engine_does_not_offer_is_refused_by_name():
    pair = {"text_a": "a", "text_b": "b"}
    jobs = LocalJobs(models=lambda: ["all-MiniLM-L6-v2"])
    with pytest.raises(SinkscopeError) as e:
        jobs.submit({"kind": "align_corpus", "settings": {"model": "nope"},
                     "data": {"pairs": [pair]}})
    assert e.value.code == "job_model" and e.value.params == {
        "model": "nope", "models": "all-MiniLM-L6-v2"}
    with pytest.raises(SinkscopeError) as e:
        jobs.submit({"kind": "align_corpus", "settings": {"aligner": "mine"},
                     "data": {"pairs": [pair]}})
    assert e.value.code == "not_listed" and e.value.params["name"] == "mine"
    assert jobs.board.jobs == {}  # nothing was queued


def test_a_value_of_the_wrong_kind_is_refused_with_a_code_in_every_kind():
    """Each setting of each kind given a value of another kind (a list, an object, a text,
    a fraction, a boolean): a SinkscopeError with a code, never a TypeError from inside."""
    from engine.aligner.config import AlignerSettings
    from engine.lab.config import MODELS, LabSettings

    pair = {"text_a": "a b", "text_b": "c", "gold": "0-0"}
    data = {"align_corpus": {"pairs": [pair]}, "train_aligner": {"train": [pair],
                                                                 "dev": [pair]},
            "compare_text": {"pairs": [pair] * 4}}
    lab = {f.name: f.default for f in dataclasses.fields(LabSettings) if f.name != "model"}
    defaults = {"lab_train": {**lab, "models": list(MODELS)}, "lab_sweep": lab,
                "align_corpus": {**spec.CORPUS_DEFAULTS, "aligner": "x"},
                "train_aligner": {"name": "x", **{f.name: f.default for f in
                                                  dataclasses.fields(AlignerSettings)}},
                "compare_text": spec.TEXT_DEFAULTS}
    tried = 0
    for kind in spec.KINDS:
        for name, default in defaults[kind].items():
            for wrong in ([], {}, "7", 1.5, True):
                if type(wrong) is type(default):
                    continue
                body = {"kind": kind, "settings": {name: wrong}, "data": data.get(kind, {})}
                with pytest.raises(SinkscopeError) as e:
                    spec.check(body)
                assert e.value.code, (kind, name, wrong, str(e.value))
                tried += 1
    assert tried > 200


def test_a_layer_the_model_does_not_have_is_refused_at_submission():
    """train_aligner's layer above the model's hidden states (all-MiniLM-L6-v2: 0 … 6) is
    refused when the job is submitted, from the model's configuration, with its code."""
    pair = {"text_a": "a b", "text_b": "c", "gold": "0-0"}
    jobs = LocalJobs(models=lambda: ["all-MiniLM-L6-v2"])
    with pytest.raises(SinkscopeError) as e:
        jobs.submit({"kind": "train_aligner", "settings": {"layer": 7, "top": 2},
                     "data": {"train": [pair], "dev": [pair]}})
    assert e.value.code == "layer_above_model" and e.value.params["layers"] == 6
    with pytest.raises(SinkscopeError) as e:
        jobs.submit({"kind": "train_aligner", "settings": {"layer": 2, "top": 3},
                     "data": {"train": [pair], "dev": [pair]}})
    assert e.value.code == "top_above_layer"
    assert jobs.board.jobs == {}  # nothing was queued


def test_a_lab_setting_out_of_range_is_the_lab_s_own_error():
    with pytest.raises(SinkscopeError, match="width must be a whole number from 1 to 256"):
        spec.check({"kind": "lab_sweep", "settings": {"width": 999}})


def test_a_job_over_its_budget_is_refused_before_it_runs(monkeypatch):
    sp = spec.check({"kind": "lab_train", "settings": {"steps": 4000, "width": 64, "depth": 4}})
    assert spec.price(sp).check().work < settings.CONFIG.job_work_lab  # the page's largest
    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(settings.CONFIG,
                                                                job_work_lab=1000))
    with pytest.raises(WorkTooLarge) as e:
        LocalJobs().submit({"kind": "lab_train"})
    p = e.value.params
    assert e.value.code == "job_work" and p["kind"] == "lab_train" and p["limit"] == 1000
    assert p["env"] == "SINKSCOPE_JOB_WORK_LAB" and p["work"] > 1000


def test_the_schema_takes_what_the_engine_takes():
    """Each kind's defaults, through the HTTP schema and back, are the same checked body."""
    from pydantic import TypeAdapter

    from engine.jobs import schemas

    pair = {"text_a": "the cat", "text_b": "le chat", "gold": "0-0 1-1"}
    data = {"align_corpus": {"pairs": [pair]}, "train_aligner": {"train": [pair], "dev": [pair]},
            "compare_text": {"pairs": [pair] * 4}}
    adapter = TypeAdapter(schemas.JobRequest)
    for kind in spec.KINDS:
        body = {"kind": kind, "data": data.get(kind, {})}
        via_schema = spec.check(adapter.validate_python(body).model_dump())
        assert via_schema.body == spec.check(body).body


def test_every_job_error_reads_in_both_languages_with_its_facts():
    """Each job code is worded by the page's language, keeps the facts a person needs and
    names no environment variable, route or Python quote (the engine's own sentence is for
    operators)."""
    import string

    from engine.jobs.errors import MESSAGES, JobError
    from sinkscope_app import locale

    params = {"id": "7-ab", "state": "running", "name": "mtref", "names": "sinkhorn",
              "waiting": 64, "limit": 64, "deadline_s": 60.0, "reason": "WorkerCrashedError",
              "model": "nope", "models": "all-MiniLM-L6-v2", "kinds": "lab_train",
              "value": "x", "where": "data.pairs", "problem": "must be a list", "fields": "a",
              "count": 3, "least": 4, "most": 2000, "pair": 2, "work": 10, "unit": "word pairs",
              "env": "SINKSCOPE_JOB_WORK_TEXT", "change": "Send fewer pairs."}
    for code, template in MESSAGES.items():
        used = {f for _, f, _, _ in string.Formatter().parse(template) if f}
        e = JobError.of(code, **{k: params[k.split("!")[0]] for k in used})
        en, es = locale.error(e, "en"), locale.error(e, "es")
        assert en != es or code == "job_body", code  # (a body pages build: no words)
        for text in (en, es):
            assert "SINKSCOPE_" not in text and "/v1/" not in text, text
            assert not re.search(r"'[^'\s]+'", text), text  # no Python quotes
            for k in used - {"change", "problem", "unit", "id", "env"}:  # facts, not words
                plain = re.sub(r"(?<=\d)[,.\u00a0\u202f ](?=\d{3})", "", text).replace(",0", "")
                assert str(params[k]).replace(".0", "") in plain.replace(".0", ""), (code, k, text)


# --------------------------------------------------------------------------- readers
def test_the_readers_give_the_same_objects_from_a_document_and_its_wire_forms():
    jobs = LocalJobs(slots=1, every=0.0)
    st = jobs.wait(jobs.submit(TINY_LAB)["id"], 120)
    assert st["state"] == "done"
    doc, _ = jobs.outcome(st["id"])
    direct = results.read(doc)
    assert isinstance(direct, results.LabTrainResult) and direct.models == ("sinkhorn", "softmax")
    assert set(direct.weights) == set(direct.runs) == {"sinkhorn", "softmax"}
    assert direct.curves["softmax"][0] == (10, 20, 30) and direct.runs["softmax"].steps_done == 30
    for media in (wire.JSON, wire.NPZ):
        back = results.read(wire.loads(wire.dumps(doc, media), media))
        assert_same(back, direct)


def assert_same(x, y, where="result"):
    if dataclasses.is_dataclass(x):
        assert type(x) is type(y), where
        for f in dataclasses.fields(x):
            assert_same(getattr(x, f.name), getattr(y, f.name), f"{where}.{f.name}")
    elif isinstance(x, dict):
        assert set(x) == set(y), where
        for k in x:
            assert_same(x[k], y[k], f"{where}[{k}]")
    elif isinstance(x, np.ndarray):
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), where
    else:
        assert x == y, (where, x, y)


def test_a_status_reads_back_from_json():
    board = Board()
    st = board.submit("lab_sweep", {})
    s = results.JobStatus.from_dict(json.loads(json.dumps(board.status(st["id"]))))
    assert s.state == "waiting" and s.place == 1 and s.active and s.error is None


# --------------------------------------------------------------------------- the app's side
def test_the_app_s_helpers_start_follow_stop_restart_and_fetch_a_job():
    from sinkscope_app import engines, jobs
    from sinkscope_app.inputs import Refused

    gate = threading.Event()
    eng = engines.Embedded()
    eng.__dict__["jobs"] = local(gate)  # the embedded engine's jobs, with a fake work
    store: dict = {}
    st = jobs.submit(store, "lab_train", TINY_LAB, engine=eng)
    assert jobs.job_id(store, "lab_train") == st.id and isinstance(st, results.JobStatus)
    assert store[jobs.key("lab_train")] == st.id  # (the page's address carries it)
    while jobs.status(store, "lab_train", engine=eng).info.get("step") != 3:
        time.sleep(0.005)
    assert jobs.result(store, "lab_train", engine=eng) is None  # still running
    stopped = jobs.stop(store, "lab_train", engine=eng)
    assert stopped.stop
    gate.set()
    seen = []
    last = jobs.follow(store, "lab_train", seen.append, engine=eng, every=0.01)
    assert last.state == "stopped" and seen[-1] is last and len(seen) >= 1
    assert eng.job_zip(st.id) == b"zip!"
    with pytest.raises(JobConflict):
        eng.job_zip(st.id, "other")
    again = jobs.restart(store, "lab_train", engine=eng)
    assert again.id != st.id and jobs.job_id(store, "lab_train") == again.id
    other = {jobs.key("lab_train"): again.id}  # a reload: only the address has the id
    assert jobs.find(other, "lab_train", engine=eng).id == again.id
    assert jobs.follow(other, "lab_train", lambda s: None, engine=eng).state == "done"
    gone = {jobs.key("lab_train"): "0-000000000000"}  # an id the engine never gave
    assert jobs.find(gone, "lab_train", engine=eng) is None  # unknown: forgotten
    assert jobs.job_id(gone, "lab_train") is None and jobs.key("lab_train") not in gone
    assert jobs.gone(gone, "lab_train") == "0-000000000000"  # said once
    assert jobs.gone(gone, "lab_train") is None
    jobs.forget(store, "lab_train", engine=eng)
    assert jobs.job_id(store, "lab_train") is None and jobs.key("lab_train") not in store
    with pytest.raises(Refused):  # an address's id that the engine cannot have given
        jobs.read_id("../../etc", None)
    assert jobs.read_id(" 1f-0123456789ab ", None) == "1f-0123456789ab"


def test_a_page_s_job_calls_on_a_served_engine_load_no_torch():
    """Start a job and fetch its typed result through the pages' helpers on a served
    engine (a loopback stand-in answering as one would), in a fresh process: no torch."""
    import subprocess
    import sys

    from engine.lab.config import LabSettings
    from tests.support.engine_server import scripted

    status = Board().submit("lab_train", {})
    doc = {"schema": "sinkscope.job.lab_train/1", "status": "done", "target": "whitened",
           "steps": 5, "models": ["softmax"],
           "settings": {"softmax": LabSettings(model="softmax").to_dict()},
           "curves": {"softmax": {"step": [5], "heldout_l1": [0.5]}},
           "runs": {"softmax": {"heldout_l1": 0.5, "heldout_l1_double": 0.6, "row_err": 0.0,
                                "col_err": 0.1, "seconds": 0.2, "steps_done": 5,
                                "stopped": "done"}},
           "weights": {"softmax": {"w": [[1.0, 2.0]]}}, "seconds": 0.2}
    answers = [(202, {}, json.dumps(status).encode()), (200, {}, json.dumps(doc).encode())]
    code = """if True:
        import sys
        from sinkscope_app import engines, jobs
        served, store = engines.Served(sys.argv[1]), {}
        st = jobs.submit(store, "lab_train", {"kind": "lab_train"}, engine=served)
        r = jobs.result(store, "lab_train", engine=served)
        print(st.state, st.place, type(r).__name__, r.weights["softmax"]["w"].dtype,
              r.runs["softmax"].steps_done, "torch" in sys.modules)
    """
    with scripted(*answers) as (url, seen):
        out = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True,
                             timeout=60, env={**__import__("os").environ,
                                              "SINKSCOPE_ENGINE": url})
    assert out.stdout.split() == ["waiting", "1", "LabTrainResult", "float32", "5", "False"], \
        out.stderr[-2000:]
    assert len(seen) == 2
