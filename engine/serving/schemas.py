"""The HTTP API's request and response models (pydantic), so that OpenAPI documents it.

The relation's settings are the fields of :class:`engine.settings.Settings`: their types,
defaults, descriptions and limits come from there (:func:`setting`), so the embedded
engine, the command line and the API share one definition. A body that does not fit its
model gets the engine's own error, with the message the embedded engine would give for
the same value (:func:`engine_error`); values whose check needs the model (layer and head
in range, texts that tokenise to something) are checked by the engine itself.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictStr

from .. import settings as _settings
from ..errors import ModelError, SettingsError, SinkscopeError, TextError
from ..settings import (EPS_MAX, EPS_MIN, HALF_STEPS_CAP, MAX_CANDIDATES, Settings,
                        check_eps, check_half_steps, check_setting)
from .patterns import LINK, PHARAOH, READABLE, WORDY, WS, StrictInt, whole  # noqa: F401

EPS_PATH_MAX_VALUES = 64
LATTICE_MAX_VALUES = 128
LATTICE_MAX_STEP = HALF_STEPS_CAP // 10
LATTICE_MAX_BYTES = 64 * 2**20


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
# Strict: a boolean or a numeric string is not a number here, as in JSON Schema.
_TYPES = {"int": StrictInt, "float": StrictFloat, "bool": StrictBool, "str": StrictStr}


def setting(name: str, default: Any = dataclasses.MISSING, description: str | None = None):
    """The pydantic type of the :class:`Settings` field ``name``: its type with its
    choices (``Literal``) and limits (``ge``, ``le``, ``gt``) and description, as
    ``Annotated[type, Field(...)]``; ``default`` replaces the Settings' default."""
    f = _FIELDS[name]
    meta = f.metadata
    choices = meta.get("choices")
    if f.type == "int | str":
        kind: Any = Union[StrictInt, Literal[choices]]  # type: ignore[valid-type]
    elif choices:
        kind = Literal[choices]  # type: ignore[valid-type]
    else:
        kind = _TYPES[f.type]
    limits = {k: meta[k] for k in ("ge", "le", "gt") if k in meta}
    if f.type == "int" and not choices:
        kind, limits = whole(**limits), {}
    return Annotated[kind, Field(default=f.default if default is dataclasses.MISSING
                                 else default, description=description or meta["doc"],
                                 **limits)]


Eps = Annotated[StrictFloat, Field(ge=EPS_MIN, le=EPS_MAX)]

READABLE_TEXT = ("It must hold a character that is neither a space nor a control character; "
                 "one the model reads nothing of is refused (code text_unreadable).")


def text_field(description: str, default: Any = ...) -> Any:
    """A text of a request: a string with a readable character (:data:`READABLE`)."""
    return Field(default, description=f"{description} {READABLE_TEXT}", pattern=READABLE)


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    def settings(self) -> Settings:
        """The request's relation settings, checked (the fields it does not have take
        their defaults)."""
        return Settings(**{k: getattr(self, k) for k in Settings.names()
                           if k in type(self).model_fields}).check()


class ViewRequest(_Request):
    """The texts and the view of them that every relation endpoint reads."""

    text_a: StrictStr = text_field("Text A: its queries are the rows.")
    text_b: Optional[StrictStr] = text_field(
        "Text B: its keys are the columns; required in separate and joint mode, not used in "
        "self mode.", None)
    model: setting("model")
    mode: setting("mode")
    layer: setting("layer")
    head: setting("head")
    weights: setting("weights")
    pool_words: setting("pool_words")


class RelateRequest(ViewRequest):
    """POST /v1/relate: one relation (or the heads grid) at one ε and half-step count."""

    eps: setting("eps")
    half_steps: setting("half_steps")
    tol: setting("tol")


class EpsPathRequest(ViewRequest):
    """POST /v1/eps_path: Sinkhorn plans of one head along decreasing ε."""

    eps_values: Optional[list[Eps]] = Field(
        None, min_length=1, max_length=EPS_PATH_MAX_VALUES,
        description=f"Up to {EPS_PATH_MAX_VALUES} ε values, large to small (default: 12 from "
        "10 to 0.03).")
    half_steps: setting("half_steps", 4000, "Most half-steps per ε (stops at tol).")
    tol: setting("tol", description="L1 marginal tolerance to stop at.")


