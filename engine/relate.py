"""relate(): two texts → softmax attention beside the Sinkhorn coupling, with references.

Encoding (slow, model forward) and relating (fast, per slider move) are separate steps so
an app can cache encodings: ``encode_texts`` then ``relate_encodings``; ``relate`` does both.
"""

from __future__ import annotations

import functools
import hashlib
import math
import threading

import numpy as np
import torch

from . import references
from .encoder import MAX_CHARS, PAIR_SEP, Encoder, clean_text
from .errors import SettingsError
from .scores import Side, check_layer_head, scores, side, weights as make_weights, WEIGHTS
from .sinkhorn import check_eps, check_half_steps, sinkhorn
from .types import Encoding, Relation, Summary

MODES = ("separate", "joint", "self")
MAX_HALF_STEPS = 100_000
_default: dict[str, Encoder] = {}
_default_lock = threading.Lock()


def default_encoder() -> Encoder:
    """The packaged model, loaded once per process."""
    with _default_lock:
        if "enc" not in _default:
            _default["enc"] = Encoder.default()
        return _default["enc"]


def encode_texts(encoder: Encoder, text_a: str, text_b: str | None,
                 mode: str = "separate") -> tuple[Encoding, ...]:
    """Encode what ``mode`` needs: (enc_a, enc_b) for separate, (pair,) for joint,
    (enc_a,) for self. Separate texts share one padded forward pass; only joint mode
    keeps the model's attentions (the A→B block)."""
    mode = check_mode(mode)
    clean_text(text_a, name="Text A")
    if mode != "self":
        clean_text(text_b if text_b is not None else "", name="Text B")
    if mode == "separate":
        return tuple(encoder.encode_many([text_a, text_b], attentions=False))
    if mode == "joint":  # the model's own A→B block is shown beside the coupling
        return (encoder.encode_pair(text_a, text_b if text_b is not None else ""),)
    return (encoder.encode(text_a, attentions=False),)


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise SettingsError(f"mode must be one of {', '.join(MODES)}; got {mode!r}.")
    return mode


def relate(text_a: str, text_b: str | None = None, *, encoder: Encoder | None = None,
           layer: int | str = -1, head: int | str = "mean", eps: float = 1.0,
           half_steps: int = 100, mode: str = "separate", weights: str = "content",
           pool_words: bool = False, tol: float = 1e-6) -> Relation:
    """Relate two texts: softmax attention and the Sinkhorn coupling at one setting.

    Texts are measures μ = Σ a_i δ_{x_i}, ν = Σ b_j δ_{y_j}; scores S = Q(μ,x) K(ν,y)ᵀ/√d.

    Args:
        text_a: the text whose queries attend (rows).
        text_b: the text whose keys are attended (columns); ignored in ``self`` mode.
        encoder: an :class:`Encoder`; the packaged model by default.
        layer: layer index (negative counts from the end) or "all" (with head="all").
        head: head index, "mean" (scores averaged over heads) or "all".
        eps: entropy ε > 0 (and softmax temperature); 1 is the model's own softmax.
        half_steps: Sinkhorn half-steps; 1 reproduces softmax exactly.
        mode: "separate" (each text in its own context; the paper's view), "joint" (one
            forward of the pair; the model's own A→B block) or "self" (A with itself).
        weights: "content", "uniform" or "norm" (see :func:`engine.scores.weights`).
        pool_words: merge subwords into words (labels joined, vectors mean-pooled).
        tol: L1 marginal tolerance for "converged".

    Returns:
        A :class:`Relation` (numpy arrays). Raises a ``SinkscopeError`` (a ValueError)
        whose message says what to change.
    """
    mode = check_mode(mode)
    clean_text(text_a, name="Text A")  # say what is wrong before loading a model
    if mode != "self":
        clean_text(text_b if text_b is not None else "", name="Text B")
    check_eps(eps)
    check_half_steps(half_steps)
    enc = encoder or default_encoder()
    encodings = encode_texts(enc, text_a, text_b, mode)
    return relate_encodings(encodings, layer=layer, head=head, eps=eps,
                            half_steps=half_steps, mode=mode, weights=weights,
                            pool_words=pool_words, tol=tol)


