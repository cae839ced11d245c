"""The main page's state: every control's default and its place in the address.

Every control has one fixed key, used both as the Streamlit widget key and, under a
readable name, as the URL query parameter, so a URL restores a view (:data:`SCHEMA`,
read by the frame). Values read from a URL are untrusted: each is checked, clamped or
replaced by its default, and every change is reported in the page's words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from engine import settings
from engine.settings import (DEFAULT_EPS, DEFAULT_HALF_STEPS, DEFAULT_MODEL, MODES, WEIGHTS,
                             Config)

from .. import locale
from ..examples import sentence_sets
from ..links import DEFAULT_TEXTS
from ..inputs import (Message, Param, Parsed, Quoted, Refused, Schema, choice, flag, quote,
                      text, to_float, to_int)

# "Nice" numbers, ten per decade, so the ε slider has a log scale with round stops
# (0.1, 0.5, 1, 2 …) and the arrow keys move it one stop at a time.
_MANTISSAS = (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8)


def eps_options(lo: float = settings.CONFIG.eps_min,
                hi: float = settings.CONFIG.eps_max) -> tuple[float, ...]:
    """Log-spaced ε stops from ``lo`` to ``hi`` (both included), with 1 always present."""
    vals = {round(m * 10.0 ** d, 10) for d in range(-8, 9) for m in _MANTISSAS}
    vals = {v for v in vals if lo <= v <= hi} | {lo, hi}
    if lo <= 1 <= hi:
        vals.add(1.0)
    return tuple(sorted(vals))


def half_step_options(hi: int = settings.CONFIG.max_half_steps) -> tuple[int, ...]:
    """Half-step stops: every value to 10 (1 = softmax, 2 = one Sinkhorn iteration),
    then roughly log-spaced round numbers up to ``hi``."""
    base = list(range(1, 11)) + [12, 15, 20, 25, 30, 40, 50, 60, 80]
    d = 100
    while d <= hi:
        base += [d, int(1.5 * d), 2 * d, 3 * d, 4 * d, 5 * d, 6 * d, 8 * d]
        d *= 10
    return tuple(sorted({v for v in base if v <= hi} | {hi}))


EPS_OPTIONS = eps_options()
HALF_STEP_OPTIONS = half_step_options()

VIEWS = {"compare": "Compare", "graph": "Graph", "cloud": "Cloud",
         "convergence": "Convergence", "heads": "All heads", "path": "ε path",
         "sentences": "Sentences", "about": "About"}
CVIEWS = {"joint": "joint π(i, j)", "conditional": "conditional π(j | i)"}
CSCALES = {"shared": "one for both maps", "per_plan": "one per map"}  # viz.heatmaps.SCALES
GRAPH_WHICH = {"both": "both", "softmax": "softmax", "sinkhorn": "Sinkhorn"}
SPACES = {"qk": "queries ∪ keys (Q ∪ K)", "hidden": "hidden states"}
METHODS = {"pca": "PCA", "umap": "UMAP"}
GRID_PLANS = {"sinkhorn": "Sinkhorn plan", "softmax": "softmax plan",
              "difference": "Sinkhorn − softmax"}
GRID_VALUES = {"softmax_col_err": "softmax column error",
               "kl_to_product": "KL(π ‖ a⊗b)",
               "entropy": "entropy H(π)",
               "l1_to_exact": "‖π − π*‖₁ to exact OT",
               "cost": "cost ⟨−S, π⟩"}
GRID_RANKS = {"high": "highest first", "low": "lowest first"}
IMAGE_FORMATS = ("png", "svg")
LANGS = locale.LANGS  # the page's languages, as the picker names them

DEFAULTS: dict[str, Any] = {
    **DEFAULT_TEXTS,  # (shared with Learn: sinkscope_app.links)
    "model": DEFAULT_MODEL,
    "mode": "separate",
    "layer": -1,  # resolved to the last layer once the model is known
    "head": "mean",
    "weights": "content",
    "pool": False,
    "eps": DEFAULT_EPS,
    "steps": DEFAULT_HALF_STEPS,
    "view": "compare",
    "cview": "joint",
    "cscale": "shared",
    "gwhich": "both",
    "topk": 3,
    "thr": 0.0,
    "hl": "none",
    "space": "qk",
    "method": "pca",
    "dim": 2,
    "edges": 40,
    "cwhich": "sinkhorn",
    "gplan": "sinkhorn",
    "gval": "softmax_col_err",
    "grank": "high",
    "img": "png",
    "present": False,  # presentation mode: larger text, both maps on one screen
    "lang": "en",  # the page's language (text/main.<lang>.json)
    "sset": "bank",  # Sentences view: the example set, and the candidates (one per line)
    "cands": "\n".join(sentence_sets()["bank"]["candidates"]),
}
KEYS = tuple(DEFAULTS)
TOPK_MAX = 20
EDGES_MAX = 300
THR_STOPS = (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)  # least mass


@dataclass(frozen=True)
class Ctx:
    """What reading the main page's address needs: the model's shape, the models, the
    examples and the operator's limits."""

    n_layers: int
    n_heads: int
    models: tuple[str, ...]
    examples: Mapping[str, Any]
    limits: Config = settings.CONFIG


