"""The Align page in Spanish (``/align?lang=es``): its words from ``text/align.es.json``,
warnings about a crafted link in the link's language, and the language carried by the
links to the other pages and to Compare."""

from __future__ import annotations

import json
import re
import string
from urllib.parse import parse_qs

import numpy as np
import pytest

from engine.alignment.verdict import Ranked
from sinkscope_app import align as ap, locale as i18n
from tests.support.apptest import data as component_data
from tests.test_align_app import align, ok

EN, ES = i18n.texts("align", "en"), i18n.texts("align", "es")


def _fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def test_every_word_of_the_align_page_is_in_both_languages_with_the_same_fields():
    assert i18n.missing("align") == {"en": set(), "es": set()}
    for key, text in EN.items():
        if isinstance(text, str):
            assert ES[key].strip() and _fields(ES[key]) == _fields(text), key
    assert set(ES["plan_title"]) == {*ap.METHODS, "trained"}  # method names stay as they are
    assert ap.ui("es")["text_a"] == "Texto A" and ap.ui("en")["text_a"] == "Text A"
    assert ap.ui("fr")["text_a"] == "Text A"  # a language without a file reads as English
    from sinkscope_app import align_live

    live = align_live.words_of(ap.ui("es"))  # the live sliders' words: all Spanish
    assert not [k for k, v in live.items() if v == align_live.WORDS[k]], live
    assert align_live.words_of(ap.ui("en")) == align_live.WORDS


def test_the_language_is_in_the_address_and_a_crafted_link_is_answered_in_it():
    values, warn = ap.parse_query({"lang": "es", "view": "nope", "method": "<b>",
                                   "tau": "nan"})
    assert values == {"lang": "es"} and len(warn) == 3
    assert any(w.startswith("El enlace pide un método desconocido, «<b>»") for w in warn)
    assert not [w for w in warn if "Unknown" in w or "link" in w]
    assert ap.to_query({**ap.DEFAULTS, **values})["lang"] == "es"
    assert ap.parse_query({"view": "nope"})[1] == [
        "Unknown view “nope” in the link; showing the pair."]  # English as it was
    values, warn = ap.parse_query({"lang": "fr"})
    assert "lang" not in values and "Unknown language “fr”" in warn[0]
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


# English words that must not be shown on the Spanish page (acronyms such as F1 and AER,
# and method names, read the same in both languages).
EN_ONLY_COLUMNS = {v for k, v in EN["columns"].items() if ES["columns"][k] != v}
EN_MESSAGES = ("no word the model can read", "could not be drawn", "pair(s)")


def _english_columns(columns) -> set[str]:
    """The columns named in English: an English-only name, alone or before " 95 %"."""
    return {c for c in columns for word in EN_ONLY_COLUMNS
            if c == word or c.startswith(word + " ")}


def test_spanish_tables_name_their_columns_in_spanish_and_export_english_keys():
    es = ap.ui("es")
    keys = [*EN["columns"], "F1 95 %", "total F1 95 %", "AER 95 %",
            *[f"F1 {m}" for m in ap.METHODS]]
    names = ap.column_names(es, keys)
    assert set(names) == set(keys) and len(set(names.values())) == len(keys)
    assert not set(names.values()) & EN_ONLY_COLUMNS, names
    assert names["null F1"] == "F1 de nulos" and names["total F1 95 %"] == "F1 total 95 %"
    assert names["F1 exact"] == "F1 exact"  # method names stay as they are
    assert ap.column_names(ap.ui("en"), keys) == {k: k for k in keys}  # English unchanged
    rows = ap.shown_rows([{"method": "exact", "links": 3, "precision": 0.5}], es)
    assert rows == [{"método": "exact", "enlaces": 3, "precisión": 0.5}]
    cfg = ap.float_columns({"method": "exact", "links": 3, "precision": 0.5,
                            "null F1": None}, es)
    assert set(cfg) == {"precisión", "F1 de nulos"}


