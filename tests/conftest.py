"""Shared fixtures: the repo root on sys.path, offline settings, and (for browser tests)
one real ``streamlit run`` server per module on a free loopback port."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("NUMBA_THREADING_LAYER", "omp")
# No background warm-ups (UMAP's compilation, the Learn page's later steps) in tests: they
# would compete for the two cores, and settings are read once, when engine is first imported.
os.environ["SINKSCOPE_WARM_UP"] = "0"

from tests.support.server import CHROMIUM_ARGS, chromium_path, streamlit_server  # noqa: E402

CHROMIUM = chromium_path()


@pytest.fixture(scope="module")
def app_server():
    """Start ``streamlit run app.py`` on 127.0.0.1 and yield its base URL; stop it after."""
    with streamlit_server() as (url, _proc):
        yield url


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium through Playwright. Missing Chromium fails in CI (where
    .ci/run installs it) and skips elsewhere, with the command that installs it."""
    if not Path(CHROMIUM).exists():
        msg = f"Chromium not found at {CHROMIUM}: apt-get install -y chromium"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    """Tiny random sentence-transformers folders, one per architecture (tests/support/tiny_models.py),
    built once per test session in a temporary folder: kind → folder."""
    from tests.support.tiny_models import SUPPORTED_KINDS, build

    root = tmp_path_factory.mktemp("tiny-models")
    return {kind: build(kind, root / kind) for kind in (*SUPPORTED_KINDS, "deberta-v2")}
