"""Solver diagnostics: marginal errors per half-step, and the coupling along an ε path."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.solver.references import entropy as _entropy
from viz import theme as th
from viz._data import as_array, as_plan, labels, limits
from viz._axes import axis_titles, default_height
from viz._traces import map_trace
from viz.words import ENGLISH, WORDS, steps_text, words_of

from engine.relation.summary import Numbers
from engine.types import Coupling

FLOOR = 1e-16  # errors below this (exact zeros after their own half-step) are drawn here
COLOR_COST = "#009E73"  # Okabe–Ito bluish green
COLOR_ENTROPY = th.COLOR_ACCENT


def _error_trace(t: np.ndarray, err: np.ndarray, name: str, color: str,
                 w: dict = WORDS) -> go.Scatter:
    """Errors on a log axis: values below FLOOR are drawn at FLOOR and say so on hover."""
    kind = np.where(t % 2 == 1, w["row_step"], w["column_step"])
    note = np.where(err < FLOOR, w["below_floor"].format(floor=f"{FLOOR:.0e}"), "")
    return go.Scatter(
        x=t, y=np.maximum(err, FLOOR), mode="lines+markers", name=name,
        line=dict(color=color, width=2), marker=dict(color=color, size=6),
        customdata=np.stack([err.astype(object), kind.astype(object), note.astype(object)], axis=-1),
        hovertemplate=w["error_hover"].format(name=name) + "<extra></extra>")


def convergence(coupling: Coupling, *, current: int | None = None,
                height: int | None = None, width: int | None = None,
                theme: str = "light", words: dict | None = None,
                num: Numbers = ENGLISH) -> go.Figure:
    """L1 marginal errors per half-step (log axis) above cost and entropy.

    The errors alternate: after a row step (odd t) ‖π1 − a‖₁ is 0 up to rounding, after
    a column step ‖πᵀ1 − b‖₁ is. Zeros cannot sit on a log axis, so values below
    ``FLOOR`` are drawn at ``FLOOR`` and hover says so. If the errors stall above the
    tolerance, more half-steps or a larger ε are needed.

    Args:
        coupling: a single (unbatched) coupling; ``row_err``, ``col_err`` are (T,). Its
            ``history`` (cost and entropy at K half-steps) is drawn when present; else
            the final ``cost`` and ``entropy`` at T.
        current: the half-step the app shows (1..T), marked on both panels.
        height, width: size in pixels.
        theme: "light" or "dark".
        words, num: the figure's words over :data:`viz.words.WORDS` and the page's number
            format (English by default).

    Returns:
        A 2-row figure: row error and column error traces (plus a current-step marker
        when ``current`` is set) on a log y axis; cost and entropy (secondary y) below.
    """
    w = words_of(words)
    row_err, col_err = _errors(coupling)
    t = _error_steps(coupling, row_err.shape[0])
    T = int(t[-1])
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.62, 0.38],
                        vertical_spacing=0.08, specs=[[{}], [{"secondary_y": True}]],
                        subplot_titles=(w["l1_errors"], w["cost_entropy"]))
    fig.add_trace(_error_trace(t, row_err, w["row_err_name"], th.COLOR_A, w), row=1, col=1)
    fig.add_trace(_error_trace(t, col_err, w["col_err_name"], th.COLOR_B, w), row=1, col=1)
    if coupling.tol and coupling.tol > 0:
        fig.add_hline(y=float(coupling.tol), line=dict(dash="dot", width=1, color=th.COLOR_MATCH),
                      annotation_text=w["tolerance"].format(tol=num(coupling.tol)),
                      annotation_position="top right", row=1, col=1)
    cost, entropy = _cost_entropy_traces(coupling, T, w)
    fig.add_trace(cost, row=2, col=1, secondary_y=False)
    fig.add_trace(entropy, row=2, col=1, secondary_y=True)
    if current is not None:
        cur = int(np.clip(current, 1, T))
        k = int(np.searchsorted(t, cur, side="right")) - 1  # the kept half-step at or before
        fig.add_trace(_current_marker(int(t[k]), row_err[k:], col_err[k:], w), row=1, col=1)
        for r in (1, 2):
            fig.add_vline(x=cur, line=dict(color=th.COLOR_OVER, width=1.5, dash="dash"), row=r, col=1)
    _style_axes(fig, T, w)
    fig.update_layout(
        title=th.title(w["convergence"].format(eps=num(coupling.eps),
                                               steps=steps_text(w, T, num)),
                       status(coupling, w, num)),
        legend=dict(orientation="h", yanchor="top", y=-0.14, x=0.5, xanchor="center"),
        hovermode="closest", margin=dict(t=100, b=110))  # t: title and its note
    return th.apply(fig, theme, height=height or 600, width=width, separators=num.separators)


def _errors(coupling: Coupling) -> tuple[np.ndarray, np.ndarray]:
    """One head's row and column errors, both (T,)."""
    row_err = as_array(coupling.row_err, "coupling.row_err")
    col_err = as_array(coupling.col_err, "coupling.col_err")
    if row_err.ndim != 1 or row_err.shape != col_err.shape:
        raise ValueError(f"convergence needs one head's errors of shape (T,), got {row_err.shape}"
                         f" and {col_err.shape}; index the layer and head first")
    return row_err, col_err


