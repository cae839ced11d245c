"""The solver: entropic transport on scores (balanced, KL-relaxed and partial), references.

``sinkhorn``, ``partial`` and ``softmax_attention`` (defined in :mod:`engine.solver.core`)
load on first use (PEP 562), so ``engine.solver.references`` (numpy and POT only) imports
without torch.
"""

from __future__ import annotations

import importlib

_WHERE = {"sinkhorn": "core", "partial": "core", "softmax_attention": "core"}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'engine.solver' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
