"""The app against a served engine, in Chromium: ``streamlit run app.py`` with
SINKSCOPE_ENGINE pointing at ``python -m engine serve`` in its own process. The page is
opened before the engine answers, and the engine goes away mid-session and comes back on
the same address: each time the page says so, keeps what it can, and comes back by itself,
without a reload. Then one tour of every page and every job kind from the pages, with a
worker killed under a Lab training (the page says it was lost within 5 s; Restart runs it
again) and a reload that finds a job by the id in the address, leaves the Streamlit
process without torch (no libtorch mapped) and within 400 MB at its peak.

The engine's address is a loopback relay (``tests.support.outage``) that the test takes
down and brings back: while it is down nothing listens there and every open connection is
reset, which is what the app sees of an engine that has stopped, without paying for a
second start of Ray. Serve itself stopped and started again under a client and the page is
``tests/test_service.py::test_zz_stopped_service_is_unavailable_then_recovers``.
"""

from __future__ import annotations

import io
import json
import os
import signal
import time
import urllib.request
import zipfile
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.engine_server import EngineProcess
from tests.support.outage import Relay
from tests.support.server import free_port, streamlit_server
from tests.support.browser import (TIMEOUT, VIEWPORT, choose_view, no_errors, titles,
                                   wait_idle, wait_js, wait_title)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.service]

NOTICE = '[data-testid="stAlertContentWarning"]'


class Engine:
    """``python -m engine serve``, launched at once (it starts while the app and the page
    do), behind a relay that is down until :meth:`up` (the app is given the relay's
    address)."""

    def __init__(self, log: Path) -> None:
        self.process = EngineProcess(free_port(), log=log)
        self.relay = Relay(self.process.port, free_port())
        self.url = self.relay.url
        self.process.launch()

    def up(self) -> None:
        """Once the engine answers its health check, open the address."""
        self.process.wait_ready()
        self.relay.up()

    def down(self) -> None:
        self.relay.down()

    def stop(self) -> None:
        self.relay.down()
        self.process.stop()


@pytest.fixture(scope="module")
def engine(ray_lock, tmp_path_factory):
    e = Engine(tmp_path_factory.mktemp("engine") / "engine.log")
    try:
        yield e
    finally:
        e.stop()


@pytest.fixture(scope="module")
def served_app(engine):
    """The app on the served engine: (its URL, the Streamlit server's process)."""
    env = {"SINKSCOPE_ENGINE": engine.url, "SINKSCOPE_WARM_UP": "0"}
    with streamlit_server(env=env) as (url, proc):
        yield url, proc


@pytest.mark.timeout(420)  # the engine's start takes up to 180 s on a loaded machine
def test_app_waits_for_the_engine_and_survives_an_outage(served_app, engine, browser):
    served_app, _ = served_app
    ctx = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT)
    try:
        page.goto(f"{served_app}/?eps=1&steps=100")  # the engine is not up yet
        page.wait_for_selector(f"{NOTICE} >> text=is not available", timeout=TIMEOUT)
        assert engine.url in page.locator(NOTICE).first.inner_text()
        no_errors(page)
        page.evaluate("() => { window.sinkscopeNotReloaded = true; }")
        engine.up()
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=TIMEOUT)  # by itself
        wait_idle(page)
        assert page.evaluate("() => window.sinkscopeNotReloaded === true")
        sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
        assert f"served by {engine.url}, on cpu (float64)" in sidebar, sidebar[-600:]
        eps = page.get_by_role("slider", name="ε — entropy (log scale)")
        eps.focus()
        eps.press("ArrowLeft")
        wait_title(page, "Sinkhorn (ε=0.8,")
        choose_view(page, "All heads")  # the 6 × 12 grid, through the client
        wait_title(page, "Layers × heads")
        choose_view(page, "Compare")
        wait_title(page, "How text A relates")
        wait_idle(page)
        no_errors(page)

        engine.down()
        eps.focus()
        eps.press("ArrowLeft")  # a slider move while the engine is away
        page.wait_for_selector(f"{NOTICE} >> text=is not available", timeout=TIMEOUT)
        notice = page.locator(NOTICE).first.inner_text()
        assert engine.url in notice and "by itself" in notice, notice
        assert page.get_by_role("slider").count() == 2  # the controls stay
        assert page.locator('[data-testid="stSidebar"] textarea').count() == 2
        assert page.locator('[data-testid="stException"]').count() == 0
        assert "Traceback" not in page.inner_text("body")

        engine.up()  # the same address, as after an operator's restart
        wait_title(page, "Sinkhorn (ε=0.6,")  # the move made while it was away
        wait_js(page, f"""() => ![...document.querySelectorAll('{NOTICE}')]
            .some(e => e.innerText.includes('is not available'))""")
        wait_idle(page)
        assert page.evaluate("() => window.sinkscopeNotReloaded === true")
        assert any("ε=0.6" in t for t in titles(page))
        no_errors(page)
    finally:
        ctx.close()


