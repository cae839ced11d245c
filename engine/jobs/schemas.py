"""The jobs' HTTP bodies and answers (pydantic), so OpenAPI states every limit.

``POST /v1/jobs`` takes one of five bodies, told apart by ``kind`` (a discriminated union):
each is ``{"kind", "settings", "data"}`` with the limits of ``LabSettings``,
``AlignerSettings`` and the Align readers written into the schema. What the schema cannot
say (a gold link past a text's last word, a text of more than 400 words or one the model
reads nothing of, ``top`` above ``layer``, Lab weights that do not fit) is refused at
submission with the engine's own error (422, with a code the document lists under
``info.x-sinkscope-rules``); the served models and aligners are written into the
document (:func:`engine.serving.openapi.refine`). :mod:`engine.jobs.spec` checks the same
without pydantic (the embedded engine).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictStr

from ..lab.config import MAX_BATCH, MAX_DEPTH, MAX_HEADS, MAX_PAIRS, MAX_STEPS, MAX_WIDTH, \
    MODELS, LabSettings
from ..lab.errors import LAB_EPS_MAX, LAB_EPS_MIN, LAB_HALF_STEPS_MAX
from ..lab.measures import MAX_POINTS, WEIGHTS
from ..lab.targets import NAMES
from ..settings import ALIGNER_FINALS, ALIGNER_RATES, ALIGNER_WHOLE, DEFAULT_MODEL
from ..serving.patterns import PHARAOH, READABLE, StrictInt, whole
from . import spec

D = LabSettings()
LINKS = PHARAOH  # Pharaoh, 0-based
TEXT = READABLE  # a text with a character that is neither a space nor a control character
BASE64 = r"^[A-Za-z0-9+/]*={0,2}$"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())


# --------------------------------------------------------------------------- the Lab
class LabFields(_Body):
    """A Lab run's settings (``engine.lab.config.LabSettings`` without ``model``)."""

    target: Literal[NAMES] = Field(D.target, description="The coupling system trained to.")  # type: ignore[valid-type]
    width: StrictInt = Field(D.width, ge=1, le=MAX_WIDTH,
                             description="The encoders' width D.")
    depth: StrictInt = Field(D.depth, ge=0, le=MAX_DEPTH,
                             description="Measure-attention layers.")
    heads: StrictInt = Field(D.heads, ge=1, le=MAX_HEADS, description="Attention heads.")
    eps: StrictFloat = Field(D.eps, ge=LAB_EPS_MIN, le=LAB_EPS_MAX,
                             description="ε of the final layer.")
    half_steps: StrictInt = Field(D.half_steps, ge=1, le=LAB_HALF_STEPS_MAX,
                                  description="Sinkhorn half-steps of the final layer.")
    steps: StrictInt = Field(D.steps, ge=1, le=MAX_STEPS, description="Adam steps.")
    batch: StrictInt = Field(D.batch, ge=1, le=MAX_BATCH, description="Pairs per step.")
    lr: StrictFloat = Field(D.lr, gt=0, le=1, description="Adam's learning rate.")
    points: StrictInt = Field(D.points, ge=2, le=MAX_POINTS, description="Atoms per cloud.")
    spread: StrictFloat = Field(D.spread, gt=0, le=100,
                                description="A cloud's typical radius.")
    weights: Literal[WEIGHTS] = Field(D.weights, description="The atoms' weights.")  # type: ignore[valid-type]
    train_pairs: StrictInt = Field(D.train_pairs, ge=1, le=MAX_PAIRS,
                                   description="Training pairs.")
    heldout_pairs: StrictInt = Field(D.heldout_pairs, ge=2, le=MAX_PAIRS,
                                     description="Held-out pairs.")
    seed: StrictInt = Field(D.seed, ge=0, le=2**63 - 1,
                            description="Fixes pairs, weights, batches.")
    eval_every: StrictInt = Field(D.eval_every, ge=1, le=MAX_STEPS,
                                  description="Steps between held-out evaluations.")
    patience: StrictInt = Field(D.patience, ge=0, le=MAX_STEPS, description="Evaluations "
                                "without a better held-out error before stopping (0: never).")


class LabJobSettings(LabFields):
    models: list[Literal[MODELS]] = Field(  # type: ignore[valid-type]
        list(MODELS), min_length=1, max_length=len(MODELS),
        description="The models trained, in the order sinkhorn, softmax, context-free "
        "(repeats count once).")


class NoData(_Body):
    """The Lab's jobs take no data."""


class LabTrainJob(_Body):
    """``lab_train``: the models trained in turn; Stop keeps each model's best weights."""

    kind: Literal["lab_train"]
    settings: LabJobSettings = Field(default_factory=LabJobSettings)
    data: NoData = Field(default_factory=NoData)


