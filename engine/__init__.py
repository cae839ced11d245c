"""sinkscope's engine: texts as measures, softmax attention and Sinkhorn couplings."""

from .errors import ModelError, SettingsError, SinkscopeError, TextError
from .sinkhorn import sinkhorn, softmax_attention
from .types import Coupling, Encoding, Projection, Relation, Summary

__all__ = [
    "Coupling", "Encoding", "ModelError", "Projection", "Relation", "SettingsError",
    "SinkscopeError", "Summary", "TextError", "sinkhorn", "softmax_attention",
]

from .encoder import Encoder, allowed_models  # noqa: E402
from .projection import project  # noqa: E402
from .relate import encode_texts, eps_path, relate, relate_encodings  # noqa: E402

__all__ += ["Encoder", "allowed_models", "encode_texts", "eps_path", "project", "relate",
            "relate_encodings"]
