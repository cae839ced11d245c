"""The ``sinkscope`` command: ``sinkscope app [streamlit options]`` serves the app,
``sinkscope --version`` prints the version, and every other command is the engine's
(``relate``, ``align``, ``lab``, ``train-aligner``, ``serve``, ``warmup``:
``python -m engine``), with the same flags and output.
"""

from __future__ import annotations

import sys

USAGE = """\
sinkscope app [--no-preload] [streamlit options]
    serve the app on http://127.0.0.1:8501 (e.g. --server.port 8502)
sinkscope --version
    print the version
sinkscope relate | align | lab | train-aligner | serve | warmup …
    the engine's commands (below)
"""


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit status (``app`` returns when the server stops)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["--version"], ["-V"]):
        from sinkscope import __version__

        print(f"sinkscope {__version__}")
        return 0
    if argv[:1] == ["app"]:
        from sinkscope_app.launch import main as serve

        try:
            serve(argv[1:])
        except SystemExit as e:  # Streamlit's way of returning
            return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        return 0
    from engine.io.cli import main as engine_main, parser

    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        parser().print_help()
        return 0 if argv else 2
    return engine_main(argv)
