"""The app's words as data: every language has every key, no Learn text is in code, the
Learn figures take their words and number format from the page, and numbers follow the
page's rule in each language's marks (Spanish decimal commas; the same digits as English;
plain small values for students on Learn, in both languages)."""

from __future__ import annotations

import ast
import re
import json
import math
import string
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from engine.relation.summary import PLAIN_ZERO, fmt, numbers
from sinkscope_app import locale as i18n
from sinkscope_app.learn import text as learn_text
from viz import learn as vl

ROOT = Path(__file__).resolve().parent.parent
# Modules of the Learn page that must hold no words of their own (they read them from
# text/learn.<lang>.json).
LEARN_CODE = ("sinkscope_app/learn/text.py", "sinkscope_app/learn/steps.py",
              "sinkscope_app/learn/params.py", "sinkscope_app/learn/page.py",
              "sinkscope_app/pages/learn.py", "viz/learn.py")


OPTIONAL = ("examples", "sentence_sets")  # sections one language may leave to assets/


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
    # "examples" and "sentence_sets" may be left to assets/*.json by one language (English
    # titles)
    assert len(i18n.languages(page)) >= 2
    assert all(not gap for gap in i18n.missing(page, optional=OPTIONAL).values())


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
    for lang in learn_text.LANGS:  # the page's tables hold every word the figures read
        assert set(vl.WORD_KEYS) <= set(learn_text.WORDS[lang]) <= set(learn_text.WORDS_TEXT[lang])
    assert not hasattr(vl, "WORDS")  # the builders hold no words: the page passes them
    assert learn_text.WORDS["en"]["on"] == "just right"
    assert learn_text.WORDS["es"]["text_a"] == "texto A"
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


def test_learn_figures_read_no_file():
    tree = ast.parse((ROOT / "viz" / "learn.py").read_text(encoding="utf-8"))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree)
                 if isinstance(n, ast.ImportFrom)}
    assert not imported & {"json", "pathlib", "os", "sinkscope_app", "streamlit"}
    called = {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
              for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert not called & {"open", "read_text", "read_bytes", "loads", "load"}
    with pytest.raises(ValueError, match="words are missing"):
        vl.plane([[0, 0]], [1.0], [[1, 1]], [1.0])
    with pytest.raises(ValueError, match="words lack text_a"):
        vl.coupling_map([[1.0]], ["a"], ["b"], words={k: k for k in vl.WORD_KEYS[:-2]})


# ----------------------------------------------------------------------------- numbers
ES, EN = numbers("es"), numbers("en")
FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True, width=64))
def test_english_numbers_are_fmt_exactly(x):
    assert EN(x) == fmt(x)  # the JavaScript twins compare with fmt: nothing changes


SPANISH_MARKS = str.maketrans({".": ",", ",": "\u00a0"})
ES_PLAIN, EN_PLAIN = numbers("es", plain=True), numbers("en", plain=True)


@settings(max_examples=400, deadline=None)
@given(FINITE)
def test_every_language_writes_a_page_s_numbers_by_one_rule_in_its_own_marks(x):
    """One rule per page, not per language (issue 42, item 12): a Spanish page writes what
    the English page writes, in its marks: 1,66e-13 where English writes 1.66e-13 (never
    "≈ 0" in one language and 1.66e-13 in the other); Learn's plain rule likewise."""
    assert ES(x) == fmt(x).translate(SPANISH_MARKS)
    assert ES_PLAIN(x) == EN_PLAIN(x).translate(SPANISH_MARKS)


def _read_es(text: str) -> float:
    return float(text.replace("\u00a0", "").replace(",", "."))


