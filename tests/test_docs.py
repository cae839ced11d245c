"""The documentation says what the code does: the configuration table names exactly the
fields of ``engine.settings.Config`` with their defaults, every relative link resolves, the
README stays short, and its Python example runs and means what its comments say."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from engine import settings

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
ROW = re.compile(r"^\| `(SINKSCOPE_[A-Z0-9_]+)` \| ([^|]*) \|", re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def shown(default) -> str:
    """A Config default as the table writes it."""
    if isinstance(default, bool):
        return "1" if default else "0"
    if isinstance(default, float):
        return f"{default:g}"
    return str(default) if default != "" else "—"


def table() -> dict[str, str]:
    rows = ROW.findall((DOCS / "configuration.md").read_text())
    names = [name for name, _ in rows]
    assert len(names) == len(set(names)), f"a variable is listed twice: {names}"
    return {name: cell.strip() for name, cell in rows}


def test_configuration_table_names_every_config_field_with_its_default():
    fields = {f"SINKSCOPE_{f.name.upper()}": f for f in dataclasses.fields(settings.Config)}
    rows = table()
    missing, extra = sorted(set(fields) - set(rows)), sorted(set(rows) - set(fields))
    assert not missing and not extra, (
        f"docs/configuration.md is out of step with engine.settings.Config: add rows for "
        f"{missing}, remove {extra}")
    for name, f in fields.items():
        assert rows[name] == shown(f.default), (name, rows[name], shown(f.default))


def other_value(default) -> str:
    """A valid value of a variable that differs from its default."""
    if isinstance(default, bool):
        return "0" if default else "1"
    if isinstance(default, int):
        return str(default + 7)
    if isinstance(default, float):
        return f"{default * 0.5:g}"
    return "cpu"  # any word differs from a string default


def test_each_documented_variable_sets_its_field():
    """Reading a non-default value of each variable changes exactly its own field."""
    base = settings.Config.from_env({})
    assert base == settings.Config()
    for f in dataclasses.fields(settings.Config):
        name = f"SINKSCOPE_{f.name.upper()}"
        value = other_value(f.default)
        cfg = settings.Config.from_env({name: value})
        changed = [g.name for g in dataclasses.fields(cfg)
                   if getattr(cfg, g.name) != getattr(base, g.name)]
        assert changed == [f.name], (name, value, changed)


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.name)
def test_relative_links_resolve(path):
    broken = []
    for target in LINK.findall(path.read_text()):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        if not (path.parent / target.split("#")[0]).exists():
            broken.append(target)
    assert not broken, f"{path.name} links to files that do not exist: {broken}"


def test_readme_fits_on_a_screen_and_names_the_two_commands():
    text = README.read_text()
    assert len(text.encode()) <= 12_500, f"README.md is {len(text.encode())} bytes: move detail to docs/"
    assert "make run" in text and "make test" in text
    assert len(re.findall(r"!\[[^\]]*\]\(docs/screenshots/[^)]+\.png\)", text)) == 1
    for folder in ("engine/solver", "engine/models", "engine/relation", "engine/alignment",
                   "engine/lab", "engine/serving", "engine/io", "viz/", "sinkscope_app/"):
        assert f"`{folder}" in text, f"README.md does not say where {folder} starts"


@pytest.mark.model
def test_readme_python_example_runs_and_means_what_it_says():
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    r = scope["r"]
    n, m = len(r.tokens_a), len(r.tokens_b)
    assert r.softmax_plan.shape == r.coupling.plan.shape == (n, m)
    # the comment: how far attention (as a joint measure) is from a coupling, in L1
    assert r.summary.softmax_col_err == pytest.approx(
        np.abs(r.softmax_plan.sum(0) - r.b).sum(), rel=1e-9, abs=1e-12)
    assert r.summary.softmax_col_err > 0.01  # attention is not a coupling here
    np.testing.assert_allclose(r.coupling.plan.sum(1), r.a, atol=1e-6)


def test_the_docs_fit_in_125_kb():
    size = sum(len(p.read_bytes()) for p in (ROOT / "docs").glob("*.md"))
    assert size < 125_000, f"docs/*.md is {size:,} bytes: keep current figures, not a log"
