"""Typed, torch-free readers of the jobs' documents: a page gets the same Python objects
from the embedded and the served engine (JSON lists or NPZ arrays in, frozen dataclasses
with numpy arrays out).

- :class:`JobStatus` — ``GET /v1/jobs/{id}``: state, progress, place in line, details,
  partial result, error.
- :func:`read` — a result document as :class:`LabTrainResult`, :class:`SweepResult`,
  :class:`CorpusResult`, :class:`AlignerResult` or :class:`TextComparison`
  (a partial one too); :class:`LabPrediction` for ``POST /v1/lab/predict``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..alignment.score import CorpusScore, Paired
from ..alignment.verdict import Ranked  # (numpy only: one verdict row, read as written)
from ..errors import SinkscopeError
from ..lab.config import LabSettings

ACTIVE = ("waiting", "running")


# --------------------------------------------------------------------------- status
@dataclass(frozen=True)
class JobError:
    """How a job ended badly (or why it stopped): ``type``, ``code`` and ``params`` (a page
    words them), ``message`` (English)."""

    type: str
    code: str
    params: dict
    message: str

    def exception(self) -> SinkscopeError:
        """As an engine error (what ``locale.error`` words)."""
        return SinkscopeError(self.message, code=self.code, params=self.params)


@dataclass(frozen=True)
class JobStatus:
    """A job's status (``GET /v1/jobs/{id}``).

    Attributes:
        id: the job's id (put it in the page's address to find the job again). kind: its
            kind. state: waiting, running, done, stopped, failed or lost. progress: 0 … 1.
        place: its place in line while it waits (1: next), else 0.
        info: details of the last report (codes and numbers: stage, model, step, …).
        partial: what it has reached so far, read (:func:`read`), or None.
        error: a :class:`JobError` (failed, lost, or stopped at its deadline), or None.
        reason: why it stopped ("requested", "deadline") or was lost.
        stop: Stop was asked. seconds: how long it has run. worker: where it runs
        (``pid``, ``node``, ``gpus``). resources: what it asked Ray for.
        result: whether a result (or a partial one) can be fetched. files: its files
        (trained aligners' names).
    """

    id: str
    kind: str
    state: str
    progress: float
    place: int
    info: dict
    partial: Any
    error: JobError | None
    reason: str
    stop: bool
    seconds: float
    worker: dict = field(default_factory=dict)
    resources: dict = field(default_factory=dict)
    result: bool = False
    files: tuple = ()

    @property
    def active(self) -> bool:
        """Waiting or running."""
        return self.state in ACTIVE

    @classmethod
    def from_dict(cls, d: dict) -> "JobStatus":
        err = d.get("error")
        partial = d.get("partial")
        return cls(str(d["id"]), str(d["kind"]), str(d["state"]), float(d["progress"]),
                   int(d["place"]), dict(d.get("info") or {}),
                   None if partial is None else _partial(partial),
                   None if not err else JobError(str(err.get("type", "")),
                                                 str(err.get("code", "")),
                                                 dict(err.get("params") or {}),
                                                 str(err.get("message", ""))),
                   str(d.get("reason", "")), bool(d.get("stop", False)),
                   float(d.get("seconds", 0.0)), dict(d.get("worker") or {}),
                   dict(d.get("resources") or {}), bool(d.get("result", False)),
                   tuple(d.get("files") or ()))


def _partial(doc: Any):
    """A partial result, read when it is a known document (else as it came)."""
    return read(doc) if isinstance(doc, dict) and doc.get("schema") in READERS else doc


# --------------------------------------------------------------------------- the Lab
@dataclass(frozen=True)
class LabRun:
    """One trained model's numbers on the held-out pairs (best weights)."""

    heldout_l1: float
    heldout_l1_double: float
    row_err: float
    col_err: float
    seconds: float
    steps_done: int
    stopped: str


@dataclass(frozen=True)
class LabTrainResult:
    """``lab_train``: the models trained in turn.

    Attributes:
        status: "done", "stopped" or "partial" (still running). target, steps: the run's.
        models: the models asked for, in order. settings: model → its ``LabSettings``
            (the models started). curves: model → (steps, held-out L1) so far.
        runs: model → :class:`LabRun` (the models whose training ended, a stopped one too).
        weights: model → its weights (``state_dict`` name → float32 array; not in a
            partial result). seconds: training time.
    """

    status: str
    target: str
    steps: int
    models: tuple
    settings: dict
    curves: dict
    runs: dict
    weights: dict
    seconds: float


@dataclass(frozen=True)
class SweepResult:
    """``lab_sweep``: held-out L1 of each model at each width (NaN where not reached)."""

    status: str
    target: str
    models: tuple
    widths: tuple
    steps: int
    errors: dict


@dataclass(frozen=True)
class LabPrediction:
    """``POST /v1/lab/predict``: one held-out pair, the target's plan, each model's.

    Attributes:
        size: atoms per cloud. pair: the pair shown (clamped). n_pairs: held-out pairs of
        that size. x (n, 2), a (n,), y (m, 2), b (m,): the clouds. target: (n, m) plan.
        plans: model → (n, m) plan. errors: model → {"l1", "row", "col"}.
    """

    size: int
    pair: int
    n_pairs: int
    x: np.ndarray
    a: np.ndarray
    y: np.ndarray
    b: np.ndarray
    target: np.ndarray
    plans: dict
    errors: dict


# --------------------------------------------------------------------------- the corpus
@dataclass(frozen=True)
class Verdict:
    """Methods ranked with paired comparisons (the fields of
    ``engine.alignment.verdict.Verdict``, read from a document)."""

    ranked: tuple
    best: str
    paired: tuple
    metric: str
    n_pairs: int
    bootstrap: int
    baseline: tuple = ()

    def against_best(self) -> tuple:
        return tuple(p for p in self.paired if p.vs == self.best)

    def against_baseline(self) -> tuple:
        return tuple(self.paired[k] for k in self.baseline)


@dataclass(frozen=True)
class CorpusResult:
    """``align_corpus``: a corpus aligned by every method, scored and ranked (the fields of
    the Align page's ``Corpus``).

    Attributes:
        status: "done", or "partial" (stopped: the pairs aligned so far). n_total: pairs
        sent. pairs: each pair aligned, as a dict (text_a, text_b, gold?). methods: labels.
        links: label → per pair Pharaoh text. n_links: label → per pair link count. f1:
        label → per pair F1 (None without gold). null_ratio, disagreement: per pair.
        scores: label → {"macro", "micro", "macro_ci", "micro_ci"}. n_gold: pairs with
        gold. gold_column: the file gives gold. verdict: a :class:`Verdict` or None.
        settings: label → its settings. command: the ``python -m engine align`` line.
        model, lowercase: how it was aligned.
    """

    status: str
    n_total: int
    pairs: tuple
    methods: tuple
    links: dict
    n_links: dict
    f1: dict
    null_ratio: tuple
    disagreement: tuple
    scores: dict
    n_gold: int
    gold_column: bool
    verdict: Verdict | None
    settings: dict
    command: str
    model: str = ""
    lowercase: bool = False

    @property
    def partial(self) -> bool:
        return self.status != "done"


# --------------------------------------------------------------------------- aligners
@dataclass(frozen=True)
class AlignerEpoch:
    epoch: int
    loss: float
    dev_total_f1: float
    theta: float
    seconds: float


@dataclass(frozen=True)
class AlignerRun:
    """A trained aligner's run: its best epoch's dev total F1 and θ, epochs, time."""

    dev_total_f1: float
    theta: float
    best_epoch: int
    epochs: int
    seconds: float
    cpu_seconds: float
    stopped: str
    settings: dict
    history: tuple


@dataclass(frozen=True)
class AlignerResult:
    """``train_aligner``: the run (:class:`AlignerRun`; None in a partial result), the
    dev total F1 of each epoch so far (``history``: (epoch, F1)), the aligner's name
    and files (its zip: ``job_zip``)."""

    status: str
    name: str
    run: AlignerRun | None
    history: tuple
    files: tuple


@dataclass(frozen=True)
class TrainedAligner:
    run: AlignerRun
    score: CorpusScore


@dataclass(frozen=True)
class TextComparison:
    """``compare_text``: the Lab's text comparison.

    Attributes:
        status: "done", "stopped" or "partial". sizes: train, dev, test, unused pairs.
        null_share: share of the held-out words without a gold partner.
        untrained: {"method", "setting" (dict), "score" (CorpusScore)} of the best
            untrained method, or None. trained: final → :class:`TrainedAligner`.
        paired: (method, vs) → ``Paired`` ("untrained" names the untrained best).
        history: final → ((epoch, dev total F1), …). files: the trained aligners' zips.
    """

    status: str
    sizes: dict
    null_share: float
    untrained: dict | None
    trained: dict
    paired: dict
    history: dict
    files: tuple


# --------------------------------------------------------------------------- reading
def _arr(x, dtype=np.float64) -> np.ndarray:
    return np.asarray([np.nan if v is None else v for v in x] if isinstance(x, list) and
                      x and not isinstance(x[0], list) else x, dtype=dtype)


def score_of(d: dict) -> CorpusScore:
    return CorpusScore(int(d["n_pairs"]), dict(d["macro"]), dict(d["micro"]),
                       {k: tuple(v) for k, v in d.get("macro_ci", {}).items()},
                       {k: tuple(v) for k, v in d.get("micro_ci", {}).items()})


def paired_of(d: dict) -> Paired:
    return Paired(str(d["method"]), str(d["vs"]), str(d["metric"]), float(d["delta"]),
                  tuple(float(x) for x in d["ci95"]), float(d["p"]))


def verdict_of(d: dict | None) -> Verdict | None:
    if not d:
        return None
    ranked = tuple(Ranked(r["method"], int(r["rank"]), float(r["value"]),
                          None if r.get("ci95") is None else tuple(r["ci95"]),
                          float(r["delta"]), bool(r["best"]), dict(r.get("settings") or {}))
                   for r in d["ranked"])
    return Verdict(ranked, str(d["best"]), tuple(paired_of(p) for p in d["paired"]),
                   str(d["metric"]), int(d["n_pairs"]), int(d["bootstrap"]),
                   tuple(int(k) for k in d.get("baseline", ())))


def _run_of(d: dict) -> AlignerRun:
    return AlignerRun(float(d["dev_total_f1"]), float(d["theta"]), int(d["best_epoch"]),
                      int(d["epochs"]), float(d["seconds"]), float(d["cpu_seconds"]),
                      str(d["stopped"]), dict(d["settings"]),
                      tuple(AlignerEpoch(int(e["epoch"]), float(e["loss"]),
                                         float(e["dev_total_f1"]), float(e["theta"]),
                                         float(e["seconds"])) for e in d["history"]))


def _lab_train(d: dict) -> LabTrainResult:
    return LabTrainResult(
        d["status"], d["target"], int(d["steps"]), tuple(d["models"]),
        {m: LabSettings(**s) for m, s in d["settings"].items()},
        {m: (tuple(int(x) for x in c["step"]), tuple(float(x) for x in c["heldout_l1"]))
         for m, c in d["curves"].items()},
        {m: LabRun(float(r["heldout_l1"]), float(r["heldout_l1_double"]),
                   float(r["row_err"]), float(r["col_err"]), float(r["seconds"]),
                   int(r["steps_done"]), str(r["stopped"])) for m, r in d["runs"].items()},
        {m: {k: np.asarray(v, dtype=np.float32) for k, v in w.items()}
         for m, w in (d.get("weights") or {}).items()},
        float(d.get("seconds", 0.0)))


def _sweep(d: dict) -> SweepResult:
    return SweepResult(d["status"], d["target"], tuple(d["models"]),
                       tuple(int(w) for w in d["widths"]), int(d["steps"]),
                       {m: _arr(v) for m, v in d["errors"].items()})


def _corpus(d: dict) -> CorpusResult:
    ci = {k: {"macro": dict(s["macro"]), "micro": dict(s["micro"]),
              "macro_ci": {m: tuple(v) for m, v in s["macro_ci"].items()},
              "micro_ci": {m: tuple(v) for m, v in s["micro_ci"].items()}}
          for k, s in d["scores"].items()}
    return CorpusResult(
        d["status"], int(d["n_total"]), tuple(dict(p) for p in d["pairs"]),
        tuple(d["methods"]), {k: tuple(v) for k, v in d["links"].items()},
        {k: tuple(int(x) for x in v) for k, v in d["n_links"].items()},
        {k: tuple(None if x is None else float(x) for x in v) for k, v in d["f1"].items()},
        tuple(float(x) for x in d["null_ratio"]), tuple(float(x) for x in d["disagreement"]),
        ci, int(d["n_gold"]), bool(d["gold_column"]), verdict_of(d.get("verdict")),
        {k: dict(v) for k, v in d["settings"].items()}, str(d["command"]),
        str(d.get("model", "")), bool(d.get("lowercase", False)))


def _aligner(d: dict) -> AlignerResult:
    run = _run_of(d["run"]) if d.get("run") else None
    history = tuple((e.epoch, e.dev_total_f1) for e in run.history) if run else tuple(
        (int(e["epoch"]), float(e["dev_total_f1"])) for e in d.get("history", ()))
    return AlignerResult(d["status"], str(d["name"]), run, history,
                         tuple(d.get("files") or ()))


def _text(d: dict) -> TextComparison:
    u = d.get("untrained")
    untrained = None if not u else {"method": u["method"], "setting": dict(u["setting"]),
                                    "score": score_of(u["score"])}
    return TextComparison(
        d["status"], dict(d["sizes"]), float(d["null_share"]), untrained,
        {f: TrainedAligner(_run_of(t["run"]), score_of(t["score"]))
         for f, t in (d.get("trained") or {}).items()},
        {(p["method"], p["vs"]): paired_of(p) for p in d.get("paired") or ()},
        {f: tuple((int(e), float(x)) for e, x in h) for f, h in d["history"].items()},
        tuple(d.get("files") or ()))


def _predict(d: dict) -> LabPrediction:
    f = np.float64
    return LabPrediction(int(d["size"]), int(d["pair"]), int(d["n_pairs"]),
                         np.asarray(d["x"], f), np.asarray(d["a"], f), np.asarray(d["y"], f),
                         np.asarray(d["b"], f), np.asarray(d["target"], f),
                         {m: np.asarray(p, f) for m, p in d["plans"].items()},
                         {m: {k: float(v) for k, v in e.items()}
                          for m, e in d["errors"].items()})


READERS = {"sinkscope.job.lab_train/1": _lab_train, "sinkscope.job.lab_sweep/1": _sweep,
           "sinkscope.job.align_corpus/1": _corpus,
           "sinkscope.job.train_aligner/1": _aligner,
           "sinkscope.job.compare_text/1": _text, "sinkscope.lab_predict/1": _predict}


def read(doc: dict):
    """A job's (or ``lab_predict``'s) document as its typed result (by its ``schema``).

    Raises:
        ValueError: not a document of this version (its schema is not known).
    """
    reader = READERS.get(doc.get("schema")) if isinstance(doc, dict) else None
    if reader is None:
        shown = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"not a sinkscope job document: {str(shown)[:80]}")
    return reader(doc)


__all__ = ["AlignerResult", "AlignerRun", "CorpusResult", "JobError", "JobStatus",
           "LabPrediction", "LabRun", "LabTrainResult", "Ranked", "SweepResult",
           "TextComparison", "TrainedAligner", "Verdict", "read"]