@settings(max_examples=400, deadline=None)
@given(FINITE.filter(lambda x: abs(x) < 1e15))
def test_plain_numbers_for_students_use_no_scientific_notation(x):
    text = ES_PLAIN(x)
    assert "e" not in text and "." not in text, text  # no 4.78e-05, no decimal point
    ax = abs(x)
    if x == 0:
        assert text == "0"
    elif ax < PLAIN_ZERO:
        assert text == "≈ 0"
    elif ax < 1e-3:  # one significant digit, as a decimal: 0,00005
        assert abs(_read_es(text) - x) <= 0.5 * 10 ** math.floor(math.log10(ax)) * 1.0001
        digits = text.lstrip("-0,")
        assert len(digits) == 1, text
    elif ax < 1e3:  # three significant digits, like fmt
        assert _read_es(text) == pytest.approx(x, rel=5e-3)
        assert fmt(x).replace(".", ",") == text
    else:  # whole numbers, grouped by a non-breaking space from five digits on
        assert _read_es(text) == pytest.approx(round(x), abs=1)
        assert ("\u00a0" in text) == (ax >= 1e4 - 0.5)


def test_numbers_of_a_page_and_of_a_page_for_students():
    assert ES(1.66e-13) == "1,66e-13" and EN(1.66e-13) == "1.66e-13"
    assert ES(4.78e-05) == "4,78e-05" and ES(-1e-9) == "-1,00e-09" and ES(0.0) == "0"
    assert ES(0.5) == "0,5" and ES(-0.629) == "-0,629" and ES(123456.7) == "1,23e+05"
    assert ES(1000) == "1000" and ES(24285) == "24\u00a0285" and EN(1000) == "1,000"  # counts
    assert ES(float("nan")) == "n/d" and ES(float("inf")) == "∞"
    assert ES.separators == ",\u00a0" and EN.separators == ".,"
    assert numbers("fr") is EN  # a language without its own format reads as English
    assert ES.percent(4.78e-7) == "4,8e-05\u00a0%" and EN.percent(4.78e-7) == "4.8e-05%"
    assert ES.percent(0.45) == "45\u00a0%" and EN.percent(0.45) == "45%"
    assert ES_PLAIN(4.78e-05) == "0,00005" and EN_PLAIN(4.78e-05) == "0.00005"
    assert ES_PLAIN(9.7e-05) == "0,0001" and EN_PLAIN(1e-7) == "≈ 0" == ES_PLAIN(-1e-9)
    assert ES_PLAIN(123456.7) == "123\u00a0457" and EN_PLAIN(123456.7) == "123,457"
    assert ES_PLAIN.percent(4.78e-7) == "0,00005\u00a0%" and EN_PLAIN.percent(2e-8) == "≈ 0%"


def _hover_numbers(fig) -> list[str]:
    out = []
    for tr in fig.data:
        cd = np.asarray(tr.customdata if tr.customdata is not None else [], dtype=object)
        out += [str(v) for v in cd.ravel()]
        assert ":.3g" not in (tr.hovertemplate or "") and ":.4g" not in (tr.hovertemplate or "")
    return out


def test_spanish_learn_figures_write_numbers_the_spanish_way():
    from engine.lab import toy
    words, words_text = learn_text.WORDS["es"], learn_text.WORDS_TEXT["es"]
    c = toy.clouds("outlier")
    plan = toy.softmax_plan(c)
    plan = np.where(plan < plan.max() * 1e-3, 4.78e-05 * plan / plan.max(), plan)
    figs = [vl.plan_and_bars(c.xa, c.a, c.xb, c.b, plan, words=words, num=ES_PLAIN),
            vl.plan_and_bars(c.xa, c.a, c.xb, c.b, plan, words=words_text, num=ES_PLAIN),
            vl.two_maps(plan, plan, titles=("i", "d"), words=words, num=ES_PLAIN),
            vl.sink(["[CLS]", "a"], [0.9, 1e-5], [0.5, 0.5], per_head=[[0.9, 1e-5]],
                    words=words_text, num=ES_PLAIN),
            vl.coupling_map(plan, [f"a{i}" for i in range(c.n)], [f"b{j}" for j in range(c.m)],
                            words=words, num=ES_PLAIN)]
    for fig in figs:
        assert fig.layout.separators == ",\u00a0"  # axes: 0,1 not 0.1
        shown = [v for v in _hover_numbers(fig) if v[:1].isdigit() or v[:1] in "-≈"]
        assert shown and not [v for v in shown if "e-" in v or "." in v], shown
    assert any(v in ("0,00005", "≈ 0") for v in _hover_numbers(figs[0]))
    heat = figs[-1]
    assert (heat.layout.yaxis.title.text, heat.layout.xaxis.title.text) == ("texto A", "texto B")
    for fig in figs[:2]:  # the bars' titles wrapped to fit the right third of the figure
        for note in fig.layout.annotations:
            assert max(len(line) for line in note.text.split("<br>")) <= vl.BAR_TITLE_CHARS
    english = vl.coupling_map(plan, [f"a{i}" for i in range(c.n)],
                              [f"b{j}" for j in range(c.m)], words=learn_text.WORDS["en"])
    assert english.layout.xaxis.title.text == "text B" and english.layout.separators == ".,"