class LatticeRequest(ViewRequest):
    """POST /v1/lattice: every frame of the live sliders for one layer and head."""

    eps_values: list[Eps] = Field(min_length=1, max_length=LATTICE_MAX_VALUES,
                                  description="The lattice's ε values "
                                  "(engine.relation.frames.grid).")
    steps: list[whole(ge=1, le=LATTICE_MAX_STEP)] = Field(  # type: ignore[valid-type]
        min_length=1, max_length=LATTICE_MAX_VALUES,
        description="The lattice's half-step counts, 1 first.")
    id: StrictStr = Field("", max_length=64,
                          description="A name the browser gives this lattice.")
    max_bytes: StrictInt = Field(3_000_000, gt=0, le=LATTICE_MAX_BYTES,
                                 description="The largest payload wanted; above it the "
                                 "answer holds no payload.")


class RankRequest(_Request):
    """POST /v1/rank: candidate texts ranked against text A (the Sentences view)."""

    text_a: StrictStr = text_field("Text A, the text the candidates are ranked against.")
    candidates: Union[Annotated[StrictStr, Field(pattern=READABLE)],
                      Annotated[list[Annotated[StrictStr, Field(pattern=READABLE)]],
                                Field(min_length=1, max_length=MAX_CANDIDATES)]] = Field(
        description=f"Up to {MAX_CANDIDATES} candidate texts: a list, or one text with one "
        f"candidate per line (lines after the {MAX_CANDIDATES}th are left out, with a notice; "
        "blank lines are skipped). Each must hold a readable character, as texts do; "
        "candidates the model reads nothing of are refused (code no_candidates when none "
        "is left).")
    model: setting("model")
    eps: setting("eps", description="ε of the Sinkhorn divergence.")


# --------------------------------------------------------------------------- answers
class ErrorBody(BaseModel):
    type: str = Field(description="TextError, SettingsError, ModelError, AlignFileError, "
                      "AlignerError (422), BadRequest (400), DeadlineExceeded (408), "
                      "PayloadTooLarge, WorkTooLarge (413), UnsupportedMediaType (415), "
                      "Busy (503), NotFound (404), MethodNotAllowed (405), InternalError "
                      "(500).")
    message: str = Field(description="What went wrong and what to change, in English.")
    code: Optional[str] = Field(None, description="Which mistake, for a client to word it in "
                                "its own language (e.g. text_empty, work, answer, body_size); "
                                "absent for a message of its own.")
    params: Optional[dict[str, Any]] = Field(None, description="The mistake's details "
                                             "(numbers, names), with ``code``.")


class ErrorResponse(BaseModel):
    """Every error: ``{"error": {"type", "message", "code"?, "params"?}}``."""

    error: ErrorBody


class HealthResponse(BaseModel):
    """GET /v1/health."""

    status: Literal["ok"]
    service: Literal["sinkscope"]
    api: Literal["v1"]
    replica: str = Field(description="The replica that answered.")
    pid: int
    device: str = Field(description="cpu, cuda, cuda:1, mps.")
    device_name: str
    dtype: Literal["float64", "float32"]
    models: list[str]
    memory_mb: float = Field(description="The replica's resident memory.")


class ServedModelInfo(BaseModel):
    name: str
    n_layers: int
    n_heads: int
    d_head: int
    max_tokens: int


class UnavailableModel(BaseModel):
    name: str
    message: str


class ModelsResponse(BaseModel):
    """GET /v1/models."""

    default: str
    device: str
    dtype: Literal["float64", "float32"]
    models: list[ServedModelInfo]
    unavailable: list[UnavailableModel]


class CacheStats(BaseModel):
    entries: int
    bytes: int
    max_bytes: int
    hits: int
    misses: int
    evictions: int


class StatsResponse(BaseModel):
    """GET /v1/stats: the answering replica's counters."""

    replica: str
    requests: int
    batch_sizes: dict[str, int] = Field(description="Requests per encode batch → batches.")
    relate_batch_sizes: dict[str, int] = Field(description="Requests per relate batch → "
                                               "batches.")
    forward_passes: int
    cache: CacheStats
    errors: dict[str, int] = Field(description="HTTP status → answers.")


class Document(BaseModel):
    """A document as JSON, or NPZ with ``Accept: application/x-npz``
    (:mod:`engine.serving.wire`)."""

    model_config = ConfigDict(extra="allow", protected_namespaces=())

    schema_: str = Field(alias="schema", description="The document's schema and version.")


