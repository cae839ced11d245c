"""What each endpoint answers: pure functions of encodings and a checked request.

An endpoint is a request model (:mod:`engine.serving.schemas`) and one function
``(encodings, request, device) -> document`` here; the deployment encodes (batched,
cached), runs the function off the event loop and writes the document as JSON or NPZ.
Nothing here knows about HTTP or Ray.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from .. import settings
from ..errors import SettingsError, SinkscopeError
from ..io.export import ranking_document, relation_document
from ..models.encoder import Encoder
from ..relation import frames
from ..relation.lattice import relation_lattice
from ..relation.relate import eps_path, relate_batch, relate_encodings
from ..relation.sentences import parse_candidates, rank
from ..settings import Settings
from ..types import Encoding
from . import wire
from .schemas import (AlignLiveRequest, AlignRequest, EpsPathRequest, LatticeRequest,
                      ProjectRequest, RankRequest, RelateRequest, ToyRequest)

log = logging.getLogger("ray.serve.sinkscope")

EPS_PATH_SCHEMA = "sinkscope.eps_path/1"
LATTICE_SCHEMA = "sinkscope.lattice/1"


def token_counts(encodings: tuple[Encoding, ...], mode: str) -> tuple[int, int]:
    """(n, m) tokens of text A and text B before word pooling."""
    if mode == "joint":
        seg = encodings[0].segment
        return int((seg == 0).sum()), int((seg == 1).sum())
    return encodings[0].n, encodings[-1].n


def relate_settings(encodings: tuple[Encoding, ...], req: RelateRequest) -> Settings:
    """The request's :class:`Settings` (a SettingsError for a heads grid over
    ``SINKSCOPE_GRID_MAX_CELLS``)."""
    s = req.settings()
    if s.layer == "all":
        check_grid(*token_counts(encodings, s.mode))
    return s


def check_grid(n: int, m: int) -> None:
    """A SettingsError for a heads grid of n × m tokens over ``SINKSCOPE_GRID_MAX_CELLS``."""
    if n * m > settings.CONFIG.grid_max_cells:
        raise SettingsError(
            f"The texts have {n} × {m} tokens: too many for the heads grid (the limit is "
            f"{settings.CONFIG.grid_max_cells:,} token pairs, SINKSCOPE_GRID_MAX_CELLS). "
            "Shorten the texts or ask for one layer and head.", code="grid_cells",
            params={"n": int(n), "m": int(m), "limit": settings.CONFIG.grid_max_cells})


def relation_answer(encodings: tuple[Encoding, ...], req: RelateRequest, device) -> dict:
    """POST /v1/relate: the Relation's document (the CLI's ``--json``)."""
    return relation_document(relate_encodings(encodings, settings=relate_settings(
        encodings, req), device=device))


def relation_answers(items: list[tuple[tuple[Encoding, ...], RelateRequest]],
                     device) -> list:
    """POST /v1/relate for requests that arrived together: their problems solved in as few
    batched calls as they allow (:func:`engine.relation.relate.relate_batch`). Returns each
    request's document, or the SinkscopeError it raised."""
    out: list[Any] = [None] * len(items)
    jobs = []
    for i, (encodings, req) in enumerate(items):
        try:
            jobs.append((i, (encodings, relate_settings(encodings, req))))
        except SinkscopeError as e:
            out[i] = e
    for (i, _), r in zip(jobs, relate_batch([job for _, job in jobs], device=device)):
        out[i] = r if isinstance(r, Exception) else relation_document(r)
    return out


def _softmax_relation(encodings, req, device=None):
    """The relation of the request's texts and view at half-step 1 (its scores, weights)."""
    view = req.settings()
    return relate_encodings(encodings, settings=view.replace(eps=1.0, half_steps=1))


def eps_path_answer(encodings: tuple[Encoding, ...], req: EpsPathRequest, device) -> dict:
    """POST /v1/eps_path: ε values (K,) and Sinkhorn plans (K, n, m), large ε to small."""
    r = _softmax_relation(encodings, req)
    eps, plans = eps_path(r, req.eps_values, half_steps=int(req.half_steps),
                          tol=float(req.tol), device=device)
    return {"schema": EPS_PATH_SCHEMA, "model": r.model,
            "settings": {"layer": r.layer, "head": r.head, "mode": r.mode,
                         "weights": r.weights, "pool_words": r.pool_words,
                         "half_steps": int(req.half_steps), "tol": float(req.tol)},
            "tokens_a": list(r.tokens_a), "tokens_b": list(r.tokens_b),
            "eps": eps, "plans": plans}


