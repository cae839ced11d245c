"""Every hostile input of ``tests/support/hostile.py`` through the app (AppTest): a clear message
naming what to change, or charts with finite numbers — never a traceback.

One AppTest instance serves the whole corpus (the model loads once; each case is one
rerun of a fraction of a second): the text areas are set by their keys as a user would
type them, and the controls the cases do not touch stay at their defaults.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path

import pytest

os.environ["SINKSCOPE_WARM_UP"] = "0"  # keep both cores for the tests

from streamlit.testing.v1 import AppTest  # noqa: E402

from tests.support.hostile import CASES, HTML_PAYLOADS  # noqa: E402
from tests.support.apptest import data as component_data  # noqa: E402


def charts(at: AppTest) -> list[str]:
    """The plotly JSON of every chart on the page (live charts and st.plotly_chart)."""
    live = [component_data(el)["spec"] for el in at.get("bidi_component")
            if el.proto.component_name == "sinkscope_live_chart"]
    return [spec for spec in live if spec] + [el.proto.spec for el in at.get("plotly_chart")]


pytestmark = pytest.mark.model

APP = str(Path(__file__).resolve().parent.parent / "app.py")
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
NON_FINITE = re.compile(r"\b(nan|inf|infinity)\b|n/a", re.IGNORECASE)


@pytest.fixture
def app() -> AppTest:
    """A fresh session on the default page."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.text_area, "nothing rendered: a syntax error?"
    return at


def messages(at: AppTest) -> list[str]:
    return [e.value for e in at.error] + [w.value for w in at.warning]


def metric_numbers(at: AppTest) -> dict[str, list[float]]:
    """Every number shown in the metrics strip (values and details), by label."""
    out: dict[str, list[float]] = {}
    rows = [component_data(el)["metrics"] for el in at.get("bidi_component")
            if el.proto.component_name == "sinkscope_scrub"]
    for m in (rows[0] if rows else []):
        shown = f"{m['value']} {m['detail']}"
        assert not NON_FINITE.search(shown), (m["label"], shown)
        if m["label"] == "Converged":
            assert m["value"] in ("yes", "no"), m["value"]
            out[m["label"]] = []
            continue
        nums = [float(x) for x in NUMBER.findall(shown)]
        assert nums, (m["label"], shown)
        assert all(math.isfinite(x) for x in nums), (m["label"], shown)
        out[m["label"]] = nums
    return out


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def type_texts(at: AppTest, a: str, b: str) -> AppTest:
    """Type both texts into their boxes (by key) and run, as a user committing them.

    A lone surrogate cannot travel as a widget value (a browser sends U+FFFD instead and
    AppTest's protobuf refuses it, on every later run too), so such a pair goes into the
    session state of a fresh AppTest before its first run: the app must clean it."""
    if not (encodable(a) and encodable(b)):
        fresh = AppTest.from_file(APP, default_timeout=120)
        fresh.session_state["a"], fresh.session_state["b"] = a, b
        fresh.session_state["ex"] = "custom"
        return fresh.run()
    at.sidebar.text_area(key="a").set_value(a)
    at.sidebar.text_area(key="b").set_value(b)
    return at.run()


def test_corpus_through_the_app(app):
    t0 = time.perf_counter()
    per_case: dict[str, float] = {}
    failures: list[str] = []
    for case in CASES:
        t = time.perf_counter()
        at = type_texts(app, case.a, case.b)
        per_case[case.id] = time.perf_counter() - t
        try:
            assert not at.exception, [e.value for e in at.exception]
            assert at.sidebar.text_area, "nothing rendered"
            if case.expect:
                msgs = messages(at)
                assert any(case.expect in m for m in msgs), msgs
                assert not charts(at), "charts drawn for rejected input"
                continue
            assert not at.error, [e.value for e in at.error]
            figs = charts(at)
            assert len(figs) >= 2, f"{len(figs)} charts"
            numbers = metric_numbers(at)
            assert len(numbers) == 8, list(numbers)
            if case.truncated:
                notes = [i.value for i in at.info] + [w.value for w in at.warning]
                assert any("cut" in n or "limit" in n for n in notes), notes
            blob = " ".join(figs)
            for payload in HTML_PAYLOADS:  # HTML never reaches plotly unescaped
                for tag in ("<script", "<img", "<iframe", "<a href", "<b>"):
                    if tag in payload:
                        assert tag not in blob, (tag, case.id)
            for fig in (json.loads(spec) for spec in figs):
                title = json.dumps(fig["layout"].get("title", {}), ensure_ascii=False)
                assert not NON_FINITE.search(title), title  # numbers in titles too
        except AssertionError as e:
            failures.append(f"{case.id}: {e}")
    total = time.perf_counter() - t0
    slow = sorted(per_case.items(), key=lambda kv: -kv[1])[:3]
    print(f"\n{len(CASES)} hostile cases through the app in {total:.1f} s "
          f"(slowest: {', '.join(f'{k} {v:.2f} s' for k, v in slow)})")
    assert not failures, "\n".join(failures)


