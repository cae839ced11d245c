"""Shared fixtures: the repo root on sys.path, offline settings, one real ``streamlit run``
server and one headless Chromium for the whole test session (browser tests), and the tiny
models.

Session scope is what keeps the browser tier affordable on two cores: a server boot with
the model costs ~10 s and a Chromium launch ~5 s. Each test still opens its own page (or
context) at the URL state it starts from, so any test runs alone and in any order.
"""

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
# Under pytest-xdist two workers share the two cores: one OpenMP / numba thread each (with
# two threads per process and the other worker busy, torch ran many times slower). The
# app, its servers and the replicas use one torch thread anyway (SINKSCOPE_TORCH_THREADS).
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(_name, "1")

from tests.support.browser import chromium  # noqa: E402
from tests.support.server import streamlit_server  # noqa: E402


# The longest modules after the Ray ones, longest first (2026-12-01, two workers): under
# pytest-xdist each worker takes the next whole file when it runs short, so long files
# handed out last would leave one worker running them alone at the end.
LONGEST = ("test_browser.py", "test_scrub_browser.py", "test_privacy_browser.py",
           "test_newcomer_browser.py", "test_pictures_browser.py", "test_app.py",
           "test_learn_browser.py", "test_learn_es_browser.py", "test_hostile_app.py")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Browser tests run last (otherwise in their usual order). Playwright's sync API marks
    the main thread's event loop as running for as long as Chromium is open, which would
    break any later test that runs an asyncio loop of its own; grouped at the end, the one
    session browser never meets them.

    A module that starts Ray (marker ``service``: tests/test_service.py, the one module
    that does) stays whole, at the start: its browser tests share its Ray and run at its
    end, in a Chromium of the module's own, closed with it. Within each tier the long
    modules (:data:`LONGEST`) come first: under pytest-xdist (``make test`` runs two
    workers, files handed out in this order) no long file is left to run alone at the end.
    Each worker is its own session, with its own Streamlit server and Chromium on free
    ports, and runs its browser tests after all its other tests."""
    def key(item):
        service = item.get_closest_marker("service") is not None
        return (item.get_closest_marker("browser") is not None and not service,
                not service,
                LONGEST.index(item.path.name) if item.path.name in LONGEST else len(LONGEST))

    items[:] = sorted(items, key=key)


#: What the session's server sets over the defaults.
SERVER_SETTINGS = {"SINKSCOPE_MAX_HALF_STEPS": "1500"}


@pytest.fixture(scope="session")
def app_server():
    """``streamlit run app.py`` on 127.0.0.1, started once for the session (on first use)
    and stopped at its end; yields the base URL. The default settings, but for the
    half-step slider's end: 1,500 (:data:`SERVER_SETTINGS`), above the 1,000 half-steps
    the live sliders' lattice holds, so that the browser tests reach a value the lattice
    lacks (tests/test_scrub_browser.py) on the one server."""
    with streamlit_server(SERVER_SETTINGS) as (url, _proc):
        yield url


@pytest.fixture(scope="session")
def browser():
    """Debian's headless Chromium (tests.support.browser.chromium), launched once for the
    session (on first use). Tests ask for contexts and close them; ``SharedRenderers`` lends
    a used context with the same options when one is idle (its renderer has Streamlit's
    frontend and plotly.js compiled), and each context's pages share one renderer process."""
    with chromium() as b:
        yield b


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    """Tiny random sentence-transformers folders, one per architecture (tests/support/tiny_models.py),
    built once per test session in a temporary folder: kind → folder."""
    from tests.support.tiny_models import SUPPORTED_KINDS, build

    root = tmp_path_factory.mktemp("tiny-models")
    return {kind: build(kind, root / kind) for kind in (*SUPPORTED_KINDS, "deberta-v2")}
