"""The words a live chart shows when plotly.js fails, in the page's language: the main
page and Learn hand their ``chart_failed`` word (text/main.<lang>.json, notices; text/
learn.<lang>.json, ui) through ``charts.chart`` to ``live.chart``, which sends it with the
figure."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from sinkscope_app import charts, live, locale as i18n
from sinkscope_app.main import views
from tests.support.apptest import data as component_data, ok, run


def _failed_words(at) -> set[str]:
    return {component_data(el).get("failed") for el in at.get("bidi_component")
            if el.proto.component_name == "sinkscope_live_chart"
            and component_data(el).get("spec")}


def test_both_pages_have_the_word_in_both_languages_and_views_pass_it_on(monkeypatch):
    for page, where in (("main", "notices"), ("learn", "ui")):
        en, es = (i18n.texts(page, lang)[where]["chart_failed"] for lang in ("en", "es"))
        assert en == live.FAILED and "{error}" in es and es != en, page
    sent = []
    monkeypatch.setattr(charts, "live_chart", lambda fig, **kw: sent.append(kw["failed"]))
    fig = go.Figure(go.Scatter(x=[0], y=[1]))
    views.chart(fig, "x", "png", key="k")
    views.chart(fig, "x", "png", key="k", failed="No se pudo dibujar este gráfico: {error}")
    assert sent == [live.FAILED, "No se pudo dibujar este gráfico: {error}"]
    assert views.Ctx("m", "a", "b", "cross", 0, 0, "none", False, 1, 1).chart_failed == (
        live.FAILED)


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.parametrize("page,words,where", [(None, "main", "notices"),
                                               ("sinkscope_app/pages/learn.py", "learn", "ui")])
def test_the_spanish_page_sends_its_own_failed_chart_words(page, words, where):
    es = i18n.texts(words, "es")[where]["chart_failed"]
    query = {"lang": "es"} if page is None else {"lang": "es", "step": "1"}
    at = run(query, page=page, timeout=180)
    ok(at)
    got = _failed_words(at)
    assert got == {es}, got  # every live chart, none in English
    at = run({"lang": "en"} if page is None else {"lang": "en", "step": "1"}, page=page,
             timeout=180)
    ok(at)
    assert _failed_words(at) == {live.FAILED}
