"""``import sinkscope`` and the ``sinkscope`` command: the façade's names, ``--version``,
``app`` dispatch, ``align`` as the command's JSON document, and what ``sinkscope.show``
sends to the browser (the app's payloads and JavaScript, read back in Python)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAIRS = ROOT / "tests" / "data" / "align" / "pairs.tsv"


def test_importing_sinkscope_loads_neither_torch_nor_streamlit_and_every_name_resolves():
    code = ("import sys, sinkscope; print(sorted(m for m in ('torch', 'streamlit', 'engine', "
            "'viz') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.strip() == "[]"
    import sinkscope
    import viz
    from engine.relation.relate import relate

    assert sinkscope.relate is relate and sinkscope.figures is viz
    assert sinkscope.compare is viz.heatmaps.compare and sinkscope.path_figure is viz.eps_path
    for name in sinkscope.__all__:  # every advertised name is there
        assert getattr(sinkscope, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sinkscope.nope  # noqa: B018


def test_version_is_the_package_s_and_the_command_prints_it():
    import sinkscope

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"]["attr"] == "sinkscope.__version__"
    assert pyproject["project"]["scripts"]["sinkscope"] == "sinkscope.cli:main"
    out = subprocess.run([sys.executable, "-m", "sinkscope", "--version"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out == f"sinkscope {sinkscope.__version__}\n"


def test_help_names_the_app_and_every_engine_command(capsys):
    from sinkscope.cli import main

    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "sinkscope app" in out and "--version" in out
    for command in ("relate", "align", "lab", "train-aligner", "serve", "warmup"):
        assert command in out
    assert main(["relate", "x", "--eps", "-1"]) == 2  # the engine's own errors and status
    assert "error:" in capsys.readouterr().err


def test_app_runs_the_packaged_script_with_the_settings_beside_it(monkeypatch):
    """``sinkscope app …`` hands its arguments to the launcher, which runs the package's
    app (found from the package, not the working directory) with its Streamlit settings
    beside it: loopback, the upload limit, headless."""
    from sinkscope import cli
    from sinkscope_app import launch, where

    seen = []
    monkeypatch.setattr(launch, "main", lambda argv: seen.append(argv) or sys.exit(3))
    assert cli.main(["app", "--server.port", "9"]) == 3 and seen == [["--server.port", "9"]]
    assert launch.plan([], "embedded")[1][:2] == ["run", str(where.APP)]
    assert where.APP.is_file() and (ROOT / "app.py").read_text().count("main()") == 1
    config = tomllib.loads(where.CONFIG.read_text())
    assert config["server"]["address"] == "127.0.0.1" and config["server"]["headless"]
    assert (ROOT / ".streamlit" / "config.toml").resolve() == where.CONFIG  # one file
    for name in ("main", "learn", "align", "lab"):
        assert Path(where.page(name)).is_file()


@pytest.mark.model
def test_align_returns_the_command_s_json_document(tmp_path, capsys):
    from engine.io.cli import main
    import sinkscope

    few = tmp_path / "few.tsv"
    few.write_text("\n".join(PAIRS.read_text().splitlines()[:4]) + "\n")
    assert main(["align", "--pairs", str(few), "--method", "unbalanced", "--json",
                 "--bootstrap", "0", "--quiet"]) == 0
    want = json.loads(capsys.readouterr().out)
    got = sinkscope.align(few, method="unbalanced", bootstrap=0)
    assert json.loads(json.dumps(got)) == want
    rows = [line.split("\t") for line in few.read_text().splitlines()[1:]]
    listed = sinkscope.align([tuple(r[:3]) for r in rows], method="unbalanced", bootstrap=0)
    assert listed["command"] is None and listed["alignments"] == want["alignments"]
    assert listed["methods"] == want["methods"] and listed["best"] == want["best"]


@pytest.mark.model
def test_show_sends_the_app_s_lattice_sliders_and_code():
    """The relation widget: its payload is the app's lattice of this relation (frame
    (ε, t) is the relation's plans to the quantisation step), the chart is bound to it, the
    sliders are the app's (no address to keep), the module is the app's files bundled,
    and outside a widget front end the output is the static figure under a note."""
    import sinkscope
    from engine.relation import frames
    from sinkscope.notebook import STATIC_NOTE
    from sinkscope_app.browser import WIDGET_FILES, bundle

    r = sinkscope.relate("The bank of the river.", "She sat on the river bank.", layer=5,
                         head=3, eps=0.5, half_steps=50)
    w = sinkscope.show(r)
    lat = frames.decode(w.payload)
    i, k = list(lat["eps"]).index(0.5), list(lat["steps"]).index(50)
    step = np.max(r.coupling.plan) / 2 ** (lat["bits"] - 1)
    assert np.max(np.abs(lat["plans"][i, k] - r.coupling.plan)) <= step
    assert np.max(np.abs(lat["plans"][i, 0] - r.softmax_plan)) <= step  # t = 1: softmax
    view = w.view
    assert view["charts"][0]["bind"] == {"lattice": lat["id"], "eps": 0.5, "steps": 50}
    assert view["controls"]["lattice"] == lat["id"] and view["controls"]["url"] is None
    assert json.loads(view["charts"][0]["spec"])["layout"]["meta"]["kind"] == "compare"
    assert w._esm == bundle(WIDGET_FILES)
    data, _ = w._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"] == STATIC_NOTE and STATIC_NOTE in data["text/html"]
    assert "cdn" not in data["text/html"].lower()
    assert sinkscope.show("The bank of the river.", "Money in the bank.", layer=5,
                          head="mean").view["kind"] == "relation"

    al = sinkscope.align_pair("the cat sat down", "le chat s'est assis")
    a = sinkscope.show(al, gold="0-0 1-1 2-2 2-3 3-3")
    assert a.view["kind"] == "alignment" and a.view["controls"]["url"] is None
    assert a.view["controls"]["lines"]["links"].startswith(f"{len(al.links)} links")
    assert {c["bind"]["chart"] for c in a.view["charts"]} == {"matrix", "graph"}