def nearest(options: tuple[float, ...], x: float, *, log: bool = False) -> float:
    """The option closest to x (in log space when ``log``)."""
    arr = np.asarray(options, dtype=float)
    if log:
        return options[int(np.argmin(np.abs(np.log(arr) - math.log(x))))]
    return options[int(np.argmin(np.abs(arr - x)))]


# --------------------------------------------------------------------------- readers
def _raw(raw: str, ctx: Ctx) -> str:
    return raw


def _layer(raw: str, ctx: Ctx) -> int:
    x = to_int(raw)
    if x is None:
        raise Refused("layer_nan", value=quote(raw, 20))
    x = x + ctx.n_layers if x < 0 else x
    if not 0 <= x < ctx.n_layers:
        c = min(max(x, 0), ctx.n_layers - 1)
        raise Refused("layer_range", use=c, value=raw[:20], last=ctx.n_layers - 1, used=c)
    return x


def _head(raw: str, ctx: Ctx) -> int | str:
    if raw == "mean":
        return "mean"
    x = to_int(raw)
    if x is None or not 0 <= x < ctx.n_heads:
        raise Refused("head", last=ctx.n_heads - 1, value=quote(raw, 20))
    return x


def _eps(raw: str, ctx: Ctx) -> float:
    x, lim = to_float(raw), ctx.limits
    if x is None or x <= 0:
        raise Refused("eps_nan", value=quote(raw, 20))
    if not lim.eps_min <= x <= lim.eps_max:
        c = min(max(x, lim.eps_min), lim.eps_max)
        raise Refused("eps_range", use=nearest(EPS_OPTIONS, c, log=True), x=float(x),
                      lo=float(lim.eps_min), hi=float(lim.eps_max), used=float(c))
    return nearest(EPS_OPTIONS, x, log=True)


def _steps(raw: str, ctx: Ctx) -> int:
    x, hi = to_int(raw), ctx.limits.max_half_steps
    if x is None:
        raise Refused("steps_nan", value=quote(raw, 20), default=int(DEFAULTS["steps"]))
    if not 1 <= x <= hi:
        c = min(max(x, 1), hi)
        raise Refused("steps_range", use=int(nearest(HALF_STEP_OPTIONS, c)), x=int(x),
                      hi=int(hi), used=int(c))
    return int(nearest(HALF_STEP_OPTIONS, x))


def _whole(key: str, lo: int, hi: int):
    def read(raw: str, ctx: Ctx) -> int:
        x = to_int(raw)
        if x is None or not lo <= x <= hi:
            raise Refused("int_range", label=key, lo=lo, hi=hi, value=quote(raw, 20),
                          default=DEFAULTS[key])
        return x
    return read


