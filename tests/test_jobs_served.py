"""The served engine's jobs end to end: one local Ray instance and Serve app (one replica)
for the module, stopped whatever happens. A Lab training started over HTTP reports its
progress and partial curves, a second job waits with its place in line, DELETE keeps the
partial result, fetched as JSON and NPZ (the same objects); the held-out view over HTTP
equals the embedded one; a job whose worker process is killed is reported lost within 5 s
and Restart runs it again; an aligner trained as a job downloads as a zip that loads;
errors have codes (404 unknown id, 409 no result yet, 413 over budget, 422 bad body); the
jobs' workers listen on loopback only."""

from __future__ import annotations

import io
import json
import os
import signal
import time
import zipfile

import numpy as np
import pytest
import urllib3

os.environ["SINKSCOPE_WARM_UP"] = "0"

from engine.jobs import results  # noqa: E402
from engine.serving import wire  # noqa: E402
from engine.serving.client import EngineClient  # noqa: E402
from tests.support.server import free_port  # noqa: E402
from tests.test_aligner import synthetic_pairs  # noqa: E402

pytestmark = [pytest.mark.service, pytest.mark.slow, pytest.mark.model]
HTTP = urllib3.PoolManager(maxsize=4, retries=False, timeout=urllib3.Timeout(total=120))
LAB = {"models": ["sinkhorn", "softmax"], "train_pairs": 32, "heldout_pairs": 8, "width": 4,
       "depth": 1, "half_steps": 10, "eval_every": 5}


@pytest.fixture(scope="module")
def url(ray_lock):
    """Serve's app, one replica, on a local Ray instance; stopped after the module."""
    from engine.serving import service as svc

    with svc.local_ray(num_cpus=1):
        yield svc.start(svc.build(replicas=1), port=free_port())


def call(url: str, method: str, path: str, body=None, accept: str = wire.JSON):
    """(status, headers, decoded answer) of one request."""
    r = HTTP.request(method, url + path, body=None if body is None else json.dumps(body),
                     headers={"Accept": accept, "Content-Type": wire.JSON})
    assert b"Traceback" not in r.data
    media = r.headers.get("Content-Type", "").split(";")[0]
    if media == "application/zip":
        return r.status, r.headers, r.data
    return r.status, r.headers, wire.loads(r.data, wire.NPZ if media == wire.NPZ else wire.JSON)


def until(cond, seconds: float = 180.0, every: float = 0.05):
    end = time.monotonic() + seconds
    while True:
        value = cond()
        if value:
            return value
        assert time.monotonic() < end, "timed out"
        time.sleep(every)


def test_a_lab_training_reports_waits_in_line_and_stop_keeps_its_partial(url):
    status, _, first = call(url, "POST", "/v1/jobs",
                            {"kind": "lab_train", "settings": {**LAB, "steps": 20000}})
    assert status == 202 and first["state"] in ("waiting", "running")
    assert first["resources"] == {"num_cpus": 1.0, "num_gpus": 0.0}
    status, _, second = call(url, "POST", "/v1/jobs",
                             {"kind": "lab_sweep", "settings": {**LAB, "steps": 3}})
    assert status == 202 and second["state"] == "waiting" and second["place"] >= 1
    job = f"/v1/jobs/{first['id']}"
    running = until(lambda: (s := call(url, "GET", job)[2])["state"] == "running"
                    and s["progress"] > 0 and s["partial"] and s)
    assert running["info"]["stage"] == "train" and running["worker"]["pid"] > 0
    assert call(url, "GET", f"/v1/jobs/{second['id']}")[2]["place"] == 1
    status, _, err = call(url, "GET", job + "/result")
    assert status == 409 and err["error"]["code"] == "job_not_ended"
    partial = results.JobStatus.from_dict(running).partial
    assert partial.status == "partial" and len(partial.curves["sinkhorn"][0]) >= 1
    status, _, gone = call(url, "DELETE", f"/v1/jobs/{second['id']}")  # waiting: at once
    assert status == 200 and gone["state"] == "stopped"
    call(url, "DELETE", job)
    end = until(lambda: (s := call(url, "GET", job)[2])["state"] != "running" and s)
    assert end["state"] == "stopped" and end["reason"] == "requested"
    as_json = results.read(call(url, "GET", job + "/result")[2])
    as_npz = results.read(call(url, "GET", job + "/result", accept=wire.NPZ)[2])
    assert as_json.status == as_npz.status == "stopped" and as_json.runs == as_npz.runs
    steps = as_json.curves["sinkhorn"][0]
    assert steps[0] == 5 and steps[-1] < 20000 and as_npz.curves == as_json.curves
    for k, w in as_npz.weights["sinkhorn"].items():
        np.testing.assert_array_equal(w, as_json.weights["sinkhorn"][k])
    # The held-out view of the trained weights, over HTTP and embedded: the same numbers.
    from sinkscope_app.engines import Embedded

    client = EngineClient(url)
    served = client.lab_predict(as_npz.settings["sinkhorn"], as_npz.weights, 8, 2)
    here = Embedded().lab_predict(as_npz.settings["sinkhorn"], as_npz.weights, 8, 2)
    np.testing.assert_allclose(served.plans["sinkhorn"], here.plans["sinkhorn"], atol=1e-6)
    np.testing.assert_array_equal(served.target, here.target)


