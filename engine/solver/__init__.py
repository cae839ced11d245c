"""The solver: entropic transport on scores (balanced, KL-relaxed and partial), references.

``sinkhorn``, ``partial`` and ``softmax_attention`` load on first use (PEP 562), so
``engine.solver.references`` (numpy and POT only) imports without torch. The solver lives
in the module ``engine.solver.sinkhorn``, which shares the function's name: once imported,
Python binds ``engine.solver.sinkhorn`` to that module, and calling the module calls the
function, so ``from engine.solver import sinkhorn`` solves either way.
"""

from __future__ import annotations

import importlib

_WHERE = {"sinkhorn": "sinkhorn", "partial": "sinkhorn", "softmax_attention": "sinkhorn"}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'engine.solver' has no attribute {name!r}")
    module = importlib.import_module(f".{_WHERE[name]}", __name__)
    if name == _WHERE[name]:  # the module itself, callable as its solver
        return module
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
