"""``from engine.client import EngineClient``: the served engine's client, where the public
API has always named it (it lives in :mod:`engine.serving.client`)."""

from .serving.client import (EngineBusy, EngineClient, EngineUnavailable, RequestTimedOut,
                             RequestTooLarge, ServedModel)

__all__ = ["EngineBusy", "EngineClient", "EngineUnavailable", "RequestTimedOut",
           "RequestTooLarge", "ServedModel"]