def lattice_answer(encodings: tuple[Encoding, ...], req: LatticeRequest, device) -> dict:
    """POST /v1/lattice: the live sliders' frames as the browser's payload (uint8 bytes),
    or no payload (over ``max_bytes`` even at 8 bits)."""
    cells = np.prod(token_counts(encodings, req.mode))
    if cells > settings.CONFIG.live_max_cells:
        raise SettingsError(f"{cells:,} token pairs is more than the "
                            f"{settings.CONFIG.live_max_cells:,} whose frames are precomputed "
                            "(SINKSCOPE_LIVE_MAX_CELLS).", code="live_cells",
                            params={"cells": int(cells),
                                    "limit": settings.CONFIG.live_max_cells})
    r = _softmax_relation(encodings, req)
    lat = relation_lattice(r, np.asarray(req.eps_values, float), np.asarray(req.steps, int))
    data, bits = frames.encode(lat, req.id, max_bytes=int(req.max_bytes))
    return {"schema": LATTICE_SCHEMA, "id": req.id, "bits": bits,
            "payload": None if data is None else np.frombuffer(data, dtype=np.uint8)}


def rank_answer(enc: Encoder, req: RankRequest, measured) -> dict:
    """POST /v1/rank: the Sentences ranking's document, from the texts' measures."""
    ms, dropped = measured
    return ranking_document(rank(ms, eps=float(req.eps), pooling=enc.pooling,
                                 mean_pooled=enc.mean_pooled, dropped=dropped))


def candidate_lines(req: RankRequest) -> list[str]:
    """The candidate texts of a rank request, as the ranking reads them (one per line of a
    text, or the list's items; at most MAX_CANDIDATES)."""
    c = req.candidates
    text = c if isinstance(c, str) else "\n".join(str(x).replace("\n", " ") for x in c)
    return parse_candidates(text)[0]


def warm_up(enc: Encoder, device) -> None:
    """One small relation, heads grid and ε path, so that the first request does not pay
    for lazy imports (POT, the solver's kernels) and first calls (~1.5 s on a CPU)."""
    try:
        encodings = tuple(enc.encode_many(["warm up", "warm up"], attentions=False))
        r = relate_encodings(encodings, half_steps=3, device=device)
        relate_encodings(encodings, layer="all", head="all", half_steps=3, device=device)
        eps_path(r, [1.0], half_steps=3, device=device)
        wire.dumps(relation_document(r), wire.NPZ)
    except Exception:  # an optimisation only
        log.exception("warm-up failed")


def check_request(req, enc: Encoder) -> None:
    """What the schema cannot check because it needs the model: the settings together
    (layer and head in the model's range, heads grid only as layer = head = "all") and the
    one-head endpoints' rule (SinkscopeError)."""
    from ..relation.scores import check_layer_head

    s = req.settings()
    if isinstance(req, (AlignRequest, AlignLiveRequest)) and req.method == "trained" \
            and not req.aligner:  # (before any answer, one without a payload too)
        raise SettingsError('method "trained" needs aligner: the name of one of GET '
                            "/v1/aligners.", code="aligner_required", params={})
    if isinstance(req, (AlignRequest, AlignLiveRequest)) and req.aligner is not None:
        from ..aligner.config import AlignerError
        from ..aligner.registry import known, names

        if not known(req.aligner):  # named, even for another method: one of them
            raise AlignerError.of("not_listed", name=str(req.aligner)[:200],
                                  names=", ".join(names()) or "(none)")
    if isinstance(req, (RankRequest, AlignRequest, AlignLiveRequest)):
        return
    check_layer_head(s.layer, s.head, enc.n_layers, enc.n_heads)
    if isinstance(req, EpsPathRequest) and s.layer == "all":
        raise SettingsError("The ε path is for one layer and head; choose a head first.")
    if isinstance(req, LatticeRequest) and s.layer == "all":
        raise SettingsError("A lattice is for one layer and head; choose a head first.")
    if isinstance(req, ProjectRequest) and s.layer == "all":
        raise SettingsError("Projections need one layer and head, not the whole grid.")


ALIGN_SCHEMA = "sinkscope.alignments/1"


def align_answer(enc: Encoder, req: AlignRequest, device=None,
                 encoders: dict | None = None) -> dict:
    """POST /v1/align: :func:`engine.alignment.api.align_pairs` on the replica's encoder (the
    pairs in padded batches), one alignment document per pair; method "trained": the
    trained aligner ``req.aligner`` (:func:`engine.aligner.registry.lookup`, on the
    replica's copy of its base model, ``encoders``) at θ = ``req.threshold`` or its own."""
    from ..alignment.api import align_pairs

    from ..solver.cancel import poll

    pairs = [{"text_a": p.text_a, "text_b": p.text_b, "gold": p.gold} for p in req.pairs]
    if req.method == "trained":
        return trained_answer(pairs, req, encoders or {enc.name: enc}, device)
    out = align_pairs(pairs, method=req.method, source=req.source, layer=req.layer,
                      head=req.head, center=req.center, threshold=req.threshold, tau=req.tau,
                      mass=req.mass, eps=req.eps, lowercase=req.lowercase, encoder=enc,
                      device=device, progress=lambda done, total: poll())
    return {"schema": ALIGN_SCHEMA, "model": enc.name,
            "alignments": [a.to_dict(values=req.values) for a in out]}


