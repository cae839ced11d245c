"""``align``, ``align_pairs``, ``score`` and ``tune``: word alignments from the engine's
relations, scored on gold, tuned on a dev corpus.

Data flow: pairs → :mod:`~engine.alignment.sources` (scores S between whitespace words) →
:mod:`~engine.alignment.extract` (plans, values V, links V > θ) →
:mod:`~engine.alignment.score` (metrics). Pairs are solved in padded batches of similar size;
a grid of thresholds costs one histogram per plan and a grid of τ (or m) one more batch
dimension of the solver.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

import numpy as np

from ..errors import SettingsError, TextError
from . import extract
from .extract import GRID, MASS_GRID, METHODS, TAU_GRID, Method
from .methods import (DEFAULT_METHOD, DEFAULTS, PAIR_METHOD, Alignment,  # noqa: F401
                      method_of, opening)
from .readers import Pair, links_text, make_pair
from .score import COUNTS, METRICS, CorpusScore, corpus_score, macro_from_metrics, \
    metrics_from_counts, pair_counts, score
from .sources import Source, corpus_mean, encode_words, scores as source_scores

if TYPE_CHECKING:
    from .verdict import Verdict

#: Defaults found best by ``python -m benchmarks.align`` on the development sets
#: (see docs/align.md): the source, its layer, and each method's settings.
DEFAULT_SOURCE = Source("hidden", layer=3, head="mean", center=False)
DEFAULT_ATTENTION_LAYER = 2
#: Entries (τ values × pairs × n × m) per solver call: on this CPU a call of ~150k entries
#: ran about 3× faster per entry than one of 720k (it stays in cache).
MAX_CHUNK_ELEMENTS = 150_000


@dataclass(frozen=True)
class Scored:
    """Word scores of a corpus, ready for any method: S per pair and which words count.

    Attributes:
        pairs: the pairs. S: per pair (n, m) scores. valid_a, valid_b: per pair bool masks.
        source: the :class:`Source` used.
    """

    pairs: tuple[Pair, ...]
    S: tuple[np.ndarray, ...]
    valid_a: tuple[np.ndarray, ...]
    valid_b: tuple[np.ndarray, ...]
    source: Source


@dataclass(frozen=True)
class Tuning:
    """Each method's settings picked on dev by total F1, with dev (and test) scores.

    Attributes:
        settings: method name → the chosen :class:`Method`.
        dev: method name → :class:`CorpusScore` on dev at those settings.
        test: method name → :class:`CorpusScore` on test, or None when no test was given.
        source: the :class:`Source` used.
    """

    settings: dict
    dev: dict
    test: dict | None
    source: Source

    def to_dict(self) -> dict:
        return {"source": self.source.to_dict(),
                "settings": {k: v.to_dict() for k, v in self.settings.items()},
                "dev": {k: v.to_dict() for k, v in self.dev.items()},
                "test": None if self.test is None else
                {k: v.to_dict() for k, v in self.test.items()}}


def as_pairs(pairs: Iterable) -> tuple[Pair, ...]:
    """Pairs from :class:`Pair` s, ``(text_a, text_b[, gold])`` tuples or dicts with
    ``text_a``, ``text_b`` and optional ``gold`` (Pharaoh)."""
    out = []
    for k, p in enumerate(pairs, 1):
        if isinstance(p, Pair):
            out.append(p)
        elif isinstance(p, dict):
            if "text_a" not in p or "text_b" not in p:
                raise SettingsError(f"pair {k} needs text_a and text_b.")
            out.append(make_pair(p["text_a"], p["text_b"], p.get("gold"), where=f"pair {k}"))
        elif isinstance(p, (tuple, list)) and len(p) in (2, 3):
            out.append(make_pair(*p, where=f"pair {k}"))
        else:
            raise SettingsError(f"pair {k} must be a Pair, a dict with text_a and text_b, or "
                                "a (text_a, text_b[, gold]) tuple.")
    if not out:
        raise SettingsError("There are no pairs; give at least one.")
    return tuple(out)


def score_corpus(pairs: Sequence, *, encoder=None, source: Source = DEFAULT_SOURCE,
                 lowercase: bool = False, batch_size: int = 32,
                 progress: Callable[[int, int], None] | None = None) -> Scored:
    """Word scores S of every pair (one padded forward pass per ``batch_size`` texts)."""
    pairs = as_pairs(pairs)
    if lowercase:
        pairs = tuple(p.lower() for p in pairs)
    if encoder is None:
        from ..relation.relate import default_encoder

        encoder = default_encoder()
    source = source.check(encoder.n_layers, encoder.n_heads)
    texts = [t for p in pairs for t in (p.text_a, p.text_b)]
    words = encode_words(texts, encoder, keep=source, batch_size=batch_size,
                         progress=progress)
    unread = [(k + 1, "ab"[side]) for k in range(len(pairs)) for side in (0, 1)
              if not words[2 * k + side].valid.any()]
    if unread:  # (pair number, "a" or "b") of each text: a page names them in its words
        raise TextError.of("unread_pairs", pairs=unread)
    mu = corpus_mean(words, 0) if source.kind == "hidden" and source.center else None
    S, va, vb = [], [], []
    for k in range(len(pairs)):
        wa, wb = words[2 * k], words[2 * k + 1]
        S.append(source_scores(source, wa, wb, layer_index=0, mu=mu))
        va.append(wa.valid)
        vb.append(wb.valid)
    return Scored(pairs, tuple(S), tuple(va), tuple(vb), source)


def _chunks(shapes: Sequence[tuple[int, int]], T: int = 1) -> list[list[int]]:
    """Pair indices in chunks of similar size, each under MAX_CHUNK_ELEMENTS (× T)."""
    order = sorted(range(len(shapes)), key=lambda k: (shapes[k][0] * shapes[k][1], k))
    chunks, cur, n, m = [], [], 0, 0
    for k in order:
        n2, m2 = max(n, shapes[k][0]), max(m, shapes[k][1])
        if cur and T * (len(cur) + 1) * n2 * m2 > MAX_CHUNK_ELEMENTS:
            chunks.append(cur)
            cur, n2, m2 = [], shapes[k][0], shapes[k][1]
        cur.append(k)
        n, m = n2, m2
    if cur:
        chunks.append(cur)
    return chunks


def _batch(scored: Scored, idx: Sequence[int], gold: bool = True) -> extract.Batch:
    return extract.make_batch([scored.S[k] for k in idx], [scored.valid_a[k] for k in idx],
                              [scored.valid_b[k] for k in idx],
                              [(scored.pairs[k].sure, scored.pairs[k].possible)
                               if gold and scored.pairs[k].has_gold else None for k in idx])


@dataclass(frozen=True)
class Extracted:
    """One method's links on a corpus.

    Attributes:
        method: its settings. alignments: one :class:`Alignment` per pair, in input order.
        counts: (N, 7) per-pair counts against gold (:data:`~engine.alignment.score.COUNTS`;
            meaningful for the pairs with gold only).
    """

    method: Method
    alignments: tuple[Alignment, ...]
    counts: np.ndarray = field(repr=False)


def extract_methods(scored: Scored, settings: dict[str, Method], *, values: bool = True,
                    null_gold: str = "sure", device=None) -> dict[str, Extracted]:
    """Links of every pair by several methods (label → :class:`Method`), in input order.

    Pairs are solved in padded batches of similar size; each batch is built once for all
    the methods, methods that share a plan solve it once (``sinkhorn-argmax`` and
    ``sinkhorn-threshold``), and every pair's counts against its gold come from the batch
    at once. ``values=False`` leaves out each pair's value matrix (less memory).
    """
    N = len(scored.pairs)
    out = {k: ([None] * N, np.zeros((N, len(COUNTS)), np.int64)) for k in settings}
    shapes = [s.shape for s in scored.S]
    for idx in _chunks(shapes):
        batch = _batch(scored, idx)
        cache: dict = {}
        for label, method in settings.items():
            V = extract.values(method, batch, device=device, cache=cache)[0]
            links = extract.links_of(V, method.theta, batch.shapes)
            counts = extract.link_counts(V, method.theta, batch, null_gold).numpy()
            per = metrics_from_counts(counts)
            rows = np.stack([per[name] for name in METRICS], -1).tolist()
            als, cs = out[label]
            cs[idx] = counts
            for pos, k in enumerate(idx):
                als[k] = _alignment(scored, k, method, links[pos],
                                    V[pos] if values else None,
                                    dict(zip(METRICS, rows[pos]))
                                    if scored.pairs[k].has_gold else None)
    return {k: Extracted(settings[k], tuple(als), cs) for k, (als, cs) in out.items()}


def _alignment(scored: Scored, k: int, method: Method, links, V, scores) -> Alignment:
    p = scored.pairs[k]
    n, m = scored.S[k].shape
    la, lb = {i for i, _ in links}, {j for _, j in links}
    return Alignment(tuple(p.words_a), tuple(p.words_b), links,
                     tuple(i for i in range(n) if i not in la),
                     tuple(j for j in range(m) if j not in lb),
                     method.to_dict(), scored.source.to_dict(),
                     None if V is None else V[:n, :m].numpy().copy(), scores)


def extract_links(scored: Scored, method: Method, *, null_gold: str = "sure",
                  device=None) -> list[Alignment]:
    """Links of every pair by one method, in input order (pairs solved in batches on
    ``device``, the CPU by default)."""
    return list(extract_methods(scored, {method.name: method}, null_gold=null_gold,
                                device=device)[method.name].alignments)


def align_pairs(pairs: Sequence, *, method: str | Method = DEFAULT_METHOD,
                source: str | Source | None = None, layer: int | None = None,
                head: int | str | None = None, center: bool | None = None,
                threshold: float | None = None, tau: float | None = None,
                mass: float | None = None, eps: float | None = None,
                lowercase: bool = False, encoder=None, batch_size: int = 32,
                progress: Callable[[int, int], None] | None = None,
                device=None) -> list[Alignment]:
    """Align many pairs in batches; one :class:`Alignment` per pair, in input order.

    Args:
        pairs: :class:`Pair` s, dicts ``{"text_a", "text_b", "gold"?}`` or tuples.
        method: a name of :data:`METHODS` (its defaults) or a :class:`Method`.
        source, layer, head, center: what relates the words (:class:`Source`); the
            benchmark's best by default.
        threshold, tau, mass, eps: override the method's settings.
        lowercase: lower-case the texts first (the gold sets' convention).
        device: where the transport is solved ("cuda" on a GPU replica); CPU by default.

    Returns:
        JSON-friendly results (``Alignment.to_dict`` / ``from_dict``); pairs with gold
        carry their scores.
    """
    src = source_of(source, layer, head, center)
    m = method_of(method, src.kind, threshold=threshold, tau=tau, mass=mass, eps=eps)
    scored = score_corpus(pairs, encoder=encoder, source=src, lowercase=lowercase,
                          batch_size=batch_size, progress=progress)
    return extract_links(scored, m, device=device)


def source_of(source: str | Source | None = None, layer=None, head=None, center=None) -> Source:
    """A :class:`Source` from a name or a Source, with layer/head/center replaced."""
    if isinstance(source, Source):
        base = source
    elif source is None:
        base = DEFAULT_SOURCE
    elif source in ("attention", "hidden"):
        base = DEFAULT_SOURCE if source == DEFAULT_SOURCE.kind else Source(
            source, layer=DEFAULT_ATTENTION_LAYER if source == "attention" else 3)
    else:
        raise SettingsError(f"source must be 'attention' or 'hidden', got {source!r}.")
    over = {k: v for k, v in (("layer", layer), ("head", head), ("center", center))
            if v is not None}
    return replace(base, **over) if over else base



def align(text_a: str, text_b: str, *, gold: str | None = None,
          method: str | Method = DEFAULT_METHOD, **kw) -> Alignment:
    """Align the words of two texts (see :func:`align_pairs` for the settings).

    ``gold``: Pharaoh links (0-based, ``ipj`` possible) to score this pair against.
    """
    return align_pairs([make_pair(text_a, text_b, gold)], method=method, **kw)[0]


def grid_of(method: Method) -> tuple:
    """The values of τ or m tuned beside θ (the method's own value when none)."""
    return {"unbalanced": TAU_GRID, "partial": MASS_GRID}.get(method.name, (None,))


@dataclass(frozen=True)
class GridResult:
    """Per-fold sums over a method's grid: sums of per-pair metrics (K, T, G, 10), counts
    (K, T, G, 7) and pairs per fold (K,). T: τ/m values; G: thresholds θ_k = k/GRID."""

    method: Method
    grid: tuple
    metric_sums: np.ndarray
    count_sums: np.ndarray
    n_pairs: np.ndarray


def evaluate_grid(scored: Scored, method: str | Method, *, folds: np.ndarray | None = None,
                  grid: Sequence | None = None, null_gold: str = "sure",
                  device=None) -> GridResult:
    """Every (τ or m, θ) setting of a method on every pair with gold, in batched solves.

    Args:
        folds: (N,) fold of each pair (0 … K−1) for cross-validation; one fold by default.
        grid: τ or m values (the method's grid by default).
        device: where the plans are solved (the CPU by default).
    """
    m = method_of(method, scored.source.kind)
    grid = tuple(grid) if grid is not None else grid_of(m)
    N = len(scored.pairs)
    folds = np.zeros(N, dtype=np.int64) if folds is None else np.asarray(folds, np.int64)
    K = int(folds.max()) + 1
    T = len(grid)
    msum = np.zeros((K, T, GRID, len(METRICS)))
    csum = np.zeros((K, T, GRID, len(COUNTS)), dtype=np.int64)
    shapes = [s.shape for s in scored.S]
    for idx in _chunks(shapes, T if grid != (None,) else 1):
        batch = _batch(scored, idx)
        V = extract.values(m, batch, None if grid == (None,) else grid, device=device)
        c = extract.grid_counts(V, batch, null_gold).numpy()  # (T, n, G, 7)
        per = metrics_from_counts(c)
        f = folds[idx]
        for k in np.unique(f):
            sel = f == k
            msum[k] += np.stack([per[name][:, sel].sum(1) for name in METRICS], -1)
            csum[k] += c[:, sel].sum(1)
    return GridResult(m, grid, msum, csum, np.bincount(folds, minlength=K))


def _best(metric_sums: np.ndarray, n: int, method: Method) -> tuple[int, int]:
    """(t, g) of the best macro total F1 from summed per-pair metrics (T, G, 10)."""
    mean = metric_sums / max(n, 1)
    i_p, i_r = METRICS.index("total_precision"), METRICS.index("total_recall")
    p, r = mean[..., i_p], mean[..., i_r]
    f = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1), 0)
    if method.name not in extract.THRESHOLDED:  # no threshold: θ = 0.5 on a 0/1 mask
        g = GRID // 2
        return int(np.argmax(f[:, g])), g
    t, g = np.unravel_index(int(np.argmax(f)), f.shape)
    return int(t), int(g)


