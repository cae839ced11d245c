"""The app's state: every control's default and its place in the URL query string.

Every control has one fixed key, used both as the Streamlit widget key and as the URL
query parameter, so a URL restores a view. Values read from a URL are untrusted: each is
checked, clamped or replaced by its default, and every change is reported in plain words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from engine import settings
from engine.settings import (DEFAULT_EPS, DEFAULT_HALF_STEPS, DEFAULT_MODEL, MODES, WEIGHTS,
                             Config)

from . import i18n
from .examples import sentence_sets



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
LANGS = {"en": "English", "es": "Español"}  # the main page's languages, as the picker names them

DEFAULTS: dict[str, Any] = {
    "a": "I sat on the bank of the river and watched the water.",
    "b": "She went to the bank to deposit her money.",
    "ex": "bank",
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


@dataclass(frozen=True)
class Param:
    """One control in the main page's address.

    Attributes:
        key: its session key (the widget's key).
        url: its name in the address, readable.
        doc: what it holds, in a few words (docs/urls.md lists them all).
        old: names older links used; they still open the same state.
        scope: "page" for the sidebar's controls (a change reruns the page), "view" for
            the main area's (a change reruns only the sliders' and views' fragment).
        view: the view whose link carries it ("" for every link).
    """

    key: str
    url: str
    doc: str
    old: tuple[str, ...] = ()
    scope: str = "page"
    view: str = ""


# The main page's URL schema: every control, its readable name and its older names.
PARAMS: tuple[Param, ...] = (
    Param("ex", "ex", "example id (assets/examples.json), or custom for your own texts"),
    Param("a", "a", "text A, the queries (rows)"),
    Param("b", "b", "text B, the keys (columns); left out in self mode"),
    Param("model", "model", "an allow-listed model name"),
    Param("mode", "mode", "separate, joint or self"),
    Param("layer", "layer", "layer, from 0 (negative: from the last)"),
    Param("head", "head", "a head from 0, or mean (the mean of all heads' scores)"),
    Param("weights", "weights", "token weights a, b: " + ", ".join(WEIGHTS)),
    Param("pool", "pool", "true to pool word pieces into words"),
    Param("present", "present", "true for presentation mode (a projector)"),
    Param("lang", "lang", "the page's language: en (English) or es (español)"),
    Param("img", "image_format", "what the charts' camera button saves: png or svg",
          old=("img",)),
    Param("eps", "eps", "ε, snapped to the slider's nearest stop", scope="view"),
    Param("steps", "steps", "Sinkhorn half-steps (1 = softmax)", scope="view"),
    Param("view", "view", "the view: " + ", ".join(VIEWS), scope="view"),
    Param("cview", "compare_values", "Compare: joint (π(i, j)) or conditional (π(j | i))",
          old=("cview",), scope="view"),
    Param("cscale", "colour_scale", "Compare: shared (one scale) or per_plan",
          old=("cscale",), scope="view"),
    Param("gwhich", "graph_plans", "Graph: both, softmax or sinkhorn", old=("gwhich",),
          scope="view"),
    Param("topk", "edges_per_token", f"Graph: edges per token of A, 0–{TOPK_MAX} (0 = all)",
          old=("topk",), scope="view"),
    Param("thr", "min_mass", "Graph: least mass an edge must carry, 0–1", old=("thr",),
          scope="view"),
    Param("hl", "highlight", "Graph: a token to highlight, a3 or b0, or none", old=("hl",),
          scope="view"),
    Param("space", "cloud_points", "Cloud: qk (queries and keys) or hidden (states)",
          old=("space",), scope="view"),
    Param("method", "projection", "Cloud: pca or umap", old=("method",), scope="view"),
    Param("dim", "dimensions", "Cloud: 2 or 3", old=("dim",), scope="view"),
    Param("edges", "cloud_edges", f"Cloud: heaviest edges drawn, 1–{EDGES_MAX}",
          old=("edges",), scope="view"),
    Param("cwhich", "cloud_edges_of", "Cloud: edges of sinkhorn or softmax",
          old=("cwhich",), scope="view"),
    Param("gplan", "grid_tiles", "All heads: sinkhorn, softmax or difference",
          old=("gplan",), scope="view"),
    Param("gval", "grid_value", "All heads: the number above each tile: "
          + ", ".join(GRID_VALUES), old=("gval",), scope="view"),
    Param("grank", "grid_order", "All heads: the ranking, high or low first",
          old=("grank",), scope="view"),
    Param("sset", "sentence_set", "Sentences: an example set (assets/sentences.json) or "
          "custom", old=("sset",), scope="view", view="sentences"),
    Param("cands", "candidates", "Sentences: the candidates, one per line",
          old=("cands",), scope="view", view="sentences"),
)
BY_KEY = {p.key: p for p in PARAMS}
assert set(BY_KEY) == set(KEYS), "every control has one place in the address"
SENTENCE_KEYS = tuple(p.key for p in PARAMS if p.view == "sentences")
# Keys of the controls drawn inside the sliders' and views' fragment (kept across its
# reruns), derived from the schema, plus the Sentences view's plan picker (not in links).
FRAGMENT_KEYS = (*(p.key for p in PARAMS if p.scope == "view"), "scand")
_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


def parse_bool(raw: object) -> bool | None:
    """A link's truthy or falsy word (true/false, on/off, yes/no, 1/0, empty: false) as a
    bool; None when it is neither. The one reading every page uses."""
    low = str(raw if raw is not None else "").strip().lower()
    return True if low in _ON else False if low in _OFF else None


def from_url(params: Mapping[str, Any]) -> dict[str, str]:
    """The address's parameters by session key: readable names first, then older names
    (an old link opens the same state); unknown parameters are dropped."""
    p = {str(k): _first(v) for k, v in params.items()}
    out = {}
    for prm in PARAMS:
        for name in (prm.url, *prm.old):
            if name in p:
                out[prm.key] = p[name]
                break
    return out


@dataclass(frozen=True)
class Message:
    """One notice about a link or a text, as a key of the ``url`` words and its fields.

    Attributes:
        key: the template's key in ``text/main.<lang>.json`` (section ``url``).
        args: the fields: numbers (written the language's way), strings (as they are),
            and ``label``/``name``/``where``/``fallback`` naming further words by key.
    """

    key: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def text(self, lang: str = "en") -> str:
        """The notice in ``lang`` (English, as the page always wrote it, by default)."""
        return say(self.key, lang, **self.args)


def _shown(value: Any, lang: str) -> str:
    """A field of a notice: English numbers as ``:g`` / ``:,`` wrote them, other
    languages' through their number format (``engine.relation.summary.numbers``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return str(value)
    if lang == "en":
        return f"{value:,}" if isinstance(value, (int, np.integer)) else f"{float(value):g}"
    from engine.relation.summary import numbers
    return numbers(lang)(value)


def say(key: str, lang: str = "en", **args: Any) -> str:
    """The ``url`` notice ``key`` of the main page's words in ``lang``, fields filled.

    Fields named ``label``, ``name``, ``where`` and ``fallback`` hold keys of the
    ``url.labels`` / ``url.names`` / ``url.where`` / ``url.fallbacks`` words; an unknown one
    is shown as it is. A language without a text file reads as English.
    Example: ``say("unknown_set", "es", value="'x'")``.
    """
    lang = lang if lang in i18n.languages("main") else "en"
    w = i18n.texts("main", lang)["url"]
    words = {"label": "labels", "name": "names", "where": "where", "fallback": "fallbacks"}
    shown = {k: (w[words[k]].get(v, v) if k in words else _shown(v, lang))
             for k, v in args.items()}
    return w[key].format(**shown)


@dataclass
class Parsed:
    """Values read from a URL, and what had to change to make them safe.

    ``warnings`` are the sentences in the language asked for (English by default),
    ``messages`` the same notices as keys and fields (:class:`Message`)."""

    values: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)


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


def valid_text(text: object) -> str:
    """A str that can travel to the browser: unpaired surrogates become U+FFFD."""
    text = text if isinstance(text, str) else ""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace") \
        if any("\ud800" <= ch <= "\udfff" for ch in text) else text


# What cut_text's callers name a text and its origin, by the key of its words (url.names,
# url.where): the English the page has always written.
TEXT_NAMES = {"Text A": "text_a", "Text B": "text_b", "The candidates": "candidates"}
TEXT_WHERE = {"in the link": "link", "as typed or pasted": "typed"}


def cut_text(text: str, name: str, where: str, limit: int | None = None, *,
             lang: str = "en") -> tuple[str, str | None]:
    """``text`` cut to the character limit, and the notice that says so (None if uncut).

    Args:
        text: a text from a box, a paste or a link.
        name: what it is, as the page names it in English ("Text A"; :data:`TEXT_NAMES`).
        where: where it came from ("in the link", "as typed or pasted"; :data:`TEXT_WHERE`).
        limit: the most characters kept (``SINKSCOPE_MAX_CHARS`` by default).
        lang: the notice's language (English by default).
    """
    limit = settings.CONFIG.max_chars if limit is None else limit
    if len(text) <= limit:
        return text, None
    return text[:limit], cut_message(len(text), name, where, limit).text(lang)


def cut_message(chars: int, name: str, where: str, limit: int) -> Message:
    """The notice that a text of ``chars`` characters was cut to its first ``limit``."""
    return Message("text_cut", {"name": TEXT_NAMES.get(name, name),
                                "where": TEXT_WHERE.get(where, where),
                                "chars": int(chars), "limit": int(limit)})


def _first(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        v = v[-1] if v else ""
    return str(v)


def _float(raw: str) -> float | None:
    try:
        x = float(raw)
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) else None


def _int(raw: str) -> int | None:
    x = _float(raw)
    if x is None or abs(x) > 1e15:
        return None
    return int(round(x))


def nearest(options: tuple[float, ...], x: float, *, log: bool = False) -> float:
    """The option closest to x (in log space when ``log``)."""
    arr = np.asarray(options, dtype=float)
    if log:
        return options[int(np.argmin(np.abs(np.log(arr) - math.log(x))))]
    return options[int(np.argmin(np.abs(arr - x)))]


def parse_query(params: Mapping[str, Any], *, n_layers: int, n_heads: int,
                models: tuple[str, ...], examples: Mapping[str, Any],
                limits: Config | None = None, lang: str = "en") -> Parsed:
    """Turn untrusted query parameters into safe control values.

    Unknown keys are ignored; a bad value falls back to its default (or is clamped into
    range) and adds a warning that says what happened, in ``lang`` (the ``url`` words of
    ``text/main.<lang>.json``; English by default). Never raises.
    """
    limits = limits or settings.CONFIG
    out = Parsed()
    v = out.values

    def warn(key: str, **args: Any) -> None:
        message = Message(key, args)
        out.messages.append(message)
        out.warnings.append(message.text(lang))
    rejected: set[str] = set()  # keys whose link value was refused: their default holds
    p = from_url(params)

    def choice(key: str, allowed, label: str):  # label: a key of the url.labels words
        if key in p:
            if p[key] in allowed:
                v[key] = p[key]
            else:
                warn("unknown_choice", label=label, value=repr(p[key][:40]),
                     default=repr(DEFAULTS[key]))
                rejected.add(key)

    # Texts: an example first, then explicit texts override it. A link that names no texts
    # (a bare address, ?present=true) opens the default example at its settings, so its
    # note describes the picture; an unknown example with texts is your own texts.
    texts_given = any(k in p for k in ("a", "b", "sset", "cands"))
    ex = p.get("ex")
    if ex is not None and ex not in examples and ex != "custom":
        warn("unknown_example", value=repr(ex[:40]),
             fallback="own" if texts_given else "default")
        ex = "custom" if texts_given else None
    if ex is None and not texts_given and DEFAULTS["ex"] in examples:
        ex = DEFAULTS["ex"]
    if ex is not None:
        v["ex"] = ex
        if ex in examples:
            v.update(example_values(examples[ex], p.get("mode", DEFAULTS["mode"])))
    if "sset" in p:  # a Sentences example set: its text A and candidates
        sets = sentence_sets()
        if p["sset"] in sets:
            v["sset"] = p["sset"]
            v["a"] = sets[p["sset"]]["a"]
            v["cands"] = "\n".join(sets[p["sset"]]["candidates"])
            if "ex" not in p:
                v["ex"] = "custom"
        elif p["sset"] == "custom":
            v["sset"] = "custom"
        else:
            warn("unknown_set", value=repr(p["sset"][:40]))
    for key, name in (("a", "Text A"), ("b", "Text B"), ("cands", "The candidates")):
        if key in p:
            text = valid_text(p[key])
            v[key] = text[:limits.max_chars]
            if len(text) > limits.max_chars:
                warn("text_cut", **cut_message(len(text), name, "in the link",
                                               limits.max_chars).args)
    if ("a" in p or "b" in p) and "ex" not in v:
        v["ex"] = "custom"
    sets = sentence_sets()
    if "cands" in p and (v.get("sset") not in sets or
                         v["cands"] != "\n".join(sets[v["sset"]]["candidates"])):
        v["sset"] = "custom"

    for key, allowed in (("model", models), ("mode", MODES), ("weights", WEIGHTS),
                         ("view", VIEWS), ("cview", CVIEWS), ("cscale", CSCALES),
                         ("gwhich", GRAPH_WHICH), ("space", SPACES), ("method", METHODS),
                         ("cwhich", ("sinkhorn", "softmax")), ("gplan", GRID_PLANS),
                         ("gval", GRID_VALUES), ("grank", GRID_RANKS),
                         ("img", IMAGE_FORMATS), ("lang", LANGS)):
        choice(key, allowed, key)

    for key in ("pool", "present"):
        if key in p:
            if (flag := parse_bool(p[key])) is not None:
                v[key] = flag
            else:
                warn("not_bool", param=key, value=repr(p[key][:20]))
                rejected.add(key)

    if "layer" in p:
        x = _int(p["layer"])
        if x is None:
            warn("layer_nan", value=repr(p["layer"][:20]))
            rejected.add("layer")
        else:
            if x < 0:
                x += n_layers
            if not 0 <= x < n_layers:
                c = min(max(x, 0), n_layers - 1)
                warn("layer_range", value=p["layer"][:20], last=n_layers - 1, used=c)
                x = c
            v["layer"] = x
    if "head" in p:
        if p["head"] == "mean":
            v["head"] = "mean"
        else:
            x = _int(p["head"])
            if x is None or not 0 <= x < n_heads:
                warn("head", last=n_heads - 1, value=repr(p["head"][:20]))
                rejected.add("head")
            else:
                v["head"] = x

    if "eps" in p:
        x = _float(p["eps"])
        if x is None or x <= 0:
            warn("eps_nan", value=repr(p["eps"][:20]))
            rejected.add("eps")
        else:
            if not limits.eps_min <= x <= limits.eps_max:
                c = min(max(x, limits.eps_min), limits.eps_max)
                warn("eps_range", x=float(x), lo=float(limits.eps_min),
                     hi=float(limits.eps_max), used=float(c))
                x = c
            v["eps"] = nearest(EPS_OPTIONS, x, log=True)
    if "steps" in p:
        x = _int(p["steps"])
        if x is None:
            warn("steps_nan", value=repr(p["steps"][:20]), default=int(DEFAULTS["steps"]))
            rejected.add("steps")
        else:
            if not 1 <= x <= limits.max_half_steps:
                c = min(max(x, 1), limits.max_half_steps)
                warn("steps_range", x=int(x), hi=int(limits.max_half_steps), used=int(c))
                x = c
            v["steps"] = int(nearest(HALF_STEP_OPTIONS, x))

    for key, lo, hi in (("topk", 0, TOPK_MAX), ("edges", 1, EDGES_MAX), ("dim", 2, 3)):
        if key in p:
            x = _int(p[key])
            if x is None or not lo <= x <= hi:
                warn("int_range", label=key, lo=lo, hi=hi, value=repr(p[key][:20]),
                     default=DEFAULTS[key])
            else:
                v[key] = x
    if "thr" in p:
        x = _float(p["thr"])
        if x is None or not 0 <= x <= 1:
            warn("thr", value=repr(p["thr"][:20]))
        else:
            v["thr"] = round(x, 4)
    if "hl" in p:
        hl = p["hl"]
        if hl == "none" or (len(hl) > 1 and hl[0] in "ab" and hl[1:].isdigit()
                            and len(hl) < 8):
            v["hl"] = hl
        else:
            warn("unknown_highlight", value=repr(hl[:20]))
    for key in rejected:  # not an example's value either: the warning named the default
        v.pop(key, None)
    return out


def to_query(state: Mapping[str, Any]) -> dict[str, str]:
    """The query string for the current controls, by their readable names (every control,
    so links are explicit; the Sentences view's only while it is open, text B not in self
    mode)."""
    q: dict[str, str] = {}
    for prm in PARAMS:
        if prm.key not in state:
            continue
        val = state[prm.key]
        if prm.key == "b" and state.get("mode") == "self":
            continue
        if prm.view and state.get("view") != prm.view:
            continue
        if isinstance(val, bool):
            q[prm.url] = "true" if val else "false"
        elif isinstance(val, float):
            q[prm.url] = f"{val:g}"
        else:
            q[prm.url] = str(val)
    return q