def _thr(raw: str, ctx: Ctx) -> float:
    x = to_float(raw)
    if x is None or not 0 <= x <= 1:
        raise Refused("thr", value=quote(raw, 20))
    return nearest(THR_STOPS, x)


def _highlight(raw: str, ctx: Ctx) -> str:
    if raw == "none" or (1 < len(raw) < 8 and raw[0] in "ab" and raw[1:].isdecimal()
                         and raw[1:].isascii()):
        return raw
    raise Refused("unknown_highlight", value=quote(raw, 20))


def _pick(key: str, options, label: str | None = None):
    return choice(options, label=label or key, default=Quoted(str(DEFAULTS[key])))


def _texts(name: str):
    return text(lambda ctx: (ctx.limits if ctx else settings.CONFIG).max_chars,
                name=name, where="link")


def _no_b_in_self(value: Any, state: Mapping) -> str | None:
    return None if state.get("mode") == "self" else str(value)


# The main page's address: every control, its readable name and its older names.
_V = "view"
PARAMS: tuple[Param, ...] = (
    Param("ex", "ex", _raw, doc="example id (assets/examples.json), or custom for your own "
          "texts", nav=None),
    Param("a", "a", _texts("text_a"), doc="text A, the queries (rows)"),
    Param("b", "b", _texts("text_b"), doc="text B, the keys (columns); left out in self mode",
          write=_no_b_in_self),
    Param("model", "model", _pick("model", lambda ctx: ctx.models),
          doc="an allow-listed model name"),
    Param("mode", "mode", _pick("mode", MODES), doc="separate, joint or self"),
    Param("layer", "layer", _layer, doc="layer, from 0 (negative: from the last)"),
    Param("head", "head", _head, doc="a head from 0, or mean (the mean of all heads' scores)"),
    Param("weights", "weights", _pick("weights", WEIGHTS),
          doc="token weights a, b: " + ", ".join(WEIGHTS)),
    Param("pool", "pool", flag(label="pool"), doc="true to pool word pieces into words"),
    Param("present", "present", flag(label="present"),
          doc="true for presentation mode (a projector)"),
    Param("lang", "lang", _pick("lang", LANGS),
          doc="the page's language: en (English) or es (español)"),
    Param("img", "image_format", _pick("img", IMAGE_FORMATS),
          doc="what the charts' camera button saves: png or svg", old=("img",)),
    Param("eps", "eps", _eps, doc="ε, snapped to the slider's nearest stop", scope=_V),
    Param("steps", "steps", _steps, doc="Sinkhorn half-steps (1 = softmax)", scope=_V),
    Param("view", "view", _pick("view", VIEWS), doc="the view: " + ", ".join(VIEWS),
          scope=_V, nav="compare"),
    Param("cview", "compare_values", _pick("cview", CVIEWS),
          doc="Compare: joint (π(i, j)) or conditional (π(j | i))", old=("cview",), scope=_V),
    Param("cscale", "colour_scale", _pick("cscale", CSCALES),
          doc="Compare: shared (one scale) or per_plan", old=("cscale",), scope=_V),
    Param("gwhich", "graph_plans", _pick("gwhich", GRAPH_WHICH),
          doc="Graph: both, softmax or sinkhorn", old=("gwhich",), scope=_V),
    Param("topk", "edges_per_token", _whole("topk", 0, TOPK_MAX),
          doc=f"Graph: edges per token of A, 0–{TOPK_MAX} (0 = all)", old=("topk",), scope=_V),
    Param("thr", "min_mass", _thr, doc="Graph: least mass an edge must carry, 0–1 (the "
          "nearest of the slider's stops)",
          old=("thr",), scope=_V),
    Param("hl", "highlight", _highlight, doc="Graph: a token to highlight, a3 or b0, or none",
          old=("hl",), scope=_V),
    Param("space", "cloud_points", _pick("space", SPACES),
          doc="Cloud: qk (queries and keys) or hidden (states)", old=("space",), scope=_V),
    Param("method", "projection", _pick("method", METHODS), doc="Cloud: pca or umap",
          old=("method",), scope=_V),
    Param("dim", "dimensions", _whole("dim", 2, 3), doc="Cloud: 2 or 3", old=("dim",),
          scope=_V),
    Param("edges", "cloud_edges", _whole("edges", 1, EDGES_MAX),
          doc=f"Cloud: heaviest edges drawn, 1–{EDGES_MAX}", old=("edges",), scope=_V),
    Param("cwhich", "cloud_edges_of", _pick("cwhich", ("sinkhorn", "softmax")),
          doc="Cloud: edges of sinkhorn or softmax", old=("cwhich",), scope=_V),
    Param("gplan", "grid_tiles", _pick("gplan", GRID_PLANS),
          doc="All heads: sinkhorn, softmax or difference", old=("gplan",), scope=_V),
    Param("gval", "grid_value", _pick("gval", GRID_VALUES),
          doc="All heads: the number above each tile: " + ", ".join(GRID_VALUES),
          old=("gval",), scope=_V),
    Param("grank", "grid_order", _pick("grank", GRID_RANKS),
          doc="All heads: the ranking, high or low first", old=("grank",), scope=_V),
    Param("sset", "sentence_set", _raw, doc="Sentences: an example set "
          "(assets/sentences.json) or custom", old=("sset",), scope=_V, view="sentences"),
    Param("cands", "candidates", _texts("candidates"),
          doc="Sentences: the candidates, one per line", old=("cands",), scope=_V,
          view="sentences"),
)


