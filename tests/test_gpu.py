"""CUDA: the same results on the GPU (float32, batched). Skipped without a GPU."""

import numpy as np
import pytest
import torch

from engine import Encoder, sinkhorn, softmax_attention

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@cuda
def test_sinkhorn_on_cuda_matches_cpu():
    rng = np.random.default_rng(0)
    S = torch.tensor(rng.normal(size=(6, 12, 40, 50)) * 2.4, dtype=torch.float32)
    a = torch.full((40,), 1 / 40)
    b = torch.full((50,), 1 / 50)
    for eps in (0.05, 0.5, 2.0):
        cpu = sinkhorn(S, a, b, eps=eps, half_steps=300)
        gpu = sinkhorn(S.cuda(), a.cuda(), b.cuda(), eps=eps, half_steps=300)
        assert gpu.plan.device.type == "cuda" and gpu.plan.dtype == torch.float32
        assert (gpu.plan.cpu() - cpu.plan).abs().max() < 1e-5
        one = sinkhorn(S.cuda(), a.cuda(), b.cuda(), eps=eps, half_steps=1)
        assert (one.plan - a.cuda()[:, None] * softmax_attention(S.cuda(), eps)).abs().max() < 1e-6


@cuda
def test_encoder_on_cuda_matches_cpu():
    text = "The bank of the river."
    g = Encoder.default(device="cuda").encode(text)
    c = Encoder.default(device="cpu").encode(text)
    assert np.abs(g.q - c.q).max() < 1e-3 and np.abs(g.attentions - c.attentions).max() < 1e-4
