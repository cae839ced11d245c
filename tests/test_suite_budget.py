"""``python -m benchmarks.suite``'s reading of pytest's summary and its verdict (the suites
themselves take a quarter of an hour each: docs/testing.md has what it printed)."""

from __future__ import annotations

import pytest

from benchmarks.suite import BUDGET, REFERENCE, main, summary, verdict


def test_summary_reads_the_last_line_with_its_skips_and_warnings():
    out = ("....s.\n1 passed in 2.00s\n"
           "SKIPPED [1] tests/test_gpu.py:134: needs a CUDA GPU\n"
           "1133 passed, 11 skipped, 2 warnings in 767.51s (0:12:47)\n")
    assert summary(out) == ("1133 passed, 11 skipped, 2 warnings", 767.51)
    assert summary("===== 958 passed in 272.60s =====") == ("958 passed", 272.6)


@pytest.mark.parametrize("out", ["", "collected 0 items", "3 failed, 950 passed in 281.0s",
                                 "950 passed, 1 error in 281.0s"])
def test_summary_refuses_a_run_that_is_no_reference(out):
    with pytest.raises(ValueError):
        summary(out)
    if "passed" in out:  # the base's: a failing test still took its time
        assert summary(out, strict=False)[1] == 281.0
    else:
        with pytest.raises(ValueError):
            summary(out, strict=False)


def test_verdict_is_the_ratio_against_the_budget_at_the_reference():
    most = BUDGET / REFERENCE
    assert "within" in verdict(765.0, 765.0) and "ratio 1.00" in verdict(765.0, 765.0)
    assert "within" in verdict(100.0, 100.0 * most - 1e-9)
    assert "OVER" in verdict(100.0, 100.0 * most + 0.01)
    assert f"≈ {REFERENCE * 1.2:.0f} s of 300 s" in verdict(700.0, 840.0)


def test_an_unknown_base_is_refused_with_a_sentence():
    with pytest.raises(SystemExit, match="no worktree of 'no-such-commit'"):
        main(["--base", "no-such-commit"])
