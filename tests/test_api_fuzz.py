"""The served API's document tells the truth: schemathesis, driven by ``/v1/openapi.json``,
every check, positive and negative data, on every operation the document lists.

It runs schemathesis's own engine (the phases of ``schemathesis run``: examples, coverage,
fuzzing; stateful where the document has links) on one replica's FastAPI app
(:class:`engine.serving.deployment.Engine` with the real packaged model) in this process,
through ASGI, without Ray: Serve's batch queue is replaced by single calls (the batching is
tested on a real Serve in tests/test_service.py), and the board of jobs by the embedded
engine's threads (:class:`engine.serving.jobs_api.ThreadJobs`), each job stopped by a zero
deadline before it computes and at most two waiting (the jobs themselves are tested in
tests/test_job_kinds.py and tests/test_service.py). The work budgets are set low, so a
valid request that asks for much is refused at once (413, documented) instead of computing
for seconds. A body the document allows is accepted (2xx), refused over a budget (413), or
refused by one of the rules the document states beside its schema (422 with one of
``info.x-sinkscope-rules``' codes: a text the model reads nothing of, a gold link outside
its words, …; :func:`refusals_of_valid_data_are_documented`); a job's routes may also
answer what depends on the board (404 unknown id, 409 no result yet, 503 a full line).
``make fuzz`` runs more examples (``SINKSCOPE_API_FUZZ_EXAMPLES``) and, for ``POST /v1/jobs``,
the coverage phase too: a boundary case of every setting of every job kind (1,066 cases,
half of the test's time); the test runs that route's examples, fuzzing and stateful phases
(each kind's own rules are tested in test_job_bodies_the_engine_refuses_…).
"""

from __future__ import annotations

import json
import os

import pytest
import schemathesis

pytestmark = [pytest.mark.model]

EXAMPLES = int(os.environ.get("SINKSCOPE_API_FUZZ_EXAMPLES", "5"))
#: Every phase on every route (make fuzz), or the jobs' coverage phase left out (the test).
EVERY_PHASE = "SINKSCOPE_API_FUZZ_EXAMPLES" in os.environ
#: Low budgets: a schema-valid request over them is refused (413) before it computes.
BUDGETS = {"SINKSCOPE_SERVE_WORK_RELATE": "300000", "SINKSCOPE_SERVE_WORK_EPS_PATH": "300000",
           "SINKSCOPE_SERVE_WORK_LATTICE": "300000", "SINKSCOPE_SERVE_WORK_RANK": "30000000",
           "SINKSCOPE_SERVE_WORK_ALIGN": "20000", "SINKSCOPE_SERVE_DEADLINE_S": "20",
           "SINKSCOPE_MAX_CHARS": "2000"}


def body_is_valid(case) -> bool:
    """Whether the case's JSON body is valid against its operation's schema in the document
    (JSON Schema 2020-12, the document itself as the registry of its components)."""
    from jsonschema import Draft202012Validator

    doc = case.operation.schema.raw_schema
    op = doc["paths"][case.operation.path][case.method.lower()]
    body = op.get("requestBody", {}).get("content", {}).get("application/json")
    if body is None:
        return False
    # (the components beside it, where its "#/components/…" references point)
    schema = {**body["schema"], "components": doc["components"]}
    return Draft202012Validator(schema).is_valid(case.body)


@schemathesis.check
def refusals_of_valid_data_are_documented(ctx, response, case):
    """A body valid against the document that is refused with 422 names one of the rules
    the document states beside its schema (``info.x-sinkscope-rules``: a code per rule
    JSON Schema cannot state). Bodies are judged by validating them, as the generator's
    own label can be wrong (schemathesis mixes constants into positive cases)."""
    if response.status_code != 422 or case.method.upper() != "POST":
        return None
    try:
        valid = body_is_valid(case)
    except Exception:  # not JSON data at all: not valid
        return None
    if not valid:
        return None
    rules = set(case.operation.schema.raw_schema["info"].get("x-sinkscope-rules", {}))
    code = json.loads(response.content)["error"].get("code")
    if code not in rules:
        raise AssertionError(f"a body the document allows was refused (422) without one of "
                             f"its rules: {response.content[:300]!r}")
    return None