def relate_encodings(encodings: tuple[Encoding, ...], *, layer: int | str = -1,
                     head: int | str = "mean", eps: float = 1.0, half_steps: int = 100,
                     mode: str = "separate", weights: str = "content",
                     pool_words: bool = False, tol: float = 1e-6) -> Relation:
    """:func:`relate` on encodings from :func:`encode_texts` (no model call)."""
    mode = check_mode(mode)
    eps = check_eps(eps)
    half_steps = check_half_steps(half_steps)
    if half_steps > MAX_HALF_STEPS:
        raise SettingsError(f"half_steps must be at most {MAX_HALF_STEPS}, got {half_steps}.")
    if weights not in WEIGHTS:
        raise SettingsError(f"weights must be one of {', '.join(WEIGHTS)}; got {weights!r}.")
    first = encodings[0]
    layer, head = check_layer_head(layer, head, first.n_layers, first.n_heads)
    sa, sb, model_att = _sides(encodings, mode, pool_words, layer, head)
    wl = layer if isinstance(layer, int) else -1
    a = make_weights(sa, weights, layer=wl, name="Text A")
    b = make_weights(sb, weights, layer=wl, name="Text B")
    grid = layer == "all"
    qa, kb = _head_vectors(sa.q, sb.k, layer, head)  # (..., n, p), (..., m, p)
    S = scores(qa, kb)  # float64
    St = torch.from_numpy(S)
    attention = torch.softmax(St / eps, -1).numpy()
    softmax_plan = a[:, None] * attention
    c = sinkhorn(St, torch.from_numpy(a), torch.from_numpy(b), eps, half_steps, tol=tol)
    coupling = type(c)(**{k: (v.numpy() if isinstance(v, torch.Tensor) else v)
                          for k, v in c.__dict__.items()})
    exact = _exact_cached(S, a, b)
    prod = references.product(a, b)
    plan = coupling.plan
    summary = Summary(
        softmax_col_err=_num(np.abs(softmax_plan.sum(-2) - b).sum(-1)),
        sinkhorn_row_err=_num(coupling.row_err[..., -1]),
        sinkhorn_col_err=_num(coupling.col_err[..., -1]),
        cost=_num(coupling.cost),
        entropy=_num(coupling.entropy),
        kl_to_product=_num(references.mutual_information(plan)),
        exact_cost=_num(-(exact * S).sum((-2, -1))),
        l1_to_exact=_num(references.l1(plan, exact)),
        l1_to_product=_num(references.l1(plan, prod)),
        softmax_cost=_num(-(softmax_plan * S).sum((-2, -1))),
        converged=coupling.converged if grid else bool(coupling.converged),
    )
    hist = (None, None, None) if grid else _history(S, a, b, eps, coupling.half_steps)
    notices = _notices(encodings, coupling, grid, half_steps)
    pa = pb = ha = hb = None
    if not grid:
        pa, pb = qa, kb
        ha, hb = sa.hidden[layer], sb.hidden[layer]
    texts = encodings[0].text.split(PAIR_SEP) + [e.text for e in encodings[1:]]
    text_a, text_b = texts[0], texts[-1]
    trunc_a = encodings[0].truncated
    trunc_b = encodings[-1].truncated
    return Relation(
        text_a=text_a, text_b=text_b, tokens_a=sa.tokens, tokens_b=sb.tokens, a=a, b=b,
        scores=S, attention=attention, softmax_plan=softmax_plan, coupling=coupling,
        exact_plan=exact, product=prod, summary=summary, layer=layer, head=head, eps=eps,
        half_steps=half_steps, mode=mode, weights=weights, pool_words=pool_words,
        model=first.model, model_attention=model_att, points_a=pa, points_b=pb,
        hidden_a=ha, hidden_b=hb, hist_steps=hist[0], cost_hist=hist[1],
        entropy_hist=hist[2], truncated_a=trunc_a, truncated_b=trunc_b,
        notices=tuple(notices))


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


def _key(*arrays: np.ndarray) -> str:
    h = hashlib.sha1()
    for x in arrays:
        h.update(np.ascontiguousarray(x).tobytes())
        h.update(str(x.shape).encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=64)
def _exact_by_key(key: str, S_bytes: bytes, shape: tuple, a_bytes: bytes, b_bytes: bytes):
    S = np.frombuffer(S_bytes).reshape(shape)
    a, b = np.frombuffer(a_bytes), np.frombuffer(b_bytes)
    out = references.exact_plan(S, a, b)
    out.setflags(write=False)
    return out


