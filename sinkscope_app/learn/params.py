"""The Learn page's state and its address: ``/learn?step=3&lang=es``.

The address holds the step, the language, presenter mode, the toy clouds (shape and how
far cloud B moved) and the texts of steps 6–8 (an example, or your own texts), declared in
:data:`SCHEMA` and read by the frame. Values read from a URL are untrusted: each is
checked, clamped or replaced by its default, and every change is reported in the page's
language. Session keys carry a ``learn_`` prefix; the texts share the main page's keys
(``ex``, ``a``, ``b``), so both pages show one pair.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine import settings
from engine.lab.clouds import PRESETS, SHIFT_MAX, SHIFT_MIN

from ..locale import DEFAULT_LANG, LANGS
from ..inputs import MARKDOWN, Param, Parsed, Refused, Schema, cut, parse_bool, quote, to_float
from ..links import DEFAULT_TEXTS as MAIN_DEFAULTS
from .text import N_STEPS

SHIFT_STEP = 0.25
DEFAULTS: dict[str, Any] = {
    "learn_step": 1,
    "learn_present": False,
    "learn_cloud": PRESETS[0],
    "learn_shift": 0.0,
}
TEXT_KEYS = ("ex", "a", "b")  # shared with the main page


@dataclass(frozen=True)
class Ctx:
    """What reading the address needs: the examples, and whether Back or Forward opened
    it (an entry's address is then the whole state: what it leaves out is the default)."""

    examples: Mapping[str, Any]
    navigated: bool = False


def _show(raw: str) -> str:
    """A URL value quoted for a notice, every Markdown character escaped."""
    return quote(raw, 24, MARKDOWN)


def _step(raw: str, ctx: Ctx) -> int:
    x = to_float(raw)
    step = int(x) if x is not None and x == int(x) else None
    if step is None or not 1 <= step <= N_STEPS:
        clamped = 1 if step is None else min(max(step, 1), N_STEPS)
        raise Refused("bad_step", use=clamped, raw=_show(raw.strip()), n=N_STEPS, step=clamped)
    return step


def _lang(raw: str, ctx: Ctx) -> str:
    if raw in LANGS:
        return raw
    raise Refused("bad_lang", use=DEFAULT_LANG, raw=_show(raw))


def _present(raw: str, ctx: Ctx) -> bool:
    flag = parse_bool(raw)
    if flag is None:
        raise Refused("bad_present", use=False, raw=_show(raw))
    return flag


def _cloud(raw: str, ctx: Ctx) -> str:
    if raw in PRESETS:
        return raw
    raise Refused("bad_preset", raw=_show(raw), preset=PRESETS[0])


def _shift(raw: str, ctx: Ctx) -> float:
    try:
        x = float(raw)
    except (ValueError, OverflowError):
        x = math.nan
    if math.isfinite(x) and SHIFT_MIN <= x <= SHIFT_MAX:
        return round(x / SHIFT_STEP) * SHIFT_STEP
    fixed = 0.0 if math.isnan(x) else min(max(x, SHIFT_MIN), SHIFT_MAX)
    fixed = round(fixed / SHIFT_STEP) * SHIFT_STEP
    raise Refused("bad_shift", use=fixed, raw=_show(raw), lo=float(SHIFT_MIN),
                  hi=float(SHIFT_MAX), shift=float(fixed))


def _ex(raw: str, ctx: Ctx) -> str:
    if raw in ctx.examples or raw == "custom":
        return raw
    raise Refused("bad_ex", raw=_show(raw))


def _text(name: str):
    def read(raw: str, ctx: Ctx) -> str:
        value, chars = cut(raw, settings.CONFIG.max_chars)
        if chars is not None:
            raise Refused("text_cut", use=value, name=name, n=chars,
                          kept=settings.CONFIG.max_chars)
        return value
    return read


def _resolve(v: dict, p: Mapping[str, str], ctx: Ctx, warn) -> None:
    """The texts: an example, or your own (explicit texts win over the example's). Back or
    Forward to an entry that leaves the step or the texts out: their defaults."""
    examples = ctx.examples
    if ctx.navigated:
        v.setdefault("learn_step", DEFAULTS["learn_step"])
        if not any(k in p for k in TEXT_KEYS):
            v["ex"] = MAIN_DEFAULTS["ex"]
    ex = v.get("ex")
    if ex in examples:
        v.setdefault("a", examples[ex]["a"])
        v.setdefault("b", examples[ex]["b"])
    for key in ("a", "b"):
        if key in p:
            v.setdefault("ex", "custom")
            if v["ex"] != "custom" and v[key] != examples.get(v["ex"], {}).get(key):
                v["ex"] = "custom"


def _default_only(default):
    return lambda value, state: None if value == default else str(value)


def _own_text(value, state) -> str | None:
    return str(value) if state.get("ex") == "custom" else None


def _example(value, state) -> str | None:
    return None if value == MAIN_DEFAULTS["ex"] else str(value)


SCHEMA = Schema("learn", (
    Param("learn_step", "step", _step, default=DEFAULTS["learn_step"], nav=None,
          write=lambda v, s: str(int(v))),
    Param("lang", "lang", _lang),
    Param("learn_present", "present", _present, default=False,
          write=lambda v, s: "on" if v else None),
    Param("learn_cloud", "cloud", _cloud, default=DEFAULTS["learn_cloud"],
          write=_default_only(DEFAULTS["learn_cloud"])),
    Param("learn_shift", "shift", _shift, default=0.0,
          write=lambda v, s: None if float(v) == 0.0 else f"{float(v):g}"),
    Param("ex", "ex", _ex, default=MAIN_DEFAULTS["ex"], nav=MAIN_DEFAULTS["ex"],
          write=_example),
    Param("a", "a", _text("A"), default=MAIN_DEFAULTS["a"], write=_own_text),
    Param("b", "b", _text("B"), default=MAIN_DEFAULTS["b"], write=_own_text),
), _resolve)


def parse(params: Mapping[str, Any], examples: Mapping[str, Any], *,
          locale: str | None = None, lang: str | None = None,
          navigated: bool = False) -> Parsed:
    """Turn untrusted query parameters into the Learn page's state, with notices.

    Args:
        params: the query string as a mapping (values may be lists).
        examples: id → {"a", "b", ...} from ``assets/examples.json``.
        locale: the browser's language (e.g. "es-AR"); used when the URL names none.
        lang: the language of the notices (default: the one the address or the browser
            gives, else English).

    Returns:
        :class:`Parsed` with session values (``learn_*``, ``lang``, ``ex``, ``a``, ``b``)
        and notices in the page's language. Never raises.
    """
    q = {str(k): v for k, v in params.items()}
    browser = str(locale or "").split("-")[0].lower()
    guess = q.get("lang") if q.get("lang") in LANGS else (
        browser if browser in LANGS else DEFAULT_LANG)
    out = SCHEMA.parse(q, Ctx(examples, navigated), lang=lang or guess)
    out.values.setdefault("lang", guess)
    return out


def to_query(state: Mapping[str, Any]) -> dict[str, str]:
    """The query string for the page's state: step and language always, the rest when
    it differs from its default; your own texts when no example is chosen."""
    return SCHEMA.to_query({**DEFAULTS, "lang": DEFAULT_LANG,
                            "ex": MAIN_DEFAULTS["ex"], **state})