def _resolve(v: dict, p: Mapping[str, str], ctx: Ctx, warn) -> None:
    """Texts: a sentence set, then an example (its texts and the settings that show its
    point), under whatever the link gives explicitly. A link that names no texts opens
    the default example at its settings, so its note describes the picture; an unknown
    example with texts is your own texts."""
    examples, sets = ctx.examples, sentence_sets()
    texts_given = any(k in p for k in ("a", "b", "sset", "cands"))
    ex = p.get("ex")
    v.pop("ex", None)
    if ex is not None and ex not in examples and ex != "custom":
        warn("unknown_example", value=quote(ex), fallback="own" if texts_given else "default")
        ex = "custom" if texts_given else None
    if ex is None and not texts_given and DEFAULTS["ex"] in examples:
        ex = DEFAULTS["ex"]
    if "sset" in p:
        v.pop("sset", None)
        if p["sset"] in sets:
            v["sset"] = p["sset"]
            v.setdefault("a", sets[p["sset"]]["a"])
            v.setdefault("cands", "\n".join(sets[p["sset"]]["candidates"]))
        elif p["sset"] == "custom":
            v["sset"] = "custom"
        else:
            warn("unknown_set", value=quote(p["sset"]))
    if ex is not None:
        v["ex"] = ex
        if ex in examples:
            for k, val in example_values(examples[ex], v.get("mode", DEFAULTS["mode"])).items():
                v.setdefault(k, val)
    elif p.get("sset") in sets:
        v["ex"] = "custom"
    if ("a" in p or "b" in p) and "ex" not in v:
        v["ex"] = "custom"
    if "cands" in p and (v.get("sset") not in sets or
                         v["cands"] != "\n".join(sets[v["sset"]]["candidates"])):
        v["sset"] = "custom"


SCHEMA = Schema("main", PARAMS, _resolve)
BY_KEY = {p.key: p for p in PARAMS}
assert set(BY_KEY) == set(KEYS), "every control has one place in the address"
SENTENCE_KEYS = tuple(p.key for p in PARAMS if p.view == "sentences")
# Keys of the controls drawn inside the sliders' and views' fragment (kept across its
# reruns), derived from the schema, plus the Sentences view's plan picker (not in links).
FRAGMENT_KEYS = (*(p.key for p in PARAMS if p.scope == "view"), "scand")


