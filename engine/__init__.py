"""sinkscope's engine: texts as measures, softmax attention and Sinkhorn couplings.

Names load on first use (PEP 562), so the torch-free parts (``engine.types``,
``engine.settings``, ``engine.summary``, ``engine.references``, ``engine.export``) import
without torch: the figures (``viz``) and the HTTP client read them.
"""

from __future__ import annotations

import importlib
import sys
import types as _pytypes  # not "types": engine.types would rebind that name

_WHERE = {
    "ModelError": "errors", "SettingsError": "errors", "SinkscopeError": "errors",
    "TextError": "errors",
    "Coupling": "types", "Encoding": "types", "History": "types", "Notice": "types",
    "Projection": "types", "Relation": "types", "Summary": "types",
    "sinkhorn": "sinkhorn", "softmax_attention": "sinkhorn",
    "Encoder": "encoder", "allowed_models": "encoder",
    "project": "projection", "rank_texts": "sentences", "Ranking": "types",
    "encode_texts": "relate", "eps_path": "relate", "relate": "relate",
    "relate_encodings": "relate",
    "Lattice": "lattice", "relation_lattice": "lattice",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


class _Engine(_pytypes.ModuleType):
    """``engine.relate`` and ``engine.sinkhorn`` name functions, as they always have, even
    after their modules are imported (importing ``engine.relate`` binds the module on the
    package; this binds the module's function of the same name instead)."""

    def __setattr__(self, name: str, value) -> None:
        if isinstance(value, _pytypes.ModuleType) and _WHERE.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Engine