def setting_at(res: GridResult, t: int, g: int) -> Method:
    m = res.method.with_theta(g / GRID)
    v = res.grid[t]
    if v is not None:
        m = replace(m, **{m.grid_param: float(v)})
    return m


def macro_at(metric_sums: np.ndarray, n: int) -> dict:
    """Macro metrics (OTAlign's averaging) from summed per-pair metrics (10,)."""
    mean = {name: metric_sums[..., i] / max(n, 1) for i, name in enumerate(METRICS)}
    return {k: float(v) for k, v in macro_from_metrics(
        {k: np.asarray(v)[None] for k, v in mean.items()}).items()}


def cross_validate(res: GridResult) -> tuple[dict, dict, list[Method]]:
    """K-fold cross-validation on a grid: each fold scored at the setting best on the
    others. Returns (macro metrics, micro metrics, the setting picked per fold)."""
    K = len(res.n_pairs)
    msum = np.zeros(len(METRICS))
    csum = np.zeros(len(COUNTS), dtype=np.int64)
    picked = []
    for k in range(K):
        train = res.metric_sums.sum(0) - res.metric_sums[k] if K > 1 else res.metric_sums[0]
        ntrain = res.n_pairs.sum() - res.n_pairs[k] if K > 1 else res.n_pairs[0]
        t, g = _best(train, int(ntrain), res.method)
        picked.append(setting_at(res, t, g))
        msum += res.metric_sums[k, t, g]
        csum += res.count_sums[k, t, g]
    micro = {k: float(v) for k, v in metrics_from_counts(csum).items()}
    return macro_at(msum, int(res.n_pairs.sum())), micro, picked


