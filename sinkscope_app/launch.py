"""Start the app with the model already loading: ``sinkscope app`` (``python -m
sinkscope_app.launch``).

``make run`` uses it. It starts one background thread that imports the engine, loads the
default model and relates two tiny texts (so torch's first-call costs are paid too), then
runs Streamlit in the same process: ``sinkscope app --server.port 8501`` takes every option
of ``streamlit run`` and runs the packaged app (``sinkscope_app/app.py``, found from the
package, with its ``.streamlit/config.toml`` beside it), or the script given first. When
the server stops (Ctrl-C, SIGTERM) the preload stops too: a thread that has not begun
loading never begins, one inside the load is waited for, and neither says anything.
The page's cached loader (:func:`sinkscope_app.compute.encoder`) takes the model from
:data:`PRELOAD` (waiting for it while it loads) instead of loading it a second time. A
failure here is logged and changes nothing else: the page then loads the model itself
and, if that fails too, says why. ``streamlit run app.py`` still works, without preload.

Off with ``--no-preload``; nothing is loaded here when ``SINKSCOPE_ENGINE`` names a served
engine (the model lives there).
"""

from __future__ import annotations

import atexit
import gc
import importlib.abc
import json
import logging
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

log = logging.getLogger("sinkscope.launch")

# The warm-up relation's texts: the first forward pass and the solver's first call.
WARM_A = "The bank of the river."
WARM_B = "Money in the bank."


def load_and_warm(model: str) -> Any:
    """The engine's :class:`~engine.models.encoder.Encoder` for ``model``, after one tiny
    relation (one head, 2 half-steps) so the first visitor pays no first-call costs.

    Uses the app's settings (``SINKSCOPE_TORCH_THREADS``) exactly as the page would. The
    garbage collector is off meanwhile (as it was again at the end, whatever happens):
    importing torch, transformers and POT (and, for some models, sentence-transformers)
    creates hundreds of thousands of objects that all live as long as the process, and
    collecting while they piled up cost ~1 s of the ~4.5 s of CPU the load took here. What they leave is then frozen out of later collections, as
    :func:`sinkscope_app.compute.freeze_heap` does for the page.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        enc = _load(model)
    finally:
        gc.freeze()
        if was_on:
            gc.enable()
    if PRELOAD.stopping.is_set():  # the server stopped meanwhile: no warm-up, no message
        return enc
    t = time.perf_counter()
    try:
        from engine import encode_texts, relate_encodings

        e = encode_texts(enc, WARM_A, WARM_B, "separate")
        relate_encodings(e, layer=enc.n_layers - 1, head="mean", eps=1.0, half_steps=2)
    except Exception as err:  # the model loaded: keep it, the page relates by itself
        log.warning("sinkscope: the warm-up relation failed (%s: %s)",
                    type(err).__name__, err)
    log.info("sinkscope: first relation in %.2f s", time.perf_counter() - t)
    return enc


@dataclass(frozen=True)
class Shape:
    """What the page's controls need of a model that is still loading.

    Attributes:
        n_layers, n_heads: L and H.
    """

    n_layers: int
    n_heads: int


def config_shape(model: str) -> Shape:
    """L and H of an allow-listed model from its ``config.json`` (a file read: no
    transformers, no weights), or from the engine's configuration reader when the file
    names them otherwise.

    Raises:
        ModelError: the name is not allow-listed, or its folder is not a model.
    """
    from engine.models.registry import check_folder, describe, resolve

    name, folder = resolve(model)
    check_folder(name, folder)
    try:
        modules = json.loads((folder / "modules.json").read_text())
        sub = next((folder / m.get("path", "") for m in modules
                    if str(m.get("type", "")).endswith("Transformer")), folder)
        cfg = json.loads((sub / "config.json").read_text())
        return Shape(int(cfg["num_hidden_layers"]), int(cfg["num_attention_heads"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        info = describe(model)
        return Shape(info.n_layers, info.n_heads)


# What POT imports for solvers the app never calls: scikit-learn (k-means initialisations
# of its low-rank and quantized Gromov solvers) and networkx (Louvain partitions). POT
# treats each as optional (it catches the ImportError), and together they were ~0.6 s of
# the ~0.8 s that `import ot` took before the first coupling.
POT_OPTIONAL = ("sklearn", "networkx")


class _LeaveOutOfPOT(importlib.abc.MetaPathFinder):
    """Refuses :data:`POT_OPTIONAL` to imports made by POT's own modules (``ot``,
    ``ot.*``); any other importer, in any thread, finds them as usual."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] not in POT_OPTIONAL:
            return None
        f = sys._getframe(1)
        while f is not None and f.f_globals.get("__name__", "").startswith(
                ("importlib", "_frozen_importlib")):
            f = f.f_back
        importer = f.f_globals.get("__name__", "") if f is not None else ""
        if importer == "ot" or importer.startswith("ot."):
            raise ModuleNotFoundError(f"{name} is left out of POT in the app", name=name)
        return None


