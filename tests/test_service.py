"""The served engine: a real Ray Serve app (two replicas on a local Ray instance with 2
CPUs), called over HTTP and through ``EngineClient``, against the embedded engine.

One Ray instance and one Serve app serve the whole module; the fixture always shuts Serve
and Ray down. A second node joins it for one test, its GPU declared, to place a GPU job
on. Requests are modest (2 shared cores) but cover what the issue asks: agreement to
1e-12, 16 concurrent clients batched (encoding new texts, and solving slider moves on the
same texts), both replicas answering, every bad request (and 200 garbage ones in a burst)
answered with its status while the service stays healthy, the app through AppTest, and
the engine's jobs over HTTP (progress, place in line, Stop, results, codes, an aligner's
zip). Last, the app in Chromium on this engine: an outage and a restart on the same
address seen by the client and the page, and a tour of every page and job kind (a job's
worker killed under the page) that leaves the Streamlit process without torch.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import io
import json
import os
import signal
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import urllib3
from hypothesis import given, settings as hsettings, strategies as st

os.environ["SINKSCOPE_WARM_UP"] = "0"

from engine import relate, settings  # noqa: E402
from engine.serving.client import (EngineClient, EngineUnavailable,  # noqa: E402
                                   RequestTooLarge, ServedModel)
from engine.errors import ModelError, SettingsError, TextError  # noqa: E402
from engine.io.export import relation_document, relation_from_dict  # noqa: E402
from engine.jobs import results  # noqa: E402
from engine.serving import wire  # noqa: E402
from tests.support.engine_server import scripted  # noqa: E402
from tests.support.browser import (TIMEOUT, VIEWPORT, no_errors,  # noqa: E402
                                   query, titles, wait_idle, wait_js, wait_title)
from tests.support.browser import chromium as launched_chromium  # noqa: E402
from tests.support.outage import Relay  # noqa: E402
from tests.support.server import ROOT, free_port, streamlit_server  # noqa: E402
from tests.test_aligner import synthetic_pairs  # noqa: E402

pytestmark = [pytest.mark.service, pytest.mark.slow, pytest.mark.model]

A = "The bank of the river was steep and muddy."
B = "She sat on the river bank and watched the boats."
REPLICAS = 2
HTTP = urllib3.PoolManager(maxsize=16, retries=False, timeout=urllib3.Timeout(total=120))


@pytest.fixture(scope="module")
def aligner_dir(tmp_path_factory):
    """An aligner on the packaged model (untrained heads, seed 0: what matters here is that
    the served one is the same), listed for the service as "served"."""
    import torch

    from engine.aligner.checkpoint import save
    from engine.aligner.config import AlignerSettings
    from engine.aligner.model import Aligner
    from engine.relation.relate import default_encoder

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("aligners") / "served"
    save(Aligner(default_encoder(), AlignerSettings(top=0)), folder)
    return folder


@pytest.fixture(scope="module")
def service(aligner_dir):
    """Serve's app with two replicas on a local Ray instance (its aligners listed in
    SINKSCOPE_ALIGNERS, read by the replicas); stopped after the module."""
    from engine.serving import service as svc

    port = free_port()
    before = os.environ.get("SINKSCOPE_ALIGNERS")
    os.environ["SINKSCOPE_ALIGNERS"] = f"served={aligner_dir}"
    try:
        with svc.local_ray(num_cpus=2):
            url = svc.start(svc.build(replicas=REPLICAS), port=port)
            yield {"url": url, "port": port, "svc": svc}
    finally:
        if before is None:
            os.environ.pop("SINKSCOPE_ALIGNERS", None)
        else:
            os.environ["SINKSCOPE_ALIGNERS"] = before


@pytest.fixture(scope="module")
def url(service) -> str:
    return service["url"]


@pytest.fixture(scope="module")
def encoder():
    """The embedded engine as the app and each replica run it: with
    ``SINKSCOPE_TORCH_THREADS`` torch threads (float32 sums in the model depend on the
    thread count, at ~1e-7)."""
    import torch

    from engine.relation.relate import default_encoder

    threads = torch.get_num_threads()
    torch.set_num_threads(settings.CONFIG.torch_threads or threads)
    try:
        yield default_encoder()
    finally:
        torch.set_num_threads(threads)


def post(url: str, path: str, body, *, accept: str = wire.JSON, raw: bytes | None = None,
         headers: dict | None = None):
    """POST ``body`` (JSON) or ``raw`` bytes; returns (status, headers, decoded document)."""
    data = raw if raw is not None else json.dumps(body).encode()
    r = HTTP.request("POST", url + path, body=data,
                     headers={"Accept": accept, "Content-Type": "application/json",
                              **(headers or {})})
    media = r.headers.get("Content-Type", "").split(";")[0]
    assert b"Traceback" not in r.data and b'File "' not in r.data
    return r.status, r.headers, wire.loads(r.data, wire.NPZ if media == wire.NPZ else wire.JSON)


def assert_same(r1, r2, atol: float = 1e-12) -> None:
    """Two Relations hold the same numbers (to ``atol``) and the same everything else."""
    def same(x, y, where):
        if dataclasses.is_dataclass(x):
            assert type(x) is type(y), where
            for f in dataclasses.fields(x):
                same(getattr(x, f.name), getattr(y, f.name), f"{where}.{f.name}")
        elif isinstance(x, np.ndarray) or isinstance(y, np.ndarray) or isinstance(x, float):
            x, y = np.asarray(x), np.asarray(y)
            assert x.shape == y.shape, where
            if x.dtype == bool or y.dtype == bool:
                assert np.array_equal(x, y), where
            else:
                np.testing.assert_allclose(x, y, rtol=0, atol=atol, equal_nan=True,
                                           err_msg=where)
        elif isinstance(x, tuple) and x and dataclasses.is_dataclass(x[0]):
            assert len(x) == len(y), where
            for i, (u, v) in enumerate(zip(x, y)):
                same(u, v, f"{where}[{i}]")
        else:
            assert x == y, (where, x, y)

    same(r1, r2, "relation")


# --------------------------------------------------------------------------- no Ray needed
def test_client_imports_without_torch():
    """The client (and the app's served path) never needs torch."""
    import subprocess
    import sys

    code = ("import sys; import engine.serving.client, engine.serving.wire, engine.io.export; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_wire_round_trip_is_exact(encoder):
    """JSON and NPZ carry the same document; both rebuild an equal Relation (−inf
    potentials and an infinite KL included)."""
    for kw in (dict(layer=5, head=3, half_steps=1), dict(layer="all", head="all", eps=0.3),
               dict(mode="joint", head="mean", pool_words=True)):
        r = relate(A, B, encoder=encoder, **kw)
        for media in (wire.JSON, wire.NPZ):
            back = relation_from_dict(wire.loads(wire.dumps(relation_document(r), media),
                                                 media))
            assert_same(back, r, atol=0)
    one = relate(A, B, encoder=encoder, half_steps=1)  # softmax: mass on [CLS], [SEP]
    assert np.isposinf(one.summary.kl_to_product) and np.isneginf(one.coupling.f).any()
    back = relation_from_dict(wire.loads(wire.dumps(relation_document(one), wire.NPZ),
                                         wire.NPZ))
    assert_same(back, one, atol=0)
    with pytest.raises(ValueError):
        wire.loads(b"PK\x03\x04 not really", wire.NPZ)
    buf = io.BytesIO()
    np.save(buf, np.array([object()], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):  # pickles are never loaded
        wire.loads(buf.getvalue(), wire.NPZ)


def test_client_rejects_a_url_that_is_not_one():
    with pytest.raises(SettingsError, match="http://host:8000"):
        EngineClient("localhost:8000")


def test_client_names_the_url_when_nothing_answers():
    port = free_port()
    c = EngineClient(f"http://127.0.0.1:{port}", timeout=5, retries=3)
    t = time.monotonic()
    with pytest.raises(EngineUnavailable) as e:
        c.relate(A, B)
    assert time.monotonic() - t < 6  # retried, within the call's timeout
    assert f"127.0.0.1:{port}" in str(e.value) and "python -m engine serve" in str(e.value)
    assert "connection refused" in str(e.value) and c.retried > 0
    assert not isinstance(e.value, ValueError) and e.value.status is None


OK = (200, {}, json.dumps({"status": "ok", "replica": "r"}).encode())


def test_client_retries_unavailable_answers_then_answers():
    """502, 503 (Retry-After: 0), 504 and a 500 that is not the engine's: each is sent
    again, and the call returns the answer that finally came."""
    plain500 = (500, {"Content-Type": "text/plain"}, b"Internal Server Error")
    with scripted((503, {"Retry-After": "0"}, b"overloaded"), (502, {}, b""), (504, {}, b""),
                  plain500, OK) as (url, seen):
        c = EngineClient(url, timeout=10)
        assert c.health()["status"] == "ok"
        assert len(seen) == 5 and c.retried == 4


def test_client_honours_retry_after_and_stops_at_its_bound():
    """An engine that stays overloaded: the client waits what Retry-After says between
    tries, then gives up after ``retries`` retries with EngineUnavailable (status 503)."""
    with scripted((503, {"Retry-After": "1"}, b"")) as (url, seen):
        c = EngineClient(url, timeout=30, retries=2)
        t = time.monotonic()
        with pytest.raises(EngineUnavailable, match="after 3 tries") as e:
            c.health()
        assert e.value.status == 503 and len(seen) == 3 and c.retried == 2
        assert all(b - a >= 0.95 for a, b in zip(seen, seen[1:]))
        assert time.monotonic() - t < 5
    with scripted((503, {"Retry-After": "1"}, b"")) as (url, seen):  # the timeout bounds it too
        with pytest.raises(EngineUnavailable, match="HTTP 503"):
            EngineClient(url, timeout=1.5, retries=10).health()
        assert len(seen) == 2


def test_client_never_retries_a_bad_request_or_the_engines_own_failure():
    bad = json.dumps({"error": {"type": "SettingsError", "message": "ε must be > 0"}}).encode()
    with scripted((422, {}, bad), OK) as (url, seen):
        with pytest.raises(SettingsError, match="ε must be > 0"):
            EngineClient(url).health()
        assert len(seen) == 1
    failed = json.dumps({"error": {"type": "InternalError", "message": "the log"}}).encode()
    with scripted((500, {}, failed), OK) as (url, seen):
        with pytest.raises(EngineUnavailable, match="HTTP 500: the log"):
            EngineClient(url).health()
        assert len(seen) == 1
    with pytest.raises(SettingsError, match="retries"):
        EngineClient("http://127.0.0.1:1", retries=-1)


@hsettings(max_examples=50, deadline=None)
@given(attempt=st.integers(0, 40), backoff=st.floats(0.001, 1), most=st.floats(0.01, 5),
       retry_after=st.one_of(st.none(), st.floats(0, 100)))
def test_backoff_is_bounded_exponential_with_jitter(attempt, backoff, most, retry_after):
    """wait = min(max_backoff, backoff · 2^k) · U(½, 1), or Retry-After (≤ 4 max_backoff)."""
    c = EngineClient("http://127.0.0.1:1", backoff=backoff, max_backoff=most)
    wait = c._delay(attempt, retry_after)
    if retry_after is not None:
        assert wait == min(retry_after, 4 * most)
    else:
        cap = min(most, backoff * 2.0 ** attempt)
        assert cap / 2 - 1e-12 <= wait <= cap + 1e-12


def test_docs_api_reference_is_the_openapi_schema():
    """docs/serving.md's API section is what the schema says today, and the relation's
    request fields are the Settings' fields with the Settings' limits."""
    from engine.serving.routes import markdown, openapi
    from engine.serving.schemas import RelateRequest
    from engine.settings import EPS_MAX, EPS_MIN, Settings
    from tests.support.server import ROOT

    text = (ROOT / "docs" / "serving.md").read_text()
    block = text.split("<!-- api:begin -->\n", 1)[1].split("<!-- api:end -->", 1)[0]
    assert block == markdown(), "run python -m engine.serving.routes and paste its output"
    assert set(Settings.names()) <= set(RelateRequest.model_fields)
    eps = openapi()["components"]["schemas"]["RelateRequest"]["properties"]["eps"]
    assert (eps["minimum"], eps["maximum"], eps["default"]) == (EPS_MIN, EPS_MAX,
                                                                Settings().eps)


def test_deploy_config_is_a_valid_serve_config():
    """deploy/serve.yaml passes Ray's own schema and names this module's app."""
    import yaml
    from ray.serve.schema import ServeDeploySchema

    from tests.support.server import ROOT

    config = yaml.safe_load((ROOT / "deploy" / "serve.yaml").read_text())
    schema = ServeDeploySchema.model_validate(config)
    (app,) = schema.applications
    assert app.import_path == "engine.serving.deployment:app"
    (dep,) = app.deployments
    assert dep.name == "Engine" and dep.ray_actor_options.num_gpus >= 1
    auto = dep.autoscaling_config
    assert auto["min_replicas"] >= 1 and auto["max_replicas"] > auto["min_replicas"]
    assert dep.max_ongoing_requests and dep.user_config["max_batch_size"] > 1
    # Overload: bounded queues, and a Retry-After that the client honours.
    assert dep.max_queued_requests > 0 and dep.backpressure_config.status_code == 503
    assert dep.backpressure_config.retry_after_s >= 1
    from engine.serving import deployment

    assert deployment.app is not None


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")
def test_relate_and_eps_path_on_cuda_match_the_cpu(encoder):
    """What a GPU replica computes: float32 on the device, float64 numpy back, close to the
    CPU's float64 (the solver's log-domain fallback at small ε included)."""
    from engine import encode_texts, eps_path, relate_encodings

    e = encode_texts(encoder, A, B, "separate")
    for kw in (dict(layer=5, head=3, eps=0.05, half_steps=300), dict(layer="all", head="all")):
        cpu = relate_encodings(e, **kw)
        gpu = relate_encodings(e, **kw, device="cuda")
        assert gpu.sinkhorn_plan.dtype == np.float64
        assert np.abs(gpu.sinkhorn_plan - cpu.sinkhorn_plan).max() < 1e-5
        assert np.abs(gpu.softmax_plan - cpu.softmax_plan).max() < 1e-6
    r = relate_encodings(e, layer=2, head=1, half_steps=1)
    np.testing.assert_allclose(eps_path(r, device="cuda")[1], eps_path(r)[1], atol=1e-5)


# --------------------------------------------------------------------------- the service
def test_health_models_and_openapi(url, monkeypatch):
    c = EngineClient(url)
    h = c.health()
    assert h["status"] == "ok" and h["device"] == "cpu" and h["dtype"] == "float64"
    assert h["memory_mb"] > 0
    (m,) = c.models()
    assert m == ServedModel("all-MiniLM-L6-v2", 6, 12, 32, 256, "cpu", "float64")
    spec = json.loads(HTTP.request("GET", url + "/v1/openapi.json").data)
    assert {"/v1/health", "/v1/models", "/v1/relate", "/v1/eps_path"} <= set(spec["paths"])
    from engine.serving.routes import openapi

    # what docs/serving.md is checked against, with the service's aligner (SINKSCOPE_ALIGNERS)
    monkeypatch.setattr(settings, "CONFIG", settings.Config.from_env(os.environ))
    assert spec == openapi()
    assert spec["components"]["schemas"]["AlignRequest"]["properties"]["aligner"][
        "anyOf"][0]["enum"] == ["served"]


CASES = [
    dict(layer=5, head=3, eps=0.5, half_steps=50),
    dict(layer=-1, head="mean", eps=1.0, half_steps=1),
    dict(layer="all", head="all", eps=0.7, half_steps=30),
    dict(mode="joint", layer=2, head=7, weights="norm", pool_words=True, eps=2.0),
    dict(mode="self", layer=0, head="mean", weights="uniform", half_steps=8),
    dict(mode="joint", layer="all", head="all", eps=0.3, half_steps=20),
    dict(layer=4, head=0, eps=0.05, half_steps=400, tol=1e-4),  # not converged: a notice
]


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_served_equals_embedded(url, encoder, kw):
    """Same texts, same settings: the served Relation equals the embedded one to 1e-12,
    through NPZ (what the app uses) and through JSON (what curl gets)."""
    embedded = relate(A, B, encoder=encoder, **kw)
    for binary in (True, False):
        served = EngineClient(url, binary=binary).relate(A, B, **kw)
        assert_same(served, embedded, atol=1e-12)


def test_served_texts_of_every_kind(url, encoder):
    """Very different lengths, emoji, right-to-left text, HTML: equal to embedded."""
    long_b = " ".join(["river bank money water loan quiet house"] * 20)
    for a, b in (("Hi", long_b), ("👋🏽 naïve café — ok?", "مرحبا بالعالم"),
                 ("<b>bold</b> & <script>x</script>", "[CLS] [SEP] tokens typed")):
        assert_same(EngineClient(url).relate(a, b, layer=3, head=1),
                    relate(a, b, encoder=encoder, layer=3, head=1))


def test_json_is_the_clis_document(url, capsys):
    """POST /v1/relate answers exactly what `python -m engine relate --json` prints."""
    from engine.io.cli import main

    assert main(["relate", A, B, "--layer", "5", "--head", "3", "--eps", "0.5",
                 "--half-steps", "50", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    status, _, served = post(url, "/v1/relate", {"text_a": A, "text_b": B, "layer": 5,
                                                 "head": 3, "eps": 0.5, "half_steps": 50})
    assert status == 200 and served == cli


def test_eps_path_served_equals_embedded(url, encoder):
    from engine import eps_path

    r = relate(A, B, encoder=encoder, layer=2, head=5, eps=1.0, half_steps=1)
    eps, plans = eps_path(r)
    eps_s, plans_s = EngineClient(url).eps_path(A, B, layer=2, head=5)
    np.testing.assert_allclose(eps_s, eps, rtol=0, atol=0)
    np.testing.assert_allclose(plans_s, plans, rtol=0, atol=1e-12)
    values = [5.0, 0.5, 0.1]
    e2, p2 = EngineClient(url).eps_path(A, B, layer=2, head=5, eps_values=values,
                                        half_steps=300)
    assert list(e2) == values and p2.shape == (3, len(r.tokens_a), len(r.tokens_b))
    np.testing.assert_allclose(p2, eps_path(r, values, half_steps=300)[1], atol=1e-12, rtol=0)


def test_sixteen_concurrent_clients_are_batched(url, encoder):
    """16 clients send new texts at once: every answer is right, and the deployment put
    several requests into one forward pass (the batch sizes it reports)."""
    animals = "cat dog fox cow owl pig rat bee ant bat elk emu eel yak ram hen".split()
    pairs = [(f"The {x} sat on the old wall by the road.", f"A {x} slept under the tree.")
             for x in animals]
    start = threading.Barrier(len(pairs))

    def call(pair):
        start.wait()
        return post(url, "/v1/relate", {"text_a": pair[0], "text_b": pair[1], "layer": 3,
                                        "head": 4, "eps": 0.6}, accept=wire.NPZ)

    with cf.ThreadPoolExecutor(len(pairs)) as pool:
        answers = list(pool.map(call, pairs))
    batches = []
    for (status, headers, doc), (a, b) in zip(answers, pairs):
        assert status == 200
        batches.append(int(headers["X-Sinkscope-Batch"]))
        assert_same(relation_from_dict(doc),
                    relate(a, b, encoder=encoder, layer=3, head=4, eps=0.6), atol=1e-12)
    assert max(batches) > 1, batches
    # The same texts again: every encoding comes from the replicas' caches, or from an
    # encoding another request for the same texts was already waiting for.
    again = [post(url, "/v1/relate", {"text_a": a, "text_b": b, "eps": 2.0})
             for a, b in pairs[:4]]
    assert all(s == 200 for s, _, _ in again)
    stats = [json.loads(HTTP.request("GET", url + "/v1/stats").data) for _ in range(6)]
    assert all(s["cache"]["entries"] >= 1 for s in stats)
    assert max(max(map(int, s["batch_sizes"])) for s in stats) > 1


def test_sixteen_slider_moves_are_solved_together(url, encoder):
    """A class on one example moves the sliders at once: every answer equals the embedded
    engine's, and requests on the same texts were solved in one batched call (the
    replicas say so in a header and in their counters)."""
    text_a, text_b = "The old bridge over the river.", "Boats passed under the bridge."
    moves = [dict(layer=4, head=h, eps=float(e), half_steps=hs)
             for e in np.geomspace(0.1, 4, 8) for h, hs in (("mean", 100), (6, 30))]
    post(url, "/v1/relate", {"text_a": text_a, "text_b": text_b})  # encoded once
    start = threading.Barrier(len(moves))

    def call(move):
        start.wait()
        return post(url, "/v1/relate", {"text_a": text_a, "text_b": text_b, **move},
                    accept=wire.NPZ)

    with cf.ThreadPoolExecutor(len(moves)) as pool:
        answers = list(pool.map(call, moves))
    together = []
    for (status, headers, doc), move in zip(answers, moves):
        assert status == 200
        together.append(int(headers["X-Sinkscope-Solved-With"]))
        assert_same(relation_from_dict(doc), relate(text_a, text_b, encoder=encoder, **move),
                    atol=1e-12)
    assert max(together) > 1, together
    stats = [json.loads(HTTP.request("GET", url + "/v1/stats").data) for _ in range(6)]
    assert max(max(map(int, s["relate_batch_sizes"]), default=0) for s in stats) > 1


def test_overload_answers_503_with_retry_after_and_the_client_waits(service):
    """A deployment that holds one request and queues one more: a burst gets 503 with
    Retry-After from Serve (not an unbounded queue), and the same burst through
    EngineClient succeeds, every call, by waiting as told."""
    from ray import serve

    svc = service["svc"]
    # (no CPU of its own: the module's two replicas hold the instance's two)
    serve.run(svc.build(replicas=1, cpus_per_replica=0.0, max_ongoing_requests=1,
                        max_queued_requests=1), name="tight", route_prefix="/tight")
    tight = service["url"] + "/tight"
    try:
        body = {"text_a": LONG, "text_b": A, "layer": 2, "head": 1, "half_steps": 400}
        start = threading.Barrier(12)

        def raw(_):
            start.wait()
            r = HTTP.request("POST", tight + "/v1/relate", body=json.dumps(body).encode(),
                             headers={"Content-Type": "application/json"})
            return r.status, r.headers.get("Retry-After")

        with cf.ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(raw, range(12)))
        assert {s for s, _ in answers} <= {200, 503} and (503, "1") in answers, answers
        clients = [EngineClient(tight, timeout=120) for _ in range(6)]
        with cf.ThreadPoolExecutor(6) as pool:
            out = list(pool.map(lambda c: c.relate(LONG, A, layer=2, head=1, half_steps=400),
                                clients))
        assert all(r.sinkhorn_plan.shape == out[0].sinkhorn_plan.shape for r in out)
        assert sum(c.retried for c in clients) > 0
    finally:
        serve.delete("tight")


def test_a_job_asking_for_a_gpu_runs_on_the_gpu_node_only(service):
    """A second node joins the service's Ray, its one GPU declared: "auto" then asks each
    job for a GPU, and a board of the engine's own kind that asks for one GPU places its
    jobs there only, on that node's GPU 0, while the head has none."""
    import ray

    from engine.jobs import spec
    from engine.jobs.served import Jobs, resources
    from tests.support.gpu_node import gpu_node

    body = spec.check({"kind": "lab_train", "settings": {
        "models": ["softmax"], "steps": 5, "train_pairs": 8, "heldout_pairs": 4, "width": 2,
        "depth": 0}})
    with gpu_node() as gpu:
        assert resources(dataclasses.replace(settings.CONFIG, job_gpus="auto")) == {
            "num_cpus": 1.0, "num_gpus": 1.0}  # "auto": the cluster has a GPU
        nodes = {n["NodeID"]: n["Resources"].get("GPU", 0) for n in ray.nodes() if n["Alive"]}
        assert nodes[gpu] == 1 and sorted(nodes.values()) == [0, 1]
        board = Jobs(resources={"num_cpus": 1, "num_gpus": 1}, name="gpu-placement").board()
        try:
            ids = [ray.get(board.submit.remote(body.kind, body.body))["id"] for _ in range(2)]
            jobs = [until(lambda i=i: (s := ray.get(board.status.remote(i)))["state"] not in (
                "waiting", "running") and s, seconds=120) for i in ids]
        finally:
            ray.kill(board)
    for st in jobs:
        assert st["state"] == "done", st
        assert st["resources"] == {"num_cpus": 1, "num_gpus": 1}
        assert st["worker"]["node"] == gpu and st["worker"]["gpus"] == ["0"]


def test_two_replicas_both_answer(url):
    from benchmarks.service import replica_pids

    pids = replica_pids(url, REPLICAS)
    assert len(pids) == REPLICAS and len(set(pids.values())) == REPLICAS, pids


LONG = " ".join(["word"] * 170)
BAD = [  # (body or raw bytes, status, error type, words in the message)
    (b"{bad json", 400, "BadRequest", "not valid JSON"),
    (b"\xff\xfe\x00garbage", 400, "BadRequest", "not valid JSON"),
    (b"[" * 100_000, 400, "BadRequest", "not valid JSON"),
    (b"", 400, "BadRequest", "not valid JSON"),
    ([1, 2], 422, "SettingsError", "must be a JSON object"),
    ({"text_a": "x", "epsilon": 1}, 422, "SettingsError", "Unknown field 'epsilon'"),
    ({"text_b": "x"}, 422, "TextError", "text_a is required"),
    ({"text_a": "   ", "text_b": "x"}, 422, "TextError", "Text A is empty"),
    ({"text_a": "x", "text_b": ""}, 422, "TextError", "Text B is empty"),
    ({"text_a": 12, "text_b": "x"}, 422, "TextError", "must be a string"),
    ({"text_a": "x", "text_b": "y", "eps": 0}, 422, "SettingsError", "ε must be"),
    ({"text_a": "x", "text_b": "y", "eps": "abc"}, 422, "SettingsError", "ε must be a number"),
    (b'{"text_a": "x", "text_b": "y", "eps": NaN}', 422, "SettingsError", "ε must be"),
    (b'{"text_a": "x", "text_b": "y", "eps": 1e999}', 422, "SettingsError", "ε must be"),
    ({"text_a": "x", "text_b": "y", "half_steps": 0}, 422, "SettingsError", "half_steps"),
    ({"text_a": "x", "text_b": "y", "half_steps": 10**9}, 422, "SettingsError", "at most"),
    ({"text_a": "x", "text_b": "y", "half_steps": 1.5}, 422, "SettingsError", "whole number"),
    ({"text_a": "x", "text_b": "y", "layer": 99}, 422, "SettingsError", "out of range"),
    (b'{"text_a": "x", "text_b": "y", "layer": 1e999}', 422, "SettingsError", "whole number"),
    ({"text_a": "x", "text_b": "y", "head": "all"}, 422, "SettingsError", 'layer="all"'),
    ({"text_a": "x", "text_b": "y", "mode": "diagonal"}, 422, "SettingsError", "mode must"),
    ({"text_a": "x", "text_b": "y", "weights": "x"}, 422, "SettingsError", "weights must"),
    ({"text_a": "x", "text_b": "y", "mode": []}, 422, "SettingsError", "mode must"),
    ({"text_a": "x", "text_b": "y", "weights": {}}, 422, "SettingsError", "weights must"),
    ({"text_a": "x", "text_b": "y", "pool_words": "yes"}, 422, "SettingsError", "true or false"),
    ({"text_a": "x", "text_b": "y", "tol": -1}, 422, "SettingsError", "tol must"),
    ({"text_a": "x", "text_b": "y", "model": "gpt-4"}, 422, "ModelError", "all-MiniLM-L6-v2"),
    ({"text_a": LONG, "text_b": LONG, "layer": "all", "head": "all"}, 422, "SettingsError",
     "too many for the heads grid"),
    ({"text_a": "x", "text_b": "y", "text_c": "z" * 10_000}, 422, "SettingsError", "Unknown"),
    (b'{"text_a": "' + b"a" * 1_100_000 + b'"}', 413, "PayloadTooLarge", "limit"),
    ({"text_a": LONG, "text_b": LONG, "half_steps": 100_000}, 413, "WorkTooLarge",
     "172 × 172 token pairs × 100,000 half-steps); the served engine allows 2,000,000,000 "
     "per /v1/relate (SINKSCOPE_SERVE_WORK_RELATE). Ask for fewer half-steps"),
]


@pytest.mark.parametrize("body, status, kind, words", BAD,
                         ids=[f"{i}-{b[2]}" for i, b in enumerate(BAD)])
def test_bad_request_gets_its_status_and_message(url, body, status, kind, words):
    raw = body if isinstance(body, bytes) else None
    got, _, doc = post(url, "/v1/relate", body, raw=raw)
    assert got == status, doc
    assert doc["error"]["type"] == kind and words in doc["error"]["message"], doc
    assert EngineClient(url).health()["status"] == "ok"


def test_bad_requests_through_the_client_raise_the_engines_errors(url):
    c = EngineClient(url)
    with pytest.raises(TextError, match="Text A is empty"):
        c.relate("", B)
    with pytest.raises(SettingsError, match="out of range"):
        c.relate(A, B, layer=6)
    with pytest.raises(ModelError, match="all-MiniLM-L6-v2"):
        c.relate(A, B, model="nope")
    with pytest.raises(SettingsError, match="one layer and head"):
        c.eps_path(A, B, layer="all", head="all")


def test_body_too_large_without_content_length_and_wrong_paths(url):
    def chunks():
        for _ in range(30):
            yield b"x" * 50_000

    r = HTTP.request("POST", url + "/v1/relate", body=chunks(), chunked=True)
    assert r.status == 413 and json.loads(r.data)["error"]["type"] == "PayloadTooLarge"
    r = HTTP.request("GET", url + "/v2/relate")
    assert r.status == 404 and "/v1/relate" in json.loads(r.data)["error"]["message"]
    r = HTTP.request("GET", url + "/v1/relate")
    assert r.status == 405 and json.loads(r.data)["error"]["type"] == "MethodNotAllowed"
    with pytest.raises(EngineUnavailable, match="HTTP 404"):  # not a sinkscope engine URL
        EngineClient(url + "/not/here").health()


def garbage(i: int, rng: np.random.Generator):
    """One of several kinds of nonsense, all cheap for the service to refuse."""
    kind = i % 6
    if kind == 0:
        return "/v1/relate", rng.bytes(int(rng.integers(1, 3000)))
    if kind == 1:
        good = json.dumps({"text_a": A, "text_b": B, "eps": 0.5}).encode()
        return "/v1/relate", good[: int(rng.integers(1, len(good) - 1))]
    if kind == 2:
        junk = [None, True, -1, 1e308, "", "all", [], {}, [1], {"a": 1}, "x" * 100, -(10**30)]
        body = {"text_a": A, "text_b": B}
        for k in rng.choice(["eps", "half_steps", "layer", "head", "mode", "weights",
                             "pool_words", "tol", "model"], size=3, replace=False):
            body[str(k)] = junk[int(rng.integers(len(junk)))]
        return "/v1/eps_path" if i % 12 == 2 else "/v1/relate", json.dumps(body).encode()
    if kind == 3:
        return "/v1/relate", json.dumps(rng.integers(0, 9, 50).tolist()).encode()
    if kind == 4:
        return f"/v1/{rng.bytes(4).hex()}", b"{}"
    return "/v1/relate", json.dumps({"text_a": "\x00\x01\x02", "text_b": "\u200b\u200b",
                                     "mode": "separate"}).encode()


def test_two_hundred_garbage_requests_in_a_burst(url, encoder):
    rng = np.random.default_rng(11)
    requests = [garbage(i, rng) for i in range(200)]

    def send(req):
        path, data = req
        r = HTTP.request("POST", url + path, body=data,
                         headers={"Content-Type": "application/json"})
        return r.status, r.data

    with cf.ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(send, requests))
    statuses = [s for s, _ in answers]
    assert set(statuses) <= {200, 400, 404, 413, 422}, sorted(set(statuses))
    assert statuses.count(200) < 20  # (a few junk values happen to be valid, e.g. head=true)
    for status, data in answers:
        if status == 200:
            continue
        err = json.loads(data)["error"]
        assert err["type"] and err["message"] and "Traceback" not in err["message"]
    # Still healthy, and still right.
    assert EngineClient(url).health()["status"] == "ok"
    assert_same(EngineClient(url).relate(A, B, layer=1, head=2),
                relate(A, B, encoder=encoder, layer=1, head=2))


def test_lattice_served_equals_embedded(url, encoder):
    from engine import encode_texts, relate_encodings
    from engine.relation.frames import decode, encode, grid
    from engine.relation.lattice import relation_lattice

    eps, steps = grid([0.1, 0.5, 1.0, 5.0], [1, 2, 3, 10, 40], max_half_steps=1000)
    r = relate_encodings(encode_texts(encoder, A, B, "separate"), layer=2, head=5)
    local, bits = encode(relation_lattice(r, eps, steps), "x", max_bytes=10**7)
    served = EngineClient(url).lattice(A, B, eps_values=eps, steps=steps, id="x",
                                       max_bytes=10**7, layer=2, head=5)
    assert bits == 16 and served == local  # the same bytes: one lattice, one packing
    d = decode(served)
    np.testing.assert_allclose(d["plans"][:, 0], r.a[:, None] * decode(local)["attention"],
                               atol=1e-4)
    assert EngineClient(url).lattice(A, B, eps_values=eps, steps=steps, max_bytes=100,
                                     layer=2, head=5) is None  # over the budget: no payload
    status, _, doc = post(url, "/v1/lattice", {"text_a": A, "text_b": B, "layer": "all",
                                               "head": "all", "eps_values": [1], "steps": [1]})
    assert status == 422 and "one layer and head" in doc["error"]["message"]


def test_rank_served_equals_embedded(url, encoder):
    from engine.relation.sentences import rank_texts

    cands = ["The river bank was muddy.", "She paid money into her account.", "Rain fell."]
    for eps in (1.0, 0.2):
        local = rank_texts(encoder, A, cands, eps=eps)
        served = EngineClient(url).rank(A, "\n".join(cands), eps=eps)
        assert served.candidates == local.candidates and served.tokens == local.tokens
        np.testing.assert_allclose(served.similarity, local.similarity, atol=1e-12, rtol=0)
        np.testing.assert_allclose(served.divergence, local.divergence, atol=1e-12, rtol=0)
        assert list(served.by_divergence) == list(local.by_divergence)
        for p, q in zip(served.plans, local.plans):
            np.testing.assert_allclose(p, q, atol=1e-12, rtol=0)
        assert served.notices == local.notices and served.eps == eps
    status, _, doc = post(url, "/v1/rank", {"text_a": A, "candidates": [1, 2]})
    assert status == 422 and "candidates must be a list of texts" in doc["error"]["message"]
    status, _, doc = post(url, "/v1/rank", {"text_a": A, "candidates": [""]})
    assert status == 422 and doc["error"]["type"] == "TextError"


def test_concurrent_rankings_each_get_their_own(url, encoder):
    """Eight rankings at once, each on candidates of its own: each equals the embedded
    ranking; the measures they keep go to the replicas' caches (read and written on the
    event loop, never by two worker threads at once)."""
    from engine.relation.sentences import rank_texts

    sets = [[f"The {x} crossed the river.", f"A {x} sat by the bank.", "Stocks fell."]
            for x in "cat dog fox cow owl pig rat bee".split()]
    before = cache_bytes(url)
    start = threading.Barrier(len(sets))

    def call(cands):
        start.wait()
        return EngineClient(url).rank(A, cands, eps=0.5)

    with cf.ThreadPoolExecutor(len(sets)) as pool:
        served = list(pool.map(call, sets))
    for got, cands in zip(served, sets):
        local = rank_texts(encoder, A, cands, eps=0.5)
        assert got.candidates == local.candidates
        np.testing.assert_allclose(got.divergence, local.divergence, atol=1e-12, rtol=0)
    assert sum(cache_bytes(url).values()) > sum(before.values())


def cache_bytes(url: str) -> dict[str, int]:
    """Each replica's cached bytes (GET /v1/stats, four at a time until both answered)."""
    seen: dict[str, int] = {}
    with cf.ThreadPoolExecutor(4) as pool:
        for _ in range(20):
            for doc in pool.map(lambda _: json.loads(
                    HTTP.request("GET", url + "/v1/stats").data), range(4)):
                seen[doc["replica"]] = doc["cache"]["bytes"]
            if len(seen) == REPLICAS:
                break
    return seen


ALIGN_PAIRS = [("the river bank was steep", "the bank of the river was steep", "0-0 1-4 2-1"),
               ("she paid money into her account", "money was paid in by her", None)]


def test_align_served_equals_embedded(url, encoder):
    """POST /v1/align through the client: the same alignments as engine.alignment's own
    align_pairs on the same pairs (links, null words, scores, values to their 6 decimals);
    bad bodies get the engine's message."""
    from engine.alignment.api import Alignment, align_pairs

    for kw in ({}, {"method": "sinkhorn-threshold", "threshold": 0.2},
               {"method": "partial", "mass": 0.7, "source": "attention", "layer": 2}):
        local = [Alignment.from_dict(a.to_dict())
                 for a in align_pairs(ALIGN_PAIRS, encoder=encoder, **kw)]
        served = EngineClient(url).align(ALIGN_PAIRS, **kw)
        assert len(served) == len(local) == 2
        for s, e in zip(served, local):
            assert (s.words_a, s.links, s.null_a, s.null_b, s.method, s.source, s.scores) == (
                e.words_a, e.links, e.null_a, e.null_b, e.method, e.source, e.scores)
            np.testing.assert_allclose(s.values, e.values, atol=2e-6, rtol=0)
    assert served[0].scores is not None and served[1].scores is None  # gold: scored
    assert EngineClient(url).align(ALIGN_PAIRS[:1], values=False)[0].values is None
    for body, words in (({"pairs": []}, "pairs"),
                        ({"pairs": [{"text_a": "x"}]}, "pairs[0].text_b is required"),
                        ({"pairs": [{"text_a": "x", "text_b": "y"}], "method": "nope"},
                         "method must be one of"),
                        ({"pairs": [{"text_a": "x", "text_b": "   "}]}, "text_b is empty")):
        status, _, doc = post(url, "/v1/align", body)
        assert status == 422 and words in doc["error"]["message"], doc


def test_aligners_live_on_the_engine(url, encoder, aligner_dir, tmp_path, capsys):
    """SINKSCOPE_ALIGNERS is read where the work runs: GET /v1/aligners lists the replica's
    aligner; POST /v1/align with method "trained" (the client's align(..., method=
    "trained", aligner=NAME)) and ``python -m engine align --engine URL --aligner NAME
    --method trained`` give the links of the same aligner run here."""
    from engine.aligner.checkpoint import load
    from engine.aligner.extract import align
    from engine.alignment.readers import read_pairs
    from engine.io.cli import main

    client = EngineClient(url)
    (info,) = client.aligners()
    assert (info.name, info.base_model, info.final, info.theta, info.registered) == (
        "served", settings.DEFAULT_MODEL, "sinkhorn", 0.5, False)
    data = Path(__file__).parent / "data" / "align" / "pairs.tsv"
    pairs = read_pairs(data)[:6]
    local = align(load(aligner_dir, encoder=encoder), pairs, theta=0.3)
    served = client.align(pairs, method="trained", aligner="served", threshold=0.3)
    for s, e in zip(served, local, strict=True):
        assert (s.links, s.null_a, s.method["method"], s.scores) == (
            e.links, e.null_a, "trained", e.scores)
        np.testing.assert_allclose(s.values, np.round(e.values, 6), atol=2e-6, rtol=0)
    out = tmp_path / "links.txt"
    assert main(["align", "--pairs", str(data), "--engine", url, "--aligner", "served",
                 "--method", "trained", "--out", str(out), "--bootstrap", "0", "--json",
                 "--quiet"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["methods"]) == {"trained"} and doc["alignments"]["method"] == "trained"
    mine = align(load(aligner_dir, encoder=encoder), read_pairs(data))
    assert out.read_text().splitlines() == [a.pharaoh for a in mine]
    status, _, err = post(url, "/v1/align", {"pairs": [{"text_a": "x", "text_b": "y"}],
                                             "method": "trained", "aligner": "nope"})
    assert status == 422 and err["error"]["code"] == "not_listed", err
    assert "served" in err["error"]["message"]
    from engine.errors import AlignerError  # the client raises it as embedded does

    with pytest.raises(AlignerError) as raised:
        client.align(pairs[:1], method="trained", aligner="nope")
    assert raised.value.code == "not_listed"


def test_live_payload_projection_and_toy_served_equal_embedded(url, encoder, aligner_dir):
    """POST /v1/align/live gives the bytes engine.alignment.live.pair_payload encodes here
    (a method with a τ grid, one without, a trained aligner; none over the budget, with
    why); POST /v1/project the same Projection as engine.relation.projection.project;
    POST /v1/toy the plans of engine.lab.toy.toy_plan."""
    from engine.aligner.checkpoint import load
    from engine.alignment.live import decode, pair_payload
    from engine.lab.toy import toy_plan
    from engine.relation.projection import project

    client = EngineClient(url)
    (a, b, gold) = ALIGN_PAIRS[0]
    mine = load(aligner_dir, encoder=encoder)
    for method, g in (("unbalanced", gold), ("exact", None), ("trained", gold)):
        data, why = client.align_live(a, b, g, method=method,
                                      aligner="served" if method == "trained" else None)
        local = pair_payload(a, b, g, method, model=settings.DEFAULT_MODEL, encoder=encoder,
                             aligner=mine, aligner_name="served").encode()
        assert why == "" and decode(data)[0] == decode(local)[0], method
        assert data == local, method  # byte for byte: the page reads either engine's
    assert client.align_live(a, b, method="unbalanced", max_bytes=100) == (None,
                                                                          "live_off_bytes")
    r = relate(A, B, encoder=encoder, layer=5, head=3, eps=1.0, half_steps=1)
    for kw in ({"space": "qk", "method": "pca", "dim": 2},
               {"space": "hidden", "method": "pca", "dim": 3}):
        served = client.project(A, B, layer=5, head=3, **kw)
        local = project(r, **kw)
        np.testing.assert_allclose(served.xy_a, local.xy_a, atol=1e-9, rtol=0)
        np.testing.assert_allclose(served.xy_b, local.xy_b, atol=1e-9, rtol=0)
        assert (served.method, served.dim, served.explained) == pytest.approx(
            (local.method, local.dim, local.explained))
    for kind, kw in (("softmax", {}), ("half_steps", {"t": 7}), ("coupling", {"eps": 0.2}),
                     ("exact", {})):
        served, local = client.toy("outlier", 0.5, kind, **kw), toy_plan("outlier", 0.5, kind,
                                                                         **kw)
        np.testing.assert_allclose(served.plan, local.plan, atol=1e-12, rtol=0)
        np.testing.assert_array_equal(served.clouds.xb, local.clouds.xb)
        assert (served.kind, served.t, served.eps, served.converged) == (
            local.kind, local.t, local.eps, local.converged)


def test_front_end_on_a_served_engine_never_imports_torch(url):
    """A front end pointed at a served engine runs every view (the heads grid and the ε
    path through the client) without torch or a model; its sidebar names the engine
    (checked in Chromium by the outage test)."""
    import subprocess
    import sys

    from tests.support.server import ROOT

    code = f"""
import os, sys
os.environ.update(SINKSCOPE_ENGINE={url!r}, SINKSCOPE_WARM_UP="0")
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({str(ROOT / "app.py")!r}, default_timeout=120).run()
for view in ("heads", "path", "cloud", "sentences", "compare"):
    at.session_state["view"] = view
    at.run()
    assert not at.exception and not at.error, view
(el,) = [e for e in at.get("bidi_component") if e.proto.component_name == "sinkscope_scrub"]
assert len(__import__("json").loads(el.proto.json)[0]["metrics"]) == 8  # live.sent
assert "torch" not in sys.modules and "ray" not in sys.modules
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300, cwd=ROOT)


def test_app_with_no_engine_shows_a_notice(monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.support.server import ROOT

    dead = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setattr(settings, "CONFIG", settings.Config.from_env(
        {"SINKSCOPE_ENGINE": dead, "SINKSCOPE_WARM_UP": "0"}))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception and not at.error
    (w,) = at.warning
    assert dead in w.value and "not available" in w.value and "by itself" in w.value
    from sinkscope_app import engines

    c = engines.current().client  # the page's one client: one call's retries, not every call's
    assert 0 < c.retried <= c.retries


# --------------------------------------------------------------------------- hostile load
SIXTY = " ".join(["river bank money water loan quiet house morning light people"] * 6)
T256 = " ".join(["river bank money water loan quiet house morning"] * 32)
U256 = " ".join(["people walk talk city market bridge boat stone"] * 32)
HEAVY = {"text_a": T256, "text_b": U256, "layer": 5, "head": 3, "eps": 0.001,
         "half_steps": 25_000, "tol": 1e-300}  # 1.6e9 of 2e9: seconds to minutes of work


# --------------------------------------------------------------------------- jobs
# The engine's jobs on this service (before the listeners' check below, which then covers
# their workers and board too): a Lab training's progress, place in line, Stop keeping its
# partial, results as JSON and NPZ; codes for bad jobs; an aligner trained as a job,
# downloaded as a zip. A job's worker killed under the page: the tour below.
LAB = {"models": ["sinkhorn", "softmax"], "train_pairs": 32, "heldout_pairs": 8, "width": 4,
       "depth": 1, "half_steps": 10, "eval_every": 5}


def job_call(url: str, method: str, path: str, body=None, accept: str = wire.JSON):
    """(status, headers, decoded answer) of one request to the jobs' routes."""
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
    status, _, first = job_call(url, "POST", "/v1/jobs",
                            {"kind": "lab_train", "settings": {**LAB, "steps": 20000}})
    assert status == 202 and first["state"] in ("waiting", "running")
    assert first["resources"] == {"num_cpus": 1.0, "num_gpus": 0.0}
    status, _, second = job_call(url, "POST", "/v1/jobs",
                             {"kind": "lab_sweep", "settings": {**LAB, "steps": 3}})
    assert status == 202 and second["state"] == "waiting" and second["place"] >= 1
    job = f"/v1/jobs/{first['id']}"
    running = until(lambda: (s := job_call(url, "GET", job)[2])["state"] == "running"
                    and s["progress"] > 0 and s["partial"] and s)
    assert running["info"]["stage"] == "train" and running["worker"]["pid"] > 0
    assert job_call(url, "GET", f"/v1/jobs/{second['id']}")[2]["place"] == 1
    status, _, err = job_call(url, "GET", job + "/result")
    assert status == 409 and err["error"]["code"] == "job_not_ended"
    partial = results.JobStatus.from_dict(running).partial
    assert partial.status == "partial" and len(partial.curves["sinkhorn"][0]) >= 1
    status, _, gone = job_call(url, "DELETE", f"/v1/jobs/{second['id']}")  # waiting: at once
    assert status == 200 and gone["state"] == "stopped"
    job_call(url, "DELETE", job)
    end = until(lambda: (s := job_call(url, "GET", job)[2])["state"] != "running" and s)
    assert end["state"] == "stopped" and end["reason"] == "requested"
    as_json = results.read(job_call(url, "GET", job + "/result")[2])
    as_npz = results.read(job_call(url, "GET", job + "/result", accept=wire.NPZ)[2])
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


def test_jobs_errors_have_codes(url):
    status, _, e = job_call(url, "GET", "/v1/jobs/no-such-job")
    assert status == 404 and e["error"]["code"] == "job_not_found"
    status, _, e = job_call(url, "POST", "/v1/jobs", {"kind": "lab_train", "settings": {
        "steps": 20000, "width": 256, "depth": 8}})
    assert status == 413 and e["error"]["code"] == "job_work"
    assert e["error"]["params"]["env"] == "SINKSCOPE_JOB_WORK_LAB"
    status, _, e = job_call(url, "POST", "/v1/jobs", {"kind": "lab_train",
                                                  "settings": {"width": 999}})
    assert status == 422 and "width must be a whole number from 1 to 256" in \
        e["error"]["message"]
    status, _, e = job_call(url, "POST", "/v1/jobs", {"kind": "align_corpus", "data": {
        "pairs": [{"text_a": "a b", "text_b": "c", "gold": "0-4"}]}})
    assert status == 422 and e["error"]["code"] == "link_out_of_range"
    status, _, e = job_call(url, "POST", "/v1/jobs", {"kind": "nope"})
    assert status == 422 and e["error"]["code"] == "job_kind"
    status, _, e = job_call(url, "POST", "/v1/jobs", {"kind": "compare_text", "settings": {
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


def busy_after(pids, since: float) -> float:
    """CPU seconds the replicas ``pids`` use in the second starting 1 s after ``since``
    (a running solve uses about one per second)."""
    from tests.support.server import cpu_seconds

    time.sleep(max(0.0, since + 1.0 - time.monotonic()))
    c0 = sum(cpu_seconds(p) for p in pids)
    time.sleep(1.0)
    return sum(cpu_seconds(p) for p in pids) - c0


def test_every_listener_of_the_local_ray_is_on_loopback(service):
    """GCS, raylet, object and node managers, workers, agents, Serve's proxy and the
    replicas (their gRPC servers too): every socket Ray's processes listen on is
    127.0.0.1."""
    from tests.support.engine_server import listeners, loopback
    from tests.support.server import descendants

    found = listeners(descendants(os.getpid()))
    assert len(found) >= 10, found  # Ray's whole set, not an empty match
    assert [a for a, _ in found if not loopback(a)] == [], found
    from engine.io.cli import parser

    assert parser().parse_args(["serve"]).host == "127.0.0.1"  # python -m engine serve's


def test_answers_over_four_mebibytes_arrive_in_npz_and_json(url, encoder):
    """The heads grid of a 50-word pair (52 × 52 tokens): 8 MB as NPZ, 17 MB as JSON,
    beyond the 4 MiB that gRPC between Serve's proxy and a replica carried; both equal
    embedded, and the replica gives the memory back."""
    from benchmarks.service import replica_pids
    from tests.support.server import rss_mb

    fifty = " ".join(SIXTY.split()[:50])
    embedded = relate(fifty, fifty, encoder=encoder, layer="all", head="all")
    assert_same(EngineClient(url).relate(fifty, fifty, layer="all", head="all"), embedded)
    pids = replica_pids(url, REPLICAS)
    before = {name: rss_mb(pid) for name, pid in pids.items()}
    r = HTTP.request("POST", url + "/v1/relate", body=json.dumps(
        {"text_a": fifty, "text_b": fifty, "layer": "all", "head": "all"}).encode(),
        headers={"Content-Type": wire.JSON})
    assert r.status == 200 and len(r.data) > 4 * 2**20
    assert_same(relation_from_dict(json.loads(r.data)), embedded)
    name = r.headers["X-Sinkscope-Replica"]
    assert rss_mb(pids[name]) - before[name] < 40  # the answer's memory was given back


def test_the_longest_history_is_bounded_and_every_answer_within_its_size(url):
    """The heads grid of a 2-word pair at 100,000 half-steps, tol 1e-300: each head keeps
    at most 1,002 half-steps of marginal errors (it answered 124 MB of JSON when it kept
    all 100,000), far within SINKSCOPE_SERVE_MAX_ANSWER; an answer that could be larger
    (the heads grid of 160 × 160 tokens) is refused before any work, with its code."""
    from engine.serving.limits import max_answer

    body = {"text_a": "river bank", "text_b": "the bank", "layer": "all", "head": "all",
            "half_steps": 100_000, "tol": 1e-300}
    ans = HTTP.request("POST", url + "/v1/relate", body=json.dumps(body).encode(),
                       headers={"Content-Type": wire.JSON})
    assert ans.status == 200 and len(ans.data) < 2 * 2**20 <= max_answer() == 32 * 2**20
    r = relation_from_dict(json.loads(ans.data))
    steps = r.coupling.err_steps
    assert r.coupling.half_steps_run == 100_000 and steps[-1] == 100_000 and len(steps) <= 1002
    assert r.coupling.row_err.shape == (6, 12, len(steps)) and np.all(np.diff(steps) > 0)
    big = " ".join(("river bank money water loan quiet house morning".split() * 20)[:158])
    t = time.monotonic()
    for accept in (wire.JSON, wire.NPZ):
        status, _, doc = post(url, "/v1/relate", {"text_a": big, "text_b": big, "layer": "all",
                                                  "head": "all"}, accept=accept)
        assert status == 413 and doc["error"]["code"] == "answer", doc
        assert doc["error"]["params"]["env"] == "SINKSCOPE_SERVE_MAX_ANSWER"
    assert time.monotonic() - t < 4


@pytest.mark.parametrize("path, body, words", [
    ("/v1/eps_path", {"text_a": T256, "text_b": U256, "layer": 5, "head": 3,
                      "eps_values": [0.01] * 64, "half_steps": 100_000},
     "× 100,000 half-steps × 64 ε values); the served engine allows 3,200,000,000"),
    ("/v1/lattice", {"text_a": SIXTY, "text_b": SIXTY, "layer": 5, "head": 3,
                     "eps_values": list(np.geomspace(0.01, 10, 128)),
                     "steps": list(range(1, 129))}, "SINKSCOPE_SERVE_WORK_LATTICE")])
def test_work_over_a_routes_budget_is_refused_before_computing(url, path, body, words):
    t = time.monotonic()
    status, _, doc = post(url, path, body)
    assert status == 413 and doc["error"]["type"] == "WorkTooLarge", doc
    assert words in doc["error"]["message"] and time.monotonic() - t < 2
    if path == "/v1/eps_path":  # the client's error for it
        with pytest.raises(RequestTooLarge, match="Ask for fewer"):
            EngineClient(url).eps_path(**body)


def test_a_post_without_content_type_is_refused(url):
    r = HTTP.request("POST", url + "/v1/relate", body=json.dumps({"text_a": A}).encode())
    doc = json.loads(r.data)
    assert r.status == 415 and "Content-Type: application/json" in doc["error"]["message"]


def test_a_late_or_abandoned_request_stops_computing_within_a_second(url):
    """A heavy relate past its deadline (here the client's: it waits 2 s) is answered 408
    with the engine's message; a client that leaves mid-computation: either way the
    replicas stop computing within a second."""
    from benchmarks.service import replica_pids

    pids = replica_pids(url, REPLICAS).values()
    t = time.monotonic()
    status, _, doc = post(url, "/v1/relate", HEAVY, headers={"X-Sinkscope-Deadline": "2"})
    assert status == 408 and doc["error"]["type"] == "DeadlineExceeded", doc
    assert "deadline of 2 s (the client's X-Sinkscope-Deadline)" in doc["error"]["message"]
    assert time.monotonic() - t < 8
    assert busy_after(pids, time.monotonic()) < 0.3
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        HTTP.request("POST", url + "/v1/relate", body=json.dumps(HEAVY).encode(),
                     headers={"Content-Type": wire.JSON}, timeout=urllib3.Timeout(read=2))
    assert busy_after(pids, time.monotonic()) < 0.3  # not the ~1 s/s of a running solve


def test_light_requests_do_not_wait_behind_heavy_ones(url):
    """Two heavy relates run (one per replica, or one waiting for its replica's heavy
    slot); a slider move meanwhile takes at most max(1 s, 5×) its time alone."""
    c = EngineClient(url)
    c.relate(A, B, layer=5, head=3)

    def light(k: int) -> float:
        t = time.perf_counter()
        c.relate(A, B, layer=5, head=3, eps=0.3 + 0.01 * k)
        return time.perf_counter() - t

    alone = float(np.median([light(k) for k in range(3)]))

    def heavy(_):
        with contextlib.suppress(urllib3.exceptions.HTTPError):
            HTTP.request("POST", url + "/v1/relate", body=json.dumps(HEAVY).encode(),
                         headers={"Content-Type": wire.JSON}, timeout=urllib3.Timeout(read=6))

    with cf.ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(heavy, i) for i in range(2)]
        time.sleep(1.5)
        under = max(light(k) for k in range(3, 6))
        for f in futures:
            f.result()
    assert under <= max(1.0, 5 * alone), (alone, under)


def test_align_engine_links_equal_the_embedded_run(url, capsys, monkeypatch):
    """``python -m engine align --engine URL``: the pairs in chunks (16 pairs each here,
    two chunks), the same links and scores as the embedded run, a progress bar."""
    from engine.alignment import remote
    from engine.io.cli import main

    pairs = str(Path(__file__).parent / "data" / "align" / "pairs.tsv")
    argv = ["align", "--pairs", pairs, "--method", "softmax-both", "--bootstrap", "0",
            "--json"]
    assert main(argv) == 0
    embedded = json.loads(capsys.readouterr().out)
    monkeypatch.setattr(remote, "CHUNK", 16)
    assert main(argv + ["--engine", url]) == 0
    out = capsys.readouterr()
    served = json.loads(out.out)
    assert served["alignments"] == embedded["alignments"]
    assert served["methods"] == embedded["methods"]
    assert "40/40 texts" in out.err  # the progress bar


def test_a_replica_killed_mid_run_fails_no_call(url):
    """24 clients on two replicas; one replica's process is killed (SIGKILL) a few
    seconds in: every call through EngineClient still returns its relation (the client
    retries what the dead replica dropped; Serve routes to the live one and restarts the
    other). Bounded: ~6 s of load (``python -m benchmarks.service`` runs it longer)."""
    from benchmarks.service import failover

    t = time.monotonic()
    r = failover(url, clients=24, seconds=6.0, kill_at=2.0, replicas=REPLICAS)
    assert r["failures"] == 0, r["first_failures"]
    assert r["requests"] >= 24 and r["killed_at"] < 4
    assert time.monotonic() - t < 60
    stat = f"/proc/{r['killed_pid']}/stat"  # the replica did die (gone, or a zombie)
    assert not os.path.exists(stat) or open(stat).read().rsplit(")", 1)[1].split()[0] == "Z"


# --------------------------------------------------------------------------- the app, in Chromium
# ``streamlit run app.py`` with SINKSCOPE_ENGINE at this service, in a headless Chromium of
# the module's own (closed with the module: Playwright's loop must not outlive it into other
# modules' asyncio tests). The engine's address is a loopback relay (tests.support.outage)
# that a test takes down and brings back: while it is down nothing listens there and every
# open connection is reset, which is what a client and the page see of an engine that has
# stopped and restarted on the same address, without paying for a second start of Serve.
NOTICE = '[data-testid="stAlertContentWarning"]'
PAIRS = Path(__file__).parent / "data" / "align" / "pairs.tsv"
MB = 2**20
PEAK_MB = 400  # the front end's peak RSS on a served engine (705 MB with torch mapped)
#: Shared libraries that only torch, transformers (tokenizers, safetensors) and UMAP
#: (numba, llvmlite) bring into a process.
HEAVY_LIBS = ("libtorch", "/torch/", "/tokenizers/", "/safetensors/", "/numba/",
              "/llvmlite/")
LAB_PAGE = "/lab?lang=en&target=quantile&models=sinkhorn,softmax&width=4&steps=8"


@pytest.fixture(scope="module")
def relay(service):
    """The service's address behind a relay, down until a test brings it up."""
    r = Relay(service["port"], free_port())
    try:
        yield r
    finally:
        r.down()


@pytest.fixture(scope="module")
def served_app(relay):
    """The app on the relayed engine: (its URL, the Streamlit server's process)."""
    with streamlit_server(env={"SINKSCOPE_ENGINE": relay.url, "SINKSCOPE_WARM_UP": "0"}) as up:
        yield up


@pytest.fixture(scope="module")
def chromium():
    """A Chromium of the module's own, closed with it: not the session's, which stays open
    to the end, and while a sync Playwright is open the worker's main thread holds its
    event loop, so ``asyncio.run`` in the modules this worker runs next would fail (the
    browser modules run last for that reason)."""
    with launched_chromium() as b:
        yield b


@pytest.mark.browser
def test_the_page_waits_for_the_engine_and_survives_an_outage(served_app, relay, chromium,
                                                              encoder):
    """Opened while nothing answers at the engine's address, the page says so and draws by
    itself once it answers, without a reload. Then the engine goes away mid-session: the
    client raises EngineUnavailable naming the URL, the page says so and keeps its
    controls; back on the same address, the same client and page carry on, the slider move
    made while it was away drawn."""
    app_url, _ = served_app
    client = EngineClient(relay.url, timeout=10, retries=1)  # one retry: not a blip
    ctx = chromium.new_context(viewport=VIEWPORT, device_scale_factor=1)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT)
    try:
        page.goto(f"{app_url}/?eps=1&steps=100")  # nothing answers yet
        page.wait_for_selector(f"{NOTICE} >> text=is not available", timeout=TIMEOUT)
        assert relay.url in page.locator(NOTICE).first.inner_text()
        no_errors(page)
        page.evaluate("() => { window.sinkscopeNotReloaded = true; }")
        relay.up()
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)  # by itself
        wait_idle(page)
        assert page.evaluate("() => window.sinkscopeNotReloaded === true")
        sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
        assert f"served by {relay.url}, on cpu (float64)" in sidebar, sidebar[-600:]
        eps = page.get_by_role("slider", name="ε — entropy (log scale)")
        eps.focus()
        eps.press("ArrowLeft")
        wait_title(page, "Sinkhorn (ε=0.8,")
        wait_idle(page)
        no_errors(page)
        assert_same(client.relate(A, B, layer=5, head=1),
                    relate(A, B, encoder=encoder, layer=5, head=1))

        relay.down()
        with pytest.raises(EngineUnavailable, match=relay.url.replace(".", r"\.")):
            client.relate(A, B, layer=5, head=2)
        with pytest.raises(EngineUnavailable):
            client.health()
        eps.focus()
        eps.press("ArrowLeft")  # a slider move while the engine is away
        page.wait_for_selector(f"{NOTICE} >> text=is not available", timeout=TIMEOUT)
        notice = page.locator(NOTICE).first.inner_text()
        assert relay.url in notice and "by itself" in notice, notice
        assert page.get_by_role("slider").count() == 2  # the controls stay
        assert page.locator('[data-testid="stSidebar"] textarea').count() == 2
        assert page.locator('[data-testid="stException"]').count() == 0
        assert "Traceback" not in page.inner_text("body")

        relay.up()  # the same address, as after an operator's restart
        assert_same(client.relate(A, B, layer=5, head=2),
                    relate(A, B, encoder=encoder, layer=5, head=2))
        wait_title(page, "Sinkhorn (ε=0.6,")  # the move made while it was away
        wait_js(page, f"""() => ![...document.querySelectorAll('{NOTICE}')]
            .some(e => e.innerText.includes('is not available'))""")
        wait_idle(page)
        assert page.evaluate("() => window.sinkscopeNotReloaded === true")
        assert any("ε=0.6" in t for t in titles(page))
        no_errors(page)
    finally:
        ctx.close()


def address(pg, *keys: str) -> dict[str, str]:
    """The page's address parameters, once it holds ``keys`` (the frame writes the address
    at the end of a run, after the page's elements)."""
    for key in keys:
        wait_js(pg, "(k) => new URLSearchParams(location.search).has(k)", key)
    return query(pg)


def upload(pg, where: str, name: str, raw: bytes) -> None:
    pg.locator(f'{where} [data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": name, "mimeType": "text/tab-separated-values", "buffer": raw}])


def number(pg, key: str, value: int) -> None:
    box = pg.locator(f".st-key-{key} input")
    box.fill(str(value))
    box.press("Enter")
    wait_js(pg, "([k, v]) => document.querySelector(`.st-key-${k} input`).value === v",
            [key, str(value)])


@pytest.mark.browser
@pytest.mark.timeout(900)
def test_a_tour_of_every_page_and_job_leaves_the_front_end_without_torch(served_app, relay,
                                                                       chromium, url):
    """Every page and every job kind from the pages on the served engine: the main page's
    cloud (a projection), Learn's clouds, Align's live sliders, a corpus (align_corpus)
    and an aligner trained on it (train_aligner), downloaded and used in the Pair view,
    the Lab's sweep (lab_sweep), training (lab_train: its worker killed, the page says so
    within 5 s, Restart, Stop, a reload that finds it by its id) and text comparison
    (compare_text). The Streamlit process never maps libtorch (nor tokenizers, numba),
    and its peak RSS stays within 400 MB."""
    app_url, proc = served_app
    relay.up()
    ctx = chromium.new_context(viewport={"width": 1400, "height": 2200}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT)
    try:
        pg.goto(f"{app_url}/?view=cloud")  # the projection runs on the engine
        wait_title(pg, "Joint ")
        pg.goto(f"{app_url}/learn?step=4")  # the clouds' plans too
        wait_title(pg, "Sinkhorn coupling at ε")
        pg.goto(f"{app_url}/align")  # the live θ/τ sliders' payload, built by the engine
        wait_js(pg, """() => window.__sinkscope && window.__sinkscope.align &&
            [...window.__sinkscope.align.payloads.values()].some(e => e.value)""")
        assert "Live sliders are off" not in pg.inner_text("body")
        no_errors(pg)

        pg.goto(f"{app_url}/align?view=corpus")  # a corpus, then an aligner trained on it
        upload(pg, "", "pairs.tsv", PAIRS.read_bytes())
        pg.wait_for_selector("text=20 pairs, 20 with gold", timeout=TIMEOUT)
        assert address(pg, "corpus_job")
        pg.locator(".st-key-align_train button").click()
        pg.wait_for_selector("text=Trained: total F1", timeout=TIMEOUT)
        with pg.expect_download() as got:
            pg.locator(".st-key-align_train_download button").click()
        with zipfile.ZipFile(io.BytesIO(Path(got.value.path()).read_bytes())) as z:
            assert sorted(Path(n).name for n in z.namelist()) == ["config.json",
                                                                  "model.safetensors"]
        pg.locator(".st-key-align_train_use button").click()  # for this session's Align
        wait_title(pg, "Links of trained")
        assert address(pg, "aligner")["method"] == "trained" and "@" in address(pg)["aligner"]
        no_errors(pg)

        pg.goto(f"{app_url}{LAB_PAGE}")  # the sweep, then a training whose worker dies
        pg.locator(".st-key-lab_sweep button").first.click()
        wait_title(pg, "Held-out error against width")
        number(pg, "lab_steps", 4000)
        pg.locator(".st-key-lab_train button").click()
        pg.wait_for_selector("text=Training Sinkhorn Transformer: step", timeout=TIMEOUT)
        job = address(pg, "train_job")["train_job"]
        os.kill(job_call(url, "GET", f"/v1/jobs/{job}")[2]["worker"]["pid"], signal.SIGKILL)
        t0 = time.monotonic()
        pg.wait_for_selector("text=The engine lost this job", timeout=TIMEOUT)
        assert time.monotonic() - t0 < 5.0
        assert job_call(url, "GET", f"/v1/jobs/{job}")[2]["state"] == "lost"
        pg.locator(".st-key-lab_restart button").click()
        pg.wait_for_selector("text=Training Sinkhorn Transformer: step", timeout=TIMEOUT)
        wait_js(pg, "(j) => new URLSearchParams(location.search).get('train_job') !== j", job)
        again = address(pg)["train_job"]
        assert again != job and job_call(url, "GET", f"/v1/jobs/{again}")[2]["state"] == \
            "running"
        pg.locator(".st-key-lab_stop button").click()
        wait_title(pg, "Couplings of held-out pair 0")
        pg.wait_for_selector("text=Stopped: the curves and couplings", timeout=TIMEOUT)
        pg.reload()  # a new session: the job is found by the id in the address
        wait_title(pg, "Couplings of held-out pair 0")
        assert address(pg)["train_job"] == again

        upload(pg, ".st-key-lab_text_upload", "pairs.tsv", PAIRS.read_bytes())  # compare_text
        number(pg, "lab_text_epochs", 1)
        pg.locator(".st-key-lab_text_train button").click()
        pg.wait_for_selector("text=On 5 held-out pairs", timeout=TIMEOUT)
        assert address(pg, "compare_job")
        no_errors(pg)
    finally:
        ctx.close()
    maps = Path(f"/proc/{proc.pid}/maps").read_text()
    assert [lib for lib in HEAVY_LIBS if lib in maps] == []
    peak = int(next(line.split()[1] for line in
                    Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                    if line.startswith("VmHWM:"))) * 1024
    print(f"front end on a served engine, peak RSS after the tour: {peak / MB:.0f} MB")
    assert peak <= PEAK_MB * MB