def tune(dev: Sequence, test: Sequence | None = None, *,
         methods: Sequence[str] = METHODS, source: str | Source | None = None,
         layer: int | None = None, head=None, center: bool | None = None,
         lowercase: bool = False, encoder=None, null_gold: str = "sure",
         bootstrap: int = 1000, batch_size: int = 32,
         progress: Callable[[int, int], None] | None = None) -> Tuning:
    """Pick each method's threshold (and τ for ``unbalanced``, m for ``partial``) on dev by
    macro total F1, then score dev and test with those settings.

    The grid is θ ∈ {0, 0.01, …, 0.99} on V (for ``softmax-both`` t ∈ [10⁻⁴, 1] on a log
    scale) × :data:`TAU_GRID` (50 values) or :data:`MASS_GRID` (OTAlign's 50 values k/51,
    without the balanced m = 1); a τ grid over a corpus is a
    few batched solves. Methods without settings are scored as they are.

    Args:
        dev: pairs with gold (see :func:`as_pairs`); test: pairs with gold, or None.
        methods: which methods to tune. Other arguments as :func:`align_pairs`.

    Returns:
        A :class:`Tuning`.
    """
    dev_p = as_pairs(dev)
    if not all(p.has_gold for p in dev_p):
        raise SettingsError("Tuning needs gold for every dev pair.")
    src = source_of(source, layer, head, center)
    sd = score_corpus(dev_p, encoder=encoder, source=src, lowercase=lowercase,
                      batch_size=batch_size, progress=progress)
    st = None
    if test is not None:
        st = score_corpus(test, encoder=encoder, source=src, lowercase=lowercase,
                          batch_size=batch_size, progress=progress)
    return tune_scored(sd, st, methods=methods, null_gold=null_gold, bootstrap=bootstrap)