def import_pot() -> Any:
    """POT (``ot``), imported as it imports without its optional scikit-learn and networkx
    (:data:`POT_OPTIONAL`), unless it was imported already. Every solver the app uses
    (``emd``, the Sinkhorn and unbalanced solvers) is the same either way; only the app's
    process is affected, and scikit-learn itself (for UMAP) still imports normally."""
    if "ot" in sys.modules:
        return sys.modules["ot"]
    finder = _LeaveOutOfPOT()
    sys.meta_path.insert(0, finder)
    try:
        import ot
    finally:
        sys.meta_path.remove(finder)
    return ot


def _load(model: str) -> Any:
    from engine import settings

    settings.quiet_libraries()
    import_pot()  # before the model: the warm-up relation's exact plan needs it
    from engine import Encoder

    if settings.CONFIG.torch_threads > 0:
        import torch

        torch.set_num_threads(settings.CONFIG.torch_threads)
    return Encoder(model)


class Preload:
    """One model loaded in a background thread, handed to whoever asks for it.

    Args:
        load: ``load(model) -> object``; :func:`load_and_warm` by default (tests pass a
            stand-in). It runs at most once per :meth:`start`.
    """

    def __init__(self, load: Callable[[str], Any] = load_and_warm) -> None:
        self._load = load
        self._guard = threading.Lock()
        self._done = threading.Event()
        self.model: str | None = None
        self.value: Any = None
        self.error: BaseException | None = None
        self.started_at: float | None = None  # time.time() of start(), for the log
        self.seconds: float | None = None
        self.thread: threading.Thread | None = None
        self._handed = False
        self.stopping = threading.Event()  # set by stop(): the server is going away

    def start(self, model: str, *, after: Callable[[], object] | None = None
              ) -> threading.Thread:
        """Load ``model`` in a daemon thread (joined for up to a minute at exit: a thread
        still inside torch at interpreter teardown aborts the process), after ``after()``
        returns when given. A second call returns the first call's thread and loads
        nothing."""
        with self._guard:
            if self.thread is not None:
                return self.thread
            self.model, self.started_at = model, time.time()
            self.thread = threading.Thread(target=self._run, args=(after,),
                                           name="sinkscope-preload", daemon=True)
            atexit.register(self.thread.join, 60)
            log.info("sinkscope: preloading %s in the background (server start)", model)
            self.thread.start()
            return self.thread

    def _run(self, after: Callable[[], object] | None = None) -> None:
        t = time.perf_counter()
        try:
            if after is not None:
                after()
                if self.stopping.is_set():
                    return
                log.info("sinkscope: loading %s (%.2f s after the start)", self.model,
                         time.perf_counter() - t)
            self.value = self._load(self.model)
        except Exception as e:  # the page loads the model itself and reports the error
            self.error = e
            if not self.stopping.is_set():
                log.warning("sinkscope: preloading %s failed (%s: %s); the page will load "
                            "it on the first visit", self.model, type(e).__name__, e)
        else:
            if not self.stopping.is_set():
                log.info("sinkscope: %s preloaded in %.2f s", self.model,
                         time.perf_counter() - t)
        finally:
            self.seconds = time.perf_counter() - t
            self._done.set()

    def stop(self, timeout: float = 120.0) -> None:
        """The server stopped: load nothing more, and wait up to ``timeout`` seconds for a
        load already under way (a thread still inside torch when the interpreter shuts
        down fails there, e.g. "cannot schedule new futures after interpreter
        shutdown"). Says nothing; a no-op when nothing was started."""
        self.stopping.set()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout)

    @property
    def loading(self) -> bool:
        """True while the thread is still loading."""
        return self.thread is not None and not self._done.is_set()

    def ready(self, model: str) -> bool:
        """True when ``model`` was preloaded and can be handed over without waiting."""
        return self._done.is_set() and self.model == model and self.error is None

    def get(self, model: str, timeout: float | None = 300.0) -> Any:
        """The preloaded object for ``model``, waiting up to ``timeout`` seconds while it
        loads; None when nothing was started, another model was preloaded, the load failed
        or it did not finish in time (the caller then loads it itself)."""
        if self.thread is None or self.model != model:
            return None
        if not self._done.wait(timeout):
            log.warning("sinkscope: %s still preloading after %s s; loading it again",
                        model, timeout)
            return None
        if self.error is not None:
            return None
        if not self._handed:
            self._handed = True
            log.info("sinkscope: the page took the preloaded %s", model)
        return self.value


