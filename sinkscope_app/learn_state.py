"""The Learn page's state and its URL: ``/learn?step=3&lang=es``.

The URL holds the step, the language, presenter mode, the toy clouds (shape and how far
cloud B moved) and the texts of steps 6–8 (an example, or your own texts). Values read
from a URL are untrusted: each is checked, clamped or replaced by its default, and every
change is reported in the page's language. Session keys carry a ``learn_`` prefix; the
texts share the main page's keys (``ex``, ``a``, ``b``), so both pages show one pair.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from engine import settings
from engine.lab.toy import PRESETS, SHIFT_MAX, SHIFT_MIN

from .learn_text import DEFAULT_LANG, LANGS, N_STEPS, PRESETS as PRESET_NAMES, UI
from .state import DEFAULTS as MAIN_DEFAULTS, Parsed, parse_bool, valid_text

SHIFT_STEP = 0.25
DEFAULTS: dict[str, Any] = {
    "learn_step": 1,
    "learn_lang": DEFAULT_LANG,
    "learn_present": False,
    "learn_cloud": PRESETS[0],
    "learn_shift": 0.0,
}
URL_KEYS = {"step": "learn_step", "lang": "learn_lang", "present": "learn_present",
            "cloud": "learn_cloud", "shift": "learn_shift"}
TEXT_KEYS = ("ex", "a", "b")  # shared with the main page


def _first(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        v = v[-1] if v else ""
    return str(v)


_MARKDOWN = "\\`*_{}[]()<>#+-.!|~$:"


def _show(raw: str) -> str:
    """A URL value quoted for a notice: cut short, and with every Markdown character
    escaped, so a crafted value shows as typed (never as a link, bold text or LaTeX)."""
    text = repr(raw[:24] + ("…" if len(raw) > 24 else ""))
    return "".join("\\" + ch if ch in _MARKDOWN else ch for ch in text)


def parse(params: Mapping[str, Any], examples: Mapping[str, Any], *,
          locale: str | None = None) -> Parsed:
    """Turn untrusted query parameters into the Learn page's state, with notices.

    Args:
        params: the query string as a mapping (values may be lists).
        examples: id → {"a", "b", ...} from ``assets/examples.json``.
        locale: the browser's language (e.g. "es-AR"); used when the URL names none.

    Returns:
        :class:`Parsed` with session values (``learn_*``, ``ex``, ``a``, ``b``) and
        notices in the page's language. Never raises.
    """
    p = {str(k): _first(v) for k, v in params.items()}
    out = Parsed()
    v, notes = out.values, []

    lang = None
    if "lang" in p:
        if p["lang"] in LANGS:
            lang = p["lang"]
        else:
            notes.append(("bad_lang", dict(raw=_show(p["lang"]))))
            lang = DEFAULT_LANG
    elif locale and str(locale).split("-")[0].lower() in LANGS:
        lang = str(locale).split("-")[0].lower()
    v["learn_lang"] = lang or DEFAULT_LANG

    if "step" in p:
        raw = p["step"].strip()
        try:
            x = float(raw)
            step = int(x) if math.isfinite(x) and x == int(x) else None
        except (ValueError, OverflowError):
            step = None
        if step is None or not 1 <= step <= N_STEPS:
            clamped = 1 if step is None else min(max(step, 1), N_STEPS)
            notes.append(("bad_step", dict(raw=_show(raw), n=N_STEPS, step=clamped)))
            step = clamped
        v["learn_step"] = step

    if "present" in p:
        if (flag := parse_bool(p["present"])) is not None:
            v["learn_present"] = flag
        else:
            notes.append(("bad_present", dict(raw=_show(p["present"]))))
            v["learn_present"] = False

    if "cloud" in p:
        if p["cloud"] in PRESETS:
            v["learn_cloud"] = p["cloud"]
        else:
            notes.append(("bad_preset", dict(raw=_show(p["cloud"]), preset=PRESETS[0])))
    if "shift" in p:
        try:
            x = float(p["shift"])
        except (ValueError, OverflowError):
            x = math.nan
        if math.isfinite(x) and SHIFT_MIN <= x <= SHIFT_MAX:
            v["learn_shift"] = round(x / SHIFT_STEP) * SHIFT_STEP
        else:
            fixed = 0.0 if math.isnan(x) else min(max(x, SHIFT_MIN), SHIFT_MAX)
            fixed = round(fixed / SHIFT_STEP) * SHIFT_STEP
            notes.append(("bad_shift", dict(raw=_show(p["shift"]), lo=f"{SHIFT_MIN:g}",
                                            hi=f"{SHIFT_MAX:g}", shift=f"{fixed:g}")))
            v["learn_shift"] = fixed

    # The texts: an example, or your own (explicit texts win over the example's).
    if "ex" in p:
        if p["ex"] in examples or p["ex"] == "custom":
            v["ex"] = p["ex"]
            if p["ex"] in examples:
                v["a"], v["b"] = examples[p["ex"]]["a"], examples[p["ex"]]["b"]
        else:
            notes.append(("bad_ex", dict(raw=_show(p["ex"]))))
    for key in ("a", "b"):
        if key in p:
            v[key] = valid_text(p[key])
            if len(v[key]) > settings.CONFIG.max_chars:
                notes.append(("text_cut", dict(name=key.upper(), n=f"{len(v[key]):,}",
                                               kept=f"{settings.CONFIG.max_chars:,}")))
                v[key] = v[key][: settings.CONFIG.max_chars]
            v.setdefault("ex", "custom")
            if v["ex"] != "custom" and v[key] != examples.get(v["ex"], {}).get(key):
                v["ex"] = "custom"

    ui = UI[v["learn_lang"]]
    names = PRESET_NAMES[v["learn_lang"]]
    for key, fields in notes:
        if "preset" in fields:
            fields["preset"] = names[fields["preset"]]
        out.warnings.append(ui[key].format(**fields))
    return out


def to_query(state: Mapping[str, Any]) -> dict[str, str]:
    """The query string for the page's state: step and language always, the rest when
    it differs from its default; your own texts when no example is chosen."""
    q = {"step": str(int(state.get("learn_step", 1))),
         "lang": str(state.get("learn_lang", DEFAULT_LANG))}
    if state.get("learn_present"):
        q["present"] = "on"
    if state.get("learn_cloud", DEFAULTS["learn_cloud"]) != DEFAULTS["learn_cloud"]:
        q["cloud"] = str(state["learn_cloud"])
    if float(state.get("learn_shift", 0.0)) != 0.0:
        q["shift"] = f"{float(state['learn_shift']):g}"
    ex = state.get("ex", MAIN_DEFAULTS["ex"])
    if ex == "custom":
        q["ex"] = "custom"
        q["a"], q["b"] = str(state.get("a", "")), str(state.get("b", ""))
    elif ex != MAIN_DEFAULTS["ex"]:
        q["ex"] = str(ex)
    return q
