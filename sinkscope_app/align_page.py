"""The Align page's logic: URL state, cached calls into ``engine.alignment``, and the two views.

**Pair** aligns the words of two texts with one method, draws the plan the links came from
beside the links (gold over them), the bipartite graph, and, with gold, a table of every
method's scores. **Corpus** reads a file of pairs (the formats of ``engine.alignment.readers``),
aligns every pair with every method (a progress bar), and shows a sortable table, corpus
scores with bootstrap intervals and exports; a row click opens that pair in Pair.

Word scores S come from one cached encoding per pair (``st.cache_data`` on the texts). The
θ, τ and m sliders are live in the browser (:mod:`.align_live`): the values the links are
read from are computed here once per pair and method at every slider stop, and the browser
redraws the links, both figures and the pair's scores while a slider moves; a release only
writes the URL and the table of every method's scores. Above the live sliders' size budget,
or with a served engine, Streamlit's sliders take their place and each release re-runs the
extraction on the cached S (no text encoded again, no model reloaded). With
``SINKSCOPE_ENGINE`` set to a URL the served engine aligns (``POST /v1/align``) and nothing
is encoded here.

Every string the page shows is in :data:`TEXT`, one dict per language, read from
``text/align.<lang>.json``; ``?lang=es`` opens the page in Spanish, with its number format
(decimal commas) and its tables' column names. Exported files keep English column names.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlencode

import numpy as np
import streamlit as st

from engine import settings
from engine.errors import SinkscopeError, TextError
from engine.relation.summary import numbers
from engine.settings import DEFAULT_MODEL
from sinkscope_app import align_live, compute, i18n
from sinkscope_app.state import valid_text
from sinkscope_app.views import md_text

log = logging.getLogger("sinkscope.align")

METHODS = ("softmax-argmax", "softmax-both", "similarity-threshold", "sinkhorn-argmax",
           "sinkhorn-threshold", "exact", "partial", "unbalanced")
THRESHOLDED = ("softmax-both", "similarity-threshold", "sinkhorn-threshold", "exact",
               "partial", "unbalanced")
SOFTMAX_METHOD, TRANSPORT_METHOD = "softmax-argmax", "unbalanced"
TAU_OPTIONS = tuple(float(f"{x:.3g}") for x in np.logspace(-2, 2, 41))
#: The m slider's stops: every other m of the engine's grid (``extract.MASS_GRID``, k/51
#: for k = 1 … 50, no m = 1), k = 2, 4, …, 50, to two decimals: 0.04 … 0.98, which holds
#: the engine's default m = 0.98. m is the share of the shorter text's words moved.
MASS_OPTIONS = tuple(round(k / 51, 2) for k in range(2, 51, 2))
MAX_UPLOAD_MB = 2
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 2**20
MAX_CORPUS_PAIRS = 2000

# Every word the page shows, per language: text/align.<lang>.json (copies, so a key added
# here in code for English is shown, in English, by every language until its file has it).
TEXT: dict[str, dict[str, Any]] = {lang: dict(i18n.texts("align", lang))
                                   for lang in i18n.languages("align")}
LANGS = tuple(TEXT)  # the page's languages ("en" first)

# Page state: session key → (URL name, default). The URL names are readable words.
DEFAULTS: dict[str, Any] = {
    "align_view": "pair",
    "align_a": "the cat sat on the mat",
    "align_b": "a cat was sitting on the mat",
    "align_gold": "0p0 1-1 2-2 2-3 3-4 4-5 5-6",
    "align_method": "unbalanced",
    "align_threshold": 0.3,
    "align_tau": 1.0,
    "align_mass": 0.98,  # the engine's default m of partial
    "align_lower": False,
    "align_lang": "en",
}
URL_NAMES = {"align_view": "view", "align_a": "text_a", "align_b": "text_b",
             "align_gold": "gold", "align_method": "method", "align_threshold": "threshold",
             "align_tau": "tau", "align_mass": "mass", "align_lower": "lower",
             "align_lang": "lang"}
VIEWS = ("pair", "corpus")


def ui(lang: str = "en") -> dict:
    """The page's strings in ``lang`` (``text/align.<lang>.json``; English for a language
    without a file, and for a key its file lacks)."""
    return {**TEXT["en"], **TEXT.get(lang, {}), "_lang": lang if lang in TEXT else "en"}


class UnreadText(TextError):
    """A text of the pair has no word the model can read; ``side`` is "a" or "b"."""

    def __init__(self, side: str):
        self.side = side
        super().__init__(ui()["unread_text"].format(name=ui()["text_" + side]))


UNREAD = re.compile(r"pair (\d+) \(text ([AB])\)")  # engine.alignment.api.score_corpus's


def unread_of(e: TextError) -> tuple[list[tuple[int, str]], bool] | None:
    """((pair number, "a" or "b") of each text with no readable word, whether the message
    left some out) from ``score_corpus``'s TextError; None for another error."""
    msg = str(e)
    found = [(int(k), side.lower()) for k, side in UNREAD.findall(msg)]
    if "no word the model can read" not in msg or not found:
        return None
    return found, " more:" in msg


