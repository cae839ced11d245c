"""The engine's notices as codes with parameters; the English sentence is one wording.

``notice("tokens_cut", name="text_b", n=256, dropped=1024)`` is a
:class:`~engine.types.Notice` whose ``code`` and ``params`` a page words in its own
language, and whose ``message`` is the English the API and the command line show.
Names are codes (``text_a``, ``text_b``, ``pair``, ``candidate`` with ``k``):
:func:`engine.errors.name_of` gives their English.
"""

from __future__ import annotations

from ..errors import name_of
from ..types import Notice

POSITION_BIAS_NOTE = (
    "This model adds a relative position bias to its attention logits, b(j − i) between "
    "tokens of one context. Separate texts share no positions, so the scores here are "
    "QKᵀ/√d alone; self and joint modes include the bias (softmax at ε = 1 is then the "
    "model's own attention).")

# code → (kind, level, English template). Fields: name (a name code, with k for a
# candidate), limit, n, dropped, steps, bad, all (whole numbers), err, tol, eps (numbers),
# max, more, pooling ("" for the model's own modules).
MESSAGES: dict[str, tuple[str, str, str]] = {
    "chars_cut": ("chars_cut", "info",
                  "{name} was cut to its first {limit:,} characters (SINKSCOPE_MAX_CHARS)."),
    "tokens_cut": ("tokens_cut", "info",
                   "{name} was cut to the model's limit of {n} tokens: the next {dropped:,} "
                   "tokens were dropped."),
    "no_position_bias": ("no_position_bias", "info", POSITION_BIAS_NOTE),
    "not_converged": ("not_converged", "warning",
                      "Sinkhorn has not converged after {steps} half-steps (marginal error "
                      "{err:.2g} > {tol:g}): raise half-steps or ε."),
    "not_converged_heads": ("not_converged", "warning",
                            "Sinkhorn has not converged on {bad} of {all} heads after {steps} "
                            "half-steps: raise half-steps or ε."),
    "not_converged_candidates": ("not_converged", "warning",
                                 "Sinkhorn has not converged for {bad} of {all} candidates "
                                 "at ε = {eps:g} within {steps} half-steps: raise ε."),
    "candidates_cut": ("candidates_cut", "info",
                       "Only the first {max} candidates are ranked; {more} more lines were "
                       "left out."),
    "not_mean_pooled": ("not_mean_pooled", "info",
                        "This model pools by {pooling}, not by the plain mean of its states: "
                        "its sentence embedding is not the barycenter of the measure the "
                        "divergence compares."),
}


def english(code: str, params: dict) -> str:
    """The English sentence of notice ``code`` with ``params``."""
    shown = dict(params)
    if "name" in shown:
        shown["name"] = name_of(shown["name"], shown.get("k"))
    if code == "not_mean_pooled":
        shown["pooling"] = shown.get("pooling") or "its own modules"
    return MESSAGES[code][2].format(**shown)


def notice(code: str, **params) -> Notice:
    """The notice ``code`` with ``params`` (its kind and level from :data:`MESSAGES`)."""
    kind, level, _ = MESSAGES[code]
    return Notice(kind, level, english(code, params), code=code, params=params)