class LabSweepJob(_Body):
    """``lab_sweep``: the held-out error of each model at each width; Stop keeps the
    widths reached."""

    kind: Literal["lab_sweep"]
    settings: LabJobSettings = Field(default_factory=LabJobSettings)
    data: NoData = Field(default_factory=NoData)


# --------------------------------------------------------------------------- text
WORDS = ("At most 400 whitespace words (code text_too_long); one the model reads nothing of "
         "is refused (code unread_pairs).")
GOLD = ("Gold links, 0-based Pharaoh (\"0-0 1-2\", \"ipj\" possible; \"\" no link); each "
        "index one of its text's words (code link_out_of_range).")


class JobPair(_Body):
    """Two texts and, when known, their gold links."""

    text_a: StrictStr = Field(pattern=TEXT,
                              description=f"Text A (its whitespace words). {WORDS}")
    text_b: StrictStr = Field(pattern=TEXT, description=f"Text B. {WORDS}")
    gold: Optional[StrictStr] = Field(None, pattern=LINKS, description=GOLD)


class GoldPair(JobPair):
    gold: StrictStr = Field(pattern=LINKS, description=GOLD)


class CorpusSettings(_Body):
    model: StrictStr = Field(DEFAULT_MODEL, min_length=1, max_length=200,
                             description="An allow-listed model (GET /v1/models).")
    lowercase: StrictBool = Field(False, description="Lower-case the texts first.")
    bootstrap: StrictInt = Field(spec.BOOTSTRAP, ge=0, le=spec.MAX_BOOTSTRAP, description=
                                 "Resamples of the intervals and the verdict (0: none).")
    aligner: Optional[StrictStr] = Field(None, min_length=1, max_length=64,
                                         description="An allowed trained aligner's name, "
                                         "aligned too (SINKSCOPE_ALIGNERS).")


class CorpusData(_Body):
    pairs: list[JobPair] = Field(min_length=1, max_length=spec.MAX_PAIRS,
                                 description=f"1 to {spec.MAX_PAIRS} pairs.")
    name: StrictStr = Field("pairs.tsv", pattern=TEXT, max_length=spec.FILE_NAME_MAX,
                            description="The file's name (for the command that reproduces "
                            "it).")
    one_based: StrictBool = Field(False, description="The file's links were 1-based.")
    gold_column: StrictBool = Field(True, description="The file gives gold links.")


class AlignCorpusJob(_Body):
    """``align_corpus``: every pair by every method, scored and ranked; Stop keeps the
    pairs aligned so far (a partial result)."""

    kind: Literal["align_corpus"]
    settings: CorpusSettings = Field(default_factory=CorpusSettings)
    data: CorpusData


def _whole(name: str, doc: str):
    default, lo, hi = ALIGNER_WHOLE[name]
    return Field(default, ge=lo, le=hi, description=doc)


def _rate(name: str, doc: str):
    default, lo, hi = ALIGNER_RATES[name]
    return Field(default, ge=lo, le=hi, description=doc)


class AlignerJobSettings(_Body):
    """``engine.aligner.config.AlignerSettings`` and the aligner's name (``top`` ≤
    ``layer`` ≤ the model's layers)."""

    name: StrictStr = Field(spec.ALIGNER_NAME, pattern=spec.NAME_PATTERN,
                            description="The aligner's (and its folder's) name.")
    model: StrictStr = Field(DEFAULT_MODEL, min_length=1, max_length=200,
                             description="The allow-listed base model.")
    final: Literal[ALIGNER_FINALS] = Field(ALIGNER_FINALS[0], description="The final layer.")  # type: ignore[valid-type]
    layer: StrictInt = _whole("layer", "The hidden state read (at most the model's layers: "
                              "code layer_above_model).")
    top: StrictInt = _whole("top", "Layers fine-tuned below it (at most layer: code "
                            "top_above_layer).")
    epochs: StrictInt = _whole("epochs", "Passes over the training pairs (the most).")
    batch: StrictInt = _whole("batch", "Pairs per step.")
    lr: StrictFloat = _rate("lr", "The layers' learning rate.")
    head_lr: StrictFloat = _rate("head_lr", "The heads' learning rate.")
    half_steps: StrictInt = _whole("half_steps", "Half-steps of the Sinkhorn layer.")
    eps: StrictFloat = _rate("eps", "The Sinkhorn layer's ε when aligning.")
    patience: StrictInt = _whole("patience", "Epochs without a better dev total F1 before "
                                 "stopping.")
    seed: StrictInt = _whole("seed", "Fixes the heads, batches and dropout.")
    lowercase: StrictBool = Field(False, description="Lower-case the texts.")
    transpose: StrictBool = Field(False, description="A and B were swapped (a record only).")


class AlignerData(_Body):
    train: list[GoldPair] = Field(min_length=1, max_length=spec.MAX_PAIRS,
                                  description="Training pairs, each with gold.")
    dev: list[GoldPair] = Field(min_length=1, max_length=spec.MAX_PAIRS,
                                description="Dev pairs (θ, the best epoch), each with gold.")


