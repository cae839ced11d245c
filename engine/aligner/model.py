"""The aligner: a sentence model's top layers fine-tuned, word pooling, Q/K heads, and a
Sinkhorn (dustbin) or softmax final layer — the Sinkhorn Transformer on text.

For a pair of texts, each is read in its own context: the base model's layers below
``layer − top`` are frozen (their output is cached once per corpus, :mod:`.data`), the
``top`` layers up to hidden state ``layer`` are fine-tuned copies (without dropout), and
subword states are averaged into word vectors h. The heads give unit vectors q = W_Q h / ‖W_Q h‖ and
k = W_K h / ‖W_K h‖, the scores are S = s ⟨qᵢ, kⱼ⟩ with a learned scale s, and each word's
dustbin score is z = s (δ + uᵀ h/‖h‖) (one learned δ, a learned u per side). The final
layer (:mod:`.layers`) turns S and z into a plan; links are where the plan exceeds θ.

W_Q and W_K start at the identity, so an untrained aligner scores words by the cosine of
their states, as the untrained ``hidden`` source of :mod:`engine.alignment` does.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

from .config import AlignerError, AlignerSettings
from .layers import softmax_layer, sinkhorn_layer

SCALE = 10.0  # initial s: cosines in [−1, 1] become scores in [−10, 10]
NULL = 0.6  # initial δ: a word whose best cosine is below ~0.6 leans to the dustbin


def run_layers(layers, config, h: torch.Tensor, mask: torch.Tensor, bias=None) -> torch.Tensor:
    """Hidden states through encoder layers: h (B, T, d), mask (B, T) → (B, T, d).

    The mask is the one the model itself builds (``create_bidirectional_mask``); ``bias``
    is MPNet's relative position bias (B, H, T, T), passed to every layer.
    """
    from transformers.masking_utils import create_bidirectional_mask

    ext = create_bidirectional_mask(config=config, inputs_embeds=h, attention_mask=mask)
    for layer in layers:
        out = layer(h, ext, bias) if bias is not None else layer(h, attention_mask=ext)
        h = out[0] if isinstance(out, tuple) else out
    return h


class Aligner(nn.Module):
    """A trainable aligner on an :class:`~engine.models.encoder.Encoder` (not changed).

    Args:
        encoder: the loaded base model (shared; its own layers stay frozen).
        settings: :class:`AlignerSettings` (its ``layer`` and ``top`` must fit the model).

    The module's parameters are the fine-tuned layers (copies), the heads, the scale and
    the dustbin; ``theta`` (a float) is the link threshold tuned on dev.
    """

    def __init__(self, encoder, settings: AlignerSettings) -> None:
        super().__init__()
        if settings.layer > encoder.n_layers:
            raise AlignerError.of("layer_above_model", layer=settings.layer,
                                  model=encoder.name, layers=encoder.n_layers)
        object.__setattr__(self, "encoder", encoder)  # not a submodule: never saved or trained
        self.settings = settings
        lo = settings.layer - settings.top
        self.layers = nn.ModuleList(copy.deepcopy(layer) for layer in
                                    encoder.arch.layers(encoder.model)[lo:settings.layer])
        for m in self.layers.modules():  # no dropout: MTRef dev 0.839 against 0.837 with it
            if isinstance(m, nn.Dropout):
                m.p = 0.0
        d = int(encoder.model.config.hidden_size)
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.ua = nn.Linear(d, 1, bias=False)
        self.ub = nn.Linear(d, 1, bias=False)
        with torch.no_grad():
            self.wq.weight.copy_(torch.eye(d))
            self.wk.weight.copy_(torch.eye(d))
            self.ua.weight.zero_()
            self.ub.weight.zero_()
        self.log_scale = nn.Parameter(torch.tensor(math.log(SCALE)))
        self.null = nn.Parameter(torch.tensor(NULL))
        self.theta = 0.5
        self.name = ""  # what its alignments call it (the folder or allow-list name)
        self.to(device=encoder.device, dtype=encoder.dtype)

    @property
    def device(self) -> torch.device:
        return self.encoder.device

    def _bias(self, h: torch.Tensor):
        arch = self.encoder.arch
        return None if arch.bias is None else arch.bias(self.encoder.model, h)

    @torch.no_grad()
    def frozen_states(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The input of the first fine-tuned layer: ids, mask (B, T) → (B, T, d)."""
        model = self.encoder.model
        lo = self.settings.layer - self.settings.top
        h = model.embeddings(input_ids=ids)
        layers = self.encoder.arch.layers(model)[:lo]
        return run_layers(layers, model.config, h, mask, self._bias(h)) if lo else h

    def words(self, h: torch.Tensor, mask: torch.Tensor, pool: torch.Tensor) -> torch.Tensor:
        """Word vectors (N, W, d) from cached states h (N, T, d): the fine-tuned layers,
        then each word the mean of its tokens (``pool`` (N, W, T))."""
        if len(self.layers):
            h = run_layers(self.layers, self.encoder.model.config, h, mask, self._bias(h))
        return pool @ h

    def scores(self, wa: torch.Tensor, wb: torch.Tensor):
        """(S (B, n, m), zᴬ (B, n), zᴮ (B, m), corner ()) from word vectors of A and B."""
        s = self.log_scale.exp()
        unit = nn.functional.normalize
        S = s * unit(self.wq(wa), dim=-1) @ unit(self.wk(wb), dim=-1).transpose(-1, -2)
        za = s * (self.null + self.ua(unit(wa, dim=-1))[..., 0])
        zb = s * (self.null + self.ub(unit(wb, dim=-1))[..., 0])
        return S, za, zb, s * self.null

    def forward(self, batch) -> torch.Tensor:
        """log π of a :class:`~engine.aligner.data.Batch`: (B, n+1, m+1) for ``sinkhorn``
        (the last row and column are the dustbins), (B, n, m+1) for ``softmax``."""
        B = batch.mask_a.shape[0]
        n, m = batch.mask_a.shape[1], batch.mask_b.shape[1]
        w = self.words(batch.h, batch.mask, batch.pool)
        S, za, zb, corner = self.scores(w[:B, :n], w[B:, :m])
        if self.settings.final == "softmax":
            return softmax_layer(S, za, batch.mask_b)
        eps = 1.0 if self.training else self.settings.eps  # trained at 1, aligns softer
        return sinkhorn_layer(S, za, zb, corner, batch.mask_a, batch.mask_b,
                              self.settings.half_steps, eps)

    def plan(self, batch) -> torch.Tensor:
        """The word-to-word block of the plan (B, n, m), πᵢⱼ ∈ [0, 1]; 0 off the valid
        words."""
        n, m = batch.mask_a.shape[1], batch.mask_b.shape[1]
        P = torch.exp(self(batch)[:, :n, :m])
        return torch.where(batch.mask_a[:, :, None] & batch.mask_b[:, None, :], P, 0.0)
