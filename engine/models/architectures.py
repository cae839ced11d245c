"""Queries, keys and position biases of the encoder architectures sinkscope reads.

A model's attention logits for layer l and head h are

    S = Q Kᵀ / √d_head + B,

with Q and K the layer's query and key projections of the layer's input (hidden state l)
and B a position bias that some architectures add inside attention (0 for the others).
Each :class:`Architecture` says where a model keeps the projections and how to compute
its bias. Everything is recomputed from hidden states with the model's own weights: no
hooks and nothing changed on the model, so one loaded model can serve many sessions.

| architecture | ``config.model_type`` | Q, K of layer l | bias B inside attention |
|---|---|---|---|
| BERT (MiniLM, multilingual MiniLM) | ``bert`` | ``encoder.layer[l].attention.self.query/key`` | none |
| RoBERTa, XLM-RoBERTa | ``roberta``, ``xlm-roberta`` | as BERT | none |
| DistilBERT | ``distilbert`` | ``transformer.layer[l].attention.q_lin/k_lin`` | none |
| MPNet (all-mpnet-base-v2) | ``mpnet`` | ``encoder.layer[l].attention.attn.q/k`` | relative position bias, per head, shared by all layers |

BERT, RoBERTa and DistilBERT add absolute position embeddings to the input, so positions
are already inside Q and K. MPNet also adds a learned bias b_h(j − i) that depends only on
the relative position of the two tokens (``MPNetEncoder.compute_position_bias``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from ..errors import ModelError


@dataclass(frozen=True)
class Architecture:
    """Where one family of encoders keeps what sinkscope reads.

    Attributes:
        name: the family's name as users know it ("BERT", "MPNet").
        model_types: ``config.model_type`` values of the family.
        examples: well-known sentence-transformers models of the family.
        layers: model → its attention layers, in order.
        projections: layer → (query, key) linear maps of hidden size → H·d_head.
        bias: (model, layer input (B, T, d)) → (B, H, T, T) position bias added to
            QKᵀ/√d_head inside attention; None when the family adds none.
        position_offset: positions the embedding table reserves (RoBERTa-style models
            count positions from padding_idx + 1), so the usable length is
            ``max_position_embeddings - position_offset``.
    """

    name: str
    model_types: tuple[str, ...]
    examples: str
    layers: Callable[[nn.Module], Sequence[nn.Module]]
    projections: Callable[[nn.Module], tuple[nn.Module, nn.Module]]
    bias: Callable[[nn.Module, torch.Tensor], torch.Tensor] | None = None
    position_offset: int = 0

    @property
    def has_bias(self) -> bool:
        return self.bias is not None


def _bert_layers(model):
    return model.encoder.layer


def _bert_qk(layer):
    sa = layer.attention.self
    return sa.query, sa.key


def _mpnet_bias(model, x: torch.Tensor) -> torch.Tensor:
    """MPNet's relative position bias for inputs of x's length: (B, H, T, T)."""
    return model.encoder.compute_position_bias(x)


ARCHITECTURES: tuple[Architecture, ...] = (
    Architecture("BERT", ("bert",), "all-MiniLM-L6-v2, paraphrase-multilingual-MiniLM-L12-v2",
                 _bert_layers, _bert_qk),
    Architecture("RoBERTa", ("roberta", "xlm-roberta"),
                 "all-distilroberta-v1, paraphrase-xlm-r-multilingual-v1",
                 _bert_layers, _bert_qk, position_offset=2),
    Architecture("DistilBERT", ("distilbert",), "msmarco-distilbert-base-v4",
                 lambda m: m.transformer.layer,
                 lambda layer: (layer.attention.q_lin, layer.attention.k_lin)),
    Architecture("MPNet", ("mpnet",), "all-mpnet-base-v2",
                 _bert_layers,
                 lambda layer: (layer.attention.attn.q, layer.attention.attn.k),
                 bias=_mpnet_bias, position_offset=2),
)
SUPPORTED = ", ".join(f"{a.name} ({'/'.join(a.model_types)})" for a in ARCHITECTURES)


def architecture_of(model: nn.Module) -> Architecture:
    """The :class:`Architecture` of a loaded Hugging Face model.

    Raises:
        ModelError: the model's type is not one sinkscope reads, or its layers are not
            where the family keeps them; the message names the supported families.
    """
    model_type = str(getattr(getattr(model, "config", None), "model_type", "") or "")
    arch = next((a for a in ARCHITECTURES if model_type in a.model_types), None)
    if arch is None:
        raise ModelError(f"The model's architecture {model_type or type(model).__name__!r} is "
                         f"not supported: sinkscope reads the queries and keys of {SUPPORTED}. "
                         "Choose a sentence-transformers model of one of these families.")
    try:
        layers = arch.layers(model)
        q, k = arch.projections(layers[0])
        if arch.bias is not None:
            getattr(model.encoder, "compute_position_bias")
    except (AttributeError, IndexError, TypeError):
        raise ModelError(f"The {arch.name} model {type(model).__name__} does not keep its "
                         "attention layers where the library's own one does; sinkscope reads "
                         f"the queries and keys of {SUPPORTED}.") from None
    if not (isinstance(q, nn.Linear) and isinstance(k, nn.Linear)):
        raise ModelError(f"The {arch.name} model {type(model).__name__} has no linear query "
                         "and key projections.")
    return arch


def queries_keys(arch: Architecture, model: nn.Module, hidden_states: Sequence[torch.Tensor],
                 n_heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each layer's queries and keys, recomputed from its input with its own weights.

    Args:
        arch: the model's architecture. model: the loaded model.
        hidden_states: L + 1 tensors (B, T, d); ``hidden_states[l]`` is the input of layer l.
        n_heads: H.

    Returns:
        q, k: (B, L, H, T, d_head); Q_lh = x_l W_Q,lh + b_Q,lh.
    """
    qs, ks = [], []
    for layer, x in zip(arch.layers(model), hidden_states):
        B, T = x.shape[0], x.shape[1]
        wq, wk = arch.projections(layer)
        qs.append(wq(x).view(B, T, n_heads, -1).transpose(1, 2))
        ks.append(wk(x).view(B, T, n_heads, -1).transpose(1, 2))
    return torch.stack(qs, 1), torch.stack(ks, 1)


def position_bias(arch: Architecture, model: nn.Module, x: torch.Tensor) -> torch.Tensor | None:
    """The bias B the model adds to QKᵀ/√d_head inside attention: (B, 1, H, T, T), the
    singleton dimension standing for "the same in every layer"; None when there is none.

    Args:
        x: (B, T, d) an input of the first layer (only its shape and device are read).
    """
    if arch.bias is None:
        return None
    return arch.bias(model, x)[:, None]
