"""Trained word aligners: the Sinkhorn Transformer learning a real relation from gold links.

- ``config``: :class:`AlignerSettings` (defaults and ranges in :mod:`engine.settings`) and
  :class:`AlignerError` (codes with parameters).
- ``layers``: the final layers, a Sinkhorn coupling with dustbins or a row softmax with a
  null column, and the gold's negative log-likelihood.
- ``model``: :class:`Aligner`, a base model's top layers fine-tuned, word pooling, Q/K heads.
- ``data``: a corpus tokenised once, the frozen layers run once; padded batches.
- ``training``: :func:`train` with progress, stop requests, early stop, the best epoch kept.
- ``extract``: plans, θ tuned on dev, :func:`align`, :func:`evaluate` with paired intervals.
- ``checkpoint``: :func:`save` / :func:`load` (safetensors + config.json), the operator's
  allow-list (``SINKSCOPE_ALIGNERS``): :func:`describe`, :func:`load_allowed`.
- ``cli``: ``python -m engine train-aligner`` and ``align --aligner``.

Names load on first use, so the command line's ``--help`` does not import torch.
"""

from __future__ import annotations

from .._lazy import exports

_WHERE = {
    "AlignerSettings": "config", "AlignerError": "config",
    "Aligner": "model", "prepare": "data", "Corpus": "data",
    "train": "training", "Trained": "training", "Progress": "training",
    "plans": "extract", "tune_theta": "extract", "align": "extract",
    "evaluate": "extract",
    "save": "checkpoint", "load": "checkpoint", "allowed_aligners": "checkpoint",
    "describe": "checkpoint", "load_allowed": "checkpoint", "AlignerInfo": "checkpoint",
}
__all__ = sorted(_WHERE)

__getattr__, __dir__ = exports(__name__, _WHERE)
