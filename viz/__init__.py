"""Pure figure builders: engine results (or numpy arrays) in, ``plotly`` figures out.

Never imports torch or streamlit; reads engine's torch-free modules (types, summary,
references). Every builder takes the data first, then keyword-only options including
``height``, ``width`` and ``theme`` ("light" or "dark").

The layers × heads builder is ``viz.grid.grid``: the function is not re-exported as
``viz.grid`` so that name keeps meaning the module.
"""

from viz import bipartite, clouds, diagnostics, grid, heatmaps, theme
from viz.bipartite import graph
from viz.clouds import cloud
from viz.diagnostics import convergence, eps_path
from viz.heatmaps import compare, difference, heatmap
from viz.theme import apply, escape, thin_ticks

__all__ = ["apply", "bipartite", "cloud", "clouds", "compare", "convergence", "diagnostics",
           "difference", "eps_path", "escape", "graph", "grid", "heatmap", "heatmaps",
           "thin_ticks", "theme"]