def test_spanish_messages_write_numbers_the_spanish_way():
    from engine.alignment.readers import AlignFileError
    from sinkscope_app import align_live

    es = ap.ui("es")
    with pytest.raises(AlignFileError, match=r"ocupa 2,0 MB, más de 2 MB"):
        ap.read_file(b"a\tb\n" * (ap.MAX_UPLOAD_BYTES // 4 + 1), "big.tsv", False, es)
    with pytest.raises(AlignFileError, match=r"is 2\.0 MB, more than 2 MB"):
        ap.read_file(b"a\tb\n" * (ap.MAX_UPLOAD_BYTES // 4 + 1), "big.tsv", False, ap.ui())
    assert align_live.count_text(12345, "es") == "12\u00a0345"
    assert align_live.count_text(4096, "es") == "4096"  # Spanish groups from five digits
    assert align_live.count_text(12345) == "12,345"
    assert align_live.decimal_text(2.25, "es", 2) == "2,25"
    from sinkscope_app.locale import numbers

    assert numbers("es").fixed(0.5) == "0,500" and numbers("en").fixed(0.5) == "0.500"
    assert numbers("en").fixed(None) == "–"
    words = align_live.words_of(es)
    note = align_live.too_large(60, 60, 41, max_cells=4096, max_bytes=100_000, words=words,
                                lang="es")
    assert "0,1 MB" in note and "desactivados" in note
    note = align_live.too_large(170, 170, 41, max_cells=12_000, max_bytes=10**9,
                                words=words, lang="es")
    assert "12\u00a0000" in note and "12,000" not in note
    s = {k: 0.5 for k in ("precision", "recall", "f1", "aer", "null_f1", "total_f1")}
    line = align_live.scores_line(words, "exact", s)
    assert "precisión 0,500" in line and "0.5" not in line
    assert align_live.scores_line(align_live.WORDS, "exact", s).count("0.500") == 6
    msg = ap.unread_message(ap.UnreadText("b"), es)
    assert msg.startswith("Texto B no tiene ninguna palabra") and str(ap.UnreadText("b")) == (
        EN["unread_text"].format(name="Text B"))


def test_every_word_the_live_sliders_use_is_in_both_files():
    from sinkscope_app import align_live

    assert set(align_live.WORDS) <= set(EN) and set(align_live.WORDS) <= set(ES)
    assert {k: EN[k] for k in align_live.WORDS} == align_live.WORDS  # English as the code
    assert "{error}" in ES["chart_failed"] and ES["chart_failed"] != EN["chart_failed"]


# English words of the figures (method names such as "unbalanced" and acronyms such as F1
# read the same in both languages; the words of the texts are the person's).
EN_FIGURE = re.compile(r"\b(links?|gold|missed|unaligned|words of|text [AB]|bipartite|"
                       r"predicted|word alignment|corpus scores|sure|possible|open nodes|"
                       r"hit|not in|null F1|total F1|precision|recall)\b", re.I)


def _figure_words(fig: dict) -> list[str]:
    """Every word a figure shows: titles, axis titles, trace names, texts and hover texts."""
    lay = fig.get("layout", {})
    out = [str((lay.get("title") or {}).get("text", ""))]
    out += [str((v.get("title") or {}).get("text", "")) for k, v in lay.items()
            if k.startswith(("xaxis", "yaxis")) and isinstance(v, dict)]
    out += [str(a.get("text", "")) for a in lay.get("annotations", [])]
    for t in fig.get("data", []):
        out.append(str(t.get("name", "")))
        for key in ("text", "hovertext"):
            v = t.get(key)
            out += [str(x) for x in (v if isinstance(v, list) else [v]) if x is not None]
    return out


def _english(fig: dict) -> list[str]:
    return [w for w in _figure_words(fig) if EN_FIGURE.search(w)]


def test_the_figures_words_are_in_both_files_and_the_spanish_figures_have_no_english():
    from sinkscope_app import align_live
    from viz import align as va

    assert json.loads(json.dumps(va.WORDS)) == EN["figure"]  # English as the code
    for key, word in EN["figure"].items():
        if isinstance(word, dict):
            assert set(ES["figure"][key]) == set(word), key
        else:
            assert ES["figure"][key].strip() and _fields(ES["figure"][key]) == _fields(word)
    fw = ES["figure"]
    a, b, gold = "el gato se sentó".split(), "un gato sentado".split(), dict(
        sure=[(1, 1)], possible=[(1, 1), (2, 2)])
    links = [(0, 0), (1, 1)]  # one outside the gold, one in it; 2-2 missed; words unaligned
    figs = [va.matrix(a, b, links, plan=np.full((4, 3), 0.5), method="partial", words=fw,
                      **gold),
            va.matrix(a, b, links, words=fw), va.graph(a, b, links, words=fw, **gold),
            va.graph(a, b, links, words=fw),
            va.ranking([Ranked("exact", 1, 0.5, (0.4, 0.6), 0.0, True, {})], words=fw)]
    for fig in figs:
        plain = fig.to_plotly_json()
        assert not _english(plain), _english(plain)
    en = va.graph(a, b, links, **gold).to_plotly_json()  # the same figure in English has them
    assert len(_english(en)) >= 5 and len(_english(va.matrix(a, b, links, **gold)
                                                   .to_plotly_json())) >= 5
    assert {"words of A", "link not in gold", "missed possible gold"} <= set(
        t["name"] for t in en["data"])
    names = {t["name"] for t in figs[2].to_plotly_json()["data"]}
    assert {"palabras de A", "enlace fuera de la referencia"} <= names, names
    x = figs[0].to_plotly_json()["layout"]
    assert x["xaxis"]["title"]["text"] == "texto B" and x["yaxis"]["title"]["text"] == "texto A"
    # what the browser writes on redraw: the page's words, Spanish here
    style = align_live.style_of(4, 3, "light", fw)
    assert style["names"] == fw["names"] and style["node_names"] == fw["nodes"]
    assert style["unaligned"] == "sin alinear" and style["null_names"] == fw["null_names"]
    assert align_live.style_of(4, 3, "light")["names"] == va.NAMES
    with pytest.raises(ValueError, match="must be a string"):
        va.graph(a, b, links, words={"graph_title": 3})


def test_spanish_plan_values_read_with_decimal_commas():
    """The Align plan's hover and colour bar, and the corpus chart, write numbers as the
    page's language does ("0,25", "n/d" for a cell of no part), and so does the browser
    when it redraws the plan (the style carries the number format)."""
    from engine.relation.summary import numbers
    import viz.align as va
    from sinkscope_app import align_live

    plan = np.array([[0.25, np.nan], [0.0004, 1.0]])
    es = va.matrix(["el", "río"], ["the", "river"], [(0, 0)], plan=plan, num=numbers("es"))
    hover = [t for t in es.data if t.type == "heatmap"][0].text
    assert [list(r) for r in hover] == [["el → the: 0,25", "el → river: n/d"],
                                        ["río → the: 4,00e-04", "río → river: 1"]]
    assert es.layout.separators == ",\u00a0"
    en = va.matrix(["el", "río"], ["the", "river"], [(0, 0)], plan=plan)
    assert list([t for t in en.data if t.type == "heatmap"][0].text[0]) == [
        "el → the: 0.25", "el → river: n/a"]
    ranked = va.ranking([Ranked("exact", 1, 0.5, (0.4, 0.6), 0.0, True, {})],
                        num=numbers("es"), settings={"exact": "θ 0,94"})
    assert ranked.layout.separators == ",\u00a0"
    assert ranked.data[0].text == ("exact: 0,500 [0,400 – 0,600]<br>θ 0,94",)
    assert align_live.style_of(2, 2, "light", lang="es")["numbers"]["decimal"] == ","
    assert align_live.style_of(2, 2, "light")["numbers"]["decimal"] == "."


def _components(at, name: str) -> list[dict]:
    return [component_data(el) for el in at.get("bidi_component")
            if el.proto.component_name == name and el.proto.WhichOneof("data") == "json"]


def _shown(at) -> str:
    return "\n".join(str(e.value) for kind in ("warning", "info", "caption", "markdown",
                                                 "text", "success")
                     for e in getattr(at, kind))


@pytest.mark.model
@pytest.mark.slow
def test_the_spanish_pair_view_has_spanish_columns_words_and_messages():
    at = align({"lang": "es", "text_a": "the cat sat on the mat",
                "text_b": "a cat was sitting on the mat",
                "gold": "0p0 1-1 2-2 2-3 3-4 4-5 5-6", "method": "unbalanced"})
    ok(at)
    [tab] = [el.value for el in at.table if "AER" in el.value.columns]
    assert len(tab) == len(ap.METHODS)
    assert not _english_columns(tab.columns), list(tab.columns)
    assert {"método", "enlaces", "precisión", "exhaustividad", "F1 total"} <= set(tab.columns)
    assert tab["F1"].between(0, 1).all()
    [controls] = _components(at, "sinkscope_align")  # the live sliders' words: Spanish
    assert controls["words"]["decimal"] == "," and controls["words"]["tau"] == ES["tau"]
    assert controls["theta_labels"][45] == "0,45" and "," in controls["grid_labels"][1]
    assert controls["lines"]["scores"].startswith("unbalanced: precisión ")
    assert "0." not in controls["lines"]["scores"] and "," in controls["lines"]["scores"]
    charts = _components(at, "sinkscope_live_chart")
    failed = {c["failed"] for c in charts if "bind" in c}
    assert failed == {ES["chart_failed"]}, failed
    figs = [json.loads(c["spec"]) for c in charts if "bind" in c]  # the matrix and the graph
    assert len(figs) == 2 and all(f["data"] for f in figs)
    assert not [w for f in figs for w in _english(f)], [_english(f) for f in figs]
    titles = [f["layout"]["title"]["text"] for f in figs]
    assert titles[0].startswith("Enlaces de unbalanced") and "grafo bipartito" in titles[1]
    assert controls["style"]["names"] == ES["figure"]["names"]  # the redraw's words
    assert controls["style"]["node_names"] == ES["figure"]["nodes"]
    at.text_input(key="align_gold").set_value("").run()
    at.text_area(key="align_b").set_value("\u200b").run()  # a text with no readable word
    ok(at)
    assert any(w.value.startswith(ES["bad_text"].split("{")[0]) and "Texto B no tiene" in
               w.value for w in at.warning), [w.value for w in at.warning]
    assert not [m for m in EN_MESSAGES if m in _shown(at)]
    at.text_area(key="align_b").set_value("palabra " * 3000).run()  # cut at 20 000 chars
    ok(at)
    cut = [w.value for w in at.warning if "caracteres" in w.value]
    assert cut and re.search(r"tenía 2\d\u00a0\d{3} caracteres", cut[0]), cut
    assert "20\u00a0000" in cut[0] and "20,000" not in cut[0]


@pytest.mark.model
@pytest.mark.slow
def test_the_spanish_corpus_view_has_spanish_columns_and_decimal_commas():
    from tests.test_align_app import corpus_file

    at = align({"lang": "es", "view": "corpus"})
    ok(at)
    bad = corpus_file(2) + "el gato\t\u200b\t0-0\n".encode("utf-8")
    at.file_uploader(key="align_file").set_value(("bad.tsv", bad, "text/plain")).run()
    assert not at.exception
    err = [e.value for e in at.error]
    assert err and "Un texto de los pares 3 no tiene" in err[0], err
    at.file_uploader(key="align_file").set_value(("pairs.tsv", corpus_file(4),
                                                  "text/tab-separated-values")).run()
    ok(at)
    df = at.dataframe(key="align_table").value
    assert len(df) == 4 and not _english_columns(df.columns), list(df.columns)
    assert {"par", "texto A", "texto B", "referencia", "discrepancia",
            "proporción de nulos", "F1 unbalanced"} <= set(df.columns)
    assert df["F1 unbalanced"].str.fullmatch(r"[01],\d{3}").all(), list(df["F1 unbalanced"])
    [scores] = [el.value for el in at.table if "F1 95 %" in el.value.columns]
    c = at.session_state["_align_corpus"]
    assert list(scores["método"]) == [r.method for r in c.verdict.ranked]  # best first
    assert not _english_columns(scores.columns), list(scores.columns)
    ci = scores["F1 total 95 %"]
    assert ci.str.fullmatch(r"\d,\d{3} – \d,\d{3}").all(), list(ci)
    [ranked] = [el.value for el in at.table if "Δ mejor" in el.value.columns]
    assert ranked["método"].iloc[0] == "★ " + c.verdict.best
    assert ranked["Δ mejor"].iloc[0] == "el mejor"
    assert ranked["Δ mejor"].iloc[1:].str.fullmatch(r"(−\d,\d{3}|0,000)").all()
    assert ranked["ajustes"].str.contains("θ 0,42 · τ 4,94 · ε 0,1").any()
    [paired, *_] = [el.value for el in at.table if "Δ F1 total" in el.value.columns]
    assert paired["intervalo del 95 %"].str.fullmatch(
        r"\[[−+]?\d,\d{3}; [−+]?\d,\d{3}\]").all(), list(paired["intervalo del 95 %"])
    [chart] = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    assert not _english(chart) and "Qué método gana" in chart["layout"]["title"]["text"]
    assert chart["layout"]["separators"] == ",\u00a0"
    assert not [m for m in EN_MESSAGES if m in _shown(at)]
    c = at.session_state["_align_corpus"]  # the export keeps its English column names
    head = ap.table_csv(ap.corpus_table(c)).decode().splitlines()[0].split(",")
    assert head[:4] == ["pair", "text A", "text B", "gold"] and "null ratio" in head


# One bad upload or typed pair per mistake the page can meet (read_file, make_pair).
BAD_FILES = [
    ("text_empty", "f.csv", b" ,a b\n"),
    ("text_too_long", "f.csv", (" ".join(["w"] * 401) + ",a b\n").encode()),
    ("not_a_link", "f.csv", b"x y,a b,zz\n"),
    ("link_out_of_range", "f.csv", b"x y,a b,2-0\n"),
    ("binary", "f.csv", b"a\x00b"),
    ("not_utf8", "f.csv", b"ok\n\xff\xfe"),
    ("multimwa_fields", "m.tsv", b"1\ta b\tN/A\tc\tN/A\t1\t1\t0-0\n1\ta\tN/A\n"),
    ("empty_file", "f.csv", b"  \n"),
    ("not_json", "f.jsonl", b"{bad\n"),
    ("json_fields", "f.jsonl", b'{"text_a": "x"}\n'),
    ("not_csv", "f.csv", b"a" * 140_000 + b",b\n"),  # a field over csv's own limit
    ("header", "f.csv", b"text_a,foo\nx,y\n"),
    ("header_column", "f.csv", b"source,target,alignmnt\nx,y,0-0\n"),
    ("header_twice", "f.csv", b"source,src,target\nx,y,z\n"),
    ("too_few_fields", "f.csv", b"text_a,text_b,gold\nx\n"),
    ("too_many_fields", "f.tsv", b"x\ty\tz\tw\n"),
    ("awesome_line", "f.txt", b"a ||| b ||| c\n"),
]


@pytest.mark.parametrize("code, name, raw", BAD_FILES, ids=[c for c, _, _ in BAD_FILES])
def test_a_bad_file_is_explained_in_spanish(code, name, raw):
    """The Spanish page says what a file got wrong in Spanish, with its line and numbers
    written the Spanish way; the English page says the engine's own sentence, a typed
    value in quotes (not Python's) and a text by its name ("text A", not "text_a")."""
    from engine.alignment.readers import AlignFileError

    with pytest.raises(AlignFileError) as e:
        ap.read_file(raw, name, False, ap.ui("es"))
    assert e.value.code == code
    engine = str(e.value)
    for v in e.value.params.values():  # each typed value Python quoted
        for x in v if isinstance(v, tuple) else (v,):
            if isinstance(x, str):
                engine = engine.replace(repr(x), f"“{x}”")
    if code in ("text_empty", "text_too_long"):
        engine = re.sub(r"\btext_([ab])\b", lambda m: "text " + m[1].upper(), engine)
    assert ap.file_error(e.value, ap.ui("en")) == engine
    es = ap.file_error(e.value, ap.ui("es"))
    assert es != str(e.value) and "{" not in es.replace('{"text_a"', "")
    assert not re.search(r"\b(line|is|has|the|needs|write|holds)\b", es), es
    if isinstance(e.value.params.get("where"), tuple):
        assert ", línea " in es


def test_spanish_file_errors_keep_the_details():
    from engine.alignment.readers import AlignFileError, make_pair, read_links

    es = ap.ui("es")
    with pytest.raises(AlignFileError) as e:
        ap.read_file(b"text_a,text_b,gold\nx\n", "f.csv", False, es)
    assert ap.file_error(e.value, es) == ("f.csv, línea 2: 1 campo(s); cada línea necesita "
                                          "text_a y text_b y gold separados por comas.")
    with pytest.raises(AlignFileError) as e:
        make_pair("a b", "c", "0-1", where="gold")
    assert ap.file_error(e.value, es) == (  # "gold" is said by the page's sentence
        "el enlace 0-1 está fuera de rango: el texto A tiene 2 palabras y el texto "
        "B 1 (¿cuentan los enlaces desde 1? márcalo en «los enlaces de referencia cuentan "
        "desde 1»).")
    with pytest.raises(AlignFileError) as e:  # a path's mistake names the file's kind
        read_links("/nonexistent/gold.txt", ())
    assert ap.file_error(e.value, es).startswith(
        "No se puede leer el archivo de referencia /nonexistent/gold.txt: ")
    with pytest.raises(AlignFileError) as e:  # from the page itself: its own sentence
        ap.read_file(b"x" * (ap.MAX_UPLOAD_BYTES + 1), "big.csv", False, es)
    assert e.value.code == "" and ap.file_error(e.value, es) == str(e.value)


def test_the_english_file_errors_are_the_engine_s_sentences():
    """engine.en.json's file_errors are the engine's messages (readers.MESSAGES) as the
    page's templates, a typed value in quotes rather than Python's repr, so the two cannot
    drift apart."""
    from engine.alignment.readers import ENGLISH_PARTS, HEADER_MESSAGES, MESSAGES

    en = i18n.texts("engine", "en")["file_errors"]
    for code, sentence in {**MESSAGES, **HEADER_MESSAGES}.items():
        sentence = re.sub(r"\{(\w+)!r\}", r"“{\1}”", sentence)
        assert en[code] == re.sub(r"\{(\w+)(![rs])?(:[^}]*)?\}", r"{\1}", sentence), code
    assert {k: en["parts"][k] for k in ENGLISH_PARTS} == ENGLISH_PARTS
    assert set(i18n.texts("engine", "es")["file_errors"]) == set(en)

@pytest.mark.parametrize("lang", ["en", "es"])
def test_an_interval_end_near_zero_keeps_its_sign_so_the_row_never_contradicts_itself(lang):
    """Issue 42: "−0.004 [−0.008, 0.000] … no: the interval holds 0" read as if the
    interval touched 0. An end that is not 0 keeps the decimals it needs, so the interval,
    the verdict and p (computed from the same resamples, so p < 0.05 exactly when the
    interval leaves out 0) agree on the page, and the page says what p is."""
    from engine.alignment.score import Paired
    from sinkscope_app.align.words import paired_rows

    t = ap.ui(lang)
    out, holds = (Paired("partial", "softmax-argmax", "total_f1", -0.004, (-0.008, -0.0002),
                         0.039),
                  Paired("exact", "softmax-argmax", "total_f1", -0.004, (-0.008, 0.0003), 0.06))
    rows = paired_rows([out, holds], t)
    mark = "." if lang == "en" else ","
    assert rows[0]["95 % interval"] == t["interval"].format(lo=f"−0{mark}008", hi=f"−0{mark}0002")
    assert rows[0]["difference shown"] == t["differs_yes"]
    assert rows[1]["95 % interval"] == t["interval"].format(lo=f"−0{mark}008", hi=f"+0{mark}0003")
    assert rows[1]["difference shown"] == t["differs_no"]
    assert "p = min(1, 2·min(k₋, k₊)/B)" in t["p_help"] and "{b}" in t["p_help"]
    lab = i18n.texts("lab", lang)["text_p_help"]
    assert "p = min(1, 2·min(k₋, k₊)/B)" in lab and ("0.05" in lab or "0,05" in lab)


@pytest.mark.parametrize("lang", ["en", "es"])
def test_clamped_values_in_the_address_are_said(lang):
    """docs/urls.md promises a notice for every clamped value: /align?threshold=5&tau=-3
    clamped θ and τ silently (issue 42). Each is said, in the page's language, in a
    sentence for a person (no parameter=value, no Python quotes)."""
    values, warn = ap.parse_query({"lang": lang, "threshold": "5", "tau": "-3", "mass": "2",
                                   "text_a": "x" * 30_000})
    assert (values["align_threshold"], values["align_tau"], values["align_mass"]) == (
        0.99, ap.TAU_OPTIONS[0], ap.MASS_OPTIONS[-1])
    assert len(values["align_a"]) == 20_000 and len(warn) == 4, warn
    theta, tau, mass = ("umbral θ = 5", "τ = -3", "masa m = 2") if lang == "es" else (
        "threshold θ = 5", "τ = -3", "mass m = 2")
    shown = " ".join(warn)
    assert theta in shown and tau in shown and mass in shown and "30" in shown, warn
    assert not re.search(r"\w=|'|SINKSCOPE_", shown), warn