DATA = Path(__file__).parent / "data" / "align" / "pairs.tsv"
MB = 2**20
PEAK_MB = 400  # the front end's peak RSS on a served engine (705 MB with torch mapped)
#: Shared libraries that only torch, transformers (tokenizers, safetensors) and UMAP
#: (numba, llvmlite) bring into a process.
HEAVY_LIBS = ("libtorch", "/torch/", "/tokenizers/", "/safetensors/", "/numba/",
              "/llvmlite/")
LAB = "/lab?lang=en&target=quantile&models=sinkhorn,softmax&width=4&steps=20"


def chart_titled(pg, needle: str) -> None:
    """Wait for a plotly chart whose title holds ``needle``."""
    wait_js(pg, """(n) => [...document.querySelectorAll('.js-plotly-plot')].some(g =>
        ((g.layout && g.layout.title && g.layout.title.text) || '').includes(n))""", needle)


def address(pg, *keys: str) -> dict[str, str]:
    """The page's address parameters, once it holds ``keys`` (the frame writes the address
    at the end of a run, after the page's elements)."""
    for key in keys:
        wait_js(pg, "(k) => new URLSearchParams(location.search).has(k)", key)
    return {k: v[-1] for k, v in parse_qs(urlsplit(pg.url).query).items()}


def job_of(engine, job_id: str) -> dict:
    """A job's status from the engine itself (``GET /v1/jobs/{id}``)."""
    with urllib.request.urlopen(f"{engine.process.url}/v1/jobs/{job_id}", timeout=30) as r:
        return json.loads(r.read())