def tune_scored(dev: Scored, test: Scored | None = None, *, methods: Sequence[str] = METHODS,
                null_gold: str = "sure", bootstrap: int = 1000,
                grids: dict | None = None) -> Tuning:
    """:func:`tune` on word scores already computed (:func:`score_corpus`).

    ``grids``: method name → its τ or m values, replacing :data:`TAU_GRID` or
    :data:`MASS_GRID`.
    """
    settings = pick_settings(dev, methods, null_gold=null_gold, grids=grids)
    dev_s = compare_methods(dev, settings, null_gold=null_gold, bootstrap=bootstrap,
                            ranked=False).scores
    test_s = None if test is None else compare_methods(
        test, settings, null_gold=null_gold, bootstrap=bootstrap, ranked=False).scores
    return Tuning(settings, dev_s, test_s, dev.source)


def pick_settings(dev: Scored, methods: Sequence[str] = METHODS, *, null_gold: str = "sure",
                  grids: dict | None = None) -> dict[str, Method]:
    """Each method's setting with the best macro total F1 on ``dev`` (every pair with gold):
    θ, and τ or m, over the grids of :func:`tune`."""
    if not all(p.has_gold for p in dev.pairs):
        raise SettingsError("Tuning needs gold for every dev pair.")
    settings = {}
    for name in methods:
        res = evaluate_grid(dev, name, null_gold=null_gold, grid=(grids or {}).get(name))
        t, g = _best(res.metric_sums[0], int(res.n_pairs[0]), res.method)
        settings[name] = setting_at(res, t, g)
    return settings


