"""The app's words as data: every language has every key, and no Learn text is in code."""

from __future__ import annotations

import ast
import json
import string
from pathlib import Path

import pytest

from sinkscope_app import i18n, learn_text
from viz import learn as vl

ROOT = Path(__file__).resolve().parent.parent
# Modules of the Learn page that must hold no words of their own (they read them from
# text/learn.<lang>.json).
LEARN_CODE = ("sinkscope_app/learn_text.py", "sinkscope_app/learn_steps.py",
              "sinkscope_app/learn_state.py", "pages/learn.py", "viz/learn.py")


def _fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def _leaves(tree, prefix=""):
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _leaves(v, f"{prefix}{k}.")
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _leaves(v, f"{prefix}{i}.")
    else:
        yield prefix[:-1], tree


def test_every_language_has_every_key_and_the_same_fields():
    assert i18n.languages("learn") == ("en", "es")
    assert i18n.missing("learn", optional=("examples",)) == {"en": set(), "es": set()}
    en = dict(_leaves(i18n.texts("learn", "en")))
    es = dict(_leaves(i18n.texts("learn", "es")))
    for path, text in en.items():
        if path.startswith("examples."):
            continue
        assert isinstance(text, str) and text.strip(), path
        if not path.endswith(".math"):  # LaTeX braces are not fields
            assert _fields(text) == _fields(es[path]), path
    ids = {e["id"] for e in json.loads((ROOT / "assets" / "examples.json").read_text())
           ["examples"]}
    assert set(i18n.texts("learn", "es")["examples"]) == ids  # every title in Spanish


@pytest.mark.parametrize("page", i18n.pages())
def test_every_page_has_every_key_in_every_language(page):
    # "examples" may be left to assets/examples.json by one language (English titles)
    assert len(i18n.languages(page)) >= 2
    assert all(not gap for gap in i18n.missing(page, optional=("examples",)).values())


def test_missing_names_the_key_a_language_lacks(tmp_path, monkeypatch):
    (tmp_path / "demo.en.json").write_text('{"ui": {"back": "Back", "next": "Next"}}')
    (tmp_path / "demo.es.json").write_text('{"ui": {"back": "Atrás"}}')
    monkeypatch.setattr(i18n, "TEXT_DIR", tmp_path)
    i18n.texts.cache_clear()
    try:
        assert i18n.missing("demo") == {"en": set(), "es": {"ui.next"}}
        assert i18n.pages() == ("demo",)
        with pytest.raises(i18n.TextFileError, match="languages there are: en, es"):
            i18n.texts("demo", "fr")
        with pytest.raises(i18n.TextFileError, match="add nope.en.json"):
            i18n.languages("nope")
        (tmp_path / "bad.en.json").write_text("{")
        with pytest.raises(i18n.TextFileError, match="not valid JSON"):
            i18n.texts("bad", "en")
    finally:
        i18n.texts.cache_clear()


def test_page_and_figures_share_one_table_of_words():
    assert vl.WORDS == learn_text.WORDS["en"]  # one source: the English file
    assert learn_text.WORDS["en"]["on"] == "just right"
    assert learn_text.WORDS_TEXT["es"]["received_title"] == "Lo que recibe cada token de B"
    assert learn_text.STEPS["en"][0].title == i18n.texts("learn", "en")["steps"][0]["title"]


def _prose(path: Path) -> list[str]:
    """String literals in a module that read like prose: three or more words, a letter
    first, not a docstring, a log message or an error raised for a programmer."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    logged = {id(a) for n in ast.walk(tree) if isinstance(n, ast.Call)
              and isinstance(n.func, ast.Attribute)
              and n.func.attr in {"warning", "info", "debug", "error", "exception"}
              for a in n.args}
    raised = {id(c) for n in ast.walk(tree) if isinstance(n, ast.Raise) for c in ast.walk(n)}
    out = []
    for n in ast.walk(tree):
        if (isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
                and id(n) not in logged and id(n) not in raised):
            words = [w for w in n.value.split() if w.isalpha()]
            if len(words) >= 3 and n.value.lstrip()[:1].isalpha():
                out.append(n.value)
    return out


@pytest.mark.parametrize("module", LEARN_CODE)
def test_no_learn_text_is_written_in_code(module):
    assert _prose(ROOT / module) == []