def upload(pg, where: str, name: str, raw: bytes) -> None:
    pg.locator(f'{where} [data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": name, "mimeType": "text/tab-separated-values", "buffer": raw}])


def number(pg, key: str, value: int) -> None:
    box = pg.locator(f".st-key-{key} input")
    box.fill(str(value))
    box.press("Enter")
    wait_js(pg, "([k, v]) => document.querySelector(`.st-key-${k} input`).value === v",
            [key, str(value)])


@pytest.mark.timeout(900)
def test_a_tour_of_every_page_and_job_leaves_the_front_end_without_torch(served_app, engine,
                                                                       browser):
    """Every page and every job kind from the pages on a served engine: the main page's
    cloud (a projection), Learn's clouds, Align's live sliders, a corpus (align_corpus)
    and an aligner trained on it (train_aligner), downloaded and used in the Pair view,
    the Lab's sweep (lab_sweep), training (lab_train: its worker killed, the page says so
    within 5 s, Restart, Stop, a reload that finds it by its id) and text comparison
    (compare_text). The Streamlit process never maps libtorch (nor tokenizers, numba),
    and its peak RSS stays within 400 MB."""
    url, proc = served_app
    engine.up()
    ctx = browser.new_context(viewport={"width": 1400, "height": 2200}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT)
    try:
        pg.goto(f"{url}/?view=cloud")  # the projection runs on the engine
        chart_titled(pg, "Joint ")
        pg.goto(f"{url}/learn?step=4")  # the clouds' plans too
        chart_titled(pg, "Sinkhorn coupling at ε")
        pg.goto(f"{url}/align")  # the live θ/τ sliders' payload, built by the engine
        wait_js(pg, """() => window.__sinkscope && window.__sinkscope.align &&
            [...window.__sinkscope.align.payloads.values()].some(e => e.value)""")
        assert "Live sliders are off" not in pg.inner_text("body")
        no_errors(pg)

        pg.goto(f"{url}/align?view=corpus")  # a corpus, then an aligner trained on it
        upload(pg, "", "pairs.tsv", DATA.read_bytes())
        pg.wait_for_selector("text=20 pairs, 20 with gold", timeout=TIMEOUT)
        assert address(pg, "corpus_job")
        pg.locator(".st-key-align_train button").click()
        pg.wait_for_selector("text=Trained: total F1", timeout=TIMEOUT)
        with pg.expect_download() as got:
            pg.locator(".st-key-align_train_download button").click()
        with zipfile.ZipFile(io.BytesIO(Path(got.value.path()).read_bytes())) as z:
            assert sorted(Path(n).name for n in z.namelist()) == ["config.json",
                                                                  "model.safetensors"]
        pg.locator(".st-key-align_train_use button").click()  # for this session's Align
        chart_titled(pg, "Links of trained")
        assert address(pg, "aligner")["method"] == "trained" and "@" in address(pg)["aligner"]
        no_errors(pg)

        pg.goto(f"{url}{LAB}")  # the sweep, then a training whose worker dies
        pg.locator(".st-key-lab_sweep button").first.click()
        chart_titled(pg, "Held-out error against width")
        number(pg, "lab_steps", 4000)
        pg.locator(".st-key-lab_train button").click()
        pg.wait_for_selector("text=Training Sinkhorn Transformer: step", timeout=TIMEOUT)
        job = address(pg, "train_job")["train_job"]
        worker = job_of(engine, job)["worker"]["pid"]
        os.kill(worker, signal.SIGKILL)
        t0 = time.monotonic()
        pg.wait_for_selector("text=The engine lost this job", timeout=TIMEOUT)
        assert time.monotonic() - t0 < 5.0
        assert job_of(engine, job)["state"] == "lost"
        pg.locator(".st-key-lab_restart button").click()
        pg.wait_for_selector("text=Training Sinkhorn Transformer: step", timeout=TIMEOUT)
        wait_js(pg, "(j) => new URLSearchParams(location.search).get('train_job') !== j", job)
        again = address(pg)["train_job"]
        assert again != job and job_of(engine, again)["state"] == "running"
        pg.locator(".st-key-lab_stop button").click()
        chart_titled(pg, "Couplings of held-out pair 0")
        pg.wait_for_selector("text=Stopped: the curves and couplings", timeout=TIMEOUT)
        pg.reload()  # a new session: the job is found by the id in the address
        chart_titled(pg, "Couplings of held-out pair 0")
        assert address(pg)["train_job"] == again

        upload(pg, ".st-key-lab_text_upload", "pairs.tsv", DATA.read_bytes())  # compare_text
        number(pg, "lab_text_epochs", 1)
        pg.locator(".st-key-lab_text_train button").click()
        pg.wait_for_selector("text=On 5 held-out pairs", timeout=TIMEOUT)
        assert address(pg, "compare_job")
        no_errors(pg)
    finally:
        ctx.close()
    maps = Path(f"/proc/{proc.pid}/maps").read_text()
    assert [lib for lib in HEAVY_LIBS if lib in maps] == []
    peak = int(next(line.split()[1] for line in
                    Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                    if line.startswith("VmHWM:"))) * 1024
    print(f"front end on a served engine, peak RSS after the tour: {peak / MB:.0f} MB")
    assert peak <= PEAK_MB * MB


def test_the_engine_listens_on_loopback_only(engine):
    """``python -m engine serve`` with its defaults: every socket its process group
    listens on (Ray's GCS, raylet, workers, agents, Serve's proxy and replicas) is on
    127.0.0.1, and its HTTP port is the one given."""
    from tests.support.engine_server import listeners, loopback
    from tests.support.server import descendants

    engine.process.wait_ready()
    leader = engine.process.proc.pid
    found = listeners(descendants(leader) | {leader} | group(leader))
    assert len(found) >= 10, found  # Ray's whole set, not an empty match
    assert [a for a, _ in found if not loopback(a)] == [], found
    assert f"127.0.0.1:{engine.process.port}" in {a for a, _ in found}


def group(pgid: int) -> set[int]:
    """The processes of the process group ``pgid``."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                found.add(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found