def test_labels_go_where_no_marker_covers_them_and_stay_in_the_frame():
    # A2 sits right under A1 (30 px apart): a label above A2 would lie under A1's marker.
    # B1 is 6 px from the frame's right edge: a label centred on it or to its right is cut.
    xy = np.array([[0.0, 1.0], [0.0, 0.0], [5.0, 0.0]])
    places = vl.label_places(xy, np.full(3, 26.0), ["A1", "A2", "B1"], np.ones(3, bool),
                             px=30.0, font=11.0, frame=((-1.0, 5.2), (-1.0, 2.0)))
    assert places[1] != "top center"
    assert places[2] in ("top left", "middle left", "bottom left")
    alone = vl.label_places(xy[1:2], np.full(1, 26.0), ["A2"], np.ones(1, bool), px=30.0,
                            font=11.0, prefer=[1])
    assert alone == ["bottom center"]  # nothing in the way: the preferred place
    hidden = vl.label_places(xy, np.full(3, 26.0), ["A1", "A2", "B1"],
                             np.array([True, False, True]), px=30.0, font=11.0)
    assert hidden[1] is None  # an unlabelled point has no place


def test_a_tight_cluster_keeps_only_the_labels_that_have_room():
    """Step 6's PCA cloud put its tokens' labels on top of each other and under markers
    (issue 42): a label that every place leaves covered is left out (named on hover), so
    the labels drawn overlap no other label and lie, at most a little, on a marker."""
    rng = np.random.default_rng(6)
    xy = np.concatenate([rng.normal(0, 0.3, (8, 2)), rng.normal([4, 0], 0.3, (8, 2))])
    names = [f"token{k}" for k in range(16)]
    d = np.full(16, 24.0)
    places = vl.label_places(xy, d, names, np.ones(16, bool), px=20.0, font=11.0,
                             frame=((-2.0, 6.0), (-3.0, 3.0)))
    kept = [k for k, p in enumerate(places) if p is not None]
    assert 2 <= len(kept) < 16  # some have room, the crowd does not
    boxes = vl.label_boxes(xy, d, names, places, px=20.0, font=11.0)
    c = xy * np.array([20.0, -20.0])

    def overlap(u, v):
        return max(min(u[2], v[2]) - max(u[0], v[0]), 0) * max(min(u[3], v[3]) - max(u[1], v[1]), 0)

    for i in kept:
        area = (boxes[i][2] - boxes[i][0]) * (boxes[i][3] - boxes[i][1])
        assert all(overlap(boxes[i], boxes[j]) == 0 for j in kept if j != i), names[i]
        markers = sum(overlap(boxes[i], (*(c[j] - 12), *(c[j] + 12))) for j in range(16) if j != i)
        assert markers <= 0.05 * area + 1e-9, names[i]


def test_counts_group_digits_the_language_way():
    assert EN.count(24285) == "24,285" and ES.count(999) == "999"
    assert ES.count(24285) == "24\u00a0285"  # 24,285 would read as 24.285
    assert ES.count(4000) == "4000"  # four digits stay together in Spanish


