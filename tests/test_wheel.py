"""The wheel a user installs: its files (the app, its JavaScript, texts, assets and Streamlit
settings, the licence), and a fresh virtual environment with it installed: ``sinkscope
app`` serves the app from there (no checkout), Chromium draws the first coupling, and
Ctrl-C stops it quietly; ``import sinkscope`` relates two texts there.

The new environment never downloads: it sees the project's environment's packages through
a ``.pth`` line (a plain path: that folder's own ``.pth`` files, among them the checkout's
editable install, are not read), and the wheel is installed with ``--no-index
--no-deps --ignore-installed``. The wheel is built from a copy of the tree, so the
checkout gets no ``build/`` folder.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

from tests.support.server import die_with_parent, free_port, stop, wait_healthy

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the tree (tracked and new files, not ignored ones)."""
    base = tmp_path_factory.mktemp("wheel")
    src, out = base / "src", base / "dist"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        path = ROOT / name
        if path.is_file() or path.is_symlink():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, src / name, follow_symlinks=False)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out), str(src)], check=True, timeout=300)
    [whl] = out.glob("sinkscope-*.whl")
    return whl


def test_the_wheel_holds_the_app_its_code_texts_assets_settings_and_licence(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    app = ROOT / "sinkscope_app"
    want = {"sinkscope/__init__.py", "sinkscope/cli.py", "sinkscope/notebook.py",
            "sinkscope/__main__.py", "sinkscope_app/app.py", "sinkscope_app/where.py",
            "sinkscope_app/.streamlit/config.toml",
            *(f"sinkscope_app/pages/{p.name}" for p in (app / "pages").glob("*.py")),
            *(f"sinkscope_app/js/{p.name}" for p in (app / "js").glob("*.js")),
            *(f"sinkscope_app/text/{p.name}" for p in (app / "text").glob("*.json")),
            *(f"sinkscope_app/assets/{p.name}" for p in (app / "assets").glob("*.json")),
            "engine/__init__.py", "viz/__init__.py"}
    assert want <= names, sorted(want - names)
    dist = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    assert f"{dist}/licenses/LICENSE" in names
    assert not [n for n in names if n.startswith(("tests/", "docs/", "benchmarks/"))]
    z = zipfile.ZipFile(wheel)
    meta = z.read(f"{dist}/METADATA").decode()
    assert "License-Expression: MIT" in meta and "Classifier: Framework :: Jupyter" in meta
    assert "Provides-Extra: notebook" in meta and "Project-URL:" in meta
    assert "sinkscope = sinkscope.cli:main" in z.read(f"{dist}/entry_points.txt").decode()


@pytest.mark.browser
@pytest.mark.model
@pytest.mark.timeout(480)
def test_a_fresh_venv_serves_the_app_and_imports_sinkscope(wheel, tmp_path, browser):
    venv = tmp_path / "venv"
    # without pip of its own (ensurepip: ~3 s): this environment's pip installs into it
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True
                          ).stdout.strip()
    Path(site, "project-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                    "--no-index", "--no-deps", "--ignore-installed", str(wheel)], check=True,
                    timeout=300)
    seconds = time.perf_counter() - t0
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    work = tmp_path / "elsewhere"  # no checkout here: everything comes from the venv
    work.mkdir()
    out = subprocess.run([str(py), "-c", "import sinkscope; r = sinkscope.relate("
                          "'The bank of the river.', 'Money in the bank.', layer=5, head=0);"
                          " print(sinkscope.__file__); print(r.coupling.plan.shape)"],
                         cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    where, shape = out.stdout.strip().splitlines()[-2:]
    assert Path(where).resolve().is_relative_to(venv.resolve()), where  # the wheel's
    assert shape == "(8, 7)"  # [CLS] the bank of the river . [SEP] × [CLS] money in the bank . [SEP]
    version = subprocess.run([str(venv / "bin" / "sinkscope"), "--version"], cwd=work, env=env,
                             capture_output=True, text=True, timeout=60, check=True).stdout
    assert version.startswith("sinkscope ")
    port = free_port()
    log = tmp_path / "app.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen([str(venv / "bin" / "sinkscope"), "app", "--server.port",
                                 str(port)], cwd=work, env=env, stdout=fh,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=die_with_parent())
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc, log, timeout=120)
        ctx = browser.new_context(viewport={"width": 1400, "height": 1600})
        try:
            page = ctx.new_page()
            page.goto(url, timeout=120_000)
            page.wait_for_function(
                "() => document.querySelector('.sinkscope-chart[data-source=server]')",
                timeout=180_000, polling=200)
            titles = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')]"
                                   ".map((g) => JSON.stringify(g.layout.annotations || []))")
        finally:
            ctx.close()
        proc.send_signal(signal.SIGINT)  # Ctrl-C, as a person stops it
        code = proc.wait(timeout=60)
    finally:
        stop(proc)
    assert any("Sinkhorn" in t for t in titles), titles
    text = log.read_text()
    assert code == 0, text[-3000:]
    # a quiet stop: nothing after Streamlit's "Stopping..." (no traceback, no log line)
    assert "Traceback" not in text and text.split("Stopping...", 1)[1].strip() == "", text
    print(f"\nwheel {wheel.stat().st_size / 1e3:.0f} kB; installed in {seconds:.1f} s")
