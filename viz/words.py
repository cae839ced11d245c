"""The words of the main page's figures, in English, and how a builder takes a page's own.

Every builder of :mod:`viz.heatmaps`, :mod:`viz.bipartite`, :mod:`viz.clouds`,
:mod:`viz.diagnostics`, :mod:`viz.grid` and :mod:`viz.sentences` takes ``words`` (a
mapping over :data:`WORDS`, e.g. a page's ``figures`` in its language) and ``num`` (an
``engine.relation.summary.Numbers``: how the language writes numbers, and plotly's
``separators`` for axes and hovers). Without them a figure is English, its numbers as
:func:`engine.relation.summary.fmt` writes them. Templates hold ``{fields}``; those the
browser fills while a slider moves travel in ``layout.meta`` in the page's words.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.relation.summary import Numbers

ENGLISH = Numbers()

WORDS: dict[str, str] = {
    # maps: axes, hovers, the compare and difference figures
    "text_a": "text A", "text_b": "text B",
    "queries": "text A (queries)", "keys": "text A (keys)",
    "hover_a": "A", "hover_b": "B", "query_a": "query A", "key_a": "key A",
    "mass": "mass", "mass_pi": "mass π(i, j)", "delta_mass": "Δ mass",
    "score": "score S", "cost_s": "cost −S",
    "relates": "How text A relates to {what} · {settings}",
    "what_b": "text B", "what_self": "itself",
    "settings": "layer {layer}, head {head}", "settings_mean": "layer {layer}, head mean",
    "compare_softmax": "Softmax (ε={eps})<br>column error {softmax_col_err}",
    "compare_sinkhorn": "Sinkhorn (ε={eps}, {steps})<br>max error {max_err}{not_converged}",
    "not_converged": " · not converged",
    "difference_title": "Sinkhorn − softmax · ε={eps}, {steps}{identical}",
    "difference_note": "{settings} · red: the coupling puts more mass here; blue: less",
    "identical": " · identical (to 10⁻¹²)",
    "above": "above target", "below": "below target", "on": "on target",
    "target": "target", "target_a": "target a", "target_b": "target b",
    "bars": "Bars:", "sends": "sends", "receives": "receives", "difference": "difference",
    "a_sends": "A<br>sends", "a_receives": "A receives", "b_receives": "B receives",
    "half_step": "{n} half-step", "half_steps": "{n} half-steps",
    # the bipartite graph
    "graph_title": "Who sends mass to whom · {rule} · {settings}",
    "graph_note": "node area ∝ weight, edge width ∝ mass (each panel to its own heaviest); "
                  "grey nodes carry no weight",
    "graph_top": "top {k} per A token", "graph_all": "all edges",
    "graph_threshold": ", mass ≥ {mass}",
    "graph_softmax": "Softmax diag(a)·softmax(S/ε), ε={eps}",
    "graph_sinkhorn": "Sinkhorn coupling, ε={eps}, {steps}",
    "node": "{SIDE}[{k}] {label}<br>weight {side} = {weight}, {verb} {sum}<br>heaviest "
            "partners:<br>",
    "no_mass": "no mass",
    # the cloud
    "cloud_title": "Joint {method} of {space} · distance–cost ρ = {rho}",
    "cloud_qk": "queries of A and keys of B", "cloud_hidden": "hidden states",
    "cloud_edges": "edges: top {k} of the {which} plan; near points should be cheap pairs",
    "cloud_keeps": "{method} keeps {share}% of variance",
    "cloud_low": "ρ = {rho} is low: distances in this picture say little about cost; it may "
                 "mislead.",
    "cloud_weight": "{SIDE}[{k}] {label}<br>weight {side} = {weight}",
    "coupling": "coupling", "na": "n/a",
    "note_umap_few_points": "UMAP needs at least 4 points; PCA shown instead.",
    # convergence and the ε path
    "convergence": "Sinkhorn convergence · ε={eps}, {steps}",
    "l1_errors": "L1 marginal errors", "cost_entropy": "cost and entropy",
    "row_err_name": "row error ‖π1 − a‖₁", "col_err_name": "column error ‖πᵀ1 − b‖₁",
    "cost_name": "cost ⟨−S, π⟩", "entropy_name": "entropy H(π)",
    "tolerance": "tolerance {tol}", "l1_error": "L1 error", "cost_word": "cost",
    "entropy_word": "entropy", "half_step_axis": "half-step (odd: rows, even: columns)",
    "row_step": "row step", "column_step": "column step",
    "below_floor": " (below {floor}, drawn at the floor)",
    "error_hover": "half-step %{{x}} (%{{customdata[1]}})<br>{name} %{{customdata[0]:.3e}}"
                   "%{{customdata[2]}}",
    "step_hover": "half-step %{{x}}<br>{name} %{{y:.4g}}", "at_step": "half-step {t}",
    "conv_ok": "converged: max error {err} ≤ {tol}",
    "conv_not": "not converged: max error {err}; run more half-steps or raise ε",
    "path_at": "Sinkhorn coupling at ε = {eps} · entropy H(π) = {entropy}",
    "path_exact": "Exact OT plan (ε → 0) · entropy H(π) = {entropy}",
    "path_eps": "ε={eps}", "exact_ot": "exact OT", "play": "▶ play", "pause": "❚❚ pause",
    # the heads grid
    "grid_title": "Layers × heads · number above each tile: {value}",
    "grid_click": "click a tile's centre to select that head",
    "grid_value": "value", "grid_value_max": "value / tile max",
    "grid_cell": "layer {layer} · head {head}", "grid_tile": "layer {layer}, head {head}",
    "layer_word": "layer", "head_word": "head",
    # the Sentences view
    "sent_title": "Two rankings of the candidates against text A",
    "sent_same": "about the same place", "sent_higher": "higher by divergence",
    "sent_lower": "lower by divergence", "sent_by_sim": "by sentence similarity",
    "sent_by_div": "by Sinkhorn divergence",
    "sent_sim_head": "<b>sentence similarity</b> (cosine)",
    "sent_div_head": "<b>Sinkhorn divergence</b> S_ε, ε = {eps}",
    "sent_hover": "cosine similarity {cosine} (place {place})<br>Sinkhorn divergence "
                  "{divergence} (place {dplace})",
    "sent_x": "sentence similarity: cosine of the model's embeddings",
    "sent_y": "Sinkhorn divergence S_ε (ε = {eps})",
    "sent_one": "One ranking against the other{rho}",
    "sent_rho": " · Spearman ρ(cosine, −S_ε) = {rho}", "candidates": "candidates",
}


def words_of(words: Mapping[str, str] | None = None) -> dict[str, str]:
    """:data:`WORDS` with ``words`` over them (keys :data:`WORDS` does not hold are
    ignored).

    Raises:
        ValueError: a word that is not a string.
    """
    out = dict(WORDS)
    for k, v in (words or {}).items():
        if k in WORDS:
            if not isinstance(v, str):
                raise ValueError(f"words[{k!r}] must be a string, got {type(v).__name__}.")
            out[k] = v
    return out


def steps_text(w: Mapping[str, str], t: int, num: Numbers = ENGLISH) -> str:
    """"1 half-step", "100 half-steps" in ``w``'s words, ``num``'s digits."""
    return w["half_step" if int(t) == 1 else "half_steps"].format(n=num.count(int(t)))


def settings_text(w: Mapping[str, str], layer, head) -> str:
    """"layer 4, head 3" or "layer 4, head mean" in ``w``'s words."""
    return w["settings_mean" if head == "mean" else "settings"].format(layer=layer, head=head)