def _error_steps(coupling: Coupling, K: int) -> np.ndarray:
    """(K,) the half-steps the errors are at: ``coupling.err_steps`` (a long history kept
    at some half-steps only), else 1..K."""
    steps = getattr(coupling, "err_steps", None)
    if steps is None:
        return np.arange(1, K + 1)
    steps = as_array(steps, "coupling.err_steps", 1)
    if steps.shape != (K,):
        raise ValueError(f"err_steps {steps.shape} must match the errors' ({K},)")
    return steps


def _cost_entropy_traces(coupling: Coupling, T: int, w: dict = WORDS
                         ) -> tuple[go.Scatter, go.Scatter]:
    """Cost ⟨−S, π⟩ and entropy H(π) along the recorded history (K half-steps), or the
    final values at T when the coupling kept none."""
    h = coupling.history
    if h is not None:
        steps = as_array(h.steps, "history.steps", 1)
        cost, ent = as_array(h.cost, "history.cost", 1), as_array(h.entropy, "history.entropy", 1)
        if not steps.shape == cost.shape == ent.shape:
            raise ValueError(f"history steps {steps.shape}, cost {cost.shape} and entropy "
                             f"{ent.shape} must have one shape (K,)")
        mode = "lines+markers"
    else:
        steps = np.array([T], dtype=float)
        cost = np.array([float(np.asarray(coupling.cost))])
        ent = np.array([float(np.asarray(coupling.entropy))])
        mode = "markers"
    return (go.Scatter(x=steps, y=cost, mode=mode, name=w["cost_name"],
                       line=dict(color=COLOR_COST, width=2), marker=dict(color=COLOR_COST),
                       hovertemplate=w["step_hover"].format(name=w["cost_word"])
                       + "<extra></extra>"),
            go.Scatter(x=steps, y=ent, mode=mode, name=w["entropy_name"],
                       line=dict(color=COLOR_ENTROPY, width=2, dash="dash"),
                       marker=dict(color=COLOR_ENTROPY),
                       hovertemplate=w["step_hover"].format(name=w["entropy_word"])
                       + "<extra></extra>"))


def _current_marker(cur: int, row_err: np.ndarray, col_err: np.ndarray,
                    w: dict = WORDS) -> go.Scatter:
    """Open circles on both errors at the half-step the app shows (the errors from it on)."""
    return go.Scatter(
        x=[cur, cur], y=np.maximum([row_err[0], col_err[0]], FLOOR),
        mode="markers", name=w["at_step"].format(t=cur), hoverinfo="skip",
        marker=dict(size=14, symbol="circle-open", color=th.COLOR_OVER, line=dict(width=2.5)))


def _style_axes(fig: go.Figure, T: int, w: dict = WORDS) -> None:
    """Log errors above; cost (left) and entropy (right) below; half-steps 1..T."""
    fig.update_yaxes(type="log", exponentformat="power", title=dict(text=w["l1_error"]),
                     row=1, col=1)
    fig.update_yaxes(title=dict(text=w["cost_word"], font=dict(color=COLOR_COST)), row=2, col=1,
                     secondary_y=False)
    fig.update_yaxes(title=dict(text=w["entropy_word"], font=dict(color=COLOR_ENTROPY)), row=2,
                     col=1, secondary_y=True, showgrid=False)
    fig.update_xaxes(title=dict(text=w["half_step_axis"]), row=2, col=1)
    fig.update_xaxes(range=[0.5, T + 0.5])


def status(coupling: Coupling, w: dict = WORDS, num: Numbers = ENGLISH) -> str:
    """Whether the coupling converged, in words, with what to do when it did not:
    "converged: max error e ≤ tol" or "not converged: max error e; run more half-steps
    or raise ε" (e = the larger of the last row and column errors)."""
    row_err, col_err = _errors(coupling)
    final = max(row_err[-1], col_err[-1])
    if bool(np.all(np.asarray(coupling.converged))):
        return w["conv_ok"].format(err=num(final), tol=num(coupling.tol))
    return w["conv_not"].format(err=num(final))


