"""What the pages share about the main page without importing its folder: the texts every
page opens with (the session keys ``ex``, ``a``, ``b``, shared by the main page and Learn)
and links into the main page by the names its address documents (docs/urls.md).
"""

from __future__ import annotations

from typing import Any, Mapping
from urllib.parse import urlencode

from .inputs import written

#: The example the main page and Learn open with, and its texts (assets/examples.json).
DEFAULT_EXAMPLE = "bank"
DEFAULT_TEXTS = {"ex": DEFAULT_EXAMPLE,
                 "a": "I sat on the bank of the river and watched the water.",
                 "b": "She went to the bank to deposit her money."}
#: The main page's address names a link may set (its session keys are the same names).
MAIN_NAMES = ("ex", "a", "b", "model", "mode", "layer", "head", "weights", "pool", "eps",
              "steps", "view")


def main_link(values: Mapping[str, Any], lang: str = "en") -> str:
    """A relative link to the main page at ``values`` (keys of :data:`MAIN_NAMES`; the
    others keep their defaults there), in ``lang`` (left out for English)."""
    q = {k: written(values[k]) for k in MAIN_NAMES if k in values}
    return "./?" + urlencode({**q, "lang": lang} if lang != "en" else q)


def compare_link(text_a: str, text_b: str, lang: str = "en") -> str:
    """The main page's Compare view of a pair (its URL names ``a``, ``b``, ``view``), in
    ``lang`` (left out for English)."""
    return main_link({"ex": "custom", "a": text_a, "b": text_b, "view": "compare"}, lang)