def local_api(env: dict[str, str]):
    """One replica's HTTP API in this process, with ``env`` over the settings (Serve's
    batch queue replaced by single calls)."""
    from engine import settings
    from engine.jobs.local import LocalJobs
    from engine.serving.deployment import Engine
    from engine.serving.jobs_api import ThreadJobs
    from engine.serving.routes import build_api

    replica = Engine.func_or_class.__mro__[1]  # the class under Serve's ingress wrapper

    class Local(replica):
        """The replica without Serve's batch queues (they need a running Serve)."""

        async def _encode_batch(self, job):
            return (await self.batching.encode([job]))[0]

    settings.CONFIG = settings.Config.from_env({**os.environ, **env})
    engine = Local()
    engine.batching.max_batch_size = 1  # every relation solved alone
    # Each job stops (its deadline) before it computes; at most two wait (then 503).
    engine.jobs = ThreadJobs(LocalJobs(engine.encoders.__getitem__, models=lambda: list(
        engine.encoders), deadline_s=0.0, queue=2))
    return build_api(engine)


def fuzz(app, examples: int) -> tuple[set[str], list[str]]:
    """Schemathesis's engine on ``app``: (operations tested, one line per distinct failure)."""
    from schemathesis.config import SchemathesisConfig
    from schemathesis.engine import Status, events, from_schema

    def accepts(*statuses: str) -> dict:
        """A valid request answered 2xx or one of ``statuses`` (a 503: a full line, not a
        server's failure)."""
        out = {"positive_data_acceptance": {"expected-statuses": ["2xx", *statuses]}}
        if "503" in statuses:
            out["not_a_server_error"] = {"expected-statuses": ["2xx", "3xx", "4xx", "503"]}
        return out

    config = SchemathesisConfig.from_dict({
        "generation": {"mode": "all", "max-examples": examples},
        "continue-on-failure": True,  # every distinct failure, not the first of each route
        # The engine's own deadline (BUDGETS) bounds a request; on a loaded machine a heavy
        # one may pass schemathesis' 10 s: a timeout means the deadline was not kept.
        "request-timeout": 3 * float(BUDGETS["SINKSCOPE_SERVE_DEADLINE_S"]),
        # 408: past the engine's deadline, which the budgets keep a request far from
        # unless the machine is starved (seen at a load of 19 on two cores);
        # 413: over a work budget or the answer limit, which the schema cannot state;
        # 422: judged by refusals_of_valid_data_are_documented
        "checks": accepts("408", "413", "422"),
        "operations": [  # a job's answers that depend on the board, not on the request:
            {"include-name": "POST /v1/jobs", "checks": accepts("413", "422", "503"),
             "phases": {"coverage": {"enabled": EVERY_PHASE}}},
            {"include-name": ["GET /v1/jobs/{job_id}", "DELETE /v1/jobs/{job_id}"],
             "checks": {**accepts("404"),  # an unknown id
                        # DELETE is Stop (issue 40): the job and what it reached stay
                        "use_after_free": {"enabled": False}}},
            {"include-name": "GET /v1/jobs/{job_id}/result",  # not ended, or no result
             "checks": accepts("404", "409")},
            {"include-name": "POST /v1/jobs/{job_id}/restart",
             "checks": accepts("404", "413", "503")},
        ],
    })
    schema = schemathesis.openapi.from_asgi("/v1/openapi.json", app, config=config)
    tested, failures = set(), {}
    for event in from_schema(schema).execute():
        if isinstance(event, (events.NonFatalError, events.FatalError)):
            sample = getattr(getattr(event, "info", None), "code_sample", None) or ""
            failures[f"{getattr(event, 'label', 'engine')}: {type(event).__name__}: "
                     f"{getattr(event, 'value', event)!r:.300}"] = f" — {sample:.600}"
        if not isinstance(event, (events.ScenarioFinished, events.FuzzScenarioFinished)):
            continue
        rec = event.recorder
        tested.add(rec.label)
        for cid, checks in rec.checks.items():
            for c in checks:
                if c.status != Status.FAILURE:
                    continue
                title = c.failure_info.failure.title if c.failure_info else ""
                key = f"{rec.label}: {c.name}: {title}"
                inter = rec.interactions.get(cid)
                if key not in failures and inter is not None and inter.response is not None:
                    failures[key] = (f" — body {getattr(rec.cases[cid].value, 'body', None)!r:.600}"
                                     f" → {inter.response.status_code} "
                                     f"{inter.response.content[:300]!r}")
    return tested, [k + v for k, v in failures.items()]