def test_app_recovers_after_hostile_input(app):
    """After hostile texts (an error, markup, a huge text), an ordinary pair still works in
    the same session."""
    at = app
    for case in CASES:
        if case.id in ("empty-a", "html-script", "huge-100k"):
            type_texts(at, case.a, case.b)
    assert at.session_state["a"] != "The cat sat on the mat."
    type_texts(at, "The cat sat on the mat.", "A dog lay on the rug.")
    assert not at.exception and not at.error
    assert len(charts(at)) >= 2
    assert at.session_state["ex"] == "custom"


def test_huge_text_typed_is_cut_with_notice(app):
    """A 100,000-character text typed in the box (beyond the box's own limit) is cut to
    the configured limit, and the user is told."""
    at = app
    huge = next(c for c in CASES if c.id == "huge-100k")
    type_texts(at, huge.a, "A river bank.")
    assert not at.exception and not at.error, messages(at)
    notes = [i.value for i in at.info] + [w.value for w in at.warning]
    assert any("cut" in n or "limit" in n for n in notes), notes
    metric_numbers(at)


# ----------------------------------------------------------------------------- crafted URLs
# The list, each opened as a fresh session: the value is clamped or rejected with a
# message, the page still draws, and no traceback. (tests/test_app.py checks parse_query
# for each value and one combined hostile link through the app; these open each alone.)
MB_TEXT = "word " * 200_000  # 1,000,000 characters
HALF_MB_TEXT = "word " * 100_000  # 500,000: under Streamlit's own 512 Ki query-string cap
@pytest.mark.parametrize("query, message, key, value", [
    ({"eps": "0"}, "ε must be a positive number", "eps", 1.0),
    ({"eps": "-1"}, "ε must be a positive number", "eps", 1.0),
    ({"eps": "1e300"}, "is outside", "eps", "eps_max"),
    ({"eps": "NaN"}, "ε must be a positive number", "eps", 1.0),
    ({"steps": "1000000000"}, "half-steps = 1,000,000,000 is outside", "steps",
     "max_half_steps"),
    ({"layer": "99"}, "Layer 99 is out of range", "layer", 5),
    ({"mode": "unknown"}, "Unknown mode", "mode", "separate"),
    ({"a": HALF_MB_TEXT, "b": "A river bank."}, "500,000 characters", "a", "max_chars"),
], ids=["eps-0", "eps-neg", "eps-1e300", "eps-nan", "steps-1e9", "layer-99", "mode-unknown",
        "text-500KB"])
def test_crafted_url_is_clamped_with_a_message(query, message, key, value):
    from engine.settings import CONFIG as LIMITS
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(query)
    at.run()
    assert not at.exception, [e.value for e in at.exception]  # never a traceback, even
    assert len(charts(at)) >= 2
    assert not at.error, [e.value for e in at.error]
    warnings = [w.value for w in at.warning]
    assert any(message in w for w in warnings), warnings
    got = at.session_state[key]
    if key == "a":
        assert len(got) == LIMITS.max_chars
    else:
        assert got == (getattr(LIMITS, value) if value in ("eps_max", "max_half_steps")
                       else value)
    assert len(charts(at)) >= 2, "the page still works after a crafted link"
    metric_numbers(at)
    # The URL the app writes back holds the safe value, not the crafted one.
    q = {k: (v[-1] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert q[key] != query[key]
    if key == "a":
        assert len(q["a"]) == LIMITS.max_chars


def test_megabyte_url_opens_the_default_view_with_a_message():
    """Streamlit (runtime/state/query_params.sanitize_query_string) drops a whole query
    string over 512 Ki characters before the app runs, logging a server warning: a 1 MB
    link opens the default view, says why, with no traceback and working charts."""
    AppTest.from_file(APP, default_timeout=120).run()  # a first visitor starts the process
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"a": MB_TEXT, "b": "A river bank.", "eps": "0.3"})
    at.run()
    assert not at.exception and not at.error
    assert any("too long to open" in w.value for w in at.warning), [w.value for w in at.warning]
    assert len(charts(at)) >= 2
    assert at.session_state["a"] != MB_TEXT and len(at.session_state["a"]) < 1000
    metric_numbers(at)


@pytest.mark.parametrize("name", ["bert-base-uncased", "/etc/passwd", "../../model",
                                  "https://example.com/evil"])
def test_unlisted_model_in_a_link_is_refused(name):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"model": name})
    at.run()
    assert not at.exception and not at.error
    assert any("Unknown model" in w.value for w in at.warning), [w.value for w in at.warning]
    assert at.session_state["model"] == "all-MiniLM-L6-v2"
    assert len(charts(at)) >= 2


def test_a_dropped_link_warns_only_its_own_visitor():
    """Streamlit's note that it dropped an over-long link is kept per session: a visitor
    who opens a bare address just after gets no warning about someone else's link."""
    first = AppTest.from_file(APP, default_timeout=120)
    first.query_params.update({"a": MB_TEXT})
    first.run()
    assert any("too long to open" in w.value for w in first.warning)
    other = AppTest.from_file(APP, default_timeout=120).run()  # right after, a bare address
    assert not any("too long to open" in w.value for w in other.warning)
    first.run()  # said once
    assert not any("too long to open" in w.value for w in first.warning)
