"""The Align page in Spanish (``/align?lang=es``): its words from ``text/align.es.json``,
warnings about a crafted link in the link's language, and the language carried by the
links to the other pages and to Compare."""

from __future__ import annotations

import string
from urllib.parse import parse_qs

import pytest

from sinkscope_app import align_page as ap, i18n
from tests.test_align_app import align, ok

EN, ES = i18n.texts("align", "en"), i18n.texts("align", "es")


def _fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def test_every_word_of_the_align_page_is_in_both_languages_with_the_same_fields():
    assert i18n.missing("align") == {"en": set(), "es": set()}
    for key, text in EN.items():
        if isinstance(text, str):
            assert ES[key].strip() and _fields(ES[key]) == _fields(text), key
    assert set(ES["plan_title"]) == set(ap.METHODS)  # method names stay as they are
    assert ap.ui("es")["text_a"] == "Texto A" and ap.ui("en")["text_a"] == "Text A"
    assert ap.ui("fr")["text_a"] == "Text A"  # a language without a file reads as English
    from sinkscope_app import align_live

    live = align_live.words_of(ap.ui("es"))  # the live sliders' words: all Spanish
    assert not [k for k, v in live.items() if v == align_live.WORDS[k]], live
    assert align_live.words_of(ap.ui("en")) == align_live.WORDS


def test_the_language_is_in_the_address_and_a_crafted_link_is_answered_in_it():
    values, warn = ap.parse_query({"lang": "es", "view": "nope", "method": "<b>",
                                   "tau": "nan"})
    assert values == {"align_lang": "es"} and len(warn) == 3
    assert any(w.startswith("El enlace pide un método desconocido, '<b>'") for w in warn)
    assert not [w for w in warn if "Unknown" in w or "link" in w]
    assert ap.to_query({**ap.DEFAULTS, **values})["lang"] == "es"
    assert ap.parse_query({"view": "nope"})[1] == [
        "Unknown view 'nope' in the link; showing the pair."]  # English as it was
    values, warn = ap.parse_query({"lang": "fr"})
    assert "align_lang" not in values and "Unknown language 'fr'" in warn[0]
    link = ap.compare_link("el gato", "a & b", "es")
    assert parse_qs(link[3:])["lang"] == ["es"] and "lang" not in ap.compare_link("a", "b")


@pytest.mark.model
@pytest.mark.slow
def test_align_in_spanish_shows_spanish_labels_and_carries_the_language():
    at = align({"lang": "es"})
    ok(at)
    labels = [t.label for t in at.text_area]
    assert ES["text_a"] in labels and ES["text_b"] in labels, labels
    assert EN["text_a"] not in labels
    assert at.checkbox[0].label == ES["lower"]
    views = [o for b in at.get("button_group") for o in b.options]
    assert ES["view_pair"] in views and EN["view_pair"] not in views
    links = {el.proto.page: parse_qs(el.proto.query_string) for el in at.get("page_link")}
    assert links and all(q == {"lang": ["es"]} for q in links.values()), links
    assert dict(at.query_params)["lang"] == "es"
    assert ES["heading"] in "\n".join(m.value for m in at.markdown)
