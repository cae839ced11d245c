"""sinkscope's Streamlit app, as the package holds it: the router.

One frame (``sinkscope_app.frame``: libraries quieted, the language, the page's title, its
address read, the sidebar's head) around the page the address names: ``/``
(``sinkscope_app/pages/main.py``), ``/learn``, ``/align`` and ``/lab``, each a folder of
``sinkscope_app``. ``sinkscope app`` (``sinkscope_app.launch``) runs this file; the
repository's ``app.py`` (``make run``, ``streamlit run app.py``) calls :func:`main`.
"""

from __future__ import annotations


def main() -> None:
    """One run of the app: libraries quieted first, then the page the address names."""
    from engine import settings

    settings.quiet_libraries()  # first: offline, no telemetry, before a library reads its environment
    from sinkscope_app import frame

    frame.route()


if __name__ == "__main__":  # Streamlit runs its script as __main__ on every rerun
    main()