def file_error(e: Exception, t: dict) -> str:
    """What a file (or the typed pair, or its gold) got wrong, in the page's language: an
    ``AlignFileError`` whose ``code`` ``t["file_errors"]`` has, with its details written the
    language's way; any other error's message as it is (on the English page, the engine's
    own sentence)."""
    words, lang = t.get("file_errors", {}), t.get("_lang", "en")
    code = getattr(e, "code", "")
    if lang == "en" or code not in words:
        return str(e)
    fields = {}
    for k, v in e.params.items():
        if k == "where":
            fields[k] = (words["where_line"].format(file=v[0], line=align_live.count_text(
                v[1], lang)) if isinstance(v, tuple) else words["where_names"].get(v, v))
        elif isinstance(v, bool):  # an optional part of the sentence
            fields[k] = words["parts"][k] if v else ""
        elif k in ("sep", "what"):  # a word the sentence picks: "tabs", "gold file"
            fields[k] = words["parts"].get(v, v)
        elif isinstance(v, int):
            fields[k] = align_live.count_text(v, lang)
        elif isinstance(v, float):
            fields[k] = align_live.decimal_text(v, lang)
        else:
            fields[k] = v
    return words[code].format(**fields)


def unread_message(e: TextError, t: dict) -> str:
    """The message of ``e`` in the page's language (``t``)."""
    if isinstance(e, UnreadText):
        return t["unread_text"].format(name=t["text_" + e.side])
    return str(e)


def column_names(t: dict, columns) -> dict[str, str]:
    """Displayed name of each table column (the data's English keys, as exported) in the
    page's language: "F1 exact", "F1 95 %" and the like from their parts."""
    names = t["columns"]
    out = {}
    for c in columns:
        if c in names:
            out[c] = names[c]
        elif c.startswith("F1 ") and c[3:] in METHODS:
            out[c] = t["col_method_f1"].format(method=c[3:])
        elif c.endswith(" 95 %") and c[:-5] in names:
            out[c] = t["col_ci"].format(label=names[c[:-5]])
        else:
            out[c] = c
    return out


def shown_rows(rows: list[dict], t: dict) -> list[dict]:
    """``rows`` with their keys as the page shows them (:func:`column_names`)."""
    names = column_names(t, rows[0] if rows else ())
    return [{names[k]: v for k, v in row.items()} for row in rows]


def method_defaults(name: str) -> dict[str, float]:
    """The threshold θ (on V), τ and m a method starts from (engine.alignment's defaults)."""
    from engine.alignment.api import DEFAULTS as ENGINE_DEFAULTS

    m = ENGINE_DEFAULTS["hidden"][name]
    return {"align_threshold": round(m.theta, 2), "align_tau": nearest(TAU_OPTIONS, m.tau),
            "align_mass": nearest_mass(m.mass)}


def nearest(options: tuple[float, ...], x: float) -> float:
    return min(options, key=lambda o: abs(np.log(o) - np.log(max(x, 1e-12))))


def nearest_mass(x: float) -> float:
    """The m stop nearest ``x`` (``x`` clamped to the slider's ends first)."""
    x = min(max(float(x), MASS_OPTIONS[0]), MASS_OPTIONS[-1])
    return min(MASS_OPTIONS, key=lambda o: abs(o - x))