# ----------------------------------------------------------------------------- notices
def _engine_notices():
    """Every sentence the engine writes as a notice, from its own functions."""
    from types import SimpleNamespace as NS

    from engine.relation import relate, sentences

    enc = NS(chars_cut=True, n_dropped=1024, n=256, bias=None, texts=("a",), tokens=["t"] * 256)
    bias = NS(chars_cut=False, n_dropped=0, n=3, bias=np.zeros(1), texts=("a",))
    single = NS(converged=np.array(False), row_err=np.array([0.5, 0.0012]),
                col_err=np.array([0.1, 1e-4]), tol=1e-6)
    grid = NS(converged=np.array([[True, False], [False, True]]))
    out = relate._notices([enc, enc], single, False, 100)
    out += relate._notices([bias, bias], grid, True, 100)
    out += relate._notices([enc], single, False, 100)
    out += sentences._notices([enc, enc, enc], np.array([True, False]), 7, None, False, 0.05)
    out += sentences._notices([enc], np.array([True]), 0, "cls", False, 0.5)
    return out


def test_every_engine_notice_reads_in_spanish_and_english_stays_the_engine_s():
    """Every notice is worded by the page in both languages: English as the engine says
    it, less the operator's setting a visitor cannot change (issue 42)."""
    from engine.types import Notice
    from sinkscope_app import locale

    found = _engine_notices()
    kinds = {n.kind for n in found}
    assert kinds >= {"chars_cut", "tokens_cut", "no_position_bias", "not_converged",
                     "candidates_cut", "not_mean_pooled"}, kinds
    en_words = i18n.texts("engine", "en")["notices"]
    for n in found:
        assert n.code in en_words, n.code  # every notice the engine writes is a code
        en = locale.notice(n, "en")  # the English page: the engine's words
        engine = re.sub(r" \(SINKSCOPE_\w+\)", "", n.message)
        ungrouped = lambda text: re.sub(r"(?<=\d),(?=\d{3})", "", text)  # noqa: E731
        assert ungrouped(en) == ungrouped(engine) and "SINKSCOPE_" not in en
        es = locale.notice(n, "es")
        assert es != n.message, n.message  # every code is worded in Spanish
        assert not re.search(r"\b(the|was|has|cut|tokens were|raise)\b", es), es
        assert not re.search(r"\d\.\d", es.replace("1e-06", "")), es  # decimal commas
    assert locale.notice(Notice("something_new", "info", "A notice the page does not know."),
                         "es") == "A notice the page does not know."
    assert locale.notice(Notice("tokens_cut", "info", "An unexpected sentence.", code="new"),
                         "es") == "An unexpected sentence."


def test_an_aligner_that_does_not_load_is_refused_in_spanish(tmp_path):
    """What the Align page shows when an operator's aligner cannot be used: the engine's
    facts in a sentence for a person on the English page, a Spanish sentence with the
    same facts on the Spanish one."""
    from engine.aligner import checkpoint
    from engine.aligner.config import AlignerError

    made = []
    for code, params in [
            ("other_base", dict(path="mtref", trained="tiny-bert", trained_hash="ab12",
                                given="all-MiniLM-L6-v2", given_hash="cd34")),
            ("not_listed", dict(name="mtref", names="wiki")),
            ("bad_list", dict(entry="mtref"))]:
        made.append(AlignerError.of(code, **params))
    with pytest.raises(AlignerError) as e:  # a folder without an aligner's files
        checkpoint.load(tmp_path, encoder=None)
    made.append(e.value)
    for err in made:
        en = i18n.error(err, "en")  # a sentence for a person: no repr quotes, no setting
        assert "SINKSCOPE_" not in en and not re.search(r"(^|\s)'", en), en
        assert en == str(err) or err.code in ("other_base", "not_listed", "bad_list"), en
        es = i18n.error(err, "es")
        assert es != str(err) and re.search(r"alineador|modelo base|forma nombre", es), es
        assert not re.search(r"\b(the|is not|give|was trained|choose)\b", es), es
        for value in err.params.values():  # the facts stay: names, folders, hashes
            assert str(value) in es and str(value) in en, (value, es)