@dataclass(frozen=True)
class Comparison:
    """Several methods on one corpus: links, scores over the pairs with gold, the verdict.

    Attributes:
        source: the :class:`Source`. settings: label → :class:`Method`.
        alignments: label → one :class:`Alignment` per pair, in input order.
        gold: indices of the pairs with gold (the scored ones).
        scores: label → :class:`CorpusScore` over those pairs (empty when none has gold).
        verdict: the methods ranked by total F1 with paired comparisons
            (:func:`~engine.alignment.verdict.verdict`); None without gold.
    """

    source: Source
    settings: dict
    alignments: dict
    gold: tuple[int, ...]
    scores: dict
    verdict: "Verdict | None"

    @property
    def n_pairs(self) -> int:
        return len(next(iter(self.alignments.values()), ()))


def compare_methods(scored: Scored, settings: dict[str, Method] | Sequence[str] | None = None,
                    *, bootstrap: int = 1000, seed: int = 0, null_gold: str = "sure",
                    values: bool = False, ranked: bool = True, device=None) -> Comparison:
    """Every method (or those given) on a corpus, scored on its pairs with gold and ranked.

    Args:
        scored: the corpus' word scores (:func:`score_corpus`).
        settings: label → :class:`Method`, or method names (their defaults for the
            source); every method at its defaults when None.
        bootstrap: resamples for the 95 % intervals and the paired comparisons (0: none).
        values: keep each pair's value matrix in its :class:`Alignment`.
        ranked: compute the verdict (paired comparisons) too.

    Returns:
        A :class:`Comparison`: the links of one batched pass over the pairs
        (:func:`extract_methods`), scores from its counts, the verdict from the same
        resamples for every method.
    """
    if settings is None or not isinstance(settings, dict):
        settings = {name: method_of(name, scored.source.kind)
                    for name in (METHODS if settings is None else settings)}
    ext = extract_methods(scored, settings, values=values, null_gold=null_gold, device=device)
    return comparison_of(scored.source, scored.pairs, settings,
                         {k: e.alignments for k, e in ext.items()},
                         {k: e.counts for k, e in ext.items()},
                         bootstrap=bootstrap, seed=seed, ranked=ranked)


def comparison_of(source: Source, pairs: Sequence, settings: dict, alignments: dict,
                  counts: dict | None = None, *, bootstrap: int = 1000, seed: int = 0,
                  null_gold: str = "sure", ranked: bool = True) -> Comparison:
    """A :class:`Comparison` from links already extracted (label → one Alignment per pair),
    with each pair's (7,) counts against gold (label → (N, 7); computed here when None)."""
    from .verdict import verdict

    gold = tuple(k for k, p in enumerate(pairs) if p.has_gold)
    if counts is None:
        counts = {k: np.array([pair_counts(al.links, p, null_gold)
                               for al, p in zip(als, pairs)]).reshape(len(pairs), -1)
                  for k, als in alignments.items()}
    scores = {k: corpus_score(c[list(gold)], bootstrap=bootstrap, seed=seed)
              for k, c in counts.items()} if gold else {}
    v = verdict(scores, settings, bootstrap=bootstrap, seed=seed) if scores and ranked \
        else None
    return Comparison(source, dict(settings), alignments, gold, scores, v)
