"""A corpus of bad and hostile inputs, each with the outcome a user should see.

``expect`` is None when the pair must be related correctly (finite numbers, the texts shown
as text), or a fragment of the message that must name what to change.
"""

from __future__ import annotations

from dataclasses import dataclass

LONG = "The river bank was quiet. " * 4000  # ~100,000 characters
HTML_PAYLOADS = (
    "<script>alert('xss')</script>",
    "<img src=x onerror=alert(1)>",
    "<a href=\"javascript:alert(1)\">click me</a>",
    "<b>bold</b> <i>it</i> <iframe src=//evil></iframe>",
)


@dataclass(frozen=True)
class Case:
    id: str
    a: str
    b: str
    expect: str | None = None  # message fragment, or None for a correct result
    truncated: bool = False


CASES: tuple[Case, ...] = (
    Case("empty-a", "", "A river bank.", "Text A is empty"),
    Case("empty-b", "A river bank.", "", "Text B is empty"),
    Case("blank", "   \n\t  ", "A river bank.", "Text A is empty"),
    Case("both-empty", "", "", "Text A is empty"),
    Case("one-token", "bank", "money", None),
    Case("huge-100k", LONG, "A river bank.", None, truncated=True),
    Case("just-over-limit", "word " * 4001, "bank", None, truncated=True),
    Case("punctuation-only", "!!! ??? ... ;;; ---", "A river bank.", None),
    Case("special-token-strings", "[CLS] [SEP] [PAD]", "[MASK] [UNK]", None),
    Case("emoji-zwj", "👨‍👩‍👧‍👦 family time 👍🏽👍🏿", "🏳️‍🌈 flags 🇪🇸🇫🇷", None),
    Case("emoji-only", "😀😀😀", "🙂", None),
    Case("combining-marks", "e\u0301te\u0301 cafe\u0301 n\u0303", "été café ñ", None),
    Case("zalgo", "Z̸̢͉̝a̴̛l̵͓g̷̣o̸̹ text", "plain text", None),
    Case("rtl-arabic", "مرحبا بالعالم، ضفة النهر", "The river bank.", None),
    Case("rtl-hebrew-mixed", "שלום world עולם", "hello world", None),
    Case("cjk", "我爱自然语言处理。河岸很安静。", "日本語のテキストです", None),
    Case("mixed-scripts", "Hello мир 世界 κόσμος", "Hello world", None),
    Case("control-chars", "abc\x01\x02\x1b[31mred\x7f", "A river bank.", None),
    Case("nul-bytes", "river\x00bank\x00", "money\x00bank", None),
    Case("only-controls", "\x00\x01\x02", "A river bank.", "Text A is empty"),
    Case("invalid-surrogate", "bank \ud800 river \udfff", "A river bank.", None),
    Case("zero-width-only", "\u200b\u200b\u200d", "A river bank.", "Text A has nothing"),
    Case("private-use-only", "\ue000\ue001", "A river bank.", "Text A has nothing"),
    Case("bom-and-nbsp", "\ufeff\u00a0hello\u2003world\u3000", "hello world", None),
    Case("line-separators", "line one\u2028line two\u2029line three", "one two", None),
    Case("newlines-tabs", "line1\n\nline2\r\nline3\tend", "lines", None),
    Case("html-script", HTML_PAYLOADS[0], "A river bank.", None),
    Case("html-img-onerror", HTML_PAYLOADS[1], HTML_PAYLOADS[0], None),
    Case("javascript-link", HTML_PAYLOADS[2], "click", None),
    Case("html-mixed", HTML_PAYLOADS[3], "bold text", None),
    Case("html-entities", "&lt;b&gt; &amp; &quot;", "<b>", None),
    Case("markdown", "# Title\n**bold** _it_ `code` [x](javascript:alert(1)) $x^2$",
         "> quote\n- item", None),
    Case("format-strings", "%s %d %(x)s {0} {{x}} %{y}", "${HOME} $(whoami)", None),
    Case("sql-injection", "'; DROP TABLE users; --", "Robert'); --", None),
    Case("url", "https://example.com/?q=<b>&x=1#frag", "http://localhost:8501", None),
    Case("math-symbols", "∀x∈ℝ: x²≥0 ∑ ∫ √ ≠ ∞", "for all real x", None),
    Case("numbers", "3.14159 2.71828 1e300 -0 NaN inf", "pi and e", None),
    Case("long-word", "a" * 5000, "short", None),
    Case("identical", "The bank of the river.", "The bank of the river.", None),
    Case("repeated-token", "the the the the the the", "the", None),
    Case("one-vs-500", "bank", " ".join(["river bank money water"] * 125), None),
    Case("noncharacters", "\uffff\ufffe text \U0010ffff", "text", None),
    Case("surrogate-pair-emoji", "🇪🇸🇫🇷🇩🇪", "flags of Spain France Germany", None),
    Case("backslashes-quotes", 'C:\\path\\to\\"file"\'s', "path", None),
)