def trained_answer(pairs: list[dict], req: AlignRequest, encoders: dict, device=None) -> dict:
    """POST /v1/align with method "trained": every pair by the named trained aligner."""
    from ..aligner.extract import align
    from ..aligner.registry import lookup
    from ..alignment.api import as_pairs
    from ..solver.cancel import poll

    if not req.aligner:
        raise SettingsError('method "trained" needs aligner: the name of one of GET '
                            "/v1/aligners.", code="aligner_required", params={})
    aligner = lookup(req.aligner, encoders=encoders,
                     device=None if device is None else str(device))
    given = as_pairs(pairs)
    given = tuple(p.lower() for p in given) if req.lowercase else given
    out = align(aligner, given, theta=req.threshold, progress=lambda done, total: poll())
    return {"schema": ALIGN_SCHEMA, "model": aligner.settings.model,
            "alignments": [a.to_dict(values=req.values) for a in out]}


LIVE_SCHEMA = "sinkscope.align_live/1"
PROJECTION_SCHEMA = "sinkscope.projection/1"
TOY_SCHEMA = "sinkscope.toy/1"


def align_live_answer(enc: Encoder, req: AlignLiveRequest, device=None,
                      encoders: dict | None = None) -> dict:
    """POST /v1/align/live: :func:`engine.alignment.live.pair_payload`'s bytes (the same
    as embedded), or no payload over SINKSCOPE_LIVE_MAX_CELLS word pairs or ``max_bytes``
    of values, with why (checked from the words before any work)."""
    from ..alignment.live import (MASS_STOPS, TAU_STOPS, grid_of, pair_payload, payload_id,
                                  too_large)

    lower = (lambda t: t.lower()) if req.lowercase else (lambda t: t)
    n, m = len(lower(req.text_a).split()), len(lower(req.text_b).split())
    _, grid = grid_of(req.method, TAU_STOPS, MASS_STOPS)
    why = too_large(n, m, len(grid), max_cells=settings.CONFIG.live_max_cells,
                    max_bytes=int(req.max_bytes))
    name = req.aligner or ""
    if why:
        return {"schema": LIVE_SCHEMA, "id": payload_id(
            enc.name, req.text_a, req.text_b, req.gold, name if req.method == "trained"
            else req.method, req.lowercase), "payload": None, "why": why}
    aligner = None
    if req.method == "trained":
        from ..aligner.registry import lookup

        if not name:
            raise SettingsError('method "trained" needs aligner: the name of one of GET '
                                "/v1/aligners.", code="aligner_required", params={})
        aligner = lookup(name, encoders=encoders or {enc.name: enc},
                         device=None if device is None else str(device))
    p = pair_payload(req.text_a, req.text_b, req.gold, req.method, lowercase=req.lowercase,
                     model=enc.name, encoder=enc, aligner=aligner, aligner_name=name)
    return {"schema": LIVE_SCHEMA, "id": p.id,
            "payload": np.frombuffer(p.encode(), dtype=np.uint8), "why": None}


def project_answer(encodings: tuple[Encoding, ...], req: ProjectRequest, device) -> dict:
    """POST /v1/project: :func:`engine.relation.projection.project` of the relation of the
    request's texts and view (at ε = 1, one half-step: the points do not depend on them)."""
    from ..relation.projection import project

    p = project(_softmax_relation(encodings, req), space=req.space, method=req.method,
                dim=int(req.dim), seed=int(req.seed))
    return {"schema": PROJECTION_SCHEMA, "xy_a": p.xy_a, "xy_b": p.xy_b, "method": p.method,
            "space": p.space, "dim": p.dim, "distance_cost_corr": p.distance_cost_corr,
            "explained": p.explained, "note": p.note, "note_code": p.note_code}


def toy_answer(req: ToyRequest) -> dict:
    """POST /v1/toy: :func:`engine.lab.toy.toy_plan` with the clouds it is between."""
    from ..lab.toy import toy_plan

    p = toy_plan(req.preset, req.shift, req.plan, t=int(req.t), eps=float(req.eps),
                 cost=req.cost)
    c = p.clouds
    return {"schema": TOY_SCHEMA, "preset": c.preset, "shift": c.shift, "kind": p.kind,
            "cost": req.cost, "xa": np.asarray(c.xa), "a": np.asarray(c.a),
            "xb": np.asarray(c.xb), "b": np.asarray(c.b), "values": p.plan, "t": p.t,
            "eps": p.eps, "row_err": p.row_err, "col_err": p.col_err,
            "converged": p.converged}
