"""Example text pairs from ``assets/examples.json``."""

from __future__ import annotations

import functools
import json
from pathlib import Path

PATH = Path(__file__).resolve().parent.parent / "assets" / "examples.json"
SETS_PATH = PATH.with_name("sentences.json")


@functools.lru_cache(maxsize=1)
def load(path: str = str(PATH)) -> dict[str, dict]:
    """id → {"title", "a", "b", "mode"?, "note"?}, in file order."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out = {}
    for e in data["examples"]:
        out[e["id"]] = {"title": e["title"], "a": e["a"], "b": e.get("b", ""),
                        "mode": e.get("mode"), "note": e.get("note", "")}
    return out


@functools.lru_cache(maxsize=1)
def sentence_sets(path: str = str(SETS_PATH)) -> dict[str, dict]:
    """id → {"title", "a", "candidates" (list), "note"} for the Sentences view, in file order."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {e["id"]: {"title": e["title"], "a": e["a"], "candidates": list(e["candidates"]),
                      "note": e.get("note", "")} for e in data["sets"]}
