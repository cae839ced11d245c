"""The launcher's preload (sinkscope_app.launch): loads once, in the background; a failure
is logged and raises nothing; the page's loader takes the preloaded model."""

from __future__ import annotations

import logging
import threading

import pytest

from sinkscope_app import launch
from sinkscope_app.launch import Preload, config_shape, plan


def test_preload_loads_once_in_a_background_thread_and_hands_the_model_over():
    calls, gate = [], threading.Event()

    def load(model):
        calls.append((model, threading.current_thread().name))
        gate.wait(5)
        return {"model": model}

    p = Preload(load)
    t = p.start("m")
    assert p.start("m") is t and p.start("other") is t  # a second start loads nothing
    assert p.loading and not p.ready("m")
    gate.set()
    got = p.get("m", timeout=5)
    assert got == {"model": "m"} and p.get("m") is got  # the same object every time
    assert calls == [("m", "sinkscope-preload")]
    assert p.ready("m") and not p.loading and not p.ready("other")
    assert p.get("other") is None  # another model: the caller loads it itself
    assert p.seconds is not None and p.seconds >= 0


def test_a_failed_preload_is_logged_and_raises_nothing(caplog):
    def load(model):
        raise OSError("weights missing")

    p = Preload(load)
    with caplog.at_level(logging.WARNING, logger="sinkscope.launch"):
        p.start("m").join(5)
        assert p.get("m", timeout=5) is None  # the page then loads it (and reports)
    assert isinstance(p.error, OSError) and not p.ready("m")
    assert any("preloading m failed" in r.getMessage() and "weights missing" in r.getMessage()
               for r in caplog.records)


def test_nothing_started_means_nothing_to_wait_for():
    p = Preload(lambda m: pytest.fail("must not load"))
    assert p.get("m", timeout=0.01) is None and not p.loading and not p.ready("m")


def test_a_preload_still_running_past_the_timeout_gives_none():
    gate = threading.Event()
    p = Preload(lambda m: gate.wait(5))
    p.start("m")
    try:
        assert p.get("m", timeout=0.05) is None
    finally:
        gate.set()
        p.thread.join(5)


def test_the_page_loader_takes_the_preloaded_model(monkeypatch):
    from sinkscope_app import compute, engines

    sentinel = type("Enc", (), {"n_layers": 2, "n_heads": 3})()
    p = Preload(lambda m: sentinel)
    p.start("all-MiniLM-L6-v2").join(5)
    monkeypatch.setattr(launch, "PRELOAD", p)
    before = engines.current()
    engines.use(engines.Embedded())  # an engine that has loaded nothing yet
    try:
        assert compute.model_shape("all-MiniLM-L6-v2") is sentinel  # ready: no waiting
        assert compute.encoder("all-MiniLM-L6-v2") is sentinel
    finally:
        engines.use(before)


def test_the_controls_shape_comes_from_the_configuration_file():
    shape = config_shape("all-MiniLM-L6-v2")
    assert (shape.n_layers, shape.n_heads) == (6, 12)  # MiniLM-L6: 6 layers, 12 heads
    from engine.errors import ModelError

    with pytest.raises(ModelError, match="allow-list"):
        config_shape("no-such-model")


def test_switches_and_command_line():
    on, args = plan(["--server.port", "9"], "embedded")
    assert on and args[0] == "run" and args[1].endswith("app.py")
    assert args[2:] == ["--server.port", "9"]
    assert plan(["other.py", "--no-preload", "--x"], "embedded") == (
        False, ["run", "other.py", "--x"])
    assert plan([], "http://127.0.0.1:8000")[0] is False  # served: the model lives there


def test_the_loader_turns_the_garbage_collector_back_on_even_when_it_fails(monkeypatch):
    import gc

    seen = []

    def broken(model):
        seen.append(gc.isenabled())
        raise OSError("no weights")

    monkeypatch.setattr(launch, "_load", broken)
    assert gc.isenabled()
    with pytest.raises(OSError):
        launch.load_and_warm("m")
    assert seen == [False] and gc.isenabled()  # off while loading, on again after


def test_the_page_draws_its_controls_before_the_model_and_says_when_it_fails(monkeypatch):
    """The sidebar comes from the model's shape; a model that then fails to load leaves
    the controls in place and says why where the charts go (no traceback)."""
    from engine.errors import ModelError
    from sinkscope_app import compute
    from tests.support.apptest import run

    def broken(model):
        raise ModelError(f"Could not load model {model!r}: its weights are damaged.")

    monkeypatch.setattr(compute, "model_shape", lambda model: launch.Shape(6, 12))
    monkeypatch.setattr(compute, "encoder", broken)
    at = run(timeout=60)
    assert not at.exception
    assert len(at.sidebar.text_area) == 2  # Text A and Text B, drawn before the load
    assert [s.label for s in at.sidebar.selectbox][-2:] == ["Layer", "Head"]
    assert [e.value for e in at.error] == [
        "The model could not be loaded. Could not load model 'all-MiniLM-L6-v2': its "
        "weights are damaged."]
    assert not at.get("plotly_chart") and not at.info  # no chart, no loading note left