def parse_query(params: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Page state from the URL's (untrusted) values, and warnings for the ones refused, in
    the link's language (``lang``; English by default)."""
    p = {k: (v[-1] if isinstance(v, (list, tuple)) and v else v) for k, v in params.items()}
    out: dict[str, Any] = {}
    lang = str(p.get("lang", "en"))
    t = ui(lang if lang in LANGS else "en")
    warn: list[str] = []
    for key, name in URL_NAMES.items():
        if name not in p:
            continue
        raw = str(p[name])
        if key == "align_lang":
            if raw in LANGS:
                out[key] = raw
            else:
                warn.append(t["unknown_lang"].format(value=repr(raw[:20])))
        elif key in ("align_a", "align_b", "align_gold"):
            out[key] = valid_text(raw)[:settings.CONFIG.max_chars]
        elif key == "align_view":
            if raw in VIEWS:
                out[key] = raw
            else:
                warn.append(t["unknown_view"].format(value=repr(raw[:20])))
        elif key == "align_method":
            if raw in METHODS:
                out[key] = raw
            else:
                warn.append(t["unknown_method"].format(value=repr(raw[:30]),
                                                       default=DEFAULTS[key]))
        elif key == "align_lower":
            out[key] = raw.lower() in ("1", "true", "on", "yes")
        else:
            try:
                x = float(raw)
                if not np.isfinite(x):
                    raise ValueError
            except ValueError:
                warn.append(t["not_number"].format(name=name, value=repr(raw[:20])))
                continue
            if key == "align_threshold":
                out[key] = float(min(max(round(x, 2), 0.0), 0.99))
            elif key == "align_tau":
                out[key] = nearest(TAU_OPTIONS, max(x, 1e-6))
            else:
                out[key] = nearest_mass(x)
    if "align_method" in out and "align_threshold" not in out:
        out.update({k: v for k, v in method_defaults(out["align_method"]).items()
                    if k not in out})
    return out, warn


def to_query(state: Mapping[str, Any]) -> dict[str, str]:
    """The URL for the current state (the corpus file is never in it)."""
    q = {}
    for key, name in URL_NAMES.items():
        v = state.get(key, DEFAULTS[key])
        if key in ("align_tau",) and state.get("align_method") != "unbalanced":
            continue
        if key in ("align_mass",) and state.get("align_method") != "partial":
            continue
        if key == "align_threshold" and state.get("align_method") not in THRESHOLDED:
            continue
        q[name] = ("true" if v else "false") if isinstance(v, bool) else (
            f"{v:g}" if isinstance(v, float) else str(v))
    return q


def compare_link(text_a: str, text_b: str, lang: str = "en") -> str:
    """The main page's Compare view of a pair (its URL names ``a``, ``b``, ``view``), in
    the page's language (``lang``, left out for English)."""
    q = {"a": text_a, "b": text_b, "ex": "custom", "view": "compare"}
    return "./?" + urlencode({**q, "lang": lang} if lang != "en" else q)


# --------------------------------------------------------------------------- computing
@dataclass(frozen=True)
class PairResult:
    """One pair aligned by one method: links, unaligned words, the plan and the scores."""

    words_a: tuple[str, ...]
    words_b: tuple[str, ...]
    links: tuple[tuple[int, int], ...]
    null_a: tuple[int, ...]
    null_b: tuple[int, ...]
    plan: np.ndarray | None
    scores: dict | None
    pharaoh: str


SERVED_CHUNK = 256  # pairs per POST /v1/align (the served engine's limit)


def served_settings(method) -> dict:
    """A method's settings as ``POST /v1/align`` fields (it takes no others)."""
    d = method.to_dict()
    return {k: d[k] for k in ("method", "threshold", "tau", "mass", "eps") if k in d}


def served_align() -> bool:
    """Whether a served engine that has ``POST /v1/align`` computes the alignments."""
    return compute.served() and hasattr(compute.EngineClient, "align")


def model_name() -> str:
    m = st.session_state.get("model")
    try:
        return m if m in compute.model_names() else DEFAULT_MODEL
    except Exception:
        return DEFAULT_MODEL


@st.cache_data(show_spinner=False, max_entries=64)
def pair_scores(text_a: str, text_b: str, lowercase: bool, model: str
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Word scores S (n, m) of a pair and which words the model read (embedded engine).

    The only step that encodes text; every slider move reuses it.
    """
    from engine.alignment.api import score_corpus

    enc = compute.encoder(model)
    _one_thread()
    try:
        sc = score_corpus([(text_a, text_b)], encoder=enc, lowercase=lowercase)
    except TextError as e:
        unread = unread_of(e)
        if unread is None:
            raise
        raise UnreadText(unread[0][0][1]) from e
    return sc.S[0], sc.valid_a[0], sc.valid_b[0]


def _method(name: str, threshold: float, tau: float, mass: float):
    from engine.alignment.api import method_of

    m = method_of(name, "hidden")
    if name in THRESHOLDED:
        m = m.with_theta(float(threshold))
    over = {"tau": float(tau)} if name == "unbalanced" else {
        "mass": float(mass)} if name == "partial" else {}
    return method_of(m, **over)


def _softmax_rows(S: np.ndarray, valid: np.ndarray, temperature: float) -> np.ndarray:
    """softmax_j(S_ij / T) over each row's valid words (0 elsewhere)."""
    X = np.where(valid, S / temperature, -np.inf)
    mx = np.max(X, axis=-1, keepdims=True)
    E = np.where(valid, np.exp(X - np.where(np.isfinite(mx), mx, 0.0)), 0.0)
    Z = E.sum(-1, keepdims=True)
    return E / np.where(Z > 0, Z, 1.0)


def _one_thread() -> None:
    """torch's thread count in this script thread (OpenMP's setting is per thread, and each
    run is a new thread): with other work on the cores, 2 threads made small solves ~10×
    slower than 1."""
    if settings.CONFIG.torch_threads > 0:
        import torch

        if torch.get_num_threads() != settings.CONFIG.torch_threads:
            torch.set_num_threads(settings.CONFIG.torch_threads)


@st.cache_data(show_spinner=False, max_entries=256)
def method_values(text_a: str, text_b: str, method: str, tau: float, mass: float,
                  lowercase: bool, model: str) -> tuple[np.ndarray, np.ndarray]:
    """(V, shown) for a pair and a method: V (n, m) the values links are read from
    (V > θ; −1 where a word takes no part) and the matrix the left panel shows.

    One solve per method and τ (or m); a threshold move reuses it. Transport methods show
    their plan min-max scaled (what θ is compared with); argmax methods the matrix whose
    maxima they take.
    """
    from engine.alignment import extract

    S, va, vb = pair_scores(text_a, text_b, lowercase, model)
    for side, v in (("a", va), ("b", vb)):
        if not v.any():
            raise UnreadText(side)
    _one_thread()
    m = _method(method, 0.5, tau, mass)
    batch = extract.make_batch([S], [va], [vb])
    V = extract.values(m, batch)[0, 0].numpy().astype(np.float64)
    valid = np.outer(va, vb)
    if method == "softmax-argmax":
        shown = _softmax_rows(S, valid, m.temperature)
    elif method == "sinkhorn-argmax":
        shown = extract.plans(m, batch)[0, 0].numpy().astype(np.float64)
    else:
        shown = V
    return V, np.where(valid, shown, np.nan)


def _result(al, plan) -> PairResult:
    return PairResult(tuple(al.words_a), tuple(al.words_b), tuple(al.links), tuple(al.null_a),
                      tuple(al.null_b), plan, al.scores, al.pharaoh)


@st.cache_data(show_spinner=False, max_entries=256)
def align_pair(text_a: str, text_b: str, gold: str | None, method: str, threshold: float,
               tau: float, mass: float, lowercase: bool, model: str) -> PairResult:
    """One pair aligned by one method at these settings: links V > θ on the cached values
    (:func:`method_values`), unaligned words, and the scores when gold is given.

    Raises:
        SinkscopeError: empty or too long texts, gold links that do not fit the words.
    """
    from engine.alignment.readers import links_text, make_pair
    from engine.alignment.score import METRICS, metrics_from_counts, pair_counts

    m = _method(method, threshold, tau, mass)
    if served_align():
        al = compute.client(settings.CONFIG.engine).align(
            [(text_a, text_b, gold)], model=model, lowercase=lowercase, **served_settings(m))[0]
        return _result(al, None if al.values is None else np.where(
            al.values >= 0, al.values, np.nan))
    pair = make_pair(text_a, text_b, gold)
    if lowercase:
        pair = pair.lower()
    V, shown = method_values(text_a, text_b, method, float(tau), float(mass), lowercase, model)
    ii, jj = np.nonzero(V > m.theta)
    links = tuple((int(i), int(j)) for i, j in zip(ii, jj))
    n, k = V.shape
    la, lb = {i for i, _ in links}, {j for _, j in links}
    scores = None
    if pair.has_gold:
        per = metrics_from_counts(pair_counts(links, pair))
        scores = {name: float(per[name]) for name in METRICS}
    return PairResult(tuple(pair.words_a), tuple(pair.words_b), links,
                      tuple(i for i in range(n) if i not in la),
                      tuple(j for j in range(k) if j not in lb), shown, scores,
                      links_text(links))


def method_table(text_a: str, text_b: str, gold: str, chosen: str, threshold: float,
                 tau: float, mass: float, lowercase: bool, model: str) -> list[dict]:
    """Every method's scores for this pair (the chosen one at the sliders' settings)."""
    rows = []
    for name in METHODS:
        d = method_defaults(name)
        if name == chosen:
            d = {"align_threshold": threshold, "align_tau": tau, "align_mass": mass}
        r = align_pair(text_a, text_b, gold, name, d["align_threshold"], d["align_tau"],
                       d["align_mass"], lowercase, model)
        s = r.scores or {}
        rows.append({"method": name + (" ◀" if name == chosen else ""),
                     "links": len(r.links), "precision": s.get("precision"),
                     "recall": s.get("recall"), "F1": s.get("f1"), "AER": s.get("aer"),
                     "null F1": s.get("null_f1"), "total F1": s.get("total_f1")})
    return rows


@dataclass(frozen=True)
class Corpus:
    """A corpus aligned by every method.

    Attributes:
        key: the file's hash and settings. pairs: each pair as a dict (text_a, text_b,
        gold?). links: method → per pair Pharaoh text. f1: method → per pair F1 (None
        without gold). null_ratio: per pair, the share of words without a (gold, else
        predicted by the transport method) link. disagreement: per pair, 1 − Jaccard of the
        softmax and transport links. scores: method → {"macro", "micro", "macro_ci",
        "micro_ci"} over the pairs with gold (empty without gold).
    """

    key: str
    pairs: tuple[dict, ...]
    links: dict
    f1: dict
    null_ratio: tuple[float, ...]
    disagreement: tuple[float, ...]
    scores: dict
    n_gold: int


def read_file(raw: bytes, name: str, one_based: bool, t: dict) -> tuple:
    """Pairs from an uploaded file's bytes (checked: size, binary, format, pair count).

    Raises:
        SinkscopeError: with a message that says what to change.
    """
    from engine.alignment.readers import AlignFileError, decode, parse_pairs

    if len(raw) > MAX_UPLOAD_BYTES:
        raise AlignFileError(t["too_big"].format(
            size=align_live.decimal_text(len(raw) / 2**20, t.get("_lang", "en")),
            mb=MAX_UPLOAD_MB))
    text = decode(raw, name)
    pairs = parse_pairs(text, name=name, one_based=one_based)
    if len(pairs) > MAX_CORPUS_PAIRS:
        lang = t.get("_lang", "en")
        raise AlignFileError(t["too_many"].format(
            n=align_live.count_text(len(pairs), lang),
            limit=align_live.count_text(MAX_CORPUS_PAIRS, lang)))
    return pairs


def _jaccard_distance(x, y) -> float:
    x, y = set(x), set(y)
    return 0.0 if not (x | y) else 1.0 - len(x & y) / len(x | y)


def align_corpus(pairs, key: str, lowercase: bool, model: str, progress,
                 t: dict | None = None) -> Corpus:
    """Every pair by every method at its defaults; ``progress(share, text)`` reports, in
    the page's words ``t`` (English by default)."""
    from engine.alignment.api import extract_links, method_of, score_corpus
    from engine.alignment.readers import links_text
    from engine.alignment.score import score

    t = t or ui()
    total = len(pairs)
    als: dict[str, list] = {}
    if served_align():
        cl = compute.client(settings.CONFIG.engine)
        for k, name in enumerate(METHODS):
            progress(k / len(METHODS), t["extracting"].format(method=name))
            als[name] = [a for start in range(0, total, SERVED_CHUNK) for a in cl.align(
                list(pairs[start:start + SERVED_CHUNK]), model=model, values=False,
                lowercase=lowercase, **served_settings(method_of(name)))]
    else:
        enc = compute.encoder(model)
        _one_thread()

        def report(done: int, n: int) -> None:
            progress(0.8 * done / max(n, 1), t["computing"].format(done=done, total=n))

        try:
            scored = score_corpus(pairs, encoder=enc, lowercase=lowercase, progress=report)
        except TextError as e:
            unread = unread_of(e)
            if unread is None:
                raise
            ks = sorted({k for k, _ in unread[0]})
            raise TextError(t["unread_pairs"].format(
                pairs=", ".join(map(str, ks)) + (" …" if unread[1] else ""))) from e
        for k, name in enumerate(METHODS):
            progress(0.8 + 0.2 * k / len(METHODS), t["extracting"].format(method=name))
            als[name] = extract_links(scored, method_of(name))
    progress(1.0, t["extracting"].format(method="…"))
    gold_idx = [k for k, p in enumerate(pairs) if p.has_gold]
    scores = {}
    if gold_idx:
        gp = [pairs[k] for k in gold_idx]
        for name in METHODS:
            cs = score([als[name][k].links for k in gold_idx], gp, bootstrap=1000)
            scores[name] = {"macro": cs.macro, "micro": cs.micro, "macro_ci": cs.macro_ci,
                            "micro_ci": cs.micro_ci}
    null_ratio = []
    for k, p in enumerate(pairs):
        n, m = p.shape
        if p.has_gold:
            la = {i for i, _ in p.sure}
            lb = {j for _, j in p.sure}
            nulls = (n - len(la)) + (m - len(lb))
        else:
            al = als[TRANSPORT_METHOD][k]
            nulls = len(al.null_a) + len(al.null_b)
        null_ratio.append(nulls / max(n + m, 1))
    dis = tuple(_jaccard_distance(als[SOFTMAX_METHOD][k].links, als[TRANSPORT_METHOD][k].links)
                for k in range(total))
    return Corpus(key, tuple(p.to_dict() for p in pairs),
                  {name: tuple(links_text(a.links) for a in als[name]) for name in METHODS},
                  {name: tuple(None if a.scores is None else a.scores["f1"] for a in als[name])
                   for name in METHODS},
                  tuple(null_ratio), dis, scores, len(gold_idx))


def corpus_table(c: Corpus):
    """The corpus as a table: one row per pair (pandas DataFrame)."""
    import pandas as pd

    rows = []
    for k, p in enumerate(c.pairs):
        row = {"pair": k + 1, "text A": p["text_a"], "text B": p["text_b"],
               "gold": p.get("gold", "")}
        for name in METHODS:
            f = c.f1[name][k]
            row[f"F1 {name}"] = None if f is None else round(float(f), 4)
        row["null ratio"] = round(c.null_ratio[k], 4)
        row["disagreement"] = round(c.disagreement[k], 4)
        rows.append(row)
    return pd.DataFrame(rows)


def corpus_key(raw: bytes, name: str, lowercase: bool, one_based: bool, model: str) -> str:
    h = hashlib.sha256(raw).hexdigest()[:16]
    return f"{h}:{name}:{lowercase}:{one_based}:{model}:{settings.CONFIG.engine}"


def table_csv(df) -> bytes:
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    return buf.getvalue().encode("utf-8")


def links_file(c: Corpus, method: str) -> bytes:
    """The predicted links of ``method``, one line per pair in input order (0-based)."""
    return ("\n".join(c.links[method]) + "\n").encode("utf-8")


def most_disagreeing(c: Corpus, k: int = 3) -> list[int]:
    """1-based numbers of the pairs where softmax and transport disagree most."""
    order = sorted(range(len(c.pairs)), key=lambda t: (-c.disagreement[t], t))
    return [t + 1 for t in order[:k] if c.disagreement[t] > 0]


# --------------------------------------------------------------------------- the views
def on_method() -> None:
    """A new method starts from its own defaults (θ, τ, m)."""
    st.session_state.update(method_defaults(st.session_state["align_method"]))


def _words_line(words: list[str]) -> str:
    return " · ".join(f"{k} {w}" for k, w in enumerate(words))


def _fmt(x, lang: str = "en") -> str:
    """A score with three decimals in ``lang``'s decimal mark; "–" for none."""
    return "–" if x is None else align_live.decimal_text(x, lang, 3)


def pair_view(t: dict, theme: str) -> None:
    """The Pair view: texts, gold, method and sliders; matrix, graph and scores.

    θ and τ (or m) are live sliders (:mod:`.align_live`) when the method has a threshold
    and the pair fits the budget: the browser redraws the links, both figures and this
    pair's scores while they move, from the values computed here at every slider stop, and
    the release sends the value back (URL, table). Otherwise Streamlit's sliders recompute
    on release, with a note that says why.
    """
    import viz.align as va
    from engine.alignment.readers import AlignFileError, make_pair
    from sinkscope_app import align_live

    ss = st.session_state
    for key, name in (("align_a", t["text_a"]), ("align_b", t["text_b"])):
        text = valid_text(ss.get(key))
        limit = settings.CONFIG.max_chars
        if len(text) > limit:
            lang = t.get("_lang", "en")
            st.warning(t["text_cut"].format(name=name, n=align_live.count_text(len(text), lang),
                                            kept=align_live.count_text(limit, lang)))
            text = text[:limit]
        if ss.get(key) != text:
            ss[key] = text
    left, right = st.columns(2)
    left.text_area(t["text_a"], key="align_a", height=80)
    right.text_area(t["text_b"], key="align_b", height=80)
    st.text_input(t["gold"], key="align_gold", help=t["gold_help"])
    c1, c2 = st.columns([2, 6])
    c1.selectbox(t["method"], METHODS, key="align_method", on_change=on_method)
    method = ss["align_method"]
    slot = c2.container()

    text_a, text_b = ss["align_a"], ss["align_b"]
    lower = bool(ss["align_lower"])
    if not text_a.strip() or not text_b.strip():
        server_sliders(slot, t, method)
        st.info(t["empty"])
        return
    gold = ss.get("align_gold", "").strip() or None
    try:
        make_pair(text_a, text_b, where="these texts")
    except AlignFileError as e:
        server_sliders(slot, t, method)
        st.warning(t["bad_text"].format(error=md_text(file_error(e, t), 400)))
        return
    pair = None
    if gold is not None:
        try:
            pair = make_pair(text_a, text_b, gold, where="gold")
        except AlignFileError as e:
            st.warning(t["bad_gold"].format(error=md_text(file_error(e, t), 400)))
            gold = None
    shown_a = (text_a.lower() if lower else text_a).split()
    shown_b = (text_b.lower() if lower else text_b).split()
    st.text(t["tokenisation"].format(lower=t["lower_on"] if lower else "")
            + "\nA: " + _words_line(shown_a) + "\nB: " + _words_line(shown_b))
    model = model_name()
    words = align_live.words_of(t)
    threshold, tau, mass = (float(ss["align_threshold"]), float(ss["align_tau"]),
                            float(ss["align_mass"]))
    try:
        with st.spinner():
            payload, data, note = live_payload(text_a, text_b, gold, method, lower, model,
                                               words, lang=t.get("_lang", "en"))
            if payload is None:
                r = align_pair(text_a, text_b, gold, method, threshold, tau, mass, lower,
                               model)
    except TextError as e:
        server_sliders(slot, t, method)
        st.warning(t["bad_text"].format(error=md_text(unread_message(e, t), 400)))
        return
    sure = possible = None
    if pair is not None:
        sure, possible = sorted(pair.sure), sorted(pair.possible)
    if payload is None:  # Streamlit's sliders: a release recomputes here
        server_sliders(slot, t, method, note)
        bind = None
    else:
        value = {"tau": tau, "mass": mass}.get(payload.grid_key)
        g, k = payload.grid_index(value), payload.theta_index(threshold)
        r = live_result(payload, g, k, text_a, text_b, gold, lower)
        with slot:
            align_live.controls(
                key="align_live", payload=payload, theta=threshold, grid_value=value,
                words=words, style=align_live.style_of(len(r.words_a), len(r.words_b), theme,
                                                       t.get("figure"), t["_lang"]),
                note="", lines={"scores": align_live.scores_line(words, method, r.scores),
                                "links": align_live.links_line(words, r.links)},
                on_change=on_live)
        bind = {"align": payload.id, "theta": align_live.THETA_STOPS[k],
                "grid": payload.grid[g] if payload.grid else None}
    fig = va.matrix(r.words_a, r.words_b, r.links, plan=r.plan,
                    plan_title=t["plan_title"][method], sure=sure, possible=possible,
                    method=method, title=t["links_title"].format(method=method), theme=theme,
                    words=t.get("figure"), num=numbers(t["_lang"]))
    _chart(fig, "align_matrix", bind and {**bind, "chart": "matrix"}, t)
    if bind is None:
        if r.scores:
            st.markdown("**" + t["pair_scores"].format(
                method=method, **{k: _fmt(r.scores.get(k), t.get("_lang", "en")) for k in
                                  ("f1", "aer", "null_f1", "total_f1")}) + "**")
        st.text(t["links_line"].format(links=r.pharaoh or "∅"))
    g_col, s_col = st.columns([2, 3])
    with g_col:
        _chart(va.graph(r.words_a, r.words_b, r.links, sure=sure, possible=possible,
                        theme=theme, words=t.get("figure")), "align_graph",
               bind and {**bind, "chart": "graph"}, t)
    if pair is not None:
        s_col.caption(t["scores"])
        rows = method_table(text_a, text_b, gold, method, threshold, tau, mass, lower, model)
        if payload is not None:  # the chosen method's row is what the browser showed
            rows = [live_row(row, r) if row["method"].endswith(" ◀") else row for row in rows]
        s_col.dataframe(shown_rows(rows, t), key="align_pair_scores", hide_index=True,
                        width="stretch", column_config=_number_columns(rows[0], t))
    else:
        s_col.info(t["scores_none"])
    if payload is not None:
        align_live.payload_element(payload, data)
    # a new tab with a fresh session: the main page reads its state from the address
    st.link_button(t["open_compare"], compare_link(text_a, text_b, t.get("_lang", "en")),
                   icon=":material/compare:")


def server_sliders(slot, t: dict, method: str, note: str = "") -> None:
    """Streamlit's θ and τ (or m) sliders: each release reruns the page (the fallback of
    the live sliders)."""
    c2, c3 = slot.columns([3, 3])
    if method in THRESHOLDED:
        c2.slider(t["threshold"], 0.0, 0.99, step=0.01, key="align_threshold",
                  help=t["threshold_help"])
    else:
        c2.caption(t["threshold_none"].format(method=method))
    if method == "unbalanced":
        c3.select_slider(t["tau"], TAU_OPTIONS, key="align_tau")
    elif method == "partial":
        c3.select_slider(t["mass"], MASS_OPTIONS, key="align_mass", help=t["mass_help"])
    if note:
        slot.caption(note)


@st.cache_data(show_spinner=False, max_entries=16)
def _payload(text_a: str, text_b: str, gold: str | None, method: str, lowercase: bool,
             model: str):
    """(payload, its bytes) of a pair and a method: V at every slider stop, one solve."""
    from engine.alignment.api import method_of
    from engine.alignment.readers import make_pair
    from sinkscope_app import align_live

    S, va_, vb_ = pair_scores(text_a, text_b, lowercase, model)
    for side, v in (("a", va_), ("b", vb_)):
        if not v.any():
            raise UnreadText(side)
    pair = make_pair(text_a, text_b, gold)
    if lowercase:
        pair = pair.lower()
    _one_thread()
    key, grid = align_live.grid_of(method, TAU_OPTIONS, MASS_OPTIONS)
    p = align_live.build(S, va_, vb_, method_of(method, "hidden"), pair, grid_key=key,
                         grid=grid, id_=align_live.payload_id(model, text_a, text_b, gold,
                                                              method, lowercase))
    return p, p.encode()


def live_payload(text_a: str, text_b: str, gold: str | None, method: str, lowercase: bool,
                 model: str, words: dict, *, lang: str = "en") -> tuple:
    """(payload, bytes, "") when the sliders can be live, else (None, None, why), its
    numbers as ``lang`` writes them."""
    from sinkscope_app import align_live

    cfg = settings.CONFIG
    if method not in THRESHOLDED:
        return None, None, ""
    if served_align():
        return None, None, words["live_off_served"]
    key, grid = align_live.grid_of(method, TAU_OPTIONS, MASS_OPTIONS)
    n, m = (len((x.lower() if lowercase else x).split()) for x in (text_a, text_b))
    note = align_live.too_large(n, m, len(grid), max_cells=cfg.live_max_cells,
                                max_bytes=cfg.live_max_bytes, words=words, lang=lang)
    if note:
        return None, None, note
    p, data = _payload(text_a, text_b, gold, method, lowercase, model)
    return p, data, ""


def live_result(p, g: int, k: int, text_a: str, text_b: str, gold: str | None,
                lowercase: bool) -> PairResult:
    """The pair at grid stop g and θ stop k, read from the payload (what the browser shows)."""
    from engine.alignment.readers import links_text, make_pair
    from sinkscope_app import align_live

    pair = make_pair(text_a, text_b, gold)
    if lowercase:
        pair = pair.lower()
    links = p.links(g, k)
    n, m = p.shape
    la, lb = {i for i, _ in links}, {j for _, j in links}
    return PairResult(tuple(pair.words_a), tuple(pair.words_b), links,
                      tuple(i for i in range(n) if i not in la),
                      tuple(j for j in range(m) if j not in lb), p.plan(g),
                      align_live.scores(links, pair), links_text(links))


def live_row(row: dict, r: PairResult) -> dict:
    """The table's row of the chosen method with the live result's numbers."""
    s = r.scores or {}
    return {**row, "links": len(r.links), "precision": s.get("precision"),
            "recall": s.get("recall"), "F1": s.get("f1"), "AER": s.get("aer"),
            "null F1": s.get("null_f1"), "total F1": s.get("total_f1")}


def on_live() -> None:
    """A live slider was released on new values: keep them (URL, table follow)."""
    from sinkscope_app import align_live

    ss = st.session_state
    key, grid = align_live.grid_of(ss.get("align_method"), TAU_OPTIONS, MASS_OPTIONS)
    v = align_live.parse_choice(ss.get("align_live"), grid)
    if v is None:
        return
    ss["align_threshold"] = v[0]
    if key and v[1] is not None:
        ss["align_" + key] = v[1]


def _chart(fig, key: str, bind: dict | None, t: dict) -> None:
    """A figure of the Pair view: a live chart the sliders redraw (bind), else Streamlit's."""
    if bind is None:
        st.plotly_chart(fig, key=key, width="stretch")
        return
    from viz.theme import plotly_config

    from .live import chart

    chart(fig, key=key, config=plotly_config("png", key), bind=bind,
          failed=t["chart_failed"])


def _number_columns(row: Mapping[str, Any], t: dict) -> dict:
    """Three decimals for the float columns of ``row`` (English keys), by shown name."""
    names = column_names(t, row)
    return {names[k]: st.column_config.NumberColumn(names[k], format="%.3f")
            for k, v in row.items()
            if k not in ("method", "links", "pair", "text A", "text B", "gold")
            and (v is None or isinstance(v, float))}


def open_row(c: Corpus, event) -> bool:
    """A row click opens that pair in the Pair view; True when it did (rerun then).

    The same selection is acted on once, so coming back to the table does not reopen it.
    """
    ss = st.session_state
    try:
        rows = [int(r) for r in event["selection"]["rows"]]
    except (KeyError, TypeError, ValueError):
        rows = []
    mark = (c.key, tuple(rows))
    if not rows or ss.get("_align_row_done") == mark or not 0 <= rows[0] < len(c.pairs):
        return False
    ss["_align_row_done"] = mark
    k = rows[0]
    p = c.pairs[k]
    # applied by the page before its widgets are drawn (see :func:`apply_pending`)
    ss["_align_pending"] = {"align_a": p["text_a"], "align_b": p["text_b"],
                            "align_gold": p.get("gold", ""), "align_view": "pair",
                            "_align_opened": k + 1}
    return True


def apply_pending() -> None:
    """State set by the last run for this one (a row opened), before any widget exists."""
    st.session_state.update(st.session_state.pop("_align_pending", None) or {})


def corpus_view(t: dict, theme: str) -> None:
    """The Corpus view: upload, align every pair, table, scores, exports."""
    import viz.align as va
    from engine.alignment.readers import AlignFileError

    ss = st.session_state
    f = st.file_uploader(t["upload"], key="align_file", max_upload_size=MAX_UPLOAD_MB,
                         help=t["upload_help"].format(mb=MAX_UPLOAD_MB,
                                                      pairs=align_live.count_text(
                                                          MAX_CORPUS_PAIRS, t.get("_lang", "en"))))
    st.checkbox(t["one_based"], key="align_one_based")
    if f is None:
        st.info(t["no_file"])
        return
    raw = f.getvalue()
    lower, one_based = bool(ss["align_lower"]), bool(ss.get("align_one_based"))
    model = model_name()
    key = corpus_key(raw, f.name, lower, one_based, model)
    c = ss.get("_align_corpus")
    if c is None or c.key != key:
        try:
            pairs = read_file(raw, f.name, one_based, t)
        except (AlignFileError, SinkscopeError) as e:
            st.error(t["bad_file"].format(error=md_text(file_error(e, t), 400)))
            return
        bar = st.progress(0.0, text=t["computing"].format(done=0, total=2 * len(pairs)))
        try:
            c = align_corpus(pairs, key, lower, model,
                             lambda share, text: bar.progress(float(min(max(share, 0), 1)),
                                                              text=text), t)
        except SinkscopeError as e:
            st.error(t["bad_file"].format(error=md_text(str(e), 400)))
            return
        finally:
            bar.empty()
        ss["_align_corpus"] = c
    if served_align():
        st.caption(t["served_note"].format(url=settings.CONFIG.engine))
    st.success(t["corpus_done"].format(n=len(c.pairs), gold=c.n_gold, k=len(METHODS)))
    st.caption(t["corpus_tokens"].format(base="1" if one_based else "0",
                                         lower=t["lower_on"] if lower else ""))
    df = corpus_table(c)  # English column names: the CSV export's
    names = column_names(t, df.columns)
    st.caption(t["table_help"])
    event = st.dataframe(df.rename(columns=names), key="align_table", on_select="rerun",
                 selection_mode="single-row", hide_index=True, width="stretch",
                 column_config=_number_columns(df.iloc[0].to_dict() | {
                     f"F1 {m}": None for m in METHODS} | {"null ratio": None,
                                                          "disagreement": None}, t) | {
                     names[k]: st.column_config.TextColumn(names[k], width=w)
                     for k, w in (("text A", "medium"), ("text B", "medium"),
                                  ("gold", "small"))},
                 column_order=[names[k] for k in (
                     "pair", "text A", "text B", "disagreement", "null ratio",
                     *[f"F1 {m}" for m in METHODS], "gold")])
    if open_row(c, event):
        st.rerun()
    worst = most_disagreeing(c)
    if worst:
        st.caption(t["disagree"].format(soft=SOFTMAX_METHOD, ot=TRANSPORT_METHOD,
                                        pairs=", ".join(map(str, worst))))
    d1, d2, d3 = st.columns([2, 2, 3])
    d1.download_button(t["export_csv"], table_csv(df), file_name="alignments.csv",
                       mime="text/csv", key="align_csv")
    d3.selectbox(t["method"], METHODS, key="align_method", on_change=on_method)
    d2.download_button(t["export_links"].format(method=ss["align_method"]),
                       links_file(c, ss["align_method"]),
                       file_name=f"links-{ss['align_method']}.txt", mime="text/plain",
                       key="align_links")
    if not c.scores:
        st.info(t["no_gold"])
        return
    st.markdown("**" + t["corpus_scores"] + "**")
    lang = t.get("_lang", "en")
    rows = []
    for name in METHODS:
        s = c.scores[name]
        row = {"method": name}
        for metric, label in (("precision", "precision"), ("recall", "recall"), ("f1", "F1"),
                              ("aer", "AER"), ("null_f1", "null F1"),
                              ("total_f1", "total F1")):
            lo, hi = s["macro_ci"].get(metric, (None, None))
            row[label] = s["macro"][metric]
            if metric in ("f1", "total_f1", "aer"):
                row[f"{label} 95 %"] = "–" if lo is None else (
                    f"{_fmt(lo, lang)} – {_fmt(hi, lang)}")
        row["micro F1"] = s["micro"]["f1"]
        row["micro AER"] = s["micro"]["aer"]
        rows.append(row)
    st.dataframe(shown_rows(rows, t), key="align_corpus_scores", hide_index=True,
                 width="stretch", column_config=_number_columns(rows[0], t))
    st.plotly_chart(va.corpus_scores({m: c.scores[m]["macro"] for m in METHODS},
                                     {m: c.scores[m]["macro_ci"] for m in METHODS},
                                     theme=theme, words=t.get("figure"),
                                     num=numbers(t["_lang"])),
                    key="align_corpus_chart", width="stretch")
