"""sinkscope — see how a transformer relates two texts: softmax attention beside Sinkhorn
couplings. Run with ``make run`` (or ``streamlit run app.py``).

This file is the router: one frame (``sinkscope_app.frame``: libraries quieted, the
language, the page's title, its address read, the sidebar's head) around the page the
address names: ``/`` (``sinkscope_app/pages/main.py``), ``/learn``, ``/align`` and
``/lab``, each a folder of ``sinkscope_app``.
"""

from __future__ import annotations

from engine import settings

settings.quiet_libraries()  # first: offline, no telemetry, before a library reads its environment

from sinkscope_app import frame  # noqa: E402

frame.route()
