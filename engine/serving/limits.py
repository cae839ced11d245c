"""What one served request may cost, and when it runs: prices, budgets, deadline, lanes.

Every route prices its request from its shape before anything is computed (token counts
come from the tokenizer, words from ``str.split``) and refuses what is over its budget
(``settings.CONFIG.serve_work_<route>``, :data:`engine.settings.SERVE_WORK`) with
:class:`WorkTooLarge` (HTTP 413), whose message names the limit, the request's figure and
what to change:

| route | work |
|---|---|
| relate | token pairs n·m × half-steps × problems (72 for the heads grid) |
| eps_path | token pairs × half-steps × ε values |
| lattice | frames (ε × half-step values) × token pairs × 8 bytes; its solve as relate's |
| rank | Σ token pairs of its three batched solves × 10,000 half-steps |
| align | Σ word pairs (words of A × words of B) |

and every route's batch of problems solved at once, at most ``serve_batch_bytes`` of
float64 scores (the solver keeps several arrays of that size: this bounds its memory).

Every price also bounds the answer's size from the request's shape (:class:`Answer`: the
numbers and text its document holds, at their largest written size in JSON or NPZ); an
answer that could be larger than ``serve_max_answer`` bytes (32 MiB,
``SINKSCOPE_SERVE_MAX_ANSWER``) is refused the same way (code ``answer``), so every
allowed answer of every route fits in it.

A request then runs under a deadline (:func:`token`: the operator's, or a shorter one the
client asks for; the solver polls it, 408 when it is spent) in one of two lanes
(:class:`Lanes`): a light request (little work, a small answer) runs at once; a heavy one
waits for one of a replica's :data:`HEAVY_SLOTS` (503 with Retry-After when none frees up
within the deadline), so light requests never queue behind heavy ones and a replica holds
one heavy answer at a time (its memory stays bounded).

Plain Python and asyncio: tested without Ray (``tests/test_limits.py``).
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from .. import settings
from ..errors import SettingsError
from ..solver.cancel import Token

LIGHT_WORK = 20_000_000  # work units: a request at most this heavy runs in the light lane
LIGHT_BYTES = 4 * 2**20  # ...if its answer is at most this large too
HEAVY_SLOTS = 1  # heavy requests computed at once per replica
RANK_HALF_STEPS = 10_000  # engine.relation.sentences.HALF_STEPS (each solve's most)
DEFAULT_EPS_VALUES = 12  # engine.relation.relate.eps_path's default ε values
ENV = "SINKSCOPE_SERVE_WORK_{}"
DEADLINE_ENV = "SINKSCOPE_SERVE_DEADLINE_S"
BATCH_ENV = "SINKSCOPE_SERVE_BATCH_BYTES"
DEADLINE_HEADER = "X-Sinkscope-Deadline"  # seconds a client waits: a shorter deadline
# The deadline the request being answered asked for (its header), set by the HTTP layer.
asked_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "sinkscope_asked_deadline", default=None)


class WorkTooLarge(SettingsError):
    """A request priced over its route's work budget, or whose answer could be larger than
    the served engine sends (HTTP 413).

    Attributes:
        code: "work" (its work), or "answer" (its answer's size). params: route, work (the
            request's figure), limit, env (the variable that sets the limit), unit, change
            (what to ask for instead).
    """

    def __init__(self, message: str, *, params: dict, code: str = "work"):
        super().__init__(message)
        self.code, self.params = code, dict(params)


ANSWER_ENV = "SINKSCOPE_SERVE_MAX_ANSWER"
JSON, NPZ = "application/json", "application/x-npz"  # engine.serving.wire's media types
#: The most bytes one value of a document takes when written: a float in an array (JSON:
#: float.__repr__, at most 24 characters as in "-2.2250738585072014e-308", and a comma;
#: NPZ: 8 bytes), a number in a list (JSON in both: NPZ keeps lists in its JSON
#: skeleton), a whole number in a list (up to 10 digits), a character of text (JSON's
#: six-character escape, a backslash, u and four hex digits), a byte of a binary payload
#: sent as a list of numbers ("255,"; NPZ: a uint8 array).
VALUE_BYTES = {JSON: {"floats": 25, "listed": 25, "ints": 11, "chars": 6, "octets": 4},
               NPZ: {"floats": 8, "listed": 25, "ints": 11, "chars": 6, "octets": 1}}
DOC_BYTES = 64 * 1024  # the rest of a document: settings, summary, notices, versions
KEPT_ERRORS = 1002  # marginal errors a relation keeps per head, at most (ERROR_POINTS + 2)


@dataclass(frozen=True)
class Answer:
    """What a document holds at most, by how it is written: ``floats`` numbers in numpy
    arrays, ``listed`` numbers in lists, ``ints`` whole numbers in lists (indices),
    ``chars`` characters of text (texts, words, tokens), ``octets`` bytes of a binary
    payload. :meth:`bytes` bounds its size in JSON or NPZ."""

    floats: float = 0.0
    listed: float = 0.0
    ints: float = 0.0
    chars: float = 0.0
    octets: float = 0.0

    def bytes(self, media: str = JSON) -> float:
        """The largest size of the answer written as ``media`` (bytes)."""
        per = VALUE_BYTES[NPZ if media == NPZ else JSON]
        return DOC_BYTES + sum(getattr(self, k) * v for k, v in per.items())


class Busy(RuntimeError):
    """No heavy slot freed up within the request's deadline (HTTP 503, Retry-After)."""

    retry_after_s = 5


@dataclass(frozen=True)
class Price:
    """A request's price: ``work`` in its route's unit, against ``limit``.

    Attributes:
        route: "relate", "eps_path", "lattice", "rank" or "align".
        work: the request's figure. unit: what it counts. figure: how it was priced.
        change: what to ask for instead when it is too much.
        bytes: the answer's size, roughly (bytes), for the lane.
        extra: further (work, limit, unit, figure) checks (the lattice's solve).
        batch: bytes of the largest batch of problems the solver holds at once (float64
            scores; it keeps several arrays of that size), against
            ``serve_batch_bytes``. batch_figure: how it was counted.
        answer: what its document holds at most (:class:`Answer`), against
            ``serve_max_answer`` bytes in the media type asked for.
    """

    route: str
    work: float
    unit: str
    figure: str
    change: str
    bytes: float = 0.0
    extra: tuple = field(default=())
    solve: float = 0.0  # cell half-steps, for the lane (work itself where that is the unit)
    batch: float = 0.0  # bytes of the largest batch of problems solved at once (float64)
    batch_figure: str = ""
    answer: Answer = field(default_factory=Answer)  # what its document holds, at most
    budget: str = ""  # the route whose work budget it shares ("": its own)

    @property
    def limit(self) -> int:
        return int(getattr(settings.CONFIG, f"serve_work_{self.budget or self.route}"))

    @property
    def light(self) -> bool:
        """Whether this request runs at once (little work, a small answer)."""
        return self.solve <= LIGHT_WORK and self.bytes <= LIGHT_BYTES

    def check(self, media: str = JSON) -> Price:
        """This price, or :class:`WorkTooLarge` when it is over its budget, or its answer
        written as ``media`` could be larger than ``serve_max_answer``."""
        for work, limit, env, unit, figure in (
                (self.work, self.limit, ENV.format((self.budget or self.route).upper()),
                 self.unit, self.figure), *self.extra):
            if work > limit:
                raise WorkTooLarge(
                    f"This request needs {work:,.0f} {unit} ({figure}); the served engine "
                    f"allows {limit:,} per /v1/{self.route} ({env}). {self.change}",
                    params={"route": self.route, "work": int(work), "limit": limit, "env": env,
                            "unit": unit, "change": self.change})
        most = settings.CONFIG.serve_batch_bytes
        if self.batch > most:
            raise WorkTooLarge(
                f"This request solves {self.batch / 2**20:,.1f} MiB of problems at once "
                f"({self.batch_figure} × 8 bytes); the served engine allows "
                f"{most / 2**20:,.1f} MiB ({BATCH_ENV}), as the solver holds several arrays "
                f"of that size. {self.change}",
                params={"route": self.route, "work": int(self.batch), "limit": most,
                        "env": BATCH_ENV, "unit": "bytes", "change": self.change})
        size, most = self.answer.bytes(media), max_answer()
        if size > most:
            kind = "NPZ" if media == NPZ else "JSON"
            change = self.change + ("" if media == NPZ else
                                    f" NPZ answers are smaller (Accept: {NPZ}).")
            raise WorkTooLarge(
                f"The answer to this request could take {size / 2**20:,.1f} MiB as {kind}; "
                f"the served engine sends at most {most / 2**20:,.1f} MiB ({ANSWER_ENV}). "
                f"{change}",
                params={"route": self.route, "work": int(size), "limit": most,
                        "env": ANSWER_ENV, "unit": "bytes", "change": change}, code="answer")
        return self


def max_answer() -> int:
    """The largest answer a served engine sends, bytes (``SINKSCOPE_SERVE_MAX_ANSWER``)."""
    return int(settings.CONFIG.serve_max_answer)


def _cells(n: int, m: int) -> str:
    return f"{n} × {m} token pairs"


def _chars(*texts) -> int:
    """Characters of the texts as the engine reads them (at most ``max_chars`` each)."""
    most = settings.CONFIG.max_chars
    return sum(min(len(t), most) for t in texts if isinstance(t, str))


def relation_answer(n: int, m: int, problems: int, half_steps: int, d_model: int,
                    chars: int, mode: str = "separate") -> Answer:
    """What a relation document holds at most (``engine.io.export.relation_document``):
    per problem five (n, m) arrays (scores, attention, softmax, Sinkhorn and exact plans;
    six with the model's own attention, in joint and self mode), potentials and
    marginals, the kept marginal errors (``engine.relation.relate.ERROR_POINTS``) and the
    summary; once, a and b, the history, the points and hidden states (d_model each) and
    the texts with their tokens."""
    k = min(int(half_steps), KEPT_ERRORS)
    per = (5 + (mode != "separate")) * n * m + 6 * (n + m) + 2 * k + 24
    return Answer(floats=problems * per + (n + m) * (1 + 2 * d_model) + 3 * 400 + k,
                  chars=2 * chars + 5 * (n + m))


def relate_price(req, n: int, m: int, n_layers: int, n_heads: int, d_head: int = 0) -> Price:
    """POST /v1/relate: n·m token pairs × half-steps × problems (the grid: every head)."""
    grid = req.layer == "all"
    problems = n_layers * n_heads if grid else 1
    t = int(req.half_steps)
    work = n * m * t * problems
    heads = f" × {problems} heads" if grid else ""
    change = ("Ask for fewer half-steps" + (", one layer and head instead of the grid"
                                            if grid else "") + ", or shorter texts.")
    return Price("relate", work, "token pairs × half-steps" + (" × heads" if grid else ""),
                 f"{_cells(n, m)} × {t:,} half-steps{heads}", change,
                 bytes=100.0 * n * m * problems, solve=work, batch=8.0 * n * m * problems,
                 batch_figure=f"{problems} × {_cells(n, m)}",
                 answer=relation_answer(n, m, problems, t, n_heads * d_head,
                                        _chars(getattr(req, "text_a", ""),
                                               getattr(req, "text_b", "")),
                                        getattr(req, "mode", "separate")))


def eps_path_price(req, n: int, m: int) -> Price:
    """POST /v1/eps_path: n·m token pairs × half-steps × ε values."""
    k = DEFAULT_EPS_VALUES if req.eps_values is None else len(req.eps_values)
    t = int(req.half_steps)
    work = n * m * t * k
    return Price("eps_path", work, "token pairs × half-steps × ε values",
                 f"{_cells(n, m)} × {t:,} half-steps × {k} ε values",
                 "Ask for fewer half-steps or ε values, or shorter texts.",
                 bytes=20.0 * n * m * k, solve=work, batch=8.0 * n * m * k,
                 batch_figure=f"{k} ε values × {_cells(n, m)}",
                 answer=Answer(floats=k * n * m + k, chars=5 * (n + m) + _chars(
                     getattr(req, "text_a", ""), getattr(req, "text_b", ""))))


def lattice_price(req, n: int, m: int) -> Price:
    """POST /v1/lattice: its frames' bytes (ε values × half-step values × n·m × 8, held as
    float64 while they are built), and its solve (ε values × the largest half-step count ×
    n·m, against relate's budget)."""
    e = len(set(float(x) for x in req.eps_values))
    steps = {1} | {int(t) for t in req.steps}
    frames = e * len(steps)
    size = frames * n * m * 8
    solve = e * max(steps) * n * m
    extra = ((solve, settings.CONFIG.serve_work_relate, ENV.format("RELATE"),
              "token pairs × half-steps × ε values",
              f"{_cells(n, m)} × {max(steps):,} half-steps × {e} ε values"),)
    return Price("lattice", size, "bytes of frames",
                 f"{e} ε × {len(steps)} half-step values = {frames:,} frames of "
                 f"{_cells(n, m)}, 8 bytes each",
                 "Ask for fewer ε or half-step values, or shorter texts.",
                 bytes=min(size, 2.5 * int(req.max_bytes)), extra=extra, solve=solve,
                 batch=8.0 * e * n * m, batch_figure=f"{e} ε values × {_cells(n, m)}",
                 answer=Answer(octets=int(req.max_bytes), chars=len(getattr(req, "id", ""))))


def rank_price(n_a: int, n_candidates: Sequence[int], chars: int = 0) -> Price:
    """POST /v1/rank: the token pairs of its three batched solves (A with each candidate,
    each candidate with itself, A with itself; padded to the longest candidate) × the most
    half-steps each may run. ``chars``: the characters of text A and the candidates."""
    k, m = len(n_candidates), max(n_candidates, default=0)
    cells = k * n_a * m + k * m * m + n_a * n_a
    work = cells * RANK_HALF_STEPS
    return Price("rank", work, "token pairs × half-steps",
                 f"{cells:,} token pairs over {k} candidates of up to {m} tokens × "
                 f"{RANK_HALF_STEPS:,} half-steps",
                 "Send fewer or shorter candidates, or a shorter text A.",
                 bytes=8.0 * k * n_a * m, solve=work, batch=8.0 * max(k * n_a * m, k * m * m),
                 batch_figure=f"{k} candidates × {max(n_a, m)} × {m} token pairs",
                 answer=Answer(floats=k * n_a * m + 8 * k + 8, chars=2 * chars
                               + 5 * (n_a + sum(n_candidates))))


def align_price(pairs: Sequence[tuple[str, str]], values: bool = True) -> Price:
    """POST /v1/align: Σ word pairs (words of A × words of B); always the heavy lane (its
    forward passes take seconds)."""
    work = sum(len(a.split()) * len(b.split()) for a, b in pairs)
    words = sum(len(a.split()) + len(b.split()) for a, b in pairs)
    return Price("align", work, "word pairs",
                 f"{len(pairs)} pairs, Σ words A × words B",
                 "Send fewer pairs per request, or shorter texts" + (
                     ", or ask for no values (values: false)." if values else "."),
                 bytes=(20.0 if values else 0.0) * work, solve=math.inf,
                 answer=align_answer(work, words, _chars(*(t for p in pairs for t in p)),
                                     len(pairs), values))


def align_answer(word_pairs: int, words: int, chars: int, pairs: int, values: bool) -> Answer:
    """What alignments hold at most (``Alignment.to_dict``): per word pair a link (two
    indices, each written again in the Pharaoh text) and, with ``values``, its value; per
    word its null index and the word itself; per pair its scores and settings."""
    return Answer(listed=(word_pairs if values else 0) + 24 * pairs,
                  ints=4 * word_pairs + words, chars=chars + 2 * words)


def token(since: float | None = None) -> Token:
    """A cancel token with the deadline of a computation starting now: the operator's
    (``serve_deadline_s``), or what is left of the client's when that is shorter (its
    :data:`DEADLINE_HEADER`, counted from ``since``, the request's arrival: the client will
    not wait longer, so nothing is computed after it has gone)."""
    asked, operator = asked_deadline.get(), settings.CONFIG.serve_deadline_s
    if asked is not None:
        left = asked - (time.monotonic() - since) if since is not None else asked
        if left < operator:
            return Token(max(left, 0.0), limit=f"the client's {DEADLINE_HEADER}",
                         shown_s=asked)
    return Token(operator, limit=DEADLINE_ENV)


def parse_deadline(value: str | None) -> float | None:
    """Seconds from a :data:`DEADLINE_HEADER` value (a number > 0), else None."""
    try:
        v = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return v if math.isfinite(v) and v > 0 else None


class Lanes:
    """Light requests run at once; heavy ones hold one of ``slots`` (per replica) while
    they compute and send their answer, waiting at most ``wait_s`` seconds for one."""

    def __init__(self, slots: int = HEAVY_SLOTS):
        self.slots = slots
        self.heavy = asyncio.Semaphore(slots)
        self.waiting = 0
        self.running = 0

    async def acquire(self, wait_s: float | None) -> Callable[[], None]:
        """Wait for a heavy slot; returns its release (call it once, when done: later
        calls do nothing). Raises :class:`Busy` after ``wait_s`` seconds."""
        self.waiting += 1
        try:
            await asyncio.wait_for(self.heavy.acquire(), timeout=wait_s)
        except asyncio.TimeoutError:
            raise Busy(f"The engine is busy with other large requests (it computes "
                       f"{self.slots} at a time per replica) and none finished within "
                       f"{wait_s:g} s; try again in a moment, or ask for less.") from None
        finally:
            self.waiting -= 1
        self.running += 1
        done = False

        def release() -> None:
            nonlocal done
            if not done:
                done = True
                self.running -= 1
                self.heavy.release()

        return release


def live_price(text_a: str, text_b: str, grid: int, max_bytes: int) -> Price:
    """POST /v1/align/live: word pairs × slider values (against align's budget); its
    answer at most ``max_bytes`` of values, its scores and its header."""
    n, m = len(text_a.split()), len(text_b.split())
    work = n * m * max(grid, 1)
    return Price("align/live", work, "word pairs × slider values",
                 f"{n} × {m} words × {max(grid, 1)} values",
                 "Send shorter texts, or a method without a second slider.",
                 bytes=float(min(max_bytes, 4 * work)), solve=math.inf, budget="align",
                 answer=Answer(octets=min(max_bytes, 4 * work) + 1200 * max(grid, 1),
                               chars=3 * _chars(text_a, text_b) + 64 * (n + m)))


def project_price(n: int, m: int, d_model: int, dim: int) -> Price:
    """POST /v1/project: the relation it projects (n·m token pairs, one half-step, against
    relate's budget); its answer (n + m) points of ``dim`` coordinates."""
    return Price("project", n * m, "token pairs", _cells(n, m),
                 "Send shorter texts.", bytes=8.0 * (n + m) * dim, solve=math.inf,
                 batch=8.0 * n * m, batch_figure=_cells(n, m), budget="relate",
                 answer=Answer(floats=(n + m) * dim + 8, chars=64))


def toy_price(t: int) -> Price:
    """POST /v1/toy: at most 7 × 7 points × its half-steps (the coupling's: its warm start
    and its last solve), against relate's budget; a 7 × 7 plan."""
    from ..lab.clouds import EPS_PATH, MAX_HALF_STEPS, WARM_HALF_STEPS

    steps = max(int(t), MAX_HALF_STEPS + len(EPS_PATH) * WARM_HALF_STEPS)
    return Price("toy", 49 * steps, "point pairs × half-steps",
                 f"7 × 7 points × {steps:,} half-steps", "Ask for fewer half-steps.",
                 bytes=2000.0, solve=49.0 * steps, budget="relate",
                 answer=Answer(floats=49 + 4 * 7 + 8, chars=64))