class RelationDocument(Document):
    """POST /v1/relate: what ``python -m engine relate ... --json`` prints
    (:func:`engine.io.export.relation_document`): settings, tokens, weights a and b,
    scores, attention, softmax, Sinkhorn and exact plans, potentials, marginal errors,
    history, summary, notices."""

    model: str
    settings: dict[str, Any]
    tokens_a: list[str]
    tokens_b: list[str]
    summary: dict[str, Any]
    # kind, level, message, and the code and params a page words in its language
    notices: list[dict[str, Any]]


class EpsPathDocument(Document):
    """POST /v1/eps_path: ε (K,) and the Sinkhorn plans (K, n, m)."""

    model: str
    settings: dict[str, Any]
    tokens_a: list[str]
    tokens_b: list[str]
    eps: list[float]
    plans: list[list[list[float]]]


class LatticeDocument(Document):
    """POST /v1/lattice: the packed frames (bytes as numbers 0–255), or null over
    ``max_bytes``."""

    id: str
    bits: Optional[int]
    payload: Optional[list[int]]


class RankingDocument(Document):
    """POST /v1/rank: :func:`engine.io.export.ranking_document`."""

    model: str
    candidates: list[str]
    similarity: list[float]
    divergence: list[Optional[float]]


# --------------------------------------------------------------------------- errors
def _check_text(name: str):
    def check(v):
        from ..models.encoder import clean_text

        clean_text(v, name=name)
    return check


def _check_values(name: str, most: int, check_one):
    def check(v):
        if not isinstance(v, list) or not 0 < len(v) <= most:
            raise SettingsError(f"{name} must be a list of 1 to {most} numbers.")
        for x in v:
            check_one(x)
    return check


def _check_step(t):
    t = check_half_steps(t)
    if t > LATTICE_MAX_STEP:
        raise SettingsError(f"steps go up to {LATTICE_MAX_STEP:,} here.")


def _check_id(v):
    raise SettingsError("id must be a short text.")


def _check_max_bytes(v):
    raise SettingsError("max_bytes must be a whole number of bytes up to 64 MiB.")


def _check_candidates(v):
    texts = [v] if isinstance(v, str) else v
    if not isinstance(texts, list) or not all(isinstance(x, str) for x in texts):
        raise SettingsError("candidates must be a list of texts, or one text with one "
                            "candidate per line.")
    from ..relation.sentences import parse_candidates

    parse_candidates("\n".join(x.replace("\n", " ") for x in texts))  # none: no_candidates
    if not isinstance(v, str):
        if len(v) > MAX_CANDIDATES:
            raise SettingsError(f"candidates: give at most {MAX_CANDIDATES} texts, got "
                                f"{len(v)}.")
        for k, x in enumerate(v, 1):
            clean_candidate(x, k)
    raise SettingsError("candidates must be a list of texts, or one text with one candidate "
                        "per line.")


def clean_candidate(text: str, k: int) -> None:
    """A TextError (text_empty) for candidate ``k`` with nothing readable in it."""
    from ..models.encoder import clean_text

    clean_text(text, name="candidate", k=k)


def _check_model(v):
    if not isinstance(v, str):
        raise ModelError(f"Model {v!r:.60} is not served here: name one of GET /v1/models.")


def _check_method(v):
    from ..alignment.extract import METHODS

    raise SettingsError(f"method must be one of {', '.join(METHODS)}; got {v!r:.60}.")


def _check_method_setting(name: str):
    """The engine's check of an alignment setting (θ, τ, m): the Method's own message."""
    def check(v):
        from ..alignment.extract import Method

        Method({"tau": "unbalanced", "mass": "partial"}.get(name, "exact"), **{name: v})
    return check


# Per field: the engine's check of a value that does not fit the schema, raising the
# error (and message) the embedded engine gives for it.
_CHECKS = {"text_a": _check_text("Text A"), "text_b": _check_text("Text B"),
           "eps_values": _check_values("eps_values", LATTICE_MAX_VALUES, check_eps),
           "steps": _check_values("steps", LATTICE_MAX_VALUES, _check_step),
           "id": _check_id, "max_bytes": _check_max_bytes, "candidates": _check_candidates,
           "model": _check_model, "method": _check_method,
           **{k: _check_method_setting(k) for k in ("threshold", "tau", "mass")}}


