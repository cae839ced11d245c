"""Readers of pairs and gold links: every format with good, bad and hostile files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.alignment import readers
from engine.alignment.readers import AlignFileError, parse_links, read_links, read_pairs

DATA = Path(__file__).parent / "data" / "align"


def test_shipped_gold_set_reads():
    pairs = read_pairs(DATA / "pairs.tsv")
    assert len(pairs) == 20 and all(p.has_gold for p in pairs)
    first = pairs[0]
    assert first.shape == (6, 7)
    assert (0, 0) in first.possible and (0, 0) not in first.sure
    assert first.sure <= first.possible


def test_pharaoh_links_sure_possible_and_one_based():
    sure, poss = parse_links("0-0 1-2 2p1", 3, 3)
    assert sure == {(0, 0), (1, 2)} and poss == {(0, 0), (1, 2), (2, 1)}
    sure1, _ = parse_links("1-1 2-3", 3, 3, one_based=True)
    assert sure1 == {(0, 0), (1, 2)}
    with pytest.raises(AlignFileError, match="1-based"):
        parse_links("0-1", 3, 3, one_based=True)
    with pytest.raises(AlignFileError, match=r"out of range.*1-based"):
        parse_links("3-0", 3, 3)
    for bad in ("0_1", "a-b", "1-", "0-1-2", "-1-0"):
        with pytest.raises(AlignFileError, match="not a link"):
            parse_links(bad, 3, 3)


def test_multimwa(tmp_path):
    f = tmp_path / "dev.tsv"
    f.write_text("0:0\tthe cat sat\tN/A\ta cat sat down\tN/A\t1\t1\t1-1 2-2\t2-3\t \n"
                 "1:1\thello world\tN/A\thi world\tN/A\t1\t1\t0-0 1-1\n")
    pairs = read_pairs(f)
    assert len(pairs) == 2
    assert pairs[0].sure == {(1, 1), (2, 2)} and (2, 3) in pairs[0].possible
    t = read_pairs(f, transpose=True)[0]
    assert t.text_a == "a cat sat down" and t.sure == {(1, 1), (2, 2)} and (3, 2) in t.possible
    f.write_text("0:0\tthe cat\tN/A\ta cat\tN/A\t1\t1\t1-5\n")
    with pytest.raises(AlignFileError, match=r"line 1: link 1-5 is out of range"):
        read_pairs(f)
    f.write_text("0:0\tthe cat\tN/A\ta cat\tN/A\t1\t1\t0-0\n1:1\tonly\tN/A\n")
    with pytest.raises(AlignFileError, match="line 2"):
        read_pairs(f, fmt="multimwa")


def test_csv_jsonl_and_headerless_tsv(tmp_path):
    c = tmp_path / "p.csv"
    c.write_text('text_b,text_a,gold\n"a b, c",x y,0-0 1-2\n')
    p = read_pairs(c)[0]
    assert p.text_a == "x y" and p.text_b == "a b, c" and p.sure == {(0, 0), (1, 2)}
    j = tmp_path / "p.jsonl"
    j.write_text(json.dumps({"text_a": "Der Hund", "text_b": "the dog", "gold": "0-0 1-1"})
                 + "\n" + json.dumps({"text_a": "ja", "text_b": "yes"}) + "\n")
    pj = read_pairs(j, lowercase=True)
    assert pj[0].text_a == "der hund" and pj[0].has_gold and not pj[1].has_gold
    e = tmp_path / "ed.txt"  # Edinburgh++'s layout: a, b, links, no header
    e.write_text("a b c\tx y\t0-0 2-1\n")
    assert read_pairs(e)[0].sure == {(0, 0), (2, 1)}


def test_awesome_align_pair_of_files(tmp_path):
    src = tmp_path / "text.src-tgt"
    gold = tmp_path / "text.gold"
    src.write_text("das Haus ||| the house\nja ||| yes\n")
    gold.write_text("1-2 1p1\n1-1\n")
    pairs = read_pairs(src, gold=gold, one_based=True)
    assert pairs[0].sure == {(0, 1)} and (0, 0) in pairs[0].possible
    gold.write_text("0-0\n")
    with pytest.raises(AlignFileError, match="1 lines but .* 2 pairs"):
        read_pairs(src, gold=gold)
    src.write_text("no separator here\n")
    with pytest.raises(AlignFileError, match=r"line 1: write each pair"):
        readers.parse_pairs(src.read_text(), fmt="awesome", name="x")


def test_separate_links_file(tmp_path):
    p = tmp_path / "p.tsv"
    p.write_text("a b\tc d\nx\ty\n")
    g = tmp_path / "g.txt"
    g.write_text("0-0 1-1\n0-0\n")
    pairs = read_links(g, read_pairs(p))
    assert [x.sure for x in pairs] == [{(0, 0), (1, 1)}, {(0, 0)}]
    g.write_text("0-0\n")
    with pytest.raises(AlignFileError, match="1 lines but there are 2 pairs"):
        read_links(g, read_pairs(p))


@pytest.mark.parametrize("content, message", [
    (b"", "empty"),
    (b"\n\n  \n", "empty"),
    (b"text_a\ttext_b\n", "no pairs"),
    (b"text_a\ttext_b\n\tB\n", r"line 2: text_a is empty"),
    (b"text_a\ttext_b\tgold\na b\tc\t0-0 9-9\n", r"line 2: link 9-9 is out of range"),
    (b"only one column\n", r"line 1: 1 field"),
    (b"a\tb\tc\td\n", r"line 1: 4 fields"),
    (b"\xff\xfe\x00b\x00", "not a text file"),
    (b"a b\t\xe9t\xe9\n", r"line 1: not UTF-8"),
    (b'{"text_a": "x"}\n', r"line 1: each line needs the fields text_a and text_b"),
    (b'{"text_a": "x", "text_b": \n', r"line 1: not a JSON object"),
    (b'{"text_a": "x", "text_b": "y", "gold": 5}\n', "gold must be Pharaoh links"),
    (b"text_a,gold\nx,0-0\n", "header needs both"),
])
def test_bad_files_name_the_problem(tmp_path, content, message):
    f = tmp_path / "bad.tsv"
    f.write_bytes(content)
    with pytest.raises(AlignFileError, match=message):
        read_pairs(f)


def test_hostile_files(tmp_path, monkeypatch):
    with pytest.raises(AlignFileError, match="Cannot read"):
        read_pairs(tmp_path / "missing.tsv")
    with pytest.raises(AlignFileError, match="not a file"):
        read_pairs(tmp_path)
    monkeypatch.setattr(readers, "MAX_BYTES", 100)
    big = tmp_path / "big.tsv"
    big.write_text("a\tb\n" * 100)
    with pytest.raises(AlignFileError, match="MB, more than"):
        read_pairs(big)
    monkeypatch.setattr(readers, "MAX_BYTES", 32 * 2**20)
    monkeypatch.setattr(readers, "MAX_PAIRS", 3)
    with pytest.raises(AlignFileError, match="more than 3 pairs"):
        read_pairs(big)
    long = tmp_path / "long.tsv"
    long.write_text("w " * (readers.MAX_WORDS + 1) + "\tb\n")
    with pytest.raises(AlignFileError, match="words, more than"):
        read_pairs(long)
    # a huge index, HTML and control characters are text, not a crash
    odd = tmp_path / "odd.tsv"
    odd.write_text("<script>x</script> \x07\tb\t0-0\n")
    assert read_pairs(odd)[0].sure == {(0, 0)}
    odd.write_text("a\tb\t0-99999999\n")
    with pytest.raises(AlignFileError, match="not a link"):
        read_pairs(odd)


def test_pair_round_trip_and_links_text():
    p = readers.make_pair("a b", "c d", "1-1 0p0")
    assert p.to_dict() == {"text_a": "a b", "text_b": "c d", "gold": "1-1 0p0"}
    assert readers.links_text([(1, 0), (0, 1)], [(1, 1)]) == "0-1 1-0 1p1"


# ------------------------------------------------------ gold cells and headers as a user writes
def test_an_empty_gold_cell_is_no_gold_and_is_counted(tmp_path):
    f = tmp_path / "p.tsv"
    f.write_text("text_a\ttext_b\tgold\na b\tc d\t0-0 1-1\ne f\tg h\t\ni\tj\t  \n")
    pairs = read_pairs(f)
    assert [p.has_gold for p in pairs] == [True, False, False]
    assert pairs.gold_column and pairs.n_gold == 1 and pairs.without_gold == (1, 2)
    f.write_text("a b\tc d\t0-0\ne f\tg h\t\n")  # no header: the third column is gold
    pairs = read_pairs(f, lowercase=True, transpose=True)
    assert (pairs.n_gold, pairs.gold_column) == (1, True) and pairs[0].sure == {(0, 0)}
    f.write_text("a b\tc d\n")
    assert (read_pairs(f).n_gold, read_pairs(f).gold_column) == (0, False)
    j = tmp_path / "p.jsonl"
    j.write_text('{"text_a": "a", "text_b": "b", "gold": ""}\n'
                 '{"text_a": "a", "text_b": "b", "gold": null}\n'
                 '{"text_a": "a", "text_b": "b", "gold": "0-0"}\n')
    assert [p.has_gold for p in read_pairs(j)] == [False, False, True]
    # gold that is said to have no link stays gold: a blank line of a links file, ""
    g = tmp_path / "g.txt"
    g.write_text("0-0\n\n0-0\n")
    assert read_links(g, read_pairs(j)).n_gold == 3
    assert readers.make_pair("a", "b", "").has_gold


@pytest.mark.parametrize("header, roles", [
    ("source\ttarget\talignment", ("a", "b", "g")),
    ("Source\tTarget", ("a", "b", None)),
    ("src\ttgt\tlinks", ("a", "b", "g")),
    ("id\tsentence1\tsentence2\tgold", (None, "a", "b", "g")),
    ("target\tsource\tsure\tpossible", ("b", "a", "g", "p")),
    ("text_a\ttext_b\tgold", ("a", "b", "g")),
])
def test_headers_name_their_columns(tmp_path, header, roles):
    cells = {"a": "x y", "b": "u v w", "g": "0-0 1-2", "p": "1p1", None: "7"}
    f = tmp_path / "h.tsv"
    f.write_text(header + "\n" + "\t".join(cells[r] for r in roles) + "\n")
    (p,) = read_pairs(f)
    assert (p.text_a, p.text_b) == ("x y", "u v w")
    assert p.has_gold == ("g" in roles)
    if "g" in roles:
        assert p.sure == {(0, 0), (1, 2)}
        assert ((1, 1) in p.possible) == ("p" in roles) and (1, 1) not in p.sure
    c = tmp_path / "h.csv"  # the same header in a CSV, and as JSONL keys
    c.write_text(header.replace("\t", ",") + "\n" + ",".join(cells[r] for r in roles) + "\n")
    assert read_pairs(c)[0] == p
    names = header.split("\t")
    j = tmp_path / "h.jsonl"
    j.write_text(json.dumps({k: cells[r] for k, r in zip(names, roles)}) + "\n")
    assert read_pairs(j)[0] == p


@pytest.mark.parametrize("content, code, params", [
    ("source\ttarget\tnotes\na\tb\tc\n", "header_column", {"column": "notes"}),
    ("source\ttext_a\ttarget\na\tb\tc\n", "header_twice",
     {"role": "text_a", "columns": ("source", "text_a")}),
    ("text_a\ttext_b\tgold\tsure\na\tb\t0-0\t0-0\n", "header_twice",
     {"role": "gold", "columns": ("gold", "sure")}),
    ("source\talignment\na\t0-0\n", "header", {"unknown": ()}),
    ("src_text\ttgt_text\tgold\na\tb\t0-0\n", "header", {"unknown": ("src_text", "tgt_text")}),
])
def test_a_header_that_cannot_be_read_is_named(tmp_path, content, code, params):
    f = tmp_path / "bad.tsv"
    f.write_text(content)
    with pytest.raises(AlignFileError) as e:
        read_pairs(f)
    assert e.value.code == code and e.value.params["where"] == ("bad.tsv", 1)
    assert {k: e.value.params[k] for k in params} == params
    assert str(e.value).startswith("bad.tsv, line 1: ")
    if code == "header_twice":
        assert "(" + ", ".join(map(repr, params["columns"])) + ")" in str(e.value)
    sentence = {**readers.MESSAGES, **readers.HEADER_MESSAGES}[code]
    assert str(e.value) == str(AlignFileError.of(code, **e.value.params)) and sentence


def test_the_header_no_longer_reads_as_a_pair_or_as_links(tmp_path):
    f = tmp_path / "h.tsv"
    f.write_text("source\ttarget\talignment\nthe cat\ta cat\t0-0 1-1\n")
    (p,) = read_pairs(f)  # was: "line 1: 'alignment' is not a link"
    assert p.sure == {(0, 0), (1, 1)}
    f.write_text("source\ttarget\nthe cat\ta cat\n")
    assert len(read_pairs(f)) == 1 and not read_pairs(f)[0].has_gold  # was: 2 pairs


def test_a_caller_without_a_one_based_choice_gets_no_hint():
    with pytest.raises(AlignFileError) as e:
        readers.make_pair("a b", "c", "0-1", where="gold", one_based=None)
    assert e.value.params["hint"] is False and "1-based" not in str(e.value)
    with pytest.raises(AlignFileError, match="1-based flag"):
        readers.make_pair("a b", "c", "0-1", where="gold")
