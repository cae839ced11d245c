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
