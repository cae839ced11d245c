"""Errors whose messages say what to change.

An error a person can meet carries a ``code`` and its ``params`` besides its English
message (``TextError.of("text_empty", name="text_a")``), so a page can say the same in
its own language from the code; an error without a code is shown as its message.
"""

from __future__ import annotations

# The names a message gives a text, by code: a page words the same code its own way.
NAMES = {"text_a": "Text A", "text_b": "Text B", "pair": "The pair",
         "candidates": "The candidates", "text": "The text"}

# What each coded error says in English; ``{name}`` is a text's name (:func:`name_of`).
MESSAGES: dict[str, str] = {
    "text_empty": "{name} is empty: type a word or a sentence.",
    "text_unreadable": "{name} has nothing the model can read: after tokenising, only "
                       "[CLS] and [SEP] are left. Type some words.",
    "no_candidates": "Give at least one candidate text, one per line.",
    "unread_pairs": "{pairs}{more}: no word the model can read (only invisible or control "
                    "characters); fix or drop those pairs.",
    "needs_gold_pairs": "Training needs at least 4 pairs with gold links, got {n}: give a "
                        "file in one of the Align view's formats, with links.",
}


def name_of(name: str, k: int | None = None) -> str:
    """A text's name in English: "Text A" for "text_a", "Candidate 3" for ("candidate",
    3); a name that is not a code is shown as it is."""
    if name == "candidate":
        return f"Candidate {k}"
    return NAMES.get(name, name)


def _english(code: str, params: dict) -> str:
    shown = dict(params)
    if "name" in shown:
        shown["name"] = name_of(shown["name"], shown.get("k"))
    if code == "unread_pairs":
        places = [f"pair {k} (text {side.upper()})" for k, side in params["pairs"]]
        shown["pairs"] = ", ".join(places[:5])
        shown["more"] = f" and {len(places) - 5} more" if len(places) > 5 else ""
    return MESSAGES[code].format(**shown)


class SinkscopeError(ValueError):
    """Bad input to sinkscope; the message says what to change.

    Attributes:
        code: which mistake (a key of :data:`MESSAGES`, or of a sub-package's own table;
            "" for a message of its own).
        params: its details (numbers, names as codes), for a page to word in its language.
    """

    def __init__(self, message: str = "", *, code: str = "", params: dict | None = None):
        super().__init__(message)
        self.code, self.params = code, dict(params or {})

    @classmethod
    def of(cls, code: str, **params) -> SinkscopeError:
        """The error ``code`` with ``params``, its message :data:`MESSAGES`'s sentence.

        Example: ``TextError.of("text_empty", name="text_b")`` says "Text B is empty: …".
        """
        return cls(_english(code, params), code=code, params=params)


class TextError(SinkscopeError):
    """A text that cannot be related (empty, blank, nothing left after tokenising)."""


class SettingsError(SinkscopeError):
    """A setting out of range: ε, half-steps, weights, layer, head, mode."""


class ModelError(SinkscopeError):
    """A model that is not on the operator's allow-list, or that failed to load."""


class AlignerError(SettingsError):
    """A trained aligner's setting out of range, or a file or checkpoint that cannot be
    used; its sentences are :data:`engine.aligner.config.MESSAGES`'."""

    @classmethod
    def of(cls, code: str, **params) -> AlignerError:
        from .aligner.config import MESSAGES

        return cls(MESSAGES[code].format(**params), code=code, params=params)
