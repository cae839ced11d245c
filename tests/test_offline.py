"""No network at run time: sockets to anything but loopback are refused by an audit hook
through model load, encoding, relating, projecting and a full app run."""

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(r"""
    import os, sys, socket
    attempts = []
    LOCAL = ("127.", "::1", "localhost", "0.0.0.0")

    def hook(event, args):
        if event in ("socket.connect", "socket.sendto") and len(args) > 1:
            addr = args[1]
            host = str(addr[0]) if isinstance(addr, tuple) else str(addr)
            if not (host.startswith(LOCAL) or host.startswith("/")):
                attempts.append((event, host))
                raise ConnectionRefusedError(f"network blocked in test: {host}")
        if event == "socket.getaddrinfo":
            host = str(args[0])
            if host and not host.startswith(LOCAL):
                attempts.append((event, host))
                raise socket.gaierror(f"network blocked in test: {host}")

    sys.addaudithook(hook)
    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.pop(k, None)  # the engine must set these itself
    from engine import relate, project
    r = relate("The bank of the river.", "She sat on the river bank.")
    project(r, method="umap")
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file("app.py", default_timeout=180)
    at.run()
    assert not at.exception, at.exception
    drawn = [el for el in at.get("bidi_component") if '"spec": ""' not in el.proto.json]
    assert drawn or at.get("plotly_chart"), "the app drew no chart"
    print("ATTEMPTS", attempts)
    assert not attempts, attempts
    print("OFFLINE-OK")
""")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_no_network_through_model_load_encoding_and_app():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=540)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "OFFLINE-OK" in out.stdout