def eps_path(eps_values: Sequence[float], plans: object, exact_plan: object,
             tokens_a: Sequence[str] | None = None, tokens_b: Sequence[str] | None = None, *,
             frame_ms: int = 600, height: int | None = None, width: int | None = None,
             theme: str = "light", mode: str = "separate", words: dict | None = None,
             num: Numbers = ENGLISH) -> go.Figure:
    """Animation of the coupling as ε falls, ending on the exact OT plan.

    At large ε the coupling is close to the product a ⊗ b (every pair gets a_i b_j);
    as ε → 0 it concentrates on the exact optimal transport plan.

    Args:
        eps_values: (K,) the ε of each plan, from large to small.
        plans: (K, n, m) Sinkhorn couplings at those ε.
        exact_plan: (n, m) exact OT plan (the last, reference frame).
        tokens_a, tokens_b: n and m token strings; None numbers them.
        frame_ms: milliseconds per frame when playing.
        height, width: size in pixels.
        theme: "light" or "dark".
        mode: the relation's mode; "self" titles the axes text A (queries) and (keys).
        words, num: the figure's words over :data:`viz.words.WORDS` and the page's number
            format (English by default).

    Returns:
        A figure with one ``Heatmap``, K + 1 frames (the last named "exact OT"), a
        play/pause menu and a slider labelled with the ε values; one colour scale for all.
    """
    stack = as_array(plans, "plans", 3)
    exact = as_plan(exact_plan, "exact_plan")
    eps = as_array(eps_values, "eps_values", 1)
    K, n, m = stack.shape
    if K == 0 or eps.shape[0] != K or exact.shape != (n, m):
        raise ValueError(f"need K ≥ 1 plans (K, n, m) with K ε values and an (n, m) exact plan; "
                         f"got plans {stack.shape}, {eps.shape[0]} ε values, exact {exact.shape}")
    w = words_of(words)
    la, lb = labels(tokens_a, n, "tokens_a"), labels(tokens_b, m, "tokens_b")
    lo, hi = limits(stack, exact)
    names = [w["path_eps"].format(eps=num(e)) for e in eps] + [w["exact_ot"]]
    titles = [w["path_at"].format(eps=num(e), entropy=num(float(_entropy(p))))
              for e, p in zip(eps, stack)]
    titles.append(w["path_exact"].format(entropy=num(float(_entropy(exact)))))
    zs = list(stack) + [exact]
    trace = map_trace(zs[0], la, lb, zname=w["mass"], colorscale=th.MASS_SCALE, zmin=lo, zmax=hi,
                      colorbar=dict(title=dict(text=w["mass_pi"], side="right"), thickness=14))
    frames = [go.Frame(name=name, data=[go.Heatmap(z=z)], layout=dict(title=dict(text=title)))
              for name, z, title in zip(names, zs, titles)]
    fig = go.Figure(data=[trace], frames=frames)
    anim = dict(mode="immediate", transition=dict(duration=0))
    fig.update_layout(
        title=dict(text=titles[0]),
        updatemenus=[dict(type="buttons", direction="left", x=0.0, y=0.0, xanchor="left",
                          yanchor="top", showactive=False, pad=dict(t=20, r=10), buttons=[
                              dict(label=w["play"], method="animate",
                                   args=[None, dict(anim, frame=dict(duration=frame_ms, redraw=True),
                                                    fromcurrent=True)]),
                              dict(label=w["pause"], method="animate",
                                   args=[[None], dict(anim, frame=dict(duration=0, redraw=False))])])],
        sliders=[dict(active=0, x=0.22, len=0.78, y=0.0, yanchor="top", pad=dict(t=10),
                      currentvalue=dict(prefix="", visible=True, xanchor="right"),
                      steps=[dict(label=name, method="animate",
                                  args=[[name], dict(anim, frame=dict(duration=0, redraw=True))])
                             for name in names])])
    # Text B's labels go on top so the play button and slider have the bottom to themselves.
    rows, cols = axis_titles(mode, w)
    fig.update_xaxes(**th.token_axis(lb, title=cols, rotate=True), side="top")
    fig.update_yaxes(**th.token_axis(la, title=rows, reverse=True))
    fig.update_layout(margin=dict(t=170, b=110), title=dict(y=0.98, yanchor="top"))
    return th.apply(fig, theme, height=height or default_height(n, extra=120), width=width,
                    separators=num.separators)
