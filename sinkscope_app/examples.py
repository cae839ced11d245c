"""Example text pairs from ``sinkscope_app/assets/examples.json`` (``assets/`` at the root)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

PATH = Path(__file__).resolve().parent / "assets" / "examples.json"
SETS_PATH = PATH.with_name("sentences.json")


SETTINGS = ("layer", "head", "eps", "steps", "pool")  # what an example may set


@functools.lru_cache(maxsize=1)
def load(path: str = str(PATH)) -> dict[str, dict]:
    """id → {"title", "a", "b", "mode", "settings", "note"}, in file order.

    ``settings`` holds the controls (layer, head, eps, steps, pool) that show the
    example's point; ``note`` says what to look at.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out = {}
    for e in data["examples"]:
        settings = {k: v for k, v in e.get("settings", {}).items() if k in SETTINGS}
        out[e["id"]] = {"title": e["title"], "a": e["a"], "b": e.get("b", ""),
                        "mode": e.get("mode"), "settings": settings, "note": e.get("note", "")}
    return out


@functools.lru_cache(maxsize=1)
def sentence_sets(path: str = str(SETS_PATH)) -> dict[str, dict]:
    """id → {"title", "a", "candidates" (list), "note"} for the Sentences view, in file order."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {e["id"]: {"title": e["title"], "a": e["a"], "candidates": list(e["candidates"]),
                      "note": e.get("note", "")} for e in data["sets"]}
