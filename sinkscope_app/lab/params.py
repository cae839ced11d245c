"""The Lab page's state and its address: ``/lab?target=whitened&lang=es`` (and the
models, width and steps, ``?models=sinkhorn,softmax&width=8&steps=150``; the engine's
jobs it follows, ``train_job``, ``sweep_job``, ``compare_job``).

Each value is checked with the lab's own checks; a hostile one (``steps=²``, a 5,000-digit
number, an unknown target) is replaced by its default or clamped, with a notice.
"""

from __future__ import annotations

from typing import Any

from engine.lab.config import DEFAULT_TARGET, MODELS, TARGETS as NAMES, LabSettings
from engine.lab.errors import LabError, check_whole

from .. import jobs, locale
from ..inputs import Param, Refused, Schema, choice, quote, to_int

D = LabSettings()
EPS_CHOICES = (0.05, 0.1, 0.2, 0.5, 1.0)
WIDTH_MAX, STEPS_MAX = 64, 4000
DEFAULTS: dict[str, Any] = {
    "lab_target": DEFAULT_TARGET, "lab_models": list(MODELS), "lab_width": D.width,
    "lab_depth": D.depth, "lab_eps": D.eps, "lab_steps": D.steps, "lab_pair": 0,
    "lab_size": D.points,
    # not widgets: the sizes of the training and held-out sets (tests shrink them)
    "lab_train_pairs": D.train_pairs, "lab_heldout_pairs": D.heldout_pairs}


def _models(raw: str, ctx: Any) -> list[str]:
    """Models named in the link, comma-separated; unknown names are left out (with a
    notice), and a link that names none known keeps the default."""
    names = [m.strip() for m in str(raw).split(",") if m.strip()]
    picked = [m for m in MODELS if m in names]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        raise Refused("unknown_models", use=picked if picked else list(MODELS),
                      value=quote(", ".join(unknown)), models=", ".join(MODELS))
    return picked or list(MODELS)


def _whole(name: str, hi: int):
    """A reader of a whole number the lab's own check takes (1 … ``hi``), clamped into it."""
    def read(raw: str, ctx: Any) -> int:
        x = to_int(raw)
        if x is None:
            raise Refused("not_whole", name=name, value=quote(raw, 20), lo=1, hi=hi)
        try:
            check_whole(name, x, 1, hi)
        except LabError:
            used = min(max(x, 1), hi)
            raise Refused("out_of_range", use=used, name=name, value=x, lo=1, hi=hi,
                          used=used) from None
        return x
    return read


def _job(value, state) -> str | None:
    return str(value) if value else None


SCHEMA = Schema("lab", (
    Param("lab_target", "target", choice(NAMES, "unknown_target"), default=DEFAULT_TARGET,
          doc="the coupling system trained to"),
    Param("lab_models", "models", _models, default=list(MODELS),
          doc="the models trained, comma-separated: " + ", ".join(MODELS),
          write=lambda v, s: ",".join(v)),
    Param("lab_width", "width", _whole("width", WIDTH_MAX), default=D.width,
          doc=f"the encoders' width D, 1–{WIDTH_MAX}"),
    Param("lab_steps", "steps", _whole("steps", STEPS_MAX), default=D.steps,
          doc=f"training steps, 1–{STEPS_MAX}"),
    Param("lang", "lang", choice(tuple(locale.LANGS), "unknown_lang"),
          doc="en or es"),
    Param("lab_train_job", "train_job", jobs.read_id, write=_job,
          doc="the engine's job training the models (the page finds it again)"),
    Param("lab_sweep_job", "sweep_job", jobs.read_id, write=_job,
          doc="the engine's job running the width sweep"),
    Param("lab_text_job", "compare_job", jobs.read_id, write=_job,
          doc="the engine's job of the text comparison (two aligners trained, compared)"),
))