class TrainAlignerJob(_Body):
    """``train_aligner``: a word aligner trained on gold links; Stop keeps its best epoch.
    Its result's file ``aligner`` is its folder as a zip."""

    kind: Literal["train_aligner"]
    settings: AlignerJobSettings = Field(default_factory=AlignerJobSettings)
    data: AlignerData


class TextSettings(_Body):
    model: StrictStr = Field(DEFAULT_MODEL, min_length=1, max_length=200,
                             description="The allow-listed base model.")
    epochs: StrictInt = Field(spec.TEXT_DEFAULTS["epochs"], ge=1,
                              le=ALIGNER_WHOLE["epochs"][2],
                              description="Each aligner's epochs.")
    train_pairs: StrictInt = Field(spec.TEXT_DEFAULTS["train_pairs"], ge=1,
                                   le=spec.MAX_TRAIN_PAIRS,
                                   description="Training pairs used at most.")
    bootstrap: StrictInt = Field(spec.BOOTSTRAP, ge=0, le=spec.MAX_BOOTSTRAP,
                                 description="Resamples of the intervals.")
    seed: StrictInt = Field(0, ge=0, le=ALIGNER_WHOLE["seed"][2],
                            description="The aligners' seed.")


class TextData(_Body):
    pairs: list[GoldPair] = Field(min_length=spec.MIN_TEXT_PAIRS, max_length=spec.MAX_PAIRS,
                                  description="Pairs with gold: train, dev and held-out test.")


class CompareTextJob(_Body):
    """``compare_text``: untrained methods tuned, a Sinkhorn and a softmax aligner trained,
    paired comparisons on held-out pairs; its files are the two aligners' zips."""

    kind: Literal["compare_text"]
    settings: TextSettings = Field(default_factory=TextSettings)
    data: TextData


JobRequest = Annotated[Union[LabTrainJob, LabSweepJob, AlignCorpusJob, TrainAlignerJob,
                             CompareTextJob], Field(discriminator="kind")]
BODIES = (LabTrainJob, LabSweepJob, AlignCorpusJob, TrainAlignerJob, CompareTextJob)


# --------------------------------------------------------------------------- lab predict
class WeightArray(_Body):
    shape: list[whole(ge=0, le=2**20)] = Field(max_length=4)
    data: StrictStr = Field(pattern=BASE64, description="The values as little-endian "
                            "float32, base64.")


class LabPredictRequest(_Body):
    """POST /v1/lab/predict: a held-out pair as trained Lab models couple it."""

    settings: LabFields = Field(default_factory=LabFields, description="The run's settings.")
    weights: dict[Literal[MODELS], dict[StrictStr, WeightArray]] = Field(  # type: ignore[valid-type]
        min_length=1, max_length=len(MODELS),
        description="Model → its weights (state_dict name → array) from a Lab job's result, "
        "fitting the model the settings build (code job_weights).")
    size: StrictInt = Field(ge=2, le=MAX_POINTS, description="Atoms per cloud (the training "
                            "size: the run's held-out pairs; another: 16 fresh pairs).")
    pair: StrictInt = Field(0, ge=0, le=2**31 - 1, description="Which pair (clamped to the "
                            "pairs there are).")


# --------------------------------------------------------------------------- answers
class JobErrorBody(BaseModel):
    type: str
    code: str
    params: dict[str, Any]
    message: str


class JobStatusResponse(BaseModel):
    """A job's status."""

    id: str = Field(description="The job's id.")
    kind: Literal[spec.KINDS]  # type: ignore[valid-type]
    state: Literal["waiting", "running", "done", "stopped", "failed", "lost"]
    progress: float = Field(ge=0, le=1)
    place: int = Field(ge=0, description="Place in line while waiting (1: next), else 0.")
    info: dict[str, Any] = Field(description="The last report: codes and numbers.")
    partial: Optional[dict[str, Any]] = Field(description="What it has reached so far.")
    error: Optional[JobErrorBody]
    reason: str = Field(description="Why it stopped (requested, deadline) or was lost.")
    stop: bool = Field(description="Stop was asked.")
    submitted: float
    seconds: float
    worker: dict[str, Any] = Field(description="Where it runs: pid, node, gpus.")
    resources: dict[str, Any] = Field(description="What it asked Ray for.")
    result: bool = Field(description="A result (or partial result) can be fetched.")
    files: list[str] = Field(description="Its files (GET …/result?file=NAME, zip).")


class JobDocument(BaseModel):
    """A job's result: the kind's document (``schema`` names it), as JSON or NPZ."""

    model_config = ConfigDict(extra="allow", protected_namespaces=())

    schema_: str = Field(alias="schema")
    status: str


class LabPredictDocument(BaseModel):
    model_config = ConfigDict(extra="allow", protected_namespaces=())

    schema_: str = Field(alias="schema")
    size: int
    pair: int
    n_pairs: int
