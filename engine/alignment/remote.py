"""``python -m engine align --engine URL``: a corpus aligned by a served engine, in chunks.

The pairs go to ``POST /v1/align`` in chunks of :data:`CHUNK` pairs, :data:`IN_FLIGHT` at a
time, so the service's replicas (on one machine or a Ray cluster) share the work; each
method's links come back in input order and are scored here, as the embedded run scores
them. A chunk holds a whole number of the embedded run's forward passes (32 texts: 16
pairs), so each text is encoded exactly as the embedded run encodes it and the links are
the same. A chunk that fails is sent again (:data:`RETRIES` times, besides the client's
own retries) and then stops the run with an error naming its pairs: no chunk is dropped.

Settings that need the whole corpus in one place (``--dev`` tuning, ``--center``) or that
the API does not take (``--direction``) are refused before any work. ``--aligner NAME``
names one of the engine's trained aligners (``GET /v1/aligners``): the engine aligns with
it (method ``trained``), as it does with the other methods.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from typing import Callable, Sequence

from ..errors import SettingsError
from .extract import Method

CHUNK = 64  # pairs per request: four forward passes of 32 texts, as embedded
IN_FLIGHT = 4  # requests in flight at once (Serve spreads them over the replicas)
RETRIES = 3  # more tries per chunk after the client's own retries are spent


def check(args) -> None:
    """Refuse, before any work, the options a served run cannot honour."""
    for flag, given in (("--dev", args.dev), ("--center", args.center),
                        ("--direction", args.direction)):
        if given:
            raise SettingsError(f"{flag} is not available with --engine ({flag} needs the "
                                "whole corpus in one process, or is not part of the HTTP "
                                "API); run without --engine, or without " + flag + ".")


class Corpus:
    """The pairs of a served run: :meth:`links` aligns them with one method.

    Args:
        url: the served engine. pairs: the corpus (``Pair`` s, read and transformed here).
        source: what relates the words. model: a served model's name (None: the default).
        progress: called with (texts done, total) as chunks come back.
    """

    def __init__(self, url: str, pairs: Sequence, source, *, model: str | None = None,
                 progress: Callable[[int, int], None] | None = None):
        from ..serving.client import EngineClient

        self.client = EngineClient(url, timeout=600.0, pool_size=IN_FLIGHT)
        self.pairs, self.source, self.model = tuple(pairs), source, model
        self.progress = progress

    def links(self, method: Method) -> list:
        """Every pair's :class:`~engine.alignment.api.Alignment` by ``method``, in order."""
        from .api import method_of

        plain = method_of(method.name, self.source.kind, threshold=method.threshold,
                          tau=method.tau, mass=method.mass, eps=method.eps)
        if plain != method:
            raise SettingsError(f"{method.name}'s temperature and direction are not part of "
                                "the HTTP API; run without --engine to change them.")
        settings = {"method": method.name, "source": self.source.kind,
                    "layer": self.source.layer, "threshold": method.threshold,
                    "tau": method.tau, "mass": method.mass, "eps": method.eps}
        if self.source.kind == "attention":
            settings["head"] = self.source.head
        if self.model:
            settings["model"] = self.model
        return self._align(settings)

    def trained(self, name: str, theta: float | None = None) -> tuple:
        """(the ``trained`` row's settings, every pair's alignment in order) by the served
        engine's trained aligner ``name`` (``GET /v1/aligners``), at θ = ``theta`` or its
        own."""
        from ..aligner.cli import TrainedMethod

        settings = {"method": "trained", "aligner": name}
        if theta is not None:
            settings["threshold"] = float(theta)
        out = self._align(settings)
        m = out[0].method if out else {}
        return TrainedMethod(float(m.get("threshold", theta or 0.0)), str(m.get("final", "")),
                             name), out

    def _align(self, settings: dict) -> list:
        """Every pair aligned by the service with ``settings`` (POST /v1/align's fields), in
        chunks, in input order."""
        starts = range(0, len(self.pairs), CHUNK)
        out: list = [None] * len(self.pairs)
        done, lock, failed = [0], threading.Lock(), threading.Event()

        def send(start: int) -> None:
            if failed.is_set():  # the first failure stops the run: no chunk is sent after
                return
            chunk = list(self.pairs[start:start + CHUNK])  # with gold: scored alike
            try:
                got = self._send(chunk, settings, start)
            except BaseException:
                failed.set()
                raise
            out[start:start + len(chunk)] = got
            with lock:
                done[0] += len(chunk)
                if self.progress is not None:
                    self.progress(2 * done[0], 2 * len(self.pairs))

        with cf.ThreadPoolExecutor(IN_FLIGHT) as pool:
            for f in [pool.submit(send, s) for s in starts]:
                f.result()
        return out

    def compare(self, settings: dict, *, bootstrap: int = 1000, seed: int = 0):
        """Every method's links from the service, scored and ranked here: a
        :class:`~engine.alignment.api.Comparison` as ``compare_methods`` gives."""
        from .api import comparison_of

        alignments = {label: self.links(m) for label, m in settings.items()}
        return comparison_of(self.source, self.pairs, settings, alignments,
                             bootstrap=bootstrap, seed=seed)

    def _send(self, chunk: list, settings: dict, start: int) -> list:
        """One chunk, tried again after the service failed it; its alignments in order."""
        from ..serving.client import EngineUnavailable

        for attempt in range(RETRIES + 1):
            try:
                got = self.client.align(chunk, values=False, **settings)
            except EngineUnavailable as e:
                if attempt == RETRIES:
                    raise SettingsError(
                        f"Pairs {start + 1}–{start + len(chunk)} could not be aligned by the "
                        f"served engine after {RETRIES + 1} tries ({e.reason}); nothing was "
                        "written. Check the engine, then run again.") from None
                time.sleep(min(8.0, 2.0 ** attempt))
                continue
            if len(got) != len(chunk):
                raise SettingsError(f"The served engine gave {len(got)} alignments for "
                                    f"{len(chunk)} pairs; is it the same sinkscope version?")
            return got
        raise AssertionError("unreachable")
