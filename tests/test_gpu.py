"""CUDA: the same results on the GPU (float32, batched). Skipped without a GPU.

``python -m benchmarks.gpu`` measures the same things with more sizes and prints the
figures; these tests keep the essentials in ``make test`` on a machine with a GPU.
"""

import numpy as np
import pytest
import torch

from engine import Encoder, sinkhorn, softmax_attention

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
U32 = float(np.finfo(np.float32).eps)


def wide_scores(shape, seed=0):
    """Scores spread like the trained MiniLM's cross-text logits (std 2.4, tails to ±30)."""
    rng = np.random.default_rng(seed)
    S = rng.normal(size=shape) * 2.4
    S.reshape(-1)[:: max(1, S.size // 7)] = 30.0
    return S


def rel_err(got, ref) -> float:
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    return float(np.abs(got - ref).max() / np.abs(ref).max())


@pytest.fixture(scope="module")
def encodings():
    enc = Encoder.default(device="cpu")
    return tuple(enc.encode_many(["She sat on the river bank and watched the water.",
                                  "He went to the bank to deposit his money."],
                                 attentions=False))


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
@pytest.mark.parametrize("eps", [0.01, 0.03, 0.1])
def test_small_eps_on_cuda_falls_back_without_nan_or_a_wrong_plan(eps):
    # max|S|/ε reaches 3,000: kernel scaling overflows float32, the log domain must take over.
    S = wide_scores((12, 30, 34))
    a, b = np.full(30, 1 / 30), np.full(34, 1 / 34)
    ref = sinkhorn(torch.from_numpy(S), torch.from_numpy(a), torch.from_numpy(b), eps, 200,
                   method="log").plan.numpy()
    dev = [torch.tensor(x, dtype=torch.float32, device="cuda") for x in (S, a, b)]
    bound = 200 * U32 * (1 + np.abs(S).max() / eps)
    for method in ("auto", "log"):
        plan = sinkhorn(*dev, eps, 200, method=method).plan
        assert torch.isfinite(plan).all() and (plan >= 0).all()
        assert rel_err(plan.cpu(), ref) <= bound, method


@cuda
@pytest.mark.model
def test_grid_eps_path_and_batch_on_cuda_match_cpu(encodings):
    from engine import eps_path, relate_encodings
    from engine.relation.relate import relate_batch

    for eps in (0.05, 1.0):
        kw = dict(layer="all", head="all", eps=eps, half_steps=100)
        cpu = relate_encodings(encodings, **kw)
        gpu = relate_encodings(encodings, device="cuda", **kw)
        bound = 200 * U32 * (1 + np.abs(cpu.scores).max() / eps)
        assert np.isfinite(gpu.coupling.plan).all()
        assert rel_err(gpu.coupling.plan, cpu.coupling.plan) <= bound
        assert rel_err(gpu.softmax_plan, cpu.softmax_plan) <= 1e-5
    r = relate_encodings(encodings, layer=3, head=5, eps=1.0, half_steps=1)
    e_cpu, p_cpu = eps_path(r, [5.0, 1.0, 0.1])
    e_gpu, p_gpu = eps_path(r, [5.0, 1.0, 0.1], device="cuda")
    assert np.array_equal(e_cpu, e_gpu) and rel_err(p_gpu, p_cpu) < 1e-3
    jobs = [(encodings, dict(layer=5, head="mean", eps=e, half_steps=100)) for e in (0.2, 1, 4)]
    batch = relate_batch(jobs, device="cuda")
    for (e, kw), got in zip(jobs, batch):
        alone = relate_encodings(e, device="cuda", **kw)
        assert np.abs(got.coupling.plan - alone.coupling.plan).max() < 1e-5


@cuda
def test_lattice_frames_on_cuda_match_the_cpu_lattice():
    from engine.relation.lattice import lattice

    S = wide_scores((20, 24), seed=1)
    a, b = np.full(20, 1 / 20), np.full(24, 1 / 24)
    eps, steps = np.array([0.05, 0.5, 5.0]), np.array([1, 2, 5, 50, 200])
    ref = lattice(S, a, b, eps, steps, exact=np.outer(a, b))
    dev = torch.device("cuda")
    St = torch.tensor(S, dtype=torch.float32, device=dev)
    ed = torch.tensor(ref.eps, dtype=torch.float32, device=dev)
    c = sinkhorn(St[None] / ed[:, None, None], torch.tensor(a, dtype=torch.float32, device=dev),
                 torch.tensor(b, dtype=torch.float32, device=dev), 1.0, int(ref.steps[-1]),
                 record=ref.steps, record_plans=True, check_inputs=False)
    plans = c.history.plans.cpu().numpy()
    assert plans.shape == ref.plans.shape and np.isfinite(plans).all()
    for i, e in enumerate(ref.eps):
        assert rel_err(plans[i], ref.plans[i]) <= 200 * U32 * (1 + np.abs(S).max() / e)


@cuda
def test_unbalanced_and_partial_on_cuda_match_cpu():
    from engine.solver.core import partial

    S = wide_scores((4, 16, 18), seed=2) / 4
    a, b = np.full(16, 1 / 16), np.full(18, 1 / 18)
    cpu = [torch.from_numpy(x) for x in (S, a, b)]
    dev = [torch.tensor(x, dtype=torch.float32, device="cuda") for x in (S, a, b)]
    for eps in (0.1, 1.0):
        bound = 200 * U32 * (1 + np.abs(S).max() / eps)
        for tau in (1.0, 10.0):
            ref = sinkhorn(*cpu, eps, 200, tau=tau).plan.numpy()
            got = sinkhorn(*dev, eps, 200, tau=tau).plan
            assert torch.isfinite(got).all() and rel_err(got.cpu(), ref) <= bound
        ref = partial(*cpu, eps, mass=0.7, half_steps=200).plan.numpy()
        got = partial(*dev, eps, mass=0.7, half_steps=200).plan
        assert torch.isfinite(got).all() and rel_err(got.cpu(), ref) <= bound
        assert abs(float(got.sum((-2, -1)).mean()) - 0.7) < 1e-4


@cuda
@pytest.mark.model
def test_encoder_on_cuda_matches_cpu():
    text = "The bank of the river."
    g = Encoder.default(device="cuda").encode(text)
    c = Encoder.default(device="cpu").encode(text)
    assert np.abs(g.q - c.q).max() < 1e-3 and np.abs(g.attentions - c.attentions).max() < 1e-4


@cuda
def test_an_aligner_trains_on_cuda_and_its_plans_match_the_cpus(tiny_models, tmp_path):
    """--device cuda: the fine-tuned layers, the cache and the dustbin layer run on the GPU;
    the same weights give the same plans on both devices (float32)."""
    from engine.aligner import checkpoint
    from engine.aligner.data import prepare
    from engine.aligner.extract import align, plans
    from engine.aligner.training import train
    from tests.test_aligner import synthetic_pairs, tiny_settings

    s = tiny_settings(str(tiny_models["bert"]), epochs=2)
    tr, dv = synthetic_pairs(96, 0), synthetic_pairs(32, 1)
    gpu = train(tr, dv, s, device="cuda")
    assert next(gpu.aligner.parameters()).device.type == "cuda"
    assert gpu.dev_total_f1 > 0.8
    d = checkpoint.save(gpu, tmp_path / "al")
    cpu = checkpoint.load(d, device="cpu")
    Vg = plans(gpu.aligner, prepare(dv, gpu.aligner))
    Vc = plans(cpu, prepare(dv, cpu))
    assert max(float(np.abs(g - c).max()) for g, c in zip(Vg, Vc)) < 1e-4
    same = [a.links == b.links for a, b in zip(align(gpu.aligner, dv), align(cpu, dv))]
    assert sum(same) >= len(same) - 1
