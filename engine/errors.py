"""Errors whose messages say what to change."""


class SinkscopeError(ValueError):
    """Bad input to sinkscope; the message says what to change."""


class TextError(SinkscopeError):
    """A text that cannot be related (empty, blank, nothing left after tokenising)."""


class SettingsError(SinkscopeError):
    """A setting out of range: ε, half-steps, weights, layer, head, mode."""


class ModelError(SinkscopeError):
    """A model that is not on the operator's allow-list, or that failed to load."""