def _exact_cached(S, a, b) -> np.ndarray:
    """Exact OT plan, cached: it does not depend on ε or half-steps (slider moves)."""
    S, a, b = (np.ascontiguousarray(x, dtype=np.float64) for x in (S, a, b))
    return _exact_by_key(_key(S, a, b), S.tobytes(), S.shape, a.tobytes(), b.tobytes())


def _history(S, a, b, eps, T, points: int = 400, budget: float = 4e6):
    """Cost ⟨−S, π_t⟩ and entropy H(π_t) of the plan after half-steps t (single head).

    Records every half-step up to ``points`` of them (fewer for large texts, so that
    points · n · m stays within ``budget``), else a log-spaced subset.
    Returns (steps (K,), cost (K,), entropy (K,)).
    """
    points = int(max(12, min(points, budget // max(1, S.size))))
    if T <= points:
        steps = np.arange(1, T + 1)
    else:
        steps = np.unique(np.geomspace(1, T, points).round().astype(int))
    want = set(steps.tolist())
    Se = torch.from_numpy(S / eps)
    St = torch.from_numpy(S)
    log_a = torch.from_numpy(np.log(np.where(a > 0, a, 1.0))).masked_fill(torch.from_numpy(a == 0), -math.inf)
    log_b = torch.from_numpy(np.log(np.where(b > 0, b, 1.0))).masked_fill(torch.from_numpy(b == 0), -math.inf)
    alpha = torch.zeros(S.shape[0], dtype=torch.float64)
    beta = torch.zeros(S.shape[1], dtype=torch.float64)
    cost, ent = [], []
    for t in range(1, T + 1):
        if t % 2:
            alpha = log_a - torch.logsumexp(Se + beta[None, :], 1)
        else:
            beta = log_b - torch.logsumexp(Se + alpha[:, None], 0)
        if t in want:
            lp = Se + alpha[:, None] + beta[None, :]
            p = torch.exp(lp)
            cost.append(float(-(p * St).sum()))
            ent.append(float(-(p * torch.where(p > 0, lp, 0)).sum()))
    return steps, np.array(cost), np.array(ent)


def _notices(encodings, coupling, grid, half_steps) -> list[str]:
    out = []
    names = ("Text A", "Text B") if len(encodings) == 2 else (
        ("Text A",) if len(encodings[0].segment) and encodings[0].segment.max() == 0
        else ("The pair",))
    for name, e in zip(names, encodings):
        if e.chars_cut:
            out.append(f"{name} was cut to its first {MAX_CHARS:,} characters "
                       f"(SINKSCOPE_MAX_CHARS).")
        if e.n_dropped:
            out.append(f"{name} was cut to the model's limit of {e.n} tokens: the next "
                       f"{e.n_dropped:,} tokens were dropped.")
    conv = np.asarray(coupling.converged)
    if half_steps > 1 and not conv.all():
        if grid:
            out.append(f"Sinkhorn has not converged on {int((~conv).sum())} of {conv.size} "
                       f"heads after {half_steps} half-steps: raise half-steps or ε.")
        else:
            err = max(float(coupling.row_err[-1]), float(coupling.col_err[-1]))
            out.append(f"Sinkhorn has not converged after {half_steps} half-steps "
                       f"(marginal error {err:.2g} > {coupling.tol:g}): raise half-steps or ε.")
    return out


def eps_path(r: Relation, eps_values=None, *, half_steps: int = 4000,
             tol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Sinkhorn couplings of one relation over a range of ε, large to small.

    Solving at ε on S equals solving at ε = 1 on S/ε, so all values run as one batch.

    Args:
        r: a single-head Relation. eps_values: decreasing ε values (default 12 values,
            log-spaced from 10 to 0.03).
        half_steps: the most half-steps (early stop at ``tol``); small ε needs many.

    Returns:
        (eps (K,), plans (K, n, m)).
    """
    if r.scores.ndim != 2:
        raise SettingsError("The ε path is for one layer and head; choose a head first.")
    eps = np.geomspace(10, 0.03, 12) if eps_values is None else np.asarray(eps_values, float)
    for e in eps:
        check_eps(e)
    S = torch.from_numpy(r.scores[None] / eps[:, None, None])
    c = sinkhorn(S, torch.from_numpy(r.a), torch.from_numpy(r.b), 1.0, half_steps,
                 tol=tol, early_stop=True)
    return eps, c.plan.numpy()
