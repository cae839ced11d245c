"""sinkscope: softmax attention beside Sinkhorn couplings, from Python.

A text is a measure μ = Σᵢ aᵢ δ_{xᵢ}, one atom per token; a relation between two texts is
a coupling π ∈ Π(a, b). The names below load on first use (importing ``sinkscope`` does
not import torch):

Relations (``engine.relation``, ``engine.solver``):
    relate(text_a, text_b, layer=…, head=…, eps=…, half_steps=…, mode=…) -> Relation:
        ``softmax_plan`` (n, m) = diag(a)·softmax(S/ε), ``coupling.plan`` (n, m) the
        Sinkhorn coupling, ``scores`` (n, m) S = QKᵀ/√d, ``a`` (n,), ``b`` (m,),
        ``summary`` (marginal errors, cost, entropy, convergence).
    sinkhorn(S, a, b, eps, half_steps) -> Coupling: the solver on scores S (…, n, m).
    eps_path(text_a, text_b, …) -> (ε (K,), plans (K, n, m)): the path to exact transport.
    Settings, Relation: the frozen settings and result.

Word alignment (``engine.alignment``, ``engine.aligner``):
    align(pairs or a file, gold=…, method=…) -> dict: the verdict and the links, the same
        document as ``sinkscope align --pairs FILE --json``.
    train_aligner(train_pairs, dev_pairs, settings) -> Trained; load_aligner(folder).

Figures (``viz``, plotly): compare, difference, heatmap, graph, cloud, convergence,
heads_grid, path_figure; the module ``sinkscope.figures`` holds them all.

Notebooks: show(relation) or show("text A", "text B", …) draws the compare view with live
ε and half-step sliders (``sinkscope.notebook``, anywidget); show(alignment) a pair's
links with the θ slider.

The app: ``sinkscope app`` on the command line (``python -m sinkscope app``).
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# name -> (module, attribute); a module alone (attribute None) for sub-modules.
_WHERE = {
    "relate": ("engine.relation.relate", "relate"),
    "eps_path": ("engine.relation.relate", "eps_path"),
    "sinkhorn": ("engine.solver.core", "sinkhorn"),
    "Settings": ("engine.settings", "Settings"),
    "Relation": ("engine.types", "Relation"),
    "Coupling": ("engine.types", "Coupling"),
    "SinkscopeError": ("engine.errors", "SinkscopeError"),
    "align": ("sinkscope.alignment", "align"),
    "align_pair": ("sinkscope.alignment", "align_pair"),
    "train_aligner": ("engine.aligner.training", "train"),
    "load_aligner": ("engine.aligner.checkpoint", "load"),
    "AlignerSettings": ("engine.aligner.config", "AlignerSettings"),
    "compare": ("viz.heatmaps", "compare"),
    "difference": ("viz.heatmaps", "difference"),
    "heatmap": ("viz.heatmaps", "heatmap"),
    "graph": ("viz.bipartite", "graph"),
    "cloud": ("viz.clouds", "cloud"),
    "convergence": ("viz.diagnostics", "convergence"),
    "path_figure": ("viz.diagnostics", "eps_path"),
    "heads_grid": ("viz.grid", "grid"),
    "figures": ("viz", None),
    "show": ("sinkscope.notebook", "show"),
}
__all__ = sorted([*_WHERE, "__version__"])


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'sinkscope' has no attribute {name!r}")
    module, attr = _WHERE[name]
    value = importlib.import_module(module)
    value = value if attr is None else getattr(value, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
