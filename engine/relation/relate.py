"""relate(): two texts → softmax attention beside the Sinkhorn coupling, with references.

Encoding (slow, model forward) and relating (fast, per slider move) are separate steps so
an app can cache encodings: ``encode_texts`` then ``relate_encodings``; ``relate`` does both.
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import torch

from ..solver import references

from .. import settings
from ..models.encoder import Encoder, clean_text
from ..errors import SettingsError, SinkscopeError
from .notices import POSITION_BIAS_NOTE, notice  # noqa: F401  (the note stays importable here)
from .scores import Side, check_layer_head, scores, side, weights as make_weights
from ..settings import DEFAULT_MODEL, Settings, check_setting
from ..solver.core import check_eps, sinkhorn, softmax_attention, to_numpy
from ..types import Coupling, Encoding, Notice, Relation, Summary


_default: dict[str, Encoder] = {}
_default_lock = threading.Lock()


def default_encoder() -> Encoder:
    """The packaged model, loaded once per process."""
    with _default_lock:
        if "enc" not in _default:
            _default["enc"] = Encoder.default()
        return _default["enc"]


def encode_texts(encoder: Encoder | None, text_a: str, text_b: str | None,
                 mode: str = "separate") -> tuple[Encoding, ...]:
    """Encode what ``mode`` needs: (enc_a, enc_b) for separate, (pair,) for joint,
    (enc_a,) for self. Separate texts share one padded forward pass; only joint mode
    keeps the model's attentions (the A→B block).

    Texts are cleaned once, before the model (the packaged one when ``encoder`` is None)
    is loaded, so an empty text is reported at once.
    """
    mode = check_mode(mode)
    a = clean_text(text_a, name="text_a")
    b = None if mode == "self" else clean_text(text_b if text_b is not None else "",
                                               name="text_b")
    encoder = encoder or default_encoder()
    if mode == "separate":
        return tuple(encoder.encode_many([a, b], attentions=False))
    if mode == "joint":  # the model's own A→B block is shown beside the coupling
        return (encoder.encode_pair(a, b),)
    return (encoder.encode(a, attentions=False),)


def check_mode(mode: str) -> str:
    """The mode, or a SettingsError naming the modes."""
    return check_setting("mode", mode)


def relate(text_a: str, text_b: str | None = None, *, encoder: Encoder | None = None,
           settings: Settings | None = None, **overrides) -> Relation:
    """Relate two texts: softmax attention and the Sinkhorn coupling at one setting.

    Texts are measures μ = Σ a_i δ_{x_i}, ν = Σ b_j δ_{y_j}; scores S = Q(μ,x) K(ν,y)ᵀ/√d,
    plus the model's own position bias in self and joint modes where it adds one (MPNet).

    Args:
        text_a: the text whose queries attend (rows).
        text_b: the text whose keys are attended (columns); ignored in ``self`` mode.
        encoder: an :class:`Encoder`; by default the packaged model, or the allow-listed
            model that ``settings.model`` names (loaded once per process).
        settings: a :class:`engine.settings.Settings` (the defaults when None); its fields
            may also be given, or overridden, as keyword arguments:
        layer: layer index (negative counts from the end) or "all" (with head="all").
        head: head index, "mean" (scores averaged over heads) or "all".
        eps: entropy ε > 0 (and softmax temperature); 1 is the model's own softmax.
        half_steps: Sinkhorn half-steps; 1 reproduces softmax exactly.
        mode: "separate" (each text in its own context; the paper's view), "joint" (one
            forward of the pair; the model's own A→B block) or "self" (A with itself).
        weights: "content", "uniform" or "norm" (see :func:`engine.relation.scores.weights`).
        pool_words: merge subwords into words (labels joined, vectors mean-pooled).
        tol: L1 marginal tolerance for "converged".
        model: the model's name, used when no ``encoder`` is given.

    Returns:
        A :class:`Relation` (numpy arrays; ``Relation.settings`` are the settings used).
        Raises a ``SinkscopeError`` (a ValueError) whose message says what to change.
    """
    s = Settings.of(settings, **overrides).check()
    if encoder is None and s.model != DEFAULT_MODEL:
        encoder = _encoder_named(s.model)
    encodings = encode_texts(encoder, text_a, text_b, s.mode)
    return _relate(encodings, s)


def relate_encodings(encodings: tuple[Encoding, ...], *, settings: Settings | None = None,
                     device: str | torch.device | None = None, **overrides) -> Relation:
    """:func:`relate` on encodings from :func:`encode_texts` (no model call).

    ``settings`` and keyword arguments as for :func:`relate` (``model`` is the encodings'
    own). ``device``: where softmax and Sinkhorn run. None or "cpu": float64 on the CPU
    (the default); an accelerator ("cuda", "cuda:1", "mps"): float32 there, with the
    solver's log-domain fallback; the results come back as float64 numpy arrays either way.
    """
    return _relate(encodings, Settings.of(settings, **overrides).check(), device)


def _encoder_named(name: str) -> Encoder:
    """An allow-listed model by name, loaded once per process."""
    with _default_lock:
        if name not in _default:
            _default[name] = Encoder.load(name)
        return _default[name]


def _on(x: np.ndarray, device) -> torch.Tensor:
    """A float64 numpy array as a tensor: as it is for the CPU, float32 on an accelerator."""
    t = torch.from_numpy(x)
    if device is None or torch.device(device).type == "cpu":
        return t
    return t.to(device=device, dtype=torch.float32)


def _host(c):
    """A coupling solved anywhere as numpy, its float arrays float64."""
    c = to_numpy(c)
    if c.plan.dtype == np.float64:
        return c
    return c.apply(lambda v: v.astype(np.float64) if v.dtype.kind == "f" else v)


def _relate(encodings, s: Settings, device=None) -> Relation:
    """:func:`relate_encodings` on checked settings."""
    p = _prepare(encodings, s)
    return _finish(p, *_solve([p], device)[0])


def relate_batch(jobs, *, device: str | torch.device | None = None) -> list:
    """:func:`relate_encodings` for many requests at once, as a server batches them.

    ``jobs``: a sequence of (encodings, settings), each settings a
    :class:`engine.settings.Settings` or a dict of its fields. Requests whose problems share a shape, their
    weights a and b, half-steps, tolerance and recorded steps (the same texts at other
    values of ε, another head) are solved in one batched softmax and Sinkhorn call:
    solving at ε on S is solving at ε = 1 on S/ε. Each result equals its own
    :func:`relate_encodings` to rounding (≤ 1e-12 in float64).

    Returns one Relation per job, in order, or the SinkscopeError that job raised.
    """
    out: list = [None] * len(jobs)
    groups: dict[tuple, list[int]] = {}
    problems: dict[int, _Problem] = {}
    for i, (encodings, kw) in enumerate(jobs):
        try:
            p = _prepare(encodings, Settings.of(kw).check())
        except SinkscopeError as e:
            out[i] = e
            continue
        problems[i] = p
        groups.setdefault(p.group_key, []).append(i)
    for idx in groups.values():
        for i, solved in zip(idx, _solve([problems[i] for i in idx], device)):
            out[i] = _finish(problems[i], *solved)
    return out


@dataclasses.dataclass(frozen=True)
class _Problem:
    """A relation before its softmax and Sinkhorn: checked settings (layer and head
    normalised to the model), atoms, weights a (n,) and b (m,), scores S (..., n, m)
    float64, and the half-steps to record."""

    encodings: tuple
    settings: Settings
    sa: Side
    sb: Side
    model_attention: np.ndarray | None
    qa: np.ndarray
    kb: np.ndarray
    a: np.ndarray
    b: np.ndarray
    S: np.ndarray
    record: tuple | None

    @property
    def eps(self) -> float:
        return self.settings.eps

    @property
    def half_steps(self) -> int:
        return self.settings.half_steps

    @property
    def tol(self) -> float:
        return self.settings.tol

    @property
    def group_key(self) -> tuple:
        """Problems with equal keys are solved in one batched call."""
        return (self.S.shape, self.half_steps, float(self.tol), self.record,
                self.a.tobytes(), self.b.tobytes())


def _prepare(encodings, s: Settings) -> _Problem:
    first = encodings[0]
    layer, head = check_layer_head(s.layer, s.head, first.n_layers, first.n_heads)
    s = dataclasses.replace(s, layer=layer, head=head, model=first.model)
    mode, weights, pool_words, half_steps = s.mode, s.weights, s.pool_words, s.half_steps
    sa, sb, model_att = _sides(encodings, mode, pool_words, layer, head)
    wl = layer if isinstance(layer, int) else -1
    a = make_weights(sa, weights, layer=wl, name="text_a")
    b = make_weights(sb, weights, layer=wl, name="text_b")
    qa, kb = _head_vectors(sa.q, sb.k, layer, head)  # (..., n, p), (..., m, p)
    S = scores(qa, kb)  # float64
    bias = None if mode == "separate" else _bias_block(encodings[0], sa, sb)
    if bias is not None:  # the model's own logits: QKᵀ/√d + its position bias
        S = S + _head_bias(bias, layer, head)
    record = None if layer == "all" else tuple(int(t) for t in history_steps(half_steps, S.size))
    return _Problem(encodings=encodings, settings=s, sa=sa, sb=sb,
                    model_attention=model_att, qa=qa, kb=kb, a=a, b=b, S=S, record=record)


def _solve(problems: list[_Problem], device) -> list[tuple[np.ndarray, Coupling]]:
    """(softmax attention, Sinkhorn coupling) of each problem; the problems share a
    ``group_key``. One problem runs at its ε; several run as one batch at ε = 1 on the
    stacked S/ε, and each coupling is put back at its own ε (f, g, cost × ε)."""
    p = problems[0]
    a, b = _on(p.a, device), _on(p.b, device)
    if len(problems) == 1:
        St, eps = _on(p.S, device), p.eps
    else:
        St, eps = _on(np.stack([q.S / q.eps for q in problems]), device), 1.0
    attention = softmax_attention(St, eps, check_inputs=False).cpu().numpy().astype(
        np.float64, copy=False)
    coupling = _host(sinkhorn(St, a, b, eps, p.half_steps, tol=p.tol, record=p.record,
                              check_inputs=False))
    if len(problems) == 1:
        return [(attention, coupling)]
    return [(attention[k], _at_eps(_pick(coupling, k), q.eps)) for k, q in enumerate(problems)]


def _pick(c: Coupling, k: int) -> Coupling:
    """Problem k of a coupling solved for a stack of problems (numpy); arrays stay arrays
    (0-d for one head), as a coupling solved alone."""
    return c.select(k)


def _at_eps(c: Coupling, eps: float) -> Coupling:
    """A coupling solved at ε = 1 on S/ε, as the coupling at ε on S: the same plan, with
    potentials and costs measured against S (× ε)."""
    h = c.history
    if h is not None:
        h = dataclasses.replace(h, cost=h.cost * eps)
    return dataclasses.replace(c, f=c.f * eps, g=c.g * eps, cost=np.asarray(c.cost * eps),
                               eps=eps, history=h)


def _finish(p: _Problem, attention: np.ndarray, coupling: Coupling) -> Relation:
    """The Relation of a problem from its softmax attention and Sinkhorn coupling."""
    s = p.settings
    grid = s.layer == "all"
    a, b, S, sa, sb = p.a, p.b, p.S, p.sa, p.sb
    softmax_plan = a[:, None] * attention
    exact = references.exact_plan_cached(S, a, b)
    prod = references.product(a, b)
    coupling = bound_errors(coupling)
    summary = summarise(S, a, b, softmax_plan, coupling.plan, row_err=coupling.row_err[..., -1],
                        col_err=coupling.col_err[..., -1], cost=coupling.cost,
                        entropy=coupling.entropy, converged=coupling.converged, exact=exact)
    pa = pb = ha = hb = None
    if not grid:
        pa, pb = p.qa.astype(np.float64), p.kb.astype(np.float64)
        ha, hb = sa.hidden[s.layer].astype(np.float64), sb.hidden[s.layer].astype(np.float64)
    encodings = p.encodings
    texts = [t for e in encodings for t in e.texts]
    return Relation(
        text_a=texts[0], text_b=texts[-1], tokens_a=sa.tokens, tokens_b=sb.tokens, a=a,
        b=b, scores=S, attention=attention, softmax_plan=softmax_plan, coupling=coupling,
        exact_plan=exact, product=prod, summary=summary, layer=s.layer, head=s.head,
        eps=s.eps, half_steps=s.half_steps, mode=s.mode, weights=s.weights,
        pool_words=s.pool_words, model=s.model, model_attention=p.model_attention,
        points_a=pa, points_b=pb, hidden_a=ha, hidden_b=hb,
        truncated_a=encodings[0].truncated, truncated_b=encodings[-1].truncated,
        notices=tuple(_notices(encodings, coupling, grid, s.half_steps)))


def summarise(S: np.ndarray, a: np.ndarray, b: np.ndarray, softmax_plan: np.ndarray,
              plan: np.ndarray, *, row_err, col_err, cost, entropy, converged,
              exact: np.ndarray) -> Summary:
    """The metrics strip's numbers for plans (..., n, m) on scores S (n, m) or (..., n, m).

    Args:
        S, a (n,), b (m,): the problem. softmax_plan: diag(a)·softmax, broadcast against
            ``plan``. plan: (..., n, m) Sinkhorn plans. row_err, col_err, cost, entropy,
            converged: (...) their final marginal errors, ⟨−S, π⟩, H(π) and convergence
            (a Coupling's ``row_err[..., -1]``, ``cost``, …). exact: (n, m) the exact plan.

    Returns:
        A :class:`Summary`, floats for one plan and (...) arrays for a batch;
        KL(π ‖ a ⊗ b), mutual information, zero-weight mass and the L1 distances to the
        references are computed here.
    """
    prod = references.product(a, b)
    batch = plan.shape[:-2]

    def full(x):
        return _num(np.broadcast_to(np.asarray(x, dtype=np.float64), batch))

    return Summary(
        softmax_col_err=full(references.l1(softmax_plan.sum(-2), b, axes=-1)),
        sinkhorn_row_err=full(row_err),
        sinkhorn_col_err=full(col_err),
        cost=full(cost),
        entropy=full(entropy),
        kl_to_product=full(references.kl(plan, prod)),
        mutual_information=full(references.mutual_information(plan)),
        zero_weight_mass=full(references.zero_weight_mass(plan, a, b)),
        exact_cost=full(references.cost(exact, S)),
        l1_to_exact=full(references.l1(plan, exact)),
        l1_to_product=full(references.l1(plan, prod)),
        softmax_cost=full(references.cost(softmax_plan, S)),
        converged=full(converged) if batch else bool(converged),
    )


def _num(x):
    x = np.asarray(x, dtype=np.float64)
    return float(x) if x.ndim == 0 else x


def _sides(encodings, mode, pool_words, layer, head) -> tuple[Side, Side, np.ndarray | None]:
    """Each text's atoms; in joint mode also the model's own A→B block, renormalised."""
    if mode == "separate":
        return side(encodings[0], pool_words=pool_words), side(encodings[1], pool_words=pool_words), None
    if mode == "self":
        s = side(encodings[0], pool_words=pool_words)
        return s, s, None
    pair = encodings[0]
    sa = side(pair, pool_words=pool_words, segment=0)
    sb = side(pair, pool_words=pool_words, segment=1)
    att = pair.attentions  # (L, H, T, T)
    if layer == "all":
        A = att
    elif head == "mean":
        A = att[layer].mean(0)
    else:
        A = att[layer, head]
    # rows: mean over a word's subwords; columns: sum over a word's subwords
    Ga = np.zeros((len(sa.groups), pair.n))
    for i, g in enumerate(sa.groups):
        Ga[i, list(g)] = 1.0 / len(g)
    Gb = np.zeros((len(sb.groups), pair.n))
    for j, g in enumerate(sb.groups):
        Gb[j, list(g)] = 1.0
    block = Ga @ A.astype(np.float64) @ Gb.T
    block = block / block.sum(-1, keepdims=True)
    return sa, sb, block


def _bias_block(e: Encoding, sa: Side, sb: Side) -> np.ndarray | None:
    """The position bias between the atoms of ``sa`` (rows) and ``sb`` (columns) of one
    encoding: (1 or L, H, n, m), averaged over each word's subwords (as pooled Q and K
    average their dot products); None when the model adds no bias."""
    if e.bias is None:
        return None
    rows, cols = [list(g) for g in sa.groups], [list(g) for g in sb.groups]
    if all(len(g) == 1 for g in rows + cols):
        return e.bias[:, :, [g[0] for g in rows]][:, :, :, [g[0] for g in cols]].astype(np.float64)
    Ga, Gb = np.zeros((len(rows), e.n)), np.zeros((len(cols), e.n))
    for i, g in enumerate(rows):
        Ga[i, g] = 1.0 / len(g)
    for j, g in enumerate(cols):
        Gb[j, g] = 1.0 / len(g)
    return Ga @ e.bias.astype(np.float64) @ Gb.T


def _head_bias(bias: np.ndarray, layer, head) -> np.ndarray:
    """The bias term of the chosen scores: (n, m) for one head or the head mean; the whole
    (1 or L, H, n, m) block, broadcast over layers, for the grid."""
    if layer == "all":
        return bias
    block = bias[layer if bias.shape[0] > 1 else 0]  # (H, n, m)
    return block.mean(0) if head == "mean" else block[head]


def _head_vectors(q: np.ndarray, k: np.ndarray, layer, head) -> tuple[np.ndarray, np.ndarray]:
    """Queries and keys of the chosen head: (n, d_head), (m, d_head); for head="mean" the
    heads concatenated and scaled by 1/√H so that S is the mean over heads of QKᵀ/√d;
    for the grid (L, H, n, d_head)."""
    if layer == "all":
        return q, k
    if head == "mean":
        H = q.shape[1]
        # scores() divides by √(H·d): scaling each side by H^(-1/4) gives the mean over heads.
        return (np.concatenate(list(q[layer]), -1).astype(np.float64) / H ** 0.25,
                np.concatenate(list(k[layer]), -1).astype(np.float64) / H ** 0.25)
    return q[layer, head], k[layer, head]


def history_steps(half_steps: int, cells: int, points: int = 400,
                  budget: float = 4e6) -> np.ndarray:
    """Half-steps at which a single head's cost and entropy are recorded: every one up to
    ``points`` of them (fewer for large texts, so that points · cells ≤ ``budget``), else
    a log-spaced subset from 1 to ``half_steps``. Returns (K,) increasing ints."""
    points = int(max(12, min(points, budget // max(1, cells))))
    if half_steps <= points:
        return np.arange(1, half_steps + 1)
    return np.unique(np.geomspace(1, half_steps, points).round().astype(int))


#: A relation keeps at most about this many half-steps of each convergence history
#: (:func:`error_steps`): 72 heads × 100,000 half-steps would be 115 MB of errors.
ERROR_POINTS = 1000


def error_steps(half_steps_run: int, points: int = ERROR_POINTS) -> np.ndarray | None:
    """The half-steps whose marginal errors a relation keeps: None (every one) for a run of
    at most ``points`` + 2; else 1 and 2, log-spaced pairs (t, t + 1) with t odd (a row
    step and the column step after it, as the convergence chart alternates), and T − 1, T.
    Returns (K,) increasing ints, K ≤ ``points`` + 2, or None."""
    T = int(half_steps_run)
    if T <= points + 2:
        return None
    odd = np.unique(np.geomspace(1, T - 1, points // 2).astype(np.int64) | 1)
    odd = odd[odd < T - 1]
    return np.unique(np.concatenate([odd, odd + 1, [T - 1, T]]))


def bound_errors(c: Coupling, points: int = ERROR_POINTS) -> Coupling:
    """The coupling with its marginal errors kept at :func:`error_steps` only
    (``Coupling.err_steps`` says which); unchanged for a run of at most ``points`` + 2
    half-steps, which covers the app's half-step slider (1,000 by default)."""
    keep = error_steps(c.row_err.shape[-1], points)
    if keep is None or c.err_steps is not None:
        return c
    idx = keep - 1
    return dataclasses.replace(c, row_err=c.row_err[..., idx], col_err=c.col_err[..., idx],
                               err_steps=keep)


def truncation_notices(name: str, chars_cut: bool, n_tokens: int, n_dropped: int, *,
                       k: int | None = None) -> list[Notice]:
    """The notices for a text cut to the character limit (SINKSCOPE_MAX_CHARS) and to the
    model's token limit (``n_tokens`` kept, ``n_dropped`` dropped); empty if neither.
    ``name`` is the text's name as a code ("text_a", "pair", "candidate" with ``k``)."""
    out = []
    who = {"name": name} if k is None else {"name": name, "k": k}
    if chars_cut:
        out.append(notice("chars_cut", **who, limit=settings.CONFIG.max_chars))
    if n_dropped:
        out.append(notice("tokens_cut", **who, n=int(n_tokens), dropped=int(n_dropped)))
    return out


def _notices(encodings, coupling, grid, half_steps) -> list[Notice]:
    out = []
    names = ("text_a", "text_b") if len(encodings) == 2 else (
        "pair" if len(encodings[0].texts) == 2 else "text_a",)
    for name, e in zip(names, encodings):
        out += truncation_notices(name, e.chars_cut, e.n, e.n_dropped)
    if len(encodings) == 2 and encodings[0].bias is not None:
        out.append(notice("no_position_bias"))
    conv = np.asarray(coupling.converged)
    if half_steps > 1 and not conv.all():
        if grid:
            out.append(notice("not_converged_heads", bad=int((~conv).sum()), all=int(conv.size),
                              steps=int(half_steps)))
        else:
            err = max(float(coupling.row_err[-1]), float(coupling.col_err[-1]))
            out.append(notice("not_converged", steps=int(half_steps), err=err,
                              tol=float(coupling.tol)))
    return out


def eps_path(r: Relation, eps_values=None, *, half_steps: int = 4000,
             tol: float = 1e-6, device: str | torch.device | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """Sinkhorn couplings of one relation over a range of ε, large to small.

    Solving at ε on S equals solving at ε = 1 on S/ε, so all values run as one batch.

    Args:
        r: a single-head Relation. eps_values: decreasing ε values (default 12 values,
            log-spaced from 10 to 0.03).
        half_steps: the most half-steps (early stop at ``tol``); small ε needs many.
        device: where to solve (see :func:`relate_encodings`); CPU float64 by default.

    Returns:
        (eps (K,), plans (K, n, m) float64).
    """
    if r.scores.ndim != 2:
        raise SettingsError("The ε path is for one layer and head; choose a head first.")
    eps = np.geomspace(10, 0.03, 12) if eps_values is None else np.asarray(eps_values, float)
    eps = np.array([check_eps(e) for e in eps.ravel()])
    S = _on(np.ascontiguousarray(r.scores[None] / eps[:, None, None]), device)
    c = sinkhorn(S, _on(r.a, device), _on(r.b, device), 1.0, half_steps, tol=tol,
                 early_stop=True)
    return eps, c.plan.cpu().numpy().astype(np.float64, copy=False)
