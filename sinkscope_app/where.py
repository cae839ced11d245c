"""Where the packaged app's files are, found from the package (not the working directory),
so that an installed wheel and a checkout serve the same app.

``APP`` is the script Streamlit runs (``sinkscope_app/app.py``); Streamlit reads the
settings beside it (``.streamlit/config.toml``: upload limit, theme, headless, loopback).
Pages are addressed by absolute paths (:func:`page`), which mean the same file whichever
script (the repository's ``app.py`` or the packaged one) Streamlit was started with.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
APP = HERE / "app.py"
CONFIG = HERE / ".streamlit" / "config.toml"


def page(name: str) -> str:
    """The file of page ``name`` ("main", "learn", "align", "lab") for ``st.Page`` and
    ``st.page_link``."""
    return str(HERE / "pages" / f"{name}.py")
