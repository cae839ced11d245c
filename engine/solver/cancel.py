"""Stopping a solve from outside: a cancel token with an optional deadline.

A long solve (many half-steps, many problems) can be stopped between blocks of
half-steps: the solver polls the token of the calling context (:func:`poll`), given either
as ``sinkhorn(..., cancel=token)`` or for a whole computation with ``with
scope(token): ...`` (what the served engine does around one request, so every solve a
request makes is covered without passing the token down). Polling costs one context
lookup; without a token nothing changes.

```python
token = Token(deadline_s=30)          # or Token() and token.cancel() from another thread
with scope(token):
    relate(a, b, half_steps=50_000)   # DeadlineExceeded after 30 s, Cancelled once cancelled
```

Torch-free.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from typing import Iterator

from ..errors import SettingsError


class Cancelled(Exception):
    """The computation was cancelled (its caller went away): nobody needs the result."""


class DeadlineExceeded(SettingsError):
    """The computation ran past its deadline and was stopped; the message says what to
    ask for instead (a SettingsError: the request asked for more work than fits)."""


class Token:
    """Says when a computation should stop: once :meth:`cancel` is called (from any
    thread), or once ``deadline_s`` seconds have passed since the token was made.

    Args:
        deadline_s: seconds the computation may take; None: no deadline.
        limit: how the deadline is named in its error (e.g. an environment variable).
        shown_s: the deadline its error names (default ``deadline_s``; e.g. a request's
            whole deadline, of which this computation has what is left).
    """

    def __init__(self, deadline_s: float | None = None, *, limit: str = "",
                 shown_s: float | None = None):
        self.deadline_s = deadline_s
        self.limit = limit
        self.shown_s = deadline_s if shown_s is None else shown_s
        self.start = time.monotonic()
        self.deadline = None if deadline_s is None else self.start + float(deadline_s)
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """Stop the computation at its next poll (thread-safe)."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def left(self) -> float | None:
        """Seconds left before the deadline (≤ 0 once past it), None without one."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def check(self) -> None:
        """Raise :class:`Cancelled` or :class:`DeadlineExceeded` when it is time to stop."""
        if self._cancelled.is_set():
            raise Cancelled("the computation was cancelled")
        if self.deadline is not None and time.monotonic() > self.deadline:
            named = f" ({self.limit})" if self.limit else ""
            raise DeadlineExceeded(
                f"The computation took longer than its deadline of {self.shown_s:g} s"
                f"{named} and was stopped; ask for less: fewer half-steps, fewer ε values, "
                "a larger ε, or shorter texts.")


_current: contextvars.ContextVar[Token | None] = contextvars.ContextVar(
    "sinkscope_cancel", default=None)


@contextlib.contextmanager
def scope(token: Token | None) -> Iterator[Token | None]:
    """Every solve inside this block (in this thread or context) polls ``token``."""
    reset = _current.set(token)
    try:
        yield token
    finally:
        _current.reset(reset)


def poll() -> None:
    """Stop here (raise) if the current context's token says so; else return at once."""
    token = _current.get()
    if token is not None:
        token.check()


def current() -> Token | None:
    """The token of the current context, if any."""
    return _current.get()