def test_the_vocabulary_notice_in_spanish():
    from sinkscope_app import locale
    from sinkscope_app.main.calls import vocabulary_notice

    class Pieces:  # a tokenizer that breaks every word into pieces, one unknown
        unk_token = "[UNK]"

        def tokenize(self, text):
            return ["or", "##illa", "in", "##und", "##o", "des", "##pu", "##es", "[UNK]"]

    en = vocabulary_notice(Pieces(), "orilla inundo después 😀", "text_b", "all-MiniLM-L6-v2")
    es = locale.notice(en, "es")
    assert es.startswith("El texto B queda casi todo fuera del vocabulario de all-MiniLM-L6-v2")
    assert "«or ##illa in ##und …»" in es and "% de sus trozos son [UNK]" in es
    assert "multilingüe" in es and "mostly" not in es


def test_crafted_link_warnings_keep_their_english_and_speak_spanish():
    from sinkscope_app.examples import load
    from sinkscope_app.inputs import Message, say
    from sinkscope_app.main.params import parse_query

    kw = dict(n_layers=6, n_heads=12, models=("all-MiniLM-L6-v2",), examples=load())
    bad = {"cscale": "rainbow", "layer": "99", "eps": "1e9", "steps": "x", "pool": "maybe",
           "ex": "nope", "a": "x" * 30_000, "topk": "99", "hl": "zz", "thr": "2"}
    en, es = parse_query(bad, **kw), parse_query(bad, lang="es", **kw)
    assert en.values == es.values and len(en.warnings) == len(es.warnings) == len(bad)
    assert "Unknown colour scale “rainbow” in the link; using “shared”." in en.warnings
    assert "Layer 99 is out of range 0–5; using 5." in en.warnings
    assert "ε = 1e+09 is outside 0.01–100; using 100." in en.warnings
    assert [m.text("en") for m in en.messages] == en.warnings
    assert [m.text("es") for m in en.messages] == es.warnings
    assert "El texto A del enlace tenía 30\u00a0000 caracteres" in " ".join(es.warnings)
    assert "ε = 1e+09 está fuera del intervalo 0,01–100" in " ".join(es.warnings)
    shown = " ".join(en.warnings + es.warnings)  # issue 42: sentences for a person
    assert "SINKSCOPE_" not in shown and "'" not in shown and "pool " not in shown
    assert not [w for w in es.warnings if re.search(r"\b(the|link|using|Unknown)\b", w)]
    assert Message("unknown_set", {"value": "x"}).text("fr") == \
        say("unknown_set", "en", value="x")  # a language without a file: English


def test_every_page_says_a_file_s_mistake_in_its_language_once():
    """Issue 42: the Lab showed "No se pudo ejecutar: badgold.tsv, line 2: link 9-9 is out
    of range…", and the typed pair's messages said their place twice ("estos textos:
    text_a tiene …", "referencia: «x-y»" after "de referencia"). Every page words a file's
    mistake from its code (locale.error), the place said once, a text by its name."""
    from engine.alignment.readers import AlignFileError, make_pair, parse_pairs

    def caught(f):
        with pytest.raises(AlignFileError) as e:
            f()
        return e.value

    gold = caught(lambda: parse_pairs("text_a\ttext_b\tgold\nthe cat\tel gato\t9-9\n",
                                      name="badgold.tsv"))
    assert i18n.error(gold, "es").startswith("badgold.tsv, línea 2: el enlace 9-9 está fuera")
    assert i18n.error(gold, "en").startswith("badgold.tsv, line 2: link 9-9 is out of range")
    long = caught(lambda: make_pair("a " * 500, "b", where="these texts"))
    assert i18n.error(long, "es") == ("el texto A tiene 500 palabras, más de 400; divídelo "
                                      "en frases.")
    assert i18n.error(long, "en") == "text A has 500 words, more than 400; split it into sentences."
    typo = caught(lambda: make_pair("a b", "c", "x-y", where="gold", one_based=None))
    assert i18n.error(typo, "es").startswith("«x-y» no es un enlace")
    assert i18n.error(typo, "en").startswith("“x-y” is not a link")


def test_stop_has_one_name_in_each_language():
    """Issue 42: Stop was "Detener" on Align and "Parar" in the Lab."""
    for lang in ("en", "es"):
        assert i18n.texts("lab", lang)["stop"] == i18n.texts("align", lang)["stop"]
