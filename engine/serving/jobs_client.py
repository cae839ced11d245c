"""The client's job calls (:class:`JobCalls`, a part of ``EngineClient``): start a job,
its status, Stop, its result (typed, :mod:`engine.jobs.results`), an aligner's zip, a
restart, and the Lab's held-out view.

```python
engine = EngineClient("http://127.0.0.1:8000")
st = engine.start_job({"kind": "lab_train", "settings": {"steps": 200}})   # JobStatus
st = engine.job(st.id)               # state, progress, place, info, partial, error
engine.stop_job(st.id)               # cooperative: the job keeps what it reached
res = engine.job_result(st.id)       # LabTrainResult (curves, runs, weights)
```

Starting a job is not idempotent: it is sent once (no retry after the request may have
arrived); the other calls are retried as every other call. Torch-free.
"""

from __future__ import annotations

from typing import Any

from ..jobs import results
from ..jobs.results import JobStatus

ZIP = "application/zip"


class JobCalls:
    """``/v1/jobs`` and ``/v1/lab/predict`` for :class:`~engine.serving.client.EngineClient`
    (which gives ``_call``, ``url`` and the connection pool)."""

    def start_job(self, body: dict) -> JobStatus:
        """``POST /v1/jobs``: check, price and queue a job (``{"kind", "settings",
        "data"}``); its status. Raises the engine's error (a code) for a bad body,
        ``RequestTooLarge`` over the job budget, ``EngineBusy`` when the line is full."""
        return self._status(self._call("POST", "/v1/jobs", body, retry=False))

    def job(self, job_id: str) -> JobStatus:
        """``GET /v1/jobs/{id}``: state, progress, place in line, details, partial result;
        ``JobNotFound`` (a SinkscopeError, code "job_not_found") for an unknown id."""
        return self._status(self._call("GET", f"/v1/jobs/{_id(job_id)}"))

    def stop_job(self, job_id: str) -> JobStatus:
        """``DELETE /v1/jobs/{id}``: Stop (the job keeps its best or partial result)."""
        return self._status(self._call("DELETE", f"/v1/jobs/{_id(job_id)}"))

    def restart_job(self, job_id: str) -> JobStatus:
        """``POST /v1/jobs/{id}/restart``: the same body again, as a new job."""
        return self._status(self._call("POST", f"/v1/jobs/{_id(job_id)}/restart", {},
                                       retry=False))

    def job_document(self, job_id: str) -> dict:
        """``GET /v1/jobs/{id}/result``: the result document as it came (JSON or NPZ)."""
        return self._call("GET", f"/v1/jobs/{_id(job_id)}/result")

    def job_result(self, job_id: str):
        """The ended job's result, typed (:func:`engine.jobs.results.read`): a stopped job's
        is what it reached; ``JobConflict`` (code "job_not_ended") before it ends."""
        return self._typed(self.job_document(job_id))

    def job_zip(self, job_id: str, name: str | None = None) -> bytes:
        """A trained aligner of the job as a zip (its folder: ``model.safetensors`` and
        ``config.json``); ``name`` one of the status' ``files`` (default: the first)."""
        path = f"/v1/jobs/{_id(job_id)}/result" + (f"?file={_id(name)}" if name else "")
        return self._call("GET", path, accept=ZIP)

    def lab_predict(self, settings: Any, weights: dict, size: int, pair: int = 0):
        """``POST /v1/lab/predict``: held-out pair ``pair`` of ``size`` atoms as trained Lab
        models couple it (:class:`~engine.jobs.results.LabPrediction`). ``settings``: the
        run's ``LabSettings`` (or its fields); ``weights``: model → its weights (as a
        ``LabTrainResult`` holds them)."""
        from ..jobs.lab import encode_weights, lab_fields

        doc = self._call("POST", "/v1/lab/predict", {
            "settings": lab_fields(settings), "size": int(size), "pair": int(pair),
            "weights": {m: encode_weights(w) for m, w in weights.items()}})
        return self._typed(doc)

    def _status(self, doc: dict) -> JobStatus:
        try:
            return JobStatus.from_dict(doc)
        except (KeyError, TypeError, ValueError) as e:
            raise self._unexpected("a job status", e) from None

    def _typed(self, doc: dict):
        try:
            return results.read(doc)
        except (KeyError, TypeError, ValueError) as e:
            raise self._unexpected("a job document", e) from None

    def _unexpected(self, what: str, e: Exception):
        from .client import EngineUnavailable

        return EngineUnavailable(self.url, f"it answered with something that is not {what}: "
                                 f"{type(e).__name__} {e}", 200)


def _id(job_id: str) -> str:
    """An id (or a file's name) as a path segment: letters, digits, ``-_.`` only."""
    from urllib.parse import quote

    return quote(str(job_id), safe="")
