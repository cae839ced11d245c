"""The public API as DESIGN.md writes it keeps working, name for name."""

import subprocess
import sys

import numpy as np
import pytest


def test_every_public_import_resolves_without_torch_where_promised():
    code = ("import sys; from engine.client import EngineClient, EngineUnavailable; "
            "import engine.types, engine.settings; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_names_from_engine_are_the_functions_whatever_was_imported_first():
    """Sub-packages share no name with a function ``engine`` exports."""
    code = ("import engine.relation.relate, engine.solver, engine.alignment.score, engine.lab;"
            "import engine; from engine import (Encoder, relate, sinkhorn, softmax_attention, "
            "align, score, tune, partial, eps_path);"
            "import inspect;"
            "assert all(inspect.isfunction(f) for f in (relate, sinkhorn, softmax_attention, "
            "align, score, tune, partial, eps_path)), 'a name is a module';"
            "assert inspect.isclass(Encoder)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr


@pytest.mark.model
def test_design_snippets_run_unchanged():
    from engine import Encoder, relate, sinkhorn, softmax_attention

    enc = Encoder.default(device=None)
    e = enc.encode("The bank of the river.")
    L, H, n, dh = e.q.shape
    assert e.hidden.shape[:2] == (L + 1, n) and e.attentions.shape == (L, H, n, n)
    S = np.random.default_rng(0).normal(size=(n, 6))
    P = softmax_attention(S, eps=1.0)
    np.testing.assert_allclose(P.sum(-1), 1.0, atol=1e-12)
    a, b = np.full(n, 1 / n), np.full(6, 1 / 6)
    c = sinkhorn(S, a, b, eps=1.0, half_steps=200)
    np.testing.assert_allclose(c.plan.sum(0), b, atol=1e-9)
    assert c.row_err.shape[-1] == 200 and bool(c.converged)
    r = relate("text A", "text B")
    r = relate("text A", "text B", layer=5, head=3, eps=0.5, half_steps=50, mode="separate")
    assert r.layer == 5 and r.head == 3 and r.eps == 0.5
    with pytest.raises(ValueError, match="ε"):
        relate("text A", "text B", eps=-1)