def engine_error(model: type[BaseModel], errors: list[dict], body: Any = None
                 ) -> SinkscopeError:
    """The engine's error for a body that does not fit ``model`` (pydantic's ``errors``,
    as FastAPI reports them; ``body`` the decoded JSON): the body is not an object, an
    unknown field, a missing one, or the first field whose value is wrong, with the
    engine's message for that value."""
    fields = ", ".join(model.model_fields)
    located = [(_field_loc(e), e) for e in errors]
    for loc, e in located:
        if not loc:
            kind = type(e.get("input")).__name__
            kind = {"dict": "object", "NoneType": "null", "str": "string"}.get(kind, kind)
            return SettingsError(f"The body must be a JSON object with the fields {fields}; "
                                 f"got a JSON {kind}.")
    for loc, e in located:  # inside one of a list's items (the pairs to align)
        if len(loc) > 2 and isinstance(loc[1], int):
            item = (body.get(loc[0]) if isinstance(body, dict) else None)
            item = item[loc[1]] if isinstance(item, list) and loc[1] < len(item) else None
            if e.get("type") not in ("missing", "extra_forbidden") and isinstance(item, dict):
                err = _pair_error(item, loc[1])
                if err is not None:  # the engine's own message for the pair's value
                    return err
            what = {"missing": "is required", "extra_forbidden": "is not a field"}.get(
                e.get("type"), e.get("msg", "is not allowed").lower())
            return SettingsError(f"{loc[0]}[{loc[1]}].{loc[2]} {what}: each pair is "
                                 '{"text_a": "…", "text_b": "…", "gold": "0-0 1-1"?}.')
    unknown = [str(loc[0]) for loc, e in located if e.get("type") == "extra_forbidden"]
    if unknown:
        names = ", ".join(repr(k if len(k) <= 40 else k[:40] + "…") for k in unknown[:5])
        return SettingsError(f"Unknown field {names}: the fields are {fields}.")
    missing = [str(loc[0]) for loc, e in located if e.get("type") == "missing"]
    if "text_a" in missing:
        return TextError("text_a is required: the text whose tokens are the rows.")
    if missing:
        name = missing[0]
        return SettingsError(f"{name} is required: {model.model_fields[name].description}")
    order = list(model.model_fields)
    loc, e = min(located, key=lambda le: order.index(le[0][0]) if le[0][0] in order
                 else len(order))
    name = str(loc[0])
    # The value the engine checks: the field's own, or the whole list an item is from.
    raw = body.get(name) if isinstance(body, dict) and name in body else e.get("input")
    check = _CHECKS.get(name)
    if name == "eps_values" and model is EpsPathRequest:
        check = _check_values("eps_values", EPS_PATH_MAX_VALUES, check_eps)
    try:
        if check is not None:
            check(raw)
        elif name in Settings.names():
            check_setting(name, raw)
    except SinkscopeError as err:
        return err
    return SettingsError(f"{name}: {e.get('msg', 'not allowed')}.")


def _pair_error(item: dict, k: int) -> SinkscopeError | None:
    """The engine's error for pair ``k`` (0-based) of a body, as ``make_pair`` reads it (a
    blank text, a malformed gold link), or None when it reads it."""
    from ..alignment.readers import make_pair

    try:
        make_pair(item.get("text_a"), item.get("text_b"), item.get("gold"),
                  where=f"pair {k + 1}")
    except SinkscopeError as err:
        return err
    return None


def _field_loc(e: dict) -> tuple:
    """Where in the body an error is: (field, index, ...), () for the body itself."""
    loc = tuple(e.get("loc") or ())
    return loc[1:] if loc[:1] == ("body",) else loc


def max_body() -> int:
    """The largest request body read (``SINKSCOPE_MAX_BODY``), read at call time."""
    return _settings.CONFIG.max_body


# --------------------------------------------------------------------------- alignment
from ..alignment.api import DEFAULT_METHOD as ALIGN_DEFAULT  # noqa: E402
from ..alignment.extract import METHODS as ALIGN_METHODS  # noqa: E402
from ..alignment.extract import MASS_MIN, TAU_MAX, TAU_MIN  # noqa: E402
from ..alignment.live import LIVE_METHODS  # noqa: E402
from ..lab.clouds import COSTS as TOY_COSTS, MAX_HALF_STEPS as TOY_MAX_HALF_STEPS  # noqa: E402
from ..lab.clouds import PRESETS as TOY_PRESETS, SHIFT_MAX, SHIFT_MIN  # noqa: E402