PRELOAD = Preload()  # the process's one preload (empty unless the launcher started it)


def server_listening(timeout: float = 30.0, stop: threading.Event | None = None) -> None:
    """Return once this process's Streamlit server is up (or after ``timeout`` seconds, or
    once ``stop`` is set).

    The preload's imports hold the interpreter lock for long stretches (torch's libraries
    load under it): started together with Streamlit's own start, they delayed the server's
    first answer from ~1.4 s to ~5 s on two cores. Started once it listens, the page's
    controls are drawn while the model loads.
    """
    end = time.monotonic() + timeout
    while time.monotonic() < end and not (stop is not None and stop.is_set()):
        try:
            from streamlit.runtime import Runtime
            from streamlit.runtime.runtime import RuntimeState

            if Runtime.exists() and Runtime.instance().state in (
                    RuntimeState.NO_SESSIONS_CONNECTED,
                    RuntimeState.ONE_OR_MORE_SESSIONS_CONNECTED):
                return
        except Exception:  # another Streamlit: wait out the timeout instead
            pass
        time.sleep(0.02)


def plan(argv: list[str], engine: str) -> tuple[bool, list[str]]:
    """(whether to preload, ``streamlit run`` arguments) for the launcher's ``argv``.

    No preload with ``--no-preload``, nor when ``engine`` (``SINKSCOPE_ENGINE``) names a
    served engine rather than "embedded" (the model lives there). The script is the
    packaged app (:data:`sinkscope_app.where.APP`) unless ``argv`` starts with a ``.py``
    file; every other argument goes to Streamlit.
    """
    from sinkscope_app.where import APP

    from engine.settings import EMBEDDED

    preload = "--no-preload" not in argv and engine == EMBEDDED
    argv = [a for a in argv if a != "--no-preload"]
    if argv and argv[0].endswith(".py"):
        return preload, ["run", argv[0], *argv[1:]]
    return preload, ["run", str(APP), *argv]


def main(argv: list[str] | None = None) -> None:
    """Start the preload, then run Streamlit in this process; when the server stops, stop
    the preload (:meth:`Preload.stop`) before the interpreter shuts down. Ends with
    Streamlit's ``SystemExit``."""
    argv = sys.argv[1:] if argv is None else argv
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    from engine import settings

    preload, args = plan(argv, settings.CONFIG.engine)
    if preload:
        PRELOAD.start(settings.DEFAULT_MODEL,
                      after=lambda: server_listening(stop=PRELOAD.stopping))
    else:
        log.info("sinkscope: no preload (--no-preload, or a served engine)")
    skip_direct_run_check()
    from streamlit.web.cli import main as streamlit_main

    try:
        streamlit_main(args=args, prog_name="streamlit")
    finally:
        PRELOAD.stop()


def skip_direct_run_check() -> None:
    """Mark Streamlit's "run me with `streamlit run`" warning as handled.

    Before the page's first element, Streamlit checks once per process whether it runs in
    a REPL with ``inspect.stack()``, which looks up the module of every frame: with torch
    and transformers loaded that took ~0.1 s of the interpreter lock, just before the
    first coupling. This launcher *is* ``streamlit run``, so the warning never applies.
    """
    import streamlit  # noqa: F401  (first: its modules import one another)
    from streamlit import delta_generator as dg

    dg._use_warning_has_been_displayed = True


if __name__ == "__main__":
    # Run the module under its own name, so the page's `sinkscope_app.launch` is this
    # one (with its PRELOAD), not a second copy imported beside `__main__`.
    from sinkscope_app.launch import main as _main

    _main()
