"""The served OpenAPI document refined by what the served models fix (names, layers,
heads, trained aligners), with the rules JSON Schema cannot state (:data:`RULES`)."""

from __future__ import annotations

#: What a body the schema allows may still be refused for (422), by code: rules that need
#: the model, the texts' words or the operator's limits, which JSON Schema cannot state.
RULES = {
    "text_unreadable": "A text the model reads nothing of (only characters its tokenizer "
                       "drops, such as format characters or lone accents).",
    "no_candidates": "No candidate the model can read.",
    "unread_pairs": "A pair whose text the model reads nothing of.",
    "text_too_long": "A pair's text of more than 400 words.",
    "link_out_of_range": "A gold link to a word its text does not have.",
    "grid_cells": "A heads grid over SINKSCOPE_GRID_MAX_CELLS token pairs.",
    "live_cells": "A lattice over SINKSCOPE_LIVE_MAX_CELLS token pairs.",
    "out_of_range": "A layer or head the chosen model does not have (where the served "
                    "models differ in shape).",
    "top_above_layer": "A train_aligner job whose top exceeds its layer (either's default "
                       "counts).",
    "layer_above_model": "A train_aligner job whose layer exceeds its model's layers (where "
                         "the served models differ in shape).",
    "job_weights": "Lab weights (POST /v1/lab/predict) that do not decode or do not fit "
                   "the model their settings build.",
}


def _ints(lo: int, hi: int) -> dict:
    return {"type": "integer", "minimum": lo, "maximum": hi}


def refine(spec: dict, shapes: dict[str, tuple[int, int]],
           aligners: list[str] | None = None) -> dict:
    """The OpenAPI document ``spec`` with what the served models fix: ``model`` one of
    theirs, ``layer`` and ``head`` within their shapes (the widest, where they differ),
    and the rules between fields: layer and head "all" together (the heads grid) or not
    at all, text B present unless in self mode, an alignment's layer within its source's
    range; a job's trained aligner among the served ones, an aligner job's ``layer`` and
    ``top`` within the models' layers; :data:`RULES` under ``info.x-sinkscope-rules``.

    Args:
        spec: FastAPI's document. shapes: model name → (layers, heads). aligners: the
            trained aligners' names (method "trained" needs one of them; none: no
            "trained").
    """
    names = list(shapes)
    L = max((s[0] for s in shapes.values()), default=1)
    H = max((s[1] for s in shapes.values()), default=1)
    schemas = spec.get("components", {}).get("schemas", {})
    grid_rule = {"if": {"properties": {"layer": {"const": "all"}}, "required": ["layer"]},
                 "then": {"properties": {"head": {"const": "all"}}, "required": ["head"]},
                 "else": {"properties": {"head": {"not": {"const": "all"}}}}}
    text_b_rule = {"if": {"properties": {"mode": {"const": "self"}}, "required": ["mode"]},
                   "else": {"properties": {"text_b": {"type": "string"}},
                            "required": ["text_b"]}}
    for name, s in schemas.items():
        props = s.get("properties", {})
        if "model" in props and props["model"].get("type") == "string" and names:
            props["model"]["enum"] = names
        rules = []
        if name in ("RelateRequest", "EpsPathRequest", "LatticeRequest", "ProjectRequest"):
            grid = name == "RelateRequest"
            props["layer"] = {**_keep(props["layer"]), "anyOf": [
                _ints(-L, L - 1), *([{"const": "all"}] if grid else [])]}
            props["head"] = {**_keep(props["head"]), "anyOf": [
                _ints(-H, H - 1), {"enum": ["mean", "all"] if grid else ["mean"]}]}
            props["layer"]["description"] = (
                f"Layer index, {-L} to {L - 1} (negative from the end)"
                + (', or "all" with head "all" (the heads grid).' if grid else "."))
            props["head"]["description"] = (
                f"Head index, {-H} to {H - 1}, or \"mean\""
                + (', or "all" with layer "all" (the heads grid).' if grid else "."))
            rules += [grid_rule] if grid else []
            rules.append(text_b_rule)
        if name == "AlignLiveRequest":
            rules += _trained(props, list(aligners or []))
        if name == "CorpusSettings":  # an align_corpus job's trained aligner
            props["aligner"] = {**_keep(props["aligner"]), "anyOf": [
                *([{"type": "string", "enum": list(aligners)}] if aligners else []),
                {"type": "null"}]}
        if name == "AlignerJobSettings":  # hidden states 0 … L; top ≤ layer
            for key in ("layer", "top"):
                props[key]["maximum"] = min(props[key]["maximum"], L)
        if name == "AlignRequest":
            props["layer"] = {**_keep(props["layer"]), "anyOf": [_ints(-L - 1, L),
                                                                  {"type": "null"}]}
            props["layer"]["description"] = (
                f"The source's layer: a hidden state, {-L - 1} to {L}, or an attention layer "
                f"with source \"attention\", {-L} to {L - 1} (default: the source's own).")
            props["head"] = {**_keep(props["head"]), "anyOf": [
                _ints(-H, H - 1), {"const": "mean"}, {"type": "null"}]}
            rules.append({"if": {"properties": {"source": {"const": "attention"}},
                                 "required": ["source"]},
                          "then": {"properties": {"layer": {"anyOf": [
                              _ints(-L, L - 1), {"type": "null"}]}}}})
            rules += _trained(props, list(aligners or []))
        if rules:
            s["allOf"] = rules
    spec.setdefault("info", {})["x-sinkscope-rules"] = dict(RULES)
    return spec


def _keep(p: dict) -> dict:
    """A property's schema without its type (replaced), keeping default and title."""
    return {k: v for k, v in p.items() if k in ("default", "title", "description")}


def _trained(props: dict, trained: list[str]) -> list[dict]:
    """Method "trained" of a request: its ``aligner`` one of ``trained`` and required with
    it (the rule returned), or no "trained" where none is served."""
    props["aligner"] = {**_keep(props["aligner"]), "anyOf": [
        *([{"type": "string", "enum": trained}] if trained else []), {"type": "null"}]}
    if not trained:
        props["method"]["enum"] = [m for m in props["method"]["enum"] if m != "trained"]
        return []
    return [{"if": {"properties": {"method": {"const": "trained"}}, "required": ["method"]},
             "then": {"properties": {"aligner": {"type": "string"}}, "required": ["aligner"]}}]
