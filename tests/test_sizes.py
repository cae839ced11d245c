"""Product code stays readable in pieces: no function over 80 code lines and no module over
500. A code line holds code: blank lines, comments and docstrings are not counted (a
string that is not a docstring is)."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("app.py", "engine", "sinkscope_app", "viz")
MAX_FUNCTION, MAX_MODULE = 80, 500
SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
        tokenize.ENDMARKER}


def code_lines(source: str) -> set[int]:
    """The numbers of the lines of ``source`` that hold code."""
    docs = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            docs.update(range(body[0].lineno, body[0].end_lineno + 1))
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in SKIP:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines - docs


def modules() -> list[Path]:
    return sorted(p for name in PRODUCT
                  for p in ([ROOT / name] if name.endswith(".py") else (ROOT / name).rglob("*.py")))


def test_the_counting_rule():
    src = '"""Doc\nstring."""\n\n# note\ndef f(x):\n    """Doc."""\n    y = """a\nb"""\n    return (x +\n            y)\n'
    assert sorted(code_lines(src)) == [5, 7, 8, 9, 10]


def test_no_module_over_500_and_no_function_over_80_code_lines():
    assert len(modules()) > 50
    over = []
    for path in modules():
        source = path.read_text(encoding="utf-8")
        code = code_lines(source)
        name = path.relative_to(ROOT)
        if len(code) > MAX_MODULE:
            over.append(f"{name}: {len(code)} code lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = sum(node.lineno <= k <= node.end_lineno for k in code)
                if n > MAX_FUNCTION:
                    over.append(f"{name}:{node.lineno} {node.name}: {n} code lines")
    assert not over, over