def test_pot_imports_without_its_optional_sklearn_and_networkx_and_solves_the_same():
    """In a fresh interpreter: the launcher's POT has no scikit-learn or networkx behind it,
    gives the same exact, entropic and unbalanced plans as POT imported as usual, and
    leaves scikit-learn importable for everyone else (UMAP)."""
    import json
    import subprocess
    import sys

    from tests.support.server import ROOT

    code = """
import json, sys
import numpy as np
from sinkscope_app.launch import import_pot
ot = import_pot()
out = {"sklearn": "sklearn" in sys.modules, "networkx": "networkx" in sys.modules,
       "again": import_pot() is ot}
rng = np.random.default_rng(0)
a, b = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(7))
M = rng.random((5, 7))
plans = [ot.emd(a, b, M), ot.sinkhorn(a, b, M, 0.1, method="sinkhorn_log"),
         ot.unbalanced.sinkhorn_unbalanced(a, b, M, 0.1, 1.0)]
import sklearn.cluster  # a user of its own, after POT
out["sklearn_after"] = hasattr(sklearn.cluster, "KMeans")
out["plans"] = [p.tolist() for p in plans]
print(json.dumps(out))
"""
    lean, full = (json.loads(subprocess.run(
        [sys.executable, "-c", c], cwd=ROOT, capture_output=True, text=True, timeout=120,
        check=True).stdout) for c in (code, code.replace(
            "ot = import_pot()", "import ot").replace("import_pot() is ot", "True")))
    assert not lean["sklearn"] and not lean["networkx"] and lean["again"]
    assert full["sklearn"]  # what the launcher leaves out, POT imports otherwise
    assert lean["sklearn_after"]
    assert lean["plans"] == full["plans"]


def test_only_pots_own_imports_of_its_optional_packages_are_refused():
    finder = launch._LeaveOutOfPOT()

    def ask(importer: str, name: str):
        return eval("finder.find_spec(name)", {"__name__": importer, "finder": finder,
                                               "name": name})

    for importer in ("ot", "ot.lowrank", "ot.gromov._utils"):
        for name in ("sklearn", "sklearn.cluster", "networkx"):
            with pytest.raises(ModuleNotFoundError, match="left out of POT"):
                ask(importer, name)
    assert ask("ot.lowrank", "scipy.stats") is None  # not one of POT's optional ones
    assert ask("umap.umap_", "sklearn") is None  # anyone else finds it as usual
    assert ask("otherpackage", "sklearn.cluster") is None


def test_the_direct_run_check_the_launcher_skips_is_the_one_streamlit_makes():
    """The flag the launcher sets is the one Streamlit's first element reads (an upgrade
    that renamed it would make the launcher pay the REPL check again)."""
    import inspect

    import streamlit.delta_generator as dg

    source = inspect.getsource(dg._maybe_print_use_warning)
    assert "_use_warning_has_been_displayed" in source and "is_repl" in source
    import subprocess
    import sys

    from tests.support.server import ROOT

    subprocess.run([sys.executable, "-c", "from sinkscope_app.launch import "
                    "skip_direct_run_check as s; s()"], cwd=ROOT, check=True, timeout=60)
    was = dg._use_warning_has_been_displayed
    try:
        launch.skip_direct_run_check()
        assert dg._use_warning_has_been_displayed is True
    finally:
        dg._use_warning_has_been_displayed = was


@pytest.mark.slow
def test_stopping_the_app_stops_the_preload_quietly(tmp_path):
    """``sinkscope app`` started outside the checkout (the settings come from the package:
    loopback) and stopped by SIGTERM while its preload loads the model: it exits with
    status 0, its preload thread ends before the interpreter does, and nothing is printed
    after Streamlit's "Stopping..." (no "cannot schedule new futures after interpreter
    shutdown", no traceback, no log line). Streamlit stops on SIGINT (Ctrl-C) through the
    same handler; the installed app is stopped that way in tests/test_wheel.py."""
    import os
    import select
    import signal
    import subprocess
    import sys
    import time

    from tests.support.server import ROOT, die_with_parent, free_port, stop

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "sinkscope", "app", "--server.port",
                             str(port)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, preexec_fn=die_with_parent())
    out = []
    try:
        end = time.monotonic() + 60
        # the load began, and the server is up (its signal handlers set: a SIGTERM before
        # them is Python's default death, -15, not a stop)
        while not (any("sinkscope: loading" in line for line in out)
                   and any("URL: http" in line for line in out)):
            assert time.monotonic() < end and proc.poll() is None, "".join(out)
            if select.select([proc.stdout], [], [], 1)[0]:
                out.append(proc.stdout.readline())
        time.sleep(0.5)  # (Streamlit sets its handlers just after printing the URL)
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=120)
    finally:
        stop(proc)
    text = "".join(out) + rest
    assert proc.returncode == 0, text
    assert f"URL: http://127.0.0.1:{port}" in text  # loopback: the package's settings
    after = text.split("Stopping...", 1)[1]
    assert after.strip() == "", text