TOY_SHIFT = (SHIFT_MIN, SHIFT_MAX)
TOY_EPS = (0.01, 100.0)  # the coupling's ε (its warm start runs down engine.lab.clouds.EPS_PATH)

MAX_ALIGN_PAIRS = 256


WORDS_TEXT = ("At most 400 whitespace words (code text_too_long); a text the model reads "
              "nothing of is refused (code unread_pairs).")


class AlignPair(_Request):
    """One pair of texts to align, with its gold links when they are known."""

    text_a: StrictStr = Field(description=f"Text A (its whitespace words are aligned). "
                              f"{WORDS_TEXT}", pattern=WORDY)
    text_b: StrictStr = Field(description=f"Text B. {WORDS_TEXT}", pattern=WORDY)
    gold: Optional[StrictStr] = Field(None, description="Gold links as 0-based Pharaoh text "
                                "(\"0-0 1-2\", \"ipj\" for possible links): the pair is then "
                                "scored. Each index must be one of its text's words (code "
                                "link_out_of_range).", pattern=PHARAOH)


class AlignRequest(_Request):
    """POST /v1/align: word alignments of many pairs, solved in batches on the replica."""

    pairs: list[AlignPair] = Field(min_length=1, max_length=MAX_ALIGN_PAIRS,
                                   description=f"1 to {MAX_ALIGN_PAIRS} pairs.")
    model: setting("model")
    method: Literal[(*ALIGN_METHODS, "trained")] = Field(  # type: ignore[valid-type]
        ALIGN_DEFAULT, description="How links are read off the relation "
        "(engine.alignment.extract.METHODS; the default is engine.alignment's), or "
        "\"trained\": the trained aligner named by ``aligner`` (then only ``threshold``, "
        "its θ, and ``lowercase`` apply).")
    aligner: Optional[StrictStr] = Field(
        None, max_length=200, description="The trained aligner of method \"trained\" "
        "(required with it): one of GET /v1/aligners.")
    source: Optional[Literal["attention", "hidden"]] = Field(
        None, description="What relates the words: hidden states or attention scores "
        "(default: the benchmark's best).")
    layer: Optional[StrictInt] = Field(None, description="The source's layer (default: its "
                                       "own).")
    head: Optional[Union[StrictInt, Literal["mean"]]] = Field(
        None, description="The attention source's head, or \"mean\".")
    center: Optional[StrictBool] = Field(None, description="Centre hidden states on the "
                                         "request's mean.")
    threshold: Optional[StrictFloat] = Field(None, ge=0, lt=1, description="Link threshold θ on "
                                       "the scaled values (default: the method's).")
    tau: Optional[StrictFloat] = Field(None, ge=TAU_MIN, le=TAU_MAX,
                                 description="Unbalanced transport's τ.")
    mass: Optional[StrictFloat] = Field(None, ge=MASS_MIN, le=1,
                                  description="Partial transport's mass m.")
    eps: Optional[Eps] = Field(None, description="The solver's ε (default: the method's).")
    lowercase: StrictBool = Field(False, description="Lower-case the texts first.")
    values: StrictBool = Field(True, description="Send each pair's value matrix too.")

    def settings(self) -> Settings:
        return Settings(model=self.model).check()


class AlignerInfo(BaseModel):
    name: str
    base_model: str = Field(description="The model it was trained on.")
    final: str = Field(description="Its final layer: sinkhorn (with a dustbin) or softmax.")
    theta: float = Field(description="Its own link threshold θ.")
    dev_total_f1: Optional[float] = Field(None, description="Its dev total F1, if known.")
    registered: bool = Field(description="Registered in this process (e.g. trained by a "
                             "job) rather than listed by the operator.")


class AlignersResponse(BaseModel):
    """GET /v1/aligners: the trained aligners this engine aligns with (method
    \"trained\"), and listed ones that cannot be read."""

    aligners: list[AlignerInfo]
    unavailable: list[UnavailableModel]


