"""What a text or a number of a request must be, as JSON Schema states it (torch-free: the
jobs' schemas read it too).

The patterns are searches, the same in Python's ``re``, pydantic's regex and ECMA-262:
:data:`WS` is ``str.isspace``'s characters, so ``str.split`` splits at them; a readable
character is neither that nor a control character (``engine.models.encoder.clean_text``
turns those into spaces).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator

WS = ("\\t-\\r\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029"
      "\\u202f\\u205f\\u3000")
READABLE = ("[^\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029"
            "\\u202f\\u205f\\u3000]")
WORDY = f"[^{WS}]"
LINK = "[0-9]{1,6}[-p][0-9]{1,6}"
PHARAOH = f"^[{WS}]*({LINK}([{WS}]+{LINK})*)?[{WS}]*$"


def _whole(v: Any) -> Any:
    """A whole number as JSON Schema's ``integer`` has it: 3 or 3.0, never true or "3"."""
    if isinstance(v, (bool, str)):
        raise ValueError("Input should be a valid integer")
    return v


#: A JSON Schema ``integer``: an int, or a float with no fraction; not a boolean or a string.
StrictInt = Annotated[int, BeforeValidator(_whole)]


def whole(**limits: Any) -> Any:
    """A JSON Schema ``integer`` within ``limits`` (``ge``, ``le``, ``gt``), as
    :data:`StrictInt` takes it. (pydantic writes the limits into the schema only when they
    come before the validator; after it they are left as unknown keywords.)"""
    from pydantic import Field

    return Annotated[int, Field(**limits), BeforeValidator(_whole)]