def test_a_killed_worker_is_lost_within_5_s_and_restart_runs_it_again(url):
    client = EngineClient(url)
    st = client.start_job({"kind": "lab_train", "settings": {**LAB, "steps": 20000}})
    run = until(lambda: (s := client.job(st.id)).state == "running" and s.worker.get("pid")
                and s)
    killed = time.monotonic()
    os.kill(run.worker["pid"], signal.SIGKILL)
    lost = until(lambda: (s := EngineClient(url).job(st.id)).state != "running" and s, 5.0)
    assert time.monotonic() - killed < 5.0
    assert lost.state == "lost" and lost.error.code == "job_lost" and not lost.active
    again = client.restart_job(st.id)
    assert again.id != st.id and again.kind == "lab_train"
    assert until(lambda: client.job(again.id).state == "running")
    assert client.stop_job(again.id).stop
    assert until(lambda: not client.job(again.id).active)


def test_errors_have_codes(url):
    status, _, e = call(url, "GET", "/v1/jobs/no-such-job")
    assert status == 404 and e["error"]["code"] == "job_not_found"
    status, _, e = call(url, "POST", "/v1/jobs", {"kind": "lab_train", "settings": {
        "steps": 20000, "width": 256, "depth": 8}})
    assert status == 413 and e["error"]["code"] == "job_work"
    assert e["error"]["params"]["env"] == "SINKSCOPE_JOB_WORK_LAB"
    status, _, e = call(url, "POST", "/v1/jobs", {"kind": "lab_train",
                                                  "settings": {"width": 999}})
    assert status == 422 and "width must be a whole number from 1 to 256" in \
        e["error"]["message"]
    status, _, e = call(url, "POST", "/v1/jobs", {"kind": "align_corpus", "data": {
        "pairs": [{"text_a": "a b", "text_b": "c", "gold": "0-4"}]}})
    assert status == 422 and e["error"]["code"] == "link_out_of_range"
    status, _, e = call(url, "POST", "/v1/jobs", {"kind": "nope"})
    assert status == 422 and e["error"]["code"] == "job_kind"
    status, _, e = call(url, "POST", "/v1/jobs", {"kind": "compare_text", "settings": {
        "model": "nope"}, "data": {"pairs": [{"text_a": "a", "text_b": "b", "gold": ""}] * 4}})
    assert status == 422 and e["error"]["code"] == "job_model"


def test_an_aligner_trained_as_a_job_downloads_as_a_zip(url, tmp_path):
    from engine.aligner import checkpoint
    from engine.relation.relate import default_encoder

    pairs = [p.to_dict() for p in synthetic_pairs(8, 2)]
    client = EngineClient(url)
    st = client.start_job({"kind": "train_aligner",
                           "settings": {"name": "served", "epochs": 1, "batch": 4},
                           "data": {"train": pairs[:6], "dev": pairs[6:]}})
    end = until(lambda: (s := client.job(st.id)).state not in ("waiting", "running") and s,
                240.0, 0.25)
    assert end.state == "done" and end.files == ("aligner",)
    r = client.job_result(st.id)
    assert r.name == "served" and r.run.epochs == 1
    with zipfile.ZipFile(io.BytesIO(client.job_zip(st.id))) as z:
        z.extractall(tmp_path)
    back = checkpoint.load(tmp_path / "served", encoder=default_encoder())
    assert back.theta == pytest.approx(r.run.theta)


def test_jobs_and_their_board_listen_on_loopback_only(url):
    """After jobs ran (their workers and the board actor alive), every socket Ray's
    processes listen on is still 127.0.0.1."""
    from tests.support.engine_server import listeners, loopback
    from tests.support.server import descendants

    found = listeners(descendants(os.getpid()))
    assert len(found) >= 10, found
    assert [a for a, _ in found if not loopback(a)] == [], found