class AlignLiveRequest(_Request):
    """POST /v1/align/live: the Align page's live θ/τ/m payload of one pair and method."""

    text_a: StrictStr = Field(description=f"Text A (its whitespace words are aligned). "
                              f"{WORDS_TEXT}", pattern=WORDY)
    text_b: StrictStr = Field(description=f"Text B. {WORDS_TEXT}", pattern=WORDY)
    gold: Optional[StrictStr] = Field(None, description="Gold links as 0-based Pharaoh text: "
                                      "the payload then holds the pair's scores at every "
                                      "setting. Each index must be one of its text's words "
                                      "(code link_out_of_range).", pattern=PHARAOH)
    method: Literal[LIVE_METHODS] = Field(  # type: ignore[valid-type]
        LIVE_METHODS[-2], description="A method read off its values by a threshold, or "
        "\"trained\" (with ``aligner``).")
    aligner: Optional[StrictStr] = Field(
        None, max_length=200, description="The trained aligner of method \"trained\" "
        "(required with it): one of GET /v1/aligners.")
    lowercase: StrictBool = Field(False, description="Lower-case the texts first.")
    model: setting("model")
    max_bytes: StrictInt = Field(3_000_000, gt=0, le=LATTICE_MAX_BYTES,
                                 description="The most bytes of values (4 per word pair and "
                                 "slider value) wanted; above it, or above "
                                 "SINKSCOPE_LIVE_MAX_CELLS word pairs, the answer holds no "
                                 "payload and says why.")

    def settings(self) -> Settings:
        return Settings(model=self.model).check()


class AlignLiveDocument(Document):
    """POST /v1/align/live: the payload (``SKA1`` bytes as numbers 0–255, what
    engine.alignment.live.LivePayload.encode writes), or null with why (live_off_cells,
    live_off_bytes)."""

    id: str
    payload: Optional[list[int]]
    why: Optional[str]


class ProjectRequest(ViewRequest):
    """POST /v1/project: both texts' points of one layer and head, projected jointly."""

    space: Literal["qk", "hidden"] = Field(
        "qk", description="qk: A's queries with B's keys (the geometry of the scores); "
        "hidden: the hidden states entering the layer.")
    method: Literal["pca", "umap"] = Field(
        "pca", description="pca (deterministic), or umap (clouds of 3 points or fewer use "
        "PCA, with a note).")
    dim: Literal[2, 3] = Field(2, description="2 or 3 dimensions.")
    seed: StrictInt = Field(0, ge=0, le=2**31 - 1, description="UMAP's random state.")


class ProjectionDocument(Document):
    """POST /v1/project: engine.types.Projection (engine.io.export.projection_document)."""

    xy_a: list[list[float]]
    xy_b: list[list[float]]
    method: str
    space: str
    dim: int
    distance_cost_corr: float


class ToyRequest(_Request):
    """POST /v1/toy: one plan between the Learn page's two clouds in the plane."""

    preset: Literal[TOY_PRESETS] = Field(  # type: ignore[valid-type]
        TOY_PRESETS[0], description="Which pair of clouds (engine.lab.clouds.clouds).")
    shift: StrictFloat = Field(0.0, ge=TOY_SHIFT[0], le=TOY_SHIFT[1],
                               description="How far cloud B is moved along x.")
    plan: Literal["softmax", "half_steps", "coupling", "exact"] = Field(
        "softmax", description="softmax: diag(a)·softmax(S); half_steps: the Sinkhorn plan "
        "after t half-steps from g = 0; coupling: the entropic coupling at ε (warm-started "
        "along the ε path); exact: exact optimal transport.")
    t: StrictInt = Field(1, ge=1, le=TOY_MAX_HALF_STEPS,
                         description="Half-steps of plan half_steps (1 = softmax).")
    eps: StrictFloat = Field(1.0, ge=TOY_EPS[0], le=TOY_EPS[1],
                             description="ε of plan coupling (the others are at ε = 1).")
    cost: Literal[TOY_COSTS] = Field(  # type: ignore[valid-type]
        TOY_COSTS[0], description="distance: S = −½‖x − y‖²; inner: S = ⟨x, y⟩.")


class ToyDocument(Document):
    """POST /v1/toy: the clouds and the plan (engine.lab.clouds.ToyPlan)."""

    xa: list[list[float]]
    a: list[float]
    xb: list[list[float]]
    b: list[float]
    values: list[list[float]]


class AlignmentsDocument(Document):
    """POST /v1/align: one alignment per pair, in order
    (``engine.alignment.api.Alignment.to_dict``)."""

    model: str
    alignments: list[dict[str, Any]]
