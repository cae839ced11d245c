"""Every hostile input through the engine and the command line: a clear message or a
correct, finite result."""

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from engine import SinkscopeError, relate
from engine.io.cli import main as cli_main
from engine.relation.relate import default_encoder

from tests.support.hostile import CASES

pytestmark = pytest.mark.model


def test_corpus_is_large_enough():
    assert len(CASES) >= 40 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_engine(case):
    enc = default_encoder()
    if case.expect:
        with pytest.raises(SinkscopeError, match=case.expect):
            relate(case.a, case.b, encoder=enc)
        return
    r = relate(case.a, case.b, encoder=enc)
    for x in (r.scores, r.attention, r.softmax_plan, r.coupling.plan, r.exact_plan):
        assert np.isfinite(x).all()
    for v in r.summary.__dict__.values():
        assert np.isfinite(np.asarray(v, dtype=float)).all()
    assert r.truncated_a == case.truncated
    if case.truncated:
        assert any(n.kind in ("chars_cut", "tokens_cut") for n in r.notices)
    assert abs(r.coupling.plan.sum() - 1) < 1e-6


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_cli(case):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli_main(["relate", case.a, case.b, "--json", "--half-steps", "20"])
    if case.expect:
        assert code == 2 and case.expect in err.getvalue()
        assert "Traceback" not in err.getvalue()
        return
    assert code == 0, err.getvalue()
    d = json.loads(out.getvalue(), parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert len(d["tokens_a"]) == len(d["sinkhorn_plan"])
    assert all(v is not None for v in d["summary"].values())


@pytest.mark.parametrize("kw, words", [
    (dict(epsilon=1.0), "Unknown setting 'epsilon'"), (dict(eps=float("nan")), "ε must be"),
    (dict(settings={"half_steps": 0}), "half_steps must be ≥ 1"),
    (dict(settings={"mode": "both"}), "mode must be one of"),
    (dict(settings=[1, 2]), "Settings must be a mapping"), (dict(layer="all"), 'layer="all"')])
def test_hostile_settings(kw, words):
    """Settings that are not settings: a SettingsError (a ValueError) saying what to change,
    never a TypeError."""
    with pytest.raises(SinkscopeError, match=words):
        relate("The bank.", "A river bank.", encoder=default_encoder(), **kw)


@pytest.mark.parametrize("flags, words", [
    (["--eps", "nan"], "ε must be"), (["--eps=-inf"], "ε must be"),
    (["--half-steps", "0"], "half_steps must be ≥ 1"), (["--layer", "9"], "out of range"),
    (["--head", "all"], 'layer="all"')])
def test_hostile_cli_flags(flags, words):
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = cli_main(["relate", "The bank.", "A river bank.", *flags])
    assert code == 2 and words in err.getvalue() and "Traceback" not in err.getvalue()
