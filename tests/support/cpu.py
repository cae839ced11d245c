"""Where the suite's CPU goes: a pytest plugin, off unless asked for.

    SINKSCOPE_CPU_REPORT=cpu.json make test PYTEST_ADDOPTS="-p tests.support.cpu"

Each test's CPU seconds are those its worker's whole process tree used from the test's
start to its end (setup, call and teardown): the worker, the session's Streamlit server and
Chromium, and anything the test starts, with the children already reaped. Processes that
leave the tree (Ray's daemons) are not counted. Each worker writes ``<report>.<worker>.json``
(rows of node id, CPU s, wall s); ``python -m tests.support.cpu <report>`` sums them by file.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

from tests.support.server import tree_cpu

_rows: list[tuple[str, float, float]] = []
_start: dict[str, tuple[float, float]] = {}


def pytest_configure(config) -> None:
    # pytest-xdist's controller sees each test start and end too, but its tree holds both
    # workers: it records nothing.
    global _controller
    _controller = bool(getattr(config.option, "numprocesses", None)) and not os.environ.get(
        "PYTEST_XDIST_WORKER")


_controller = False


def pytest_runtest_logstart(nodeid: str, location) -> None:
    if not _controller:
        _start[nodeid] = (tree_cpu(os.getpid()), time.perf_counter())


def pytest_runtest_logfinish(nodeid: str, location) -> None:
    if nodeid in _start:  # the session's teardown (in the last test) can read below 0
        cpu, wall = _start.pop(nodeid)
        _rows.append((nodeid, max(0.0, tree_cpu(os.getpid()) - cpu),
                      time.perf_counter() - wall))


def pytest_sessionfinish(session) -> None:
    out = os.environ.get("SINKSCOPE_CPU_REPORT")
    if out and _rows:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(f"{out}.{worker}.json").write_text(json.dumps(_rows))


def by_file(rows: list[tuple[str, float, float]]) -> list[tuple[str, float, float, int]]:
    """(file, CPU s, wall s, tests), most CPU first."""
    total: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for nodeid, cpu, wall in rows:
        t = total[nodeid.split("::")[0]]
        t[0] += cpu
        t[1] += wall
        t[2] += 1
    return sorted(((f, c, w, int(n)) for f, (c, w, n) in total.items()), key=lambda r: -r[1])


def main(argv: list[str]) -> None:
    """Print the CPU by file of the report ``argv[0]`` (every worker's part)."""
    report = Path(argv[0])
    rows = [r for p in sorted(report.parent.glob(report.name + ".*.json"))
            for r in json.loads(p.read_text())]
    print(f"{len(rows)} tests: {sum(r[1] for r in rows):.0f} s of CPU, "
          f"{sum(r[2] for r in rows):.0f} s of wall time summed over workers")
    for name, cpu, wall, n in by_file(rows):
        print(f"{cpu:8.1f} {wall:8.1f} {n:5d}  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