def aligner_folder(folder):
    """An aligner on the packaged model (untrained heads, seed 0), saved in ``folder``."""
    import torch

    from engine.aligner.checkpoint import save
    from engine.aligner.config import AlignerSettings
    from engine.aligner.model import Aligner
    from engine.relation.relate import default_encoder

    torch.manual_seed(0)
    return save(Aligner(default_encoder(), AlignerSettings(top=0)), folder)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The replica with the low budgets and one trained aligner, "tiny"."""
    from engine import settings
    from engine.aligner import registry

    saved = settings.CONFIG
    folder = aligner_folder(tmp_path_factory.mktemp("fuzz") / "tiny")
    try:
        yield local_api({**BUDGETS, "SINKSCOPE_ALIGNERS": f"tiny={folder}"})
    finally:
        settings.CONFIG = saved
        registry.forget()


@pytest.mark.timeout(900)
def test_the_api_does_what_its_document_says(app):
    doc = app.openapi()
    operations = {f"{m.upper()} {p}" for p, ops in doc["paths"].items() for m in ops}
    tested, failures = fuzz(app, EXAMPLES)
    assert failures == []
    assert operations <= tested, operations - tested  # every route the document lists


def test_the_document_states_its_rules_and_error_shape(app):
    """Cross-field rules in the schema (if/then), the rest named with their codes; the
    error body with code and params; a 405 that names the allowed methods."""
    from starlette.testclient import TestClient

    from engine.serving.openapi import RULES

    doc = app.openapi()
    s = doc["components"]["schemas"]
    assert doc["info"]["x-sinkscope-rules"] == RULES
    assert {"code", "params"} <= set(s["ErrorBody"]["properties"])
    assert "AlignFileError" in s["ErrorBody"]["properties"]["type"]["description"]
    grid = s["RelateRequest"]["allOf"][0]
    assert grid["if"]["properties"]["layer"] == {"const": "all"}
    assert s["RelateRequest"]["properties"]["model"]["enum"] == ["all-MiniLM-L6-v2"]
    assert s["AlignRequest"]["properties"]["aligner"]["anyOf"][0]["enum"] == ["tiny"]
    with TestClient(app) as client:
        r = client.request("DELETE", "/v1/relate")
        assert r.status_code == 405 and r.headers["allow"] == "POST"
        r = client.post("/v1/align", json={"pairs": [{"text_a": "a", "text_b": "b",
                                                      "gold": "0-0 3-0"}]})
        assert r.status_code == 422 and r.json()["error"]["code"] == "link_out_of_range"
        r = client.post("/v1/relate", content=b"{" + b" " * 1_100_000 + b"}",
                        headers={"Content-Type": "application/json"})
        err = r.json()["error"]
        assert r.status_code == 413 and err["code"] == "body_size"
        assert err["params"]["env"] == "SINKSCOPE_MAX_BODY"
        r = client.post("/v1/align", json={"pairs": [{"text_a": "a", "text_b": "b"}],
                                           "method": "unbalanced", "tau": 5e-324})
        assert r.status_code == 422 and "tau must lie in [1e-06" in r.json()["error"]["message"]


def test_job_bodies_the_engine_refuses_are_refused_at_submission_by_a_stated_rule(app):
    """What JSON Schema cannot say of a job is refused when it is submitted (422), with a
    code of ``info.x-sinkscope-rules``; a job's answers are documented: 404 for an unknown
    id, 409 for a result not there, 503 with Retry-After for a full line, 413 naming the
    jobs' own body limit, and a 404 for a wrong path that lists the job endpoints."""
    from starlette.testclient import TestClient

    from engine.serving.openapi import RULES

    doc = app.openapi()
    paths = doc["paths"]
    assert "Retry-After" in paths["/v1/jobs"]["post"]["responses"]["503"]["headers"]
    assert {"404", "409"} <= set(paths["/v1/jobs/{job_id}/result"]["get"]["responses"])
    layer = doc["components"]["schemas"]["AlignerJobSettings"]["properties"]["layer"]
    assert layer["maximum"] == 6  # the model's hidden states 0 … 6
    pair = {"text_a": "a b", "text_b": "c", "gold": "0-0"}
    refused = {
        "link_out_of_range": {"kind": "align_corpus", "data": {"pairs": [{**pair,
                                                                          "gold": "0-5"}]}},
        "text_too_long": {"kind": "align_corpus", "data": {"pairs": [{**pair,
                                                                      "text_a": "w " * 401}]}},
        "unread_pairs": {"kind": "align_corpus", "data": {"pairs": [
            pair, {"text_a": "\u200b", "text_b": "c"}]}},
        "top_above_layer": {"kind": "train_aligner", "settings": {"layer": 2, "top": 3},
                            "data": {"train": [pair], "dev": [pair]}},
        "layer_above_model": {"kind": "train_aligner", "settings": {"layer": 7},
                              "data": {"train": [pair], "dev": [pair]}},
    }
    with TestClient(app) as client:
        for code, body in refused.items():
            r = client.post("/v1/jobs", json=body)
            assert r.status_code == 422 and r.json()["error"]["code"] == code, r.text
            assert code in RULES
        r = client.post("/v1/lab/predict", json={"weights": {"sinkhorn": {}}, "size": 8})
        assert r.status_code == 422 and r.json()["error"]["code"] == "job_weights" in RULES
        st = client.post("/v1/jobs", json={"kind": "lab_train"}).json()
        assert st["kind"] == "lab_train" and st["state"] in ("waiting", "running", "stopped")
        r = client.get(f"/v1/jobs/{st['id']}/result")  # stopped (the test's deadline 0)
        assert r.status_code == 409 and r.json()["error"]["code"] in ("job_not_ended",
                                                                       "job_no_result")
        r = client.get("/v1/jobs/nope")
        assert r.status_code == 404 and r.json()["error"]["code"] == "job_not_found"
        r = client.request("OPTIONS", "/v1/jobs/nope")
        assert r.status_code == 405 and set(r.headers["allow"].split(", ")) >= {"GET",
                                                                               "DELETE"}
        r = client.get("/v1/nope")
        assert r.status_code == 404 and "POST /v1/jobs, GET /v1/jobs/{id}" in r.text
        r = client.post("/v1/jobs", content=b"{" + b" " * 8_100_000 + b"}",
                        headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        assert r.json()["error"]["params"]["env"] == "SINKSCOPE_JOB_MAX_BODY"
        assert "SINKSCOPE_JOB_MAX_BODY" in r.json()["error"]["message"]


if __name__ == "__main__":  # make fuzz: python -m tests.test_api_fuzz
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        folder = aligner_folder(os.path.join(tmp, "tiny"))
        found = fuzz(local_api({**BUDGETS, "SINKSCOPE_ALIGNERS": f"tiny={folder}"}),
                     EXAMPLES)[1]
    print("\n".join(found) or f"no failure ({EXAMPLES} examples per operation)")
    sys.exit(1 if found else 0)
