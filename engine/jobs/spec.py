"""A job's body, checked, and its price (torch-free, no pydantic).

A body is ``{"kind", "settings", "data"}``. :func:`check` reads it into a :class:`Spec`
with the engine's own checks (``LabSettings``, ``AlignerSettings``, the Align readers'
``make_pair``), so the embedded engine refuses what the served one refuses, with the same
codes; the served engine's schema (:mod:`engine.jobs.schemas`) states the same limits for
OpenAPI. :func:`price` says what a job costs in its budget's unit and refuses a job over
its budget (``WorkTooLarge``, HTTP 413) before anything runs.

| kinds | work | budget |
|---|---|---|
| lab_train, lab_sweep | atom operations: samples × atoms × (atoms × half-steps + width² × (depth + 1)) | ``SINKSCOPE_JOB_WORK_LAB`` |
| align_corpus, train_aligner, compare_text | word pairs (words A × words B) × passes over them | ``SINKSCOPE_JOB_WORK_TEXT`` |
"""

from __future__ import annotations

import contextlib
import math
import numbers
import re
from dataclasses import dataclass, fields, replace
from typing import Any

from .. import settings as engine_settings
from ..settings import ALIGNER_WHOLE, DEFAULT_MODEL
from .errors import JobError

KINDS = ("lab_train", "lab_sweep", "align_corpus", "train_aligner", "compare_text")
LAB_KINDS, TEXT_KINDS = KINDS[:2], KINDS[2:]
MAX_PAIRS = 2000  # pairs one job reads (each of train_aligner's train and dev too)
MIN_TEXT_PAIRS = 4  # the text comparison's least (train, dev and test from them)
MAX_BOOTSTRAP = 10_000
MAX_TRAIN_PAIRS = 20_000  # compare_text's train_pairs: the most training pairs used
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"  # an aligner's (and its folder's) name
FILE_NAME_MAX = 200
BOOTSTRAP = 1000
CORPUS_DEFAULTS = {"model": DEFAULT_MODEL, "lowercase": False, "bootstrap": BOOTSTRAP,
                   "aligner": None}
TEXT_DEFAULTS = {"model": DEFAULT_MODEL, "epochs": 2, "train_pairs": 400,
                 "bootstrap": BOOTSTRAP, "seed": 0}
ALIGNER_NAME = "sinkscope-aligner"


@dataclass(frozen=True)
class Spec:
    """A checked job.

    Attributes:
        kind: one of :data:`KINDS`. body: the body as checked (defaults filled in), what a
            restart sends again. settings: the kind's settings (a ``LabSettings`` for the Lab
            kinds, an ``AlignerSettings`` for train_aligner, else a dict). models: the Lab
            models, in order. pairs, train, dev: the pairs (``Pair`` s). name: a file's or
            an aligner's name. one_based, gold_column: how the corpus file was read.
    """

    kind: str
    body: dict
    settings: Any
    models: tuple = ()
    pairs: tuple = ()
    train: tuple = ()
    dev: tuple = ()
    name: str = ""
    one_based: bool = False
    gold_column: bool = True


def _fail(code: str, **params):
    raise JobError.of(code, **params)


def _object(v: Any, where: str, allowed: dict) -> dict:
    """``v`` as a dict of the ``allowed`` fields (their defaults filled in)."""
    if v is None:
        v = {}
    if not isinstance(v, dict):
        _fail("job_body", where=where, problem="must be a JSON object")
    unknown = [k for k in v if k not in allowed]
    if unknown:
        _fail("job_unknown", name=str(unknown[0])[:60], where=where,
              fields=", ".join(allowed) or "none")
    return {**allowed, **v}