def parse_query(params: Mapping[str, Any], *, n_layers: int, n_heads: int,
                models: tuple[str, ...], examples: Mapping[str, Any],
                limits: Config | None = None, lang: str = "en") -> Parsed:
    """Turn untrusted query parameters into safe control values (:data:`SCHEMA`).

    Unknown keys are ignored; a bad value falls back to its default (or is clamped into
    range) and adds a warning that says what happened, in ``lang`` (the ``url`` words of
    ``text/main.<lang>.json``; English by default). Never raises.
    """
    ctx = Ctx(n_layers, n_heads, tuple(models), examples, limits or settings.CONFIG)
    return SCHEMA.parse(params, ctx, lang=lang)


def to_query(state: Mapping[str, Any]) -> dict[str, str]:
    """The query string for the current controls, by their readable names (every control,
    so links are explicit; the Sentences view's only while it is open, text B not in self
    mode)."""
    return SCHEMA.to_query(state)


# --------------------------------------------------------------------------- examples
def example_values(example: Mapping[str, Any], mode: str) -> dict[str, Any]:
    """The controls an example sets: its texts, its mode (else ``mode``, leaving self mode
    for separate) and the settings that show its point."""
    out = {"a": example["a"], "b": example["b"],
           "mode": example.get("mode") or ("separate" if mode == "self" else mode)}
    out.update(example.get("settings", {}))
    return out


def example_differences(example: Mapping[str, Any], state: Mapping[str, Any], *,
                        n_layers: int) -> list[str]:
    """The example's settings that ``state`` does not show, in words ("ε = 0.1", "layer 4");
    empty when the page shows the example as its note describes it."""
    out = []
    for key, want in example.get("settings", {}).items():
        have = state.get(key)
        if key == "layer":
            want, have = int(want) % n_layers, int(have if have is not None else -1) % n_layers
        elif key == "eps":
            want, have = float(want), float(have if have is not None else "nan")
            if math.isclose(want, have, rel_tol=1e-9):
                continue
        elif key == "head":
            want, have = str(want), str(have)
        elif key == "pool":
            want, have = bool(want), bool(have)
        else:
            want, have = int(want), int(have if have is not None else -1)
        if want != have:
            out.append(describe_setting(key, want))
    if example.get("mode") and state.get("mode") != example["mode"]:
        out.append(f"{example['mode']} mode")
    return out


def describe_setting(key: str, value: Any) -> str:
    """One setting in words: "layer 4", "mean of heads", "ε = 0.1", "200 half-steps"."""
    if key == "layer":
        return f"layer {value}"
    if key == "head":
        return "mean of heads" if value == "mean" else f"head {value}"
    if key == "eps":
        return f"ε = {float(value):g}"
    if key == "steps":
        return f"{int(value):,} half-steps"
    if key == "pool":
        return "words pooled" if value else "word pieces"
    return f"{key} {value}"


# --------------------------------------------------------------------------- typed texts
def cut_text(text_in: str, name: str, where: str, limit: int | None = None, *,
             lang: str = "en") -> tuple[str, str | None]:
    """``text_in`` cut to the character limit, and the notice that says so (None if uncut).

    Args:
        text_in: a text from a box, a paste or a link.
        name: what it is: "text_a", "text_b" or "candidates" (the ``url.names`` words).
        where: where it came from: "link" or "typed" (the ``url.where`` words).
        limit: the most characters kept (``SINKSCOPE_MAX_CHARS`` by default).
        lang: the notice's language (English by default).
    """
    limit = settings.CONFIG.max_chars if limit is None else limit
    if len(text_in) <= limit:
        return text_in, None
    message = Message("text_cut", {"name": name, "where": where, "chars": len(text_in),
                                   "limit": int(limit)})
    return text_in[:limit], message.text(lang)
