"""Frozen result types shared by the engine, the figures and the app.

Every array is a numpy array unless a field says otherwise, so results can be cached,
pickled and serialised. Shapes use n tokens for text A and m tokens for text B; leading
batch dimensions (layers, heads) are written ``...``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Encoding:
    """One text (or a jointly encoded pair) run through the model.

    Attributes:
        texts: the text as the model read it (cleaned, cut to ``max_chars``): one text, or
            the two texts of a jointly encoded pair.
        tokens: n token strings, special tokens included (``[CLS] ... [SEP]``).
        word_ids: n word indices from the tokenizer; ``-1`` for special tokens.
        special: (n,) bool, True for special tokens.
        segment: (n,) int token-type ids (0 = first text, 1 = second in a pair).
        hidden: (L+1, n, d) hidden states; ``hidden[l]`` is the input of layer l.
        q, k: (L, H, n, d_head) queries and keys of every layer and head.
        attentions: (L, H, n, n) the model's own attention probabilities, or None when
            they were not asked for. Arrays are read-only.
        truncated: True when the text was cut (characters or tokens).
        n_dropped: how many tokens the model's token limit removed from the text it got.
        chars_cut: True when the text was first cut to ``SINKSCOPE_MAX_CHARS`` characters.
        max_tokens: the model's token limit the text was cut at (its ``max_seq_length``).
        model: the model's name in the allow-list (or its folder, loaded from Python).
        bias: (1 or L, H, n, n) the position bias the model adds to QKᵀ/√d_head inside
            attention between this encoding's own tokens (MPNet's relative position
            bias; the first axis is 1 when every layer shares it), or None for models
            that add none (BERT, RoBERTa, DistilBERT). The logits are QKᵀ/√d_head + bias.
        embedding: (d',) the model's own sentence embedding of the text (its pooling and
            any later modules, as ``SentenceTransformer.encode``); None for a pair.
    """

    texts: tuple[str, ...]
    tokens: tuple[str, ...]
    word_ids: np.ndarray
    special: np.ndarray
    segment: np.ndarray
    hidden: np.ndarray
    q: np.ndarray
    k: np.ndarray
    attentions: np.ndarray | None
    truncated: bool = False
    n_dropped: int = 0
    model: str = ""
    chars_cut: bool = False
    max_tokens: int = 512
    bias: np.ndarray | None = None
    embedding: np.ndarray | None = None

    @property
    def n(self) -> int:
        """Number of tokens."""
        return len(self.tokens)

    @property
    def n_layers(self) -> int:
        return int(self.q.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.q.shape[1])


def _is_array(v: Any) -> bool:
    """True for arrays and tensors; False for None and plain numbers (ε, τ, m as floats)."""
    return v is not None and not isinstance(v, (bool, int, float))


@dataclass(frozen=True)
class History:
    """Cost and entropy of the plan after chosen half-steps, recorded by the solver.

    Attributes:
        steps: (K,) half-steps t (1-based, increasing) that were recorded.
        cost: (..., K) ⟨−S, π_t⟩; entropy: (..., K) the entropy of π_t, as
            ``Coupling.entropy`` defines it for the problem.
        plans: (..., K, n, m) the plans π_t themselves when the caller asked for them
            (``sinkhorn(..., record_plans=True)``), else None.
    """

    steps: Any
    cost: Any
    entropy: Any
    plans: Any = None

    def apply(self, fn) -> History:
        """The same history with ``fn`` applied to every array (steps included)."""
        return History(*(fn(v) if _is_array(v) else v
                         for v in (self.steps, self.cost, self.entropy, self.plans)))

    def select(self, index) -> History:
        """Problem ``index`` of a batched history (the steps are shared)."""
        def pick(v):
            return v[(*np.atleast_1d(index).tolist(), ...)] if _is_array(v) else v

        return replace(self, cost=pick(self.cost), entropy=pick(self.entropy),
                       plans=pick(self.plans))


_COUPLING_ARRAYS = ("plan", "f", "g", "row_err", "col_err", "converged", "cost", "entropy",
                    "eps", "tau", "mass")


@dataclass(frozen=True)
class Coupling:
    """The output of :func:`engine.sinkhorn` and :func:`engine.partial`: a plan with its
    own diagnostics.

    The plan is π_ij = exp((f_i + g_j + S_ij) / ε); rows with a_i = 0 have f_i = -inf
    (and columns with b_j = 0 have g_j = -inf), so their mass is exactly 0.

    Attributes:
        plan: (..., n, m) the plan after ``half_steps_run`` half-steps.
        f: (..., n) row potential; g: (..., m) column potential.
        row_err, col_err: (..., T) residuals of the plan after each half-step t = 1..T
            (or (..., K) after the half-steps ``err_steps``, when a relation bounded a
            long history). Balanced: the L1 marginal errors ‖π1 − a‖₁ and ‖πᵀ1 − b‖₁. Unbalanced and
            partial: ‖π1 − r‖₁ and ‖πᵀ1 − c‖₁, where r (c) is the marginal one more row
            (column) update would give from the plan, so both are 0 at the fixed point
            (see :func:`engine.solver.core` and :func:`engine.solver.partial`).
        converged: (...) bool, both final residuals ≤ ``tol``.
        cost: (...) transport cost ⟨−S, π⟩.
        entropy: (...) the entropy of the plan's own objective
            (:func:`engine.solver.references.entropy`): balanced, H(π) = −Σ π log π;
            unbalanced (finite τ) and partial, H₁(π) = −Σ π (log π − 1) = H(π) + Σ π,
            which differs from H(π) by exactly the plan's mass.
        eps: the entropy ε used: a float, or (...) when each problem had its own.
        half_steps_run: T, the number of half-steps run (fewer than asked after an early
            stop).
        tol: the tolerance ``converged`` was judged by.
        history: cost and entropy after the half-steps the caller asked to record
            (``sinkhorn(..., record=...)``), else None.
        tau: the KL strength τ of the marginal relaxation: math.inf for balanced transport
            (and for partial), a float, or (...) when each problem had its own.
        mass: the mass m a partial plan moves (a float or (...)); None for Sinkhorn.
        err_steps: (K,) the half-steps t (increasing, the last is T) whose residuals
            ``row_err`` and ``col_err`` hold, when only some were kept
            (:func:`engine.relation.relate.bound_errors`); None: every t = 1..T.

    Arrays are numpy when the scores were numpy and torch tensors when they were torch.
    """

    plan: Any
    f: Any
    g: Any
    row_err: Any
    col_err: Any
    converged: Any
    cost: Any
    entropy: Any
    eps: float
    half_steps_run: int
    tol: float
    history: History | None = None
    tau: Any = math.inf
    mass: Any = None
    err_steps: Any = None

    @property
    def max_err(self) -> Any:
        """(...) the larger final marginal error."""
        r, c = self.row_err[..., -1], self.col_err[..., -1]
        return np.maximum(r, c) if isinstance(r, np.ndarray) else r.maximum(c)

    def apply(self, fn) -> Coupling:
        """The same coupling with ``fn`` applied to every array, the history's included
        (e.g. tensors to numpy, float32 to float64); plain numbers stay as they are."""
        fields = {k: fn(getattr(self, k)) for k in (*_COUPLING_ARRAYS, "err_steps")
                  if _is_array(getattr(self, k))}
        history = None if self.history is None else self.history.apply(fn)
        return replace(self, **fields, history=history)

    def select(self, index) -> Coupling:
        """Problem ``index`` (an int, or a tuple over several batch dimensions) of a batched
        coupling, its arrays keeping their dimensions (0-d for one number)."""
        key = (*np.atleast_1d(index).tolist(), ...)
        fields = {k: getattr(self, k)[key] for k in _COUPLING_ARRAYS
                  if _is_array(getattr(self, k))}
        history = None if self.history is None else self.history.select(index)
        return replace(self, **fields, history=history)


@dataclass(frozen=True)
class Notice:
    """A plain-language note for the user about one relation.

    Attributes:
        kind: what it is about: "chars_cut", "tokens_cut", "not_converged" or
            "no_position_bias" (separate mode on a model whose logits carry a position
            bias: the scores are QKᵀ/√d alone).
        level: "info" (the result is right, the input was changed) or "warning" (the
            result is not what was asked for, e.g. Sinkhorn has not converged).
        message: the sentence shown, saying what to change (English, for the API).
        code: which sentence (a key of ``engine.relation.notices.MESSAGES``; the kind, or
            a variant such as "not_converged_heads"); "" for a message of its own.
        params: its details (numbers, names as codes), from which a page says the same
            in its language: ``code`` and ``params`` are the notice, ``message`` one
            wording of it.
    """

    kind: str
    level: str
    message: str
    code: str = ""
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Summary:
    """The numbers the metrics strip shows: floats for one head, (L, H) arrays for a grid.

    Attributes:
        softmax_col_err: ‖(diag(a)·softmax)ᵀ1 − b‖₁, how far attention is from a coupling.
        sinkhorn_row_err, sinkhorn_col_err: the Sinkhorn plan's final L1 marginal errors.
        cost: ⟨−S, π⟩ of the Sinkhorn plan; entropy: H(π); softmax_cost: ⟨−S, diag(a)·P⟩.
        kl_to_product: KL(π ‖ a ⊗ b) of the Sinkhorn plan; +inf when π puts mass on a
            token of weight 0 (softmax, at half-step 1, sends mass to [CLS] and [SEP]).
        mutual_information: KL(π ‖ π1 ⊗ πᵀ1), the plan's dependence over its own
            marginals; equals ``kl_to_product`` once π ∈ Π(a, b).
        zero_weight_mass: the Sinkhorn plan's mass on rows or columns of weight 0.
        exact_cost: ⟨−S, π*⟩ of the exact OT plan; l1_to_exact: ‖π − π*‖₁;
        l1_to_product: ‖π − a ⊗ b‖₁.
        converged: both marginal errors of the Sinkhorn plan are within the tolerance.
    """

    softmax_col_err: Any
    sinkhorn_row_err: Any
    sinkhorn_col_err: Any
    cost: Any
    entropy: Any
    kl_to_product: Any
    mutual_information: Any
    zero_weight_mass: Any
    exact_cost: Any
    l1_to_exact: Any
    l1_to_product: Any
    softmax_cost: Any
    converged: Any


@dataclass(frozen=True)
class Relation:
    """Softmax attention and the Sinkhorn coupling between two texts at one setting.

    For a single layer and head arrays are (n, m); for ``layer="all", head="all"`` the
    score-like arrays carry leading (L, H) dimensions.

    Attributes:
        text_a, text_b: the texts as the model read them (``text_b`` is text A in self mode).
        tokens_a, tokens_b: token (or word) labels; repeated labels stay separate.
        a: (n,) weights of text A; b: (m,) weights of text B (each sums to 1).
        scores: (..., n, m) S = Q Kᵀ / √d_head, plus the model's position bias in self
            and joint modes for models that add one inside attention (MPNet): the
            model's own logits.
        attention: (..., n, m) row-stochastic softmax(S / ε) (rows of A attend over B).
        softmax_plan: (..., n, m) diag(a)·attention, softmax as a joint measure.
        coupling: the Sinkhorn :class:`Coupling` on the same scores after ``half_steps``
            half-steps; ``coupling.history`` holds its cost and entropy along the way
            (one head only).
        exact_plan: (..., n, m) exact optimal transport plan for cost −S (ε → 0).
        product: (n, m) the product measure a ⊗ b (ε → ∞).
        summary: the metrics strip's numbers.
        layer, head, eps, half_steps, mode, weights, pool_words: the settings asked for
            (``coupling.half_steps_run`` is how many half-steps ran).
        model: the model's name.
        model_attention: (..., n, m) in ``joint`` mode the model's own A→B attention block
            renormalised over B; None otherwise.
        points_a, points_b: (n, p), (m, p) the head's queries of A and keys of B
            (heads concatenated / H^¼ for ``head="mean"``); None for a grid.
        hidden_a, hidden_b: (n, d), (m, d) hidden states entering ``layer``; None for a grid.
        truncated_a, truncated_b: whether each text was cut (characters or tokens).
        notices: :class:`Notice` s for the user (truncation, non-convergence).
    """

    text_a: str
    text_b: str
    tokens_a: tuple[str, ...]
    tokens_b: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    scores: np.ndarray
    attention: np.ndarray
    softmax_plan: np.ndarray
    coupling: Coupling
    exact_plan: np.ndarray
    product: np.ndarray
    summary: Summary
    layer: int | str
    head: int | str
    eps: float
    half_steps: int
    mode: str
    weights: str
    pool_words: bool
    model: str = ""
    model_attention: np.ndarray | None = None
    points_a: np.ndarray | None = None
    points_b: np.ndarray | None = None
    hidden_a: np.ndarray | None = None
    hidden_b: np.ndarray | None = None
    truncated_a: bool = False
    truncated_b: bool = False
    notices: tuple[Notice, ...] = field(default_factory=tuple)

    @property
    def sinkhorn_plan(self) -> np.ndarray:
        """(..., n, m) the Sinkhorn plan after ``half_steps`` half-steps (= softmax_plan
        at half-step 1)."""
        return self.coupling.plan

    @property
    def settings(self) -> "Settings":
        """The :class:`engine.settings.Settings` this relation was computed with (layer and
        head as the model numbers them; ``relate(..., settings=r.settings)`` recomputes it)."""
        from .settings import Settings

        return Settings(layer=self.layer, head=self.head, eps=self.eps,
                        half_steps=self.half_steps, mode=self.mode, weights=self.weights,
                        pool_words=self.pool_words, tol=float(self.coupling.tol),
                        model=self.model or Settings().model)


@dataclass(frozen=True)
class Projection:
    """Joint low-dimensional coordinates of both texts' points.

    Attributes:
        xy_a: (n, dim) coordinates of text A's points; xy_b: (m, dim) of text B's.
        method: "pca" or "umap" (the method actually used; small clouds fall back to PCA).
        space: "qk" (queries of A with keys of B) or "hidden" (hidden states).
        dim: 2 or 3.
        distance_cost_corr: Spearman correlation between projected A–B distances and the
            cost −S over all pairs of positive mass; near 1 means near points are cheap
            pairs, near 0 or negative means the picture misleads.
        explained: for PCA, the fraction of variance the kept components explain.
        note: why a fallback was used, if one was (English).
        note_code: the same as a code a page words in its language ("umap_few_points"),
            "" without a note.
    """

    xy_a: np.ndarray
    xy_b: np.ndarray
    method: str
    space: str
    dim: int
    distance_cost_corr: float
    explained: float | None = None
    note: str = ""
    note_code: str = ""


@dataclass(frozen=True)
class Ranking:
    """Candidate texts ranked against text A two ways: by the model's sentence similarity
    (cosine of its sentence embeddings — with mean pooling, of the measures' barycenters)
    and by a debiased Sinkhorn divergence between the measures themselves.

    Each text is the measure μ = (1/n) Σᵢ δ_{xᵢ} of its last hidden states, every token
    weighted equally, as mean pooling weighs them.

    Attributes:
        text_a: text A as the model read it; candidates: the K candidate texts.
        tokens_a: A's n tokens; tokens: each candidate's tokens.
        similarity: (K,) cos(e_A, e_k) of the model's sentence embeddings.
        divergence: (K,) S_ε(μ_A, μ_k) = OT_ε(μ_A, μ_k) − ½ OT_ε(μ_A, μ_A) − ½ OT_ε(μ_k, μ_k),
            OT_ε(α, β) = min_π ⟨C, π⟩ + ε KL(π ‖ α⊗β), cost C = 1 − cos between states.
        plans: K couplings (n, m_k) of A with each candidate (the divergence's cross term).
        by_similarity: (K,) candidate indices, most similar first.
        by_divergence: (K,) candidate indices, smallest divergence first.
        spearman: rank correlation of similarity with −divergence (1: same order).
        eps: ε. converged: (K,) whether all three solves of each candidate converged.
        barycenter_gap: max |e/‖e‖ − m/‖m‖| over the texts, m the mean of the last hidden
            states; ~1e-7 when the embedding is the barycenter, None when the model does
            not mean-pool.
        pooling: the model's pooling mode ("mean", "cls", …). model: its name.
        notices: :class:`Notice` s (cut texts, dropped candidates, not converged).
    """

    text_a: str
    candidates: tuple[str, ...]
    tokens_a: tuple[str, ...]
    tokens: tuple[tuple[str, ...], ...]
    similarity: np.ndarray
    divergence: np.ndarray
    plans: tuple[np.ndarray, ...]
    by_similarity: np.ndarray
    by_divergence: np.ndarray
    spearman: float
    eps: float
    converged: np.ndarray
    barycenter_gap: float | None
    pooling: str
    model: str = ""
    notices: tuple[Notice, ...] = field(default_factory=tuple)

    @property
    def rank_similarity(self) -> np.ndarray:
        """(K,) each candidate's place (1 = first) when ranked by similarity."""
        return _places(self.by_similarity)

    @property
    def rank_divergence(self) -> np.ndarray:
        """(K,) each candidate's place (1 = first) when ranked by divergence."""
        return _places(self.by_divergence)


def _places(order: np.ndarray) -> np.ndarray:
    places = np.empty(len(order), dtype=np.int64)
    places[np.asarray(order)] = np.arange(1, len(order) + 1)
    return places


@dataclass(frozen=True)
class Lattice:
    """Sinkhorn plans of one score matrix over a grid of ε values × half-step counts.

    Attributes:
        eps: (E,) ε values, increasing.
        steps: (T,) half-step counts t, increasing, ``steps[0] == 1`` (softmax).
        plans: (E, T, n, m) π after ``steps[k]`` half-steps at ``eps[i]``, started from
            g = 0; ``plans[:, 0]`` is diag(a)·softmax(S/ε).
        attention: (E, n, m) softmax(S/ε), rows summing to 1 (rows of weight 0 included).
        row_err, col_err: (E, T) ‖π1 − a‖₁ and ‖πᵀ1 − b‖₁ of each frame.
        summary: the metrics strip's numbers, each an (E, T) array (``converged`` too).
        a: (n,) and b: (m,) the weights; tol: the tolerance ``converged`` was judged by.
    """

    eps: np.ndarray
    steps: np.ndarray
    plans: np.ndarray
    attention: np.ndarray
    row_err: np.ndarray
    col_err: np.ndarray
    summary: Summary
    a: np.ndarray
    b: np.ndarray
    tol: float

    @property
    def shape(self) -> tuple[int, int]:
        """(E, T): how many ε values and half-step counts the lattice holds."""
        return len(self.eps), len(self.steps)

    def index(self, eps: float, half_steps: int) -> tuple[int, int] | None:
        """(i, k) of the frame at exactly (ε, t), or None when the lattice does not hold it."""
        i = np.flatnonzero(np.isclose(self.eps, float(eps), rtol=1e-9, atol=0))
        k = np.flatnonzero(self.steps == int(half_steps))
        return (int(i[0]), int(k[0])) if i.size and k.size else None