def _whole(v: Any, where: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not lo <= v <= hi:
        _fail("job_body", where=where, problem=f"must be a whole number from {lo} to {hi}, "
              f"got {str(v)[:40]}")
    return int(v)


def _flag(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        _fail("job_body", where=where, problem=f"must be true or false, got {str(v)[:40]}")
    return v


def _text(v: Any, where: str, most: int = 200) -> str:
    if not isinstance(v, str) or not v.strip() or len(v) > most:
        _fail("job_body", where=where, problem=f"must be a text of 1 to {most} characters")
    return v


def _pairs(v: Any, where: str, least: int = 1, gold: bool = False) -> tuple:
    """The pairs of a job's data: dicts ``{"text_a", "text_b", "gold"?}``, checked by the
    Align readers (``make_pair``); ``gold``: every pair needs gold links."""
    from ..alignment.readers import make_pair

    if not isinstance(v, list):
        _fail("job_body", where=where, problem="must be a list of pairs "
              '{"text_a": "…", "text_b": "…", "gold": "0-0 1-1"}')
    if not least <= len(v) <= MAX_PAIRS:
        _fail("job_pairs", where=where, count=len(v), least=least, most=MAX_PAIRS)
    out = []
    for k, p in enumerate(v, 1):
        p = _object(p, f"{where}[{k - 1}]", {"text_a": None, "text_b": None, "gold": None})
        pair = make_pair(p["text_a"], p["text_b"], p["gold"], where=("pair", k))
        if gold and not pair.has_gold:
            _fail("job_gold", where=where, pair=k)
        out.append(pair)
    return tuple(out)


def lab_values(s: dict, where: str) -> dict:
    """A Lab run's settings ``s`` (``LabSettings``' fields) with values of the right kind:
    whole numbers, numbers, names (a target among the Lab's); ``LabSettings`` then checks
    their ranges."""
    from ..lab.config import LabSettings
    from ..lab.targets import NAMES

    for f in fields(LabSettings):
        if f.name not in s:
            continue
        v, kind = s[f.name], type(f.default)
        if kind is int and (isinstance(v, bool) or not isinstance(v, numbers.Integral)):
            _fail("job_body", where=f"{where}.{f.name}", problem="must be a whole number")
        if kind is float and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
            _fail("job_body", where=f"{where}.{f.name}", problem="must be a number")
        if kind is str and not isinstance(v, str):
            _fail("job_body", where=f"{where}.{f.name}", problem="must be a name")
    if s.get("target", NAMES[0]) not in NAMES:
        _fail("job_body", where=f"{where}.target", problem="must be one of "
              + ", ".join(NAMES))
    return s


def _lab(kind: str, settings: Any, data: Any) -> Spec:
    from ..lab.config import MODELS, LabSettings

    names = {f.name: f.default for f in fields(LabSettings) if f.name != "model"}
    s = _object(settings, "settings", {"models": list(MODELS), **names})
    _object(data, "data", {})
    models = s.pop("models")
    if not isinstance(models, list) or not models or any(m not in MODELS for m in models):
        _fail("job_body", where="settings.models", problem="must list 1 to 3 of "
              + ", ".join(MODELS))
    models = tuple(m for m in MODELS if m in models)
    lab = LabSettings(model=models[0], **lab_values(s, "settings"))
    return Spec(kind, {"kind": kind, "settings": {"models": list(models), **s}, "data": {}},
                lab, models=models)


def _corpus(settings: Any, data: Any) -> Spec:
    s = _object(settings, "settings", CORPUS_DEFAULTS)
    d = _object(data, "data", {"pairs": None, "name": "pairs.tsv", "one_based": False,
                               "gold_column": True})
    _text(s["model"], "settings.model")
    _flag(s["lowercase"], "settings.lowercase")
    _whole(s["bootstrap"], "settings.bootstrap", 0, MAX_BOOTSTRAP)
    if s["aligner"] is not None:
        _text(s["aligner"], "settings.aligner", 64)
    _text(d["name"], "data.name", FILE_NAME_MAX)
    _flag(d["one_based"], "data.one_based")
    _flag(d["gold_column"], "data.gold_column")
    pairs = _pairs(d["pairs"], "data.pairs")
    return Spec("align_corpus", {"kind": "align_corpus", "settings": s, "data": d}, s,
                pairs=pairs, name=d["name"], one_based=d["one_based"],
                gold_column=d["gold_column"])


def _aligner(settings: Any, data: Any) -> Spec:
    from ..aligner.config import AlignerSettings

    names = {f.name: f.default for f in fields(AlignerSettings)}
    s = _object(settings, "settings", {"name": ALIGNER_NAME, **names})
    d = _object(data, "data", {"train": None, "dev": None})
    name = s.pop("name")
    if not isinstance(name, str) or not re.match(NAME_PATTERN, name):
        _fail("job_body", where="settings.name", problem="must be 1 to 64 letters, digits, "
              "dots, dashes or underscores, starting with a letter or digit")
    aligner = AlignerSettings(**s)
    train = _pairs(d["train"], "data.train", gold=True)
    dev = _pairs(d["dev"], "data.dev", gold=True)
    return Spec("train_aligner", {"kind": "train_aligner", "settings": {"name": name, **s},
                                  "data": d}, aligner, train=train, dev=dev, name=name)


def _text_job(settings: Any, data: Any) -> Spec:
    s = _object(settings, "settings", TEXT_DEFAULTS)
    d = _object(data, "data", {"pairs": None})
    _text(s["model"], "settings.model")
    _whole(s["epochs"], "settings.epochs", 1, ALIGNER_WHOLE["epochs"][2])
    _whole(s["train_pairs"], "settings.train_pairs", 1, MAX_TRAIN_PAIRS)
    _whole(s["bootstrap"], "settings.bootstrap", 0, MAX_BOOTSTRAP)
    _whole(s["seed"], "settings.seed", 0, ALIGNER_WHOLE["seed"][2])
    pairs = _pairs(d["pairs"], "data.pairs", MIN_TEXT_PAIRS, gold=True)
    return Spec("compare_text", {"kind": "compare_text", "settings": s, "data": d}, s,
                pairs=pairs)


def check(body: Any) -> Spec:
    """The job a body describes, checked; a SinkscopeError (with a code) says what to change."""
    b = _object(body, "the body", {"kind": None, "settings": {}, "data": {}})
    kind = b["kind"]
    if kind not in KINDS:
        _fail("job_kind", kinds=", ".join(KINDS), value=str(kind)[:60])
    if kind in LAB_KINDS:
        return _lab(kind, b["settings"], b["data"])
    return {"align_corpus": _corpus, "train_aligner": _aligner,
            "compare_text": _text_job}[kind](b["settings"], b["data"])


def check_names(spec: Spec, models) -> Spec:
    """The job's model among ``models`` (the engine's: an allow-list or the models a
    replica serves) and its trained aligner among ``SINKSCOPE_ALIGNERS``; else the
    ``ModelError`` (code "job_model") or ``AlignerError`` (code "not_listed") a page words."""
    from ..errors import ModelError
    from .errors import MESSAGES

    model = None if spec.kind in LAB_KINDS else (
        spec.settings.model if spec.kind == "train_aligner" else spec.settings["model"])
    models = list(models)
    if model is not None and model not in models:
        params = {"model": str(model)[:60], "models": ", ".join(models)}
        raise ModelError(MESSAGES["job_model"].format(**params), code="job_model",
                         params=params)
    aligner = spec.settings.get("aligner") if spec.kind == "align_corpus" else None
    if aligner:
        from ..aligner.checkpoint import allowed_aligners
        from ..aligner.config import AlignerError

        allowed = allowed_aligners()
        if aligner not in allowed:
            raise AlignerError.of("not_listed", name=str(aligner)[:200],
                                  names=", ".join(sorted(allowed)) or "(none)")
    return spec


def check_model(spec: Spec, encoder=None) -> Spec:
    """What the job asks of its model, checked at submission: a trained aligner's
    ``layer`` among the model's hidden states (0 … L: ``AlignerError``
    "layer_above_model"), and each text with a word the model reads, as the Align methods
    read them (``TextError`` "unread_pairs" naming the texts). A corpus job and the text
    comparison score their pairs with the untrained methods, which refuse such a text when
    they run.

    Args:
        spec: a job checked by :func:`check` and :func:`check_names`.
        encoder: ``encoder(name)`` → the job's model (its size and tokenizer; no forward
            pass). None: the layer is read from the model's configuration and the texts
            are checked when the job runs.
    """
    from ..aligner.config import AlignerError
    from ..errors import TextError

    if spec.kind == "train_aligner":
        s = spec.settings
        if encoder is not None:
            layers = int(encoder(s.model).n_layers)
        else:
            from ..models.registry import describe

            layers = describe(s.model).n_layers
        if s.layer > layers:
            raise AlignerError.of("layer_above_model", layer=s.layer, model=s.model,
                                  layers=layers)
    if spec.kind not in ("align_corpus", "compare_text") or encoder is None:
        return spec
    enc = encoder(spec.settings["model"])
    lower = spec.kind == "compare_text" or bool(spec.settings["lowercase"])  # (as each reads)
    texts = [t.lower() if lower else t for p in spec.pairs for t in (p.text_a, p.text_b)]
    unread = [(k // 2 + 1, "ab"[k % 2]) for k, ok in enumerate(readable(texts, enc))
              if not ok]
    if unread:
        raise TextError.of("unread_pairs", pairs=unread)
    return spec


def readable(texts: list[str], enc) -> list[bool]:
    """Whether each text has a word that gets a token of ``enc``'s tokenizer (its
    whitespace words normalised as ``engine.alignment.sources.words_text`` does), in
    batches of 256 texts."""
    from ..alignment.sources import words_text

    out = []
    for start in range(0, len(texts), 256):
        cleaned = [words_text(t.split()) for t in texts[start:start + 256]]
        with getattr(enc, "_tokenizing", contextlib.nullcontext()):  # (its state is shared)
            batch = enc.tokenizer(cleaned, truncation=True, max_length=enc.max_tokens,
                                  return_offsets_mapping=True, split_special_tokens=True)
        for k, text in enumerate(cleaned):
            seq = batch.sequence_ids(k)
            out.append(any(sid is not None and e > s and not text[s:e].isspace()
                           for (s, e), sid in zip(batch["offset_mapping"][k], seq)))
    return out


# --------------------------------------------------------------------------- price
@dataclass(frozen=True)
class Price:
    """What a job costs: ``work`` in ``unit`` against its budget (``env``)."""

    kind: str
    work: float
    unit: str
    figure: str
    env: str
    change: str

    @property
    def limit(self) -> int:
        field = "job_work_lab" if self.kind in LAB_KINDS else "job_work_text"
        return int(getattr(engine_settings.CONFIG, field))

    def check(self) -> "Price":
        """This price, or ``WorkTooLarge`` (HTTP 413, code "work") over the budget."""
        from ..serving.limits import WorkTooLarge

        if self.work > self.limit:
            e = WorkTooLarge(
                f"This job needs {self.work:,.0f} {self.unit} ({self.figure}); the engine "
                f"allows {self.limit:,} per job ({self.env}). {self.change}",
                params={"kind": self.kind, "work": int(self.work), "limit": self.limit,
                        "env": self.env, "unit": self.unit, "change": self.change})
            e.code = "job_work"  # (a request's is "work": the page words a job's its way)
            raise e
        return self


def _atoms(s, samples: int, width: int) -> float:
    """Atom operations of ``samples`` pairs through a model of ``width``."""
    hs = 1 if s.model == "softmax" else s.half_steps
    return samples * s.points * (s.points * hs + width * width * (s.depth + 1))


def lab_work(spec: Spec) -> float:
    """Atom operations of a Lab job: every model's training batches and held-out checks."""
    from ..lab.config import SWEEP_STEPS, SWEEP_WIDTHS

    s, total = spec.settings, 0.0
    for m in spec.models:
        sm = replace(s, model=m)
        if spec.kind == "lab_train":
            samples = s.steps * min(s.batch, s.train_pairs) + \
                math.ceil(s.steps / s.eval_every) * s.heldout_pairs
            total += _atoms(sm, samples, s.width)
        else:
            steps = min(s.steps, SWEEP_STEPS)
            samples = steps * min(s.batch, s.train_pairs) + s.heldout_pairs
            total += sum(_atoms(sm, samples, w) for w in SWEEP_WIDTHS)
    return total


def _word_pairs(pairs) -> int:
    return sum(p.shape[0] * p.shape[1] for p in pairs)


def price(spec: Spec) -> Price:
    """The job's :class:`Price` (call ``.check()`` to refuse one over budget)."""
    if spec.kind in LAB_KINDS:
        what = "trainings" if spec.kind == "lab_train" else "sweep runs"
        return Price(spec.kind, lab_work(spec), "atom operations",
                     f"{len(spec.models)} models' {what} of {spec.settings.points}-atom clouds",
                     "SINKSCOPE_JOB_WORK_LAB",
                     "Ask for fewer steps, a smaller width or depth, fewer half-steps or "
                     "fewer models.")
    if spec.kind == "align_corpus":
        work, figure = _word_pairs(spec.pairs), f"{len(spec.pairs)} pairs, Σ words A × words B"
    elif spec.kind == "train_aligner":
        e = spec.settings.epochs
        work = e * (_word_pairs(spec.train) + _word_pairs(spec.dev))
        figure = f"{e} epochs × Σ words A × words B of {len(spec.train) + len(spec.dev)} pairs"
    else:
        passes = 2 * spec.settings["epochs"] + 1
        work = passes * _word_pairs(spec.pairs)
        figure = f"{passes} passes × Σ words A × words B of {len(spec.pairs)} pairs"
    return Price(spec.kind, work, "word pairs", figure, "SINKSCOPE_JOB_WORK_TEXT",
                 "Send fewer or shorter pairs, or fewer epochs.")


__all__ = ["KINDS", "LAB_KINDS", "TEXT_KINDS", "MAX_PAIRS", "Price", "Spec", "check",
           "check_model", "check_names", "lab_values", "price", "readable"]
