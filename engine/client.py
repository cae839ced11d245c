"""``from engine.client import EngineClient``: the served engine's client, where the public
API has always named it (it lives in :mod:`engine.serving.client`)."""

from .serving.client import EngineClient, EngineUnavailable, ServedModel

__all__ = ["EngineClient", "EngineUnavailable", "ServedModel"]
