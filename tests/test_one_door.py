"""One door: the pages reach computation only through the engine interface
(``sinkscope_app/engines.py``). Statically, from every module's imports (``ast``): no page
folder imports another page folder, and the app imports from ``engine`` only its
torch-free contracts (:data:`CONTRACTS`); only the door itself (``engines.py``) and the
embedded preload (``launch.py``) name the engine's computing modules, inside functions.
Dynamically: with a served engine (``SINKSCOPE_ENGINE`` a URL), importing every page and
every module of the app leaves torch, transformers, sentence-transformers and UMAP out of
the process."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "sinkscope_app"
PAGES = ("main", "learn", "align", "lab")
#: What the app may import from ``engine``: settings, types, errors, the client, wire
#: formats, readers and the jobs' typed results (none imports torch).
CONTRACTS = {
    "engine", "engine.settings", "engine.errors", "engine.types", "engine.client",
    "engine.io.export", "engine.relation.frames", "engine.relation.summary",
    "engine.alignment.methods", "engine.alignment.live", "engine.alignment.readers",
    "engine.alignment.score", "engine.lab.config",
    "engine.lab.clouds", "engine.lab.errors", "engine.jobs.results", "engine.jobs.errors",
    "engine.jobs.spec", "engine.jobs.split"}
#: The door (Embedded computes in this process, importing the engine inside its methods)
#: and the embedded preload.
DOORS = ("engines.py", "launch.py")
HEAVY = ("torch", "transformers", "sentence_transformers", "umap", "pynndescent", "numba")


def imported(path: Path) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import in ``path``; ``from X import name``
    counts as ``X.name`` when that is a module (a sub-package's module), else as ``X``."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for a in node.names:
                full = f"{base}.{a.name}"
                is_module = (ROOT / Path(*full.split("."))).with_suffix(".py").is_file() or \
                    (ROOT / Path(*full.split(".")) / "__init__.py").is_file()
                out.append((full if is_module else base, node.lineno))
    return out


def test_no_page_folder_imports_another():
    found = []
    for page in PAGES:
        for path in (APP / page).rglob("*.py"):
            for name, line in imported(path):
                parts = name.split(".")
                if parts[0] == "sinkscope_app" and len(parts) > 1 and parts[1] in PAGES and \
                        parts[1] != page:
                    found.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert found == [], "\n".join(found)


def test_the_app_imports_only_the_engine_s_contracts():
    found = []
    for path in APP.rglob("*.py"):
        if path.relative_to(APP).as_posix() in DOORS:
            continue
        for name, line in imported(path):
            if name.split(".")[0] == "engine" and name not in CONTRACTS:
                found.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert found == [], "\n".join(found)
    assert "engine.alignment.api" not in CONTRACTS  # (a check that the check can fail)


def test_the_door_imports_the_engine_s_computing_modules_inside_functions_only():
    """``engines.py`` at module level: contracts only (Embedded imports the rest when it
    computes)."""
    tree = ast.parse((APP / "engines.py").read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = {n.module for n in top if isinstance(n, ast.ImportFrom) and n.module}
    names |= {a.name for n in top if isinstance(n, ast.Import) for a in n.names}
    assert {n for n in names if n.split(".")[0] == "engine"} <= CONTRACTS, names


def test_with_a_served_engine_no_module_of_the_app_loads_torch():
    modules = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts)
                     .removesuffix(".__init__") for p in APP.rglob("*.py")
                     if p.name != "launch.py" and p.parent.name != "pages")  # (scripts)
    script = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n")
    env = {**os.environ, "SINKSCOPE_ENGINE": "http://127.0.0.1:9", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, text=True,
                         capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert len(modules) > 40  # every page and shared module, not an empty match
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
