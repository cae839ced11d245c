"""What a job's work sees: progress to report, a partial result to keep, Stop and the
deadline to poll, and where to find its model (torch-free).

The work is a plain function ``work(ctx, spec) -> (document, files)``; it calls
:meth:`Context.report` as it goes and polls :attr:`Context.stopping` (or
:meth:`Context.check`) between steps, and ends early, with what it has reached, once Stop
was asked or the deadline passed. Reports reach the board at most every ``every`` seconds
(a training loop may report every step), so Stop is seen within about that long.
"""

from __future__ import annotations

import time
from typing import Any, Callable

_KEEP = object()


class Stopped(Exception):
    """Raised by :meth:`Context.check` once the job should stop (Stop or its deadline)."""


class Context:
    """A running job's line to its board.

    Args:
        sync: ``sync(progress, info, partial) -> stop``: send the latest report (partial
            None when unchanged) and learn whether Stop was asked.
        deadline_s: seconds the job may run (None: no deadline).
        encoder: ``encoder(name)`` → the allow-listed model ``name``, loaded once.
        device: where a model trains ("cuda", or None for the model's own device).
        every: seconds between two syncs with the board.
    """

    def __init__(self, sync: Callable[[float, dict, Any], bool], *,
                 deadline_s: float | None = None,
                 encoder: Callable[[str], Any] | None = None, device: str | None = None,
                 every: float = 0.25, clock=time.monotonic) -> None:
        self._sync, self._clock, self.every = sync, clock, float(every)
        self.start = clock()
        self.deadline_s = deadline_s
        self._encoder, self.device = encoder, device
        self.progress, self.info, self._partial, self._dirty = 0.0, {}, None, False
        self._last = -float("inf")
        self._stop = False
        self.reason = ""  # "requested" (Stop) or "deadline", once the job should stop

    def encoder(self, name: str):
        """The allow-listed model ``name`` (an ``Encoder``)."""
        if self._encoder is None:
            from ..models.encoder import Encoder

            return Encoder(name)
        return self._encoder(name)

    def report(self, share: float, partial: Any = _KEEP, **info: Any) -> None:
        """The share done (0 … 1), details for a page (codes and numbers) and, when given,
        the partial result so far; sent to the board when :attr:`every` has passed."""
        self.progress = float(min(max(share, 0.0), 1.0))
        self.info = info
        if partial is not _KEEP:
            self.keep(partial)
        self._poll()

    def keep(self, partial: Any) -> None:
        """What the job has reached so far (sent with the next report)."""
        self._partial, self._dirty = partial, True

    @property
    def partial(self) -> Any:
        return self._partial

    @property
    def stopping(self) -> bool:
        """Whether the job should stop now: Stop was asked, or its deadline passed."""
        self._poll()
        return self._stop

    def check(self) -> None:
        """Raise :class:`Stopped` once the job should stop."""
        if self.stopping:
            raise Stopped()

    def flush(self) -> bool:
        """Send the latest report now; whether Stop was asked."""
        self._last = self._clock()
        partial, self._dirty = (self._partial if self._dirty else None), False
        if self._sync(self.progress, self.info, partial) and not self._stop:
            self._stop, self.reason = True, self.reason or "requested"
        return self._stop

    def stop(self, reason: str = "requested") -> None:
        """Stop from inside (the board said so before the work began)."""
        self._stop, self.reason = True, self.reason or reason

    def _poll(self) -> None:
        now = self._clock()
        if self.deadline_s is not None and now - self.start > self.deadline_s and not self._stop:
            self._stop, self.reason = True, "deadline"
        if now - self._last >= self.every:
            self.flush()
