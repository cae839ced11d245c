"""The trained aligner: its final layers, what a tiny model learns, save/load, the allow-list.

A tiny random BERT (tests/support/tiny_models.py) learns a synthetic relation: the same
content words in both texts, in the same order, linked one to one, with filler words
inserted at random places on both sides and left unaligned in the gold (so the untrained
cosine links filler to filler, and the aligner must learn to leave them out).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings as hsettings
from hypothesis import strategies as st

from engine import settings as engine_settings
from engine.alignment.readers import make_pair
from engine.aligner import checkpoint
from engine.aligner.config import AlignerError, AlignerSettings
from engine.aligner.extract import align, plans, tune_theta
from engine.aligner.layers import gold_loss, sinkhorn_layer, softmax_layer
from engine.aligner.training import train

CONTENT = ("bank river money water committee meeting fox dog paris research chat perro "
           "parque brown quick lazy").split()
FILLER = ("the", "of", "and", "to")


def synthetic_pairs(count: int, seed: int) -> list:
    """Identity links between content words, 1–2 fillers inserted on each side, unaligned."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        words = [str(w) for w in rng.choice(CONTENT, size=rng.integers(3, 7), replace=False)]

        def fill(ws: list[str]) -> list[str]:
            ws = list(ws)
            for f in rng.choice(FILLER, size=rng.integers(1, 3)):
                ws.insert(int(rng.integers(0, len(ws) + 1)), str(f))
            return ws

        a, b = fill(words), fill(words)
        ia = [i for i, w in enumerate(a) if w in CONTENT]
        ib = [j for j, w in enumerate(b) if w in CONTENT]
        gold = " ".join(f"{i}-{j}" for i, j in zip(ia, ib))
        out.append(make_pair(" ".join(a), " ".join(b), gold))
    return out


def tiny_settings(model: str, final: str = "sinkhorn", **kw) -> AlignerSettings:
    base = dict(model=model, final=final, layer=2, top=1, epochs=4, batch=8, lr=1e-3,
                head_lr=1e-2, patience=0)
    return AlignerSettings(**{**base, **kw})


@pytest.fixture(scope="module")
def tiny(tiny_models):
    """(encoder, training pairs, dev pairs, held-out pairs) on the tiny BERT."""
    from engine.models.encoder import Encoder

    enc = Encoder.load(str(tiny_models["bert"]), device="cpu")
    return enc, synthetic_pairs(96, 0), synthetic_pairs(32, 1), synthetic_pairs(32, 2)


@pytest.fixture(scope="module")
def trained(tiny):
    enc, tr, dv, _ = tiny
    return {final: train(tr, dv, tiny_settings(enc.name, final), encoder=enc, threads=1)
            for final in ("sinkhorn", "softmax")}


def random_problem(seed: int, sizes=((3, 4), (5, 2)), dtype=torch.float64):
    """A padded batch: S, za, zb, corner and the masks of pairs of the given sizes."""
    g = torch.Generator().manual_seed(seed)
    B, n, m = len(sizes), max(s[0] for s in sizes), max(s[1] for s in sizes)
    S = 2 * torch.randn(B, n, m, generator=g, dtype=dtype)
    za, zb = torch.randn(B, n, generator=g, dtype=dtype), torch.randn(B, m, generator=g,
                                                                        dtype=dtype)
    mask_a = torch.zeros(B, n, dtype=torch.bool)
    mask_b = torch.zeros(B, m, dtype=torch.bool)
    for k, (nk, mk) in enumerate(sizes):
        mask_a[k, :nk], mask_b[k, :mk] = True, True
    return S, za, zb, torch.tensor(0.3, dtype=dtype), mask_a, mask_b


# ---- the final layers ----------------------------------------------------------------

def test_dustbin_layer_gradients_match_finite_differences():
    S, za, zb, c, ma, mb = random_problem(0)
    args = [t.clone().requires_grad_(True) for t in (S, za, zb, c)]
    assert torch.autograd.gradcheck(
        lambda S, za, zb, c: sinkhorn_layer(S, za, zb, c, ma, mb, 9).exp(), args)


@hsettings(max_examples=12, deadline=None)
@given(n=st.integers(1, 6), m=st.integers(1, 6), seed=st.integers(0, 10_000),
       scale=st.floats(0.1, 1.5), eps=st.sampled_from([1.0, 1.4, 0.7]))
def test_dustbin_layer_is_the_sinkhorn_coupling_of_the_bordered_scores(n, m, seed, scale, eps):
    """Converged, the layer is POT's entropic plan (at ε) of Z = [[S, zᴬ], [zᴮ, c]] with
    a = (1, …, 1, m), b = (1, …, 1, n): every real word totals 1 with its dustbin."""
    import ot

    S, za, zb, c, ma, mb = random_problem(seed, ((n, m),))
    S, za, zb = scale * S, scale * za, scale * zb
    P = sinkhorn_layer(S, za, zb, c, ma, mb, 1001, eps).exp()[0].numpy()
    Z = np.block([[S[0].numpy(), za[0, :, None].numpy()],
                  [zb[0, None].numpy(), np.array([[0.3]])]])
    a = np.r_[np.ones(n), m] / (n + m)
    b = np.r_[np.ones(m), n] / (n + m)
    ref = (n + m) * ot.sinkhorn(a, b, -Z, eps, method="sinkhorn_log", numItermax=2000,
                                stopThr=1e-13)
    np.testing.assert_allclose(P, ref, atol=1e-8)
    np.testing.assert_allclose(P[:n].sum(1), 1.0, atol=1e-10)
    np.testing.assert_allclose(P[:, :m].sum(0), 1.0, atol=1e-8)


def test_padding_changes_nothing_for_the_real_words():
    S, za, zb, c, ma, mb = random_problem(1, ((3, 4), (5, 2)))
    both = sinkhorn_layer(S, za, zb, c, ma, mb, 21)  # (2, 6, 5): dustbins last
    alone = sinkhorn_layer(S[:1, :3], za[:1, :3], zb[:1], c, ma[:1, :3], mb[:1], 21)
    np.testing.assert_allclose(both[0, :3], alone[0, :3], atol=1e-12)
    np.testing.assert_allclose(both[0, 5], alone[0, 3], atol=1e-12)  # B's dustbin row
    assert torch.isinf(both[0, 3:5]).all() and torch.isinf(both[1, :, 2:4]).all()


def test_softmax_baseline_has_no_null_for_b_and_sinkhorn_does():
    """Rows of the softmax layer total 1 over B and the null; B's dustbin scores change
    nothing there, while in the Sinkhorn layer a B word with a higher dustbin score sends
    more of its mass to the dustbin and less to A's words."""
    S, za, zb, c, ma, mb = random_problem(2, ((4, 3),))
    soft = softmax_layer(S, za, mb).exp()
    np.testing.assert_allclose(soft.sum(-1), 1.0, atol=1e-12)
    zb2 = zb.clone()
    zb2[0, 1] += 3.0
    P, P2 = (sinkhorn_layer(S, za, z, c, ma, mb, 301).exp() for z in (zb, zb2))
    assert P2[0, 4, 1] > P[0, 4, 1] + 0.1 and P2[0, :4, 1].sum() < P[0, :4, 1].sum() - 0.1
    assert soft.shape == (1, 4, 4)  # no dustbin row: B's words cannot be left unaligned


def test_gold_loss_counts_links_and_both_sides_nulls():
    logp = torch.log(torch.full((1, 3, 3), 0.5))
    gold = torch.tensor([[[True, False], [False, False]]])
    ma = mb = torch.ones(1, 2, dtype=torch.bool)
    # one link, A's word 1 and B's word 1 null: 3 terms of −log 0.5; softmax: 2 terms
    assert float(gold_loss(logp, gold, ma, mb, "sinkhorn")) == pytest.approx(math.log(2))
    assert float(gold_loss(logp[:, :2], gold, ma, mb, "softmax")) == pytest.approx(math.log(2))


# ---- learning a relation ---------------------------------------------------------------

def test_a_tiny_aligner_learns_links_and_leaves_fillers_unaligned(tiny, trained):
    enc, _, _, test = tiny
    r = trained["sinkhorn"]
    assert r.stopped == "done" and r.epochs == 4 and r.history[-1].loss < r.history[0].loss
    al = align(r.aligner, test)
    from engine.alignment.score import score

    assert score(al, test, bootstrap=0).macro["total_f1"] >= 0.95
    fillers = [(k, j) for k, p in enumerate(test) for j, w in enumerate(p.words_b)
               if w in FILLER]
    dust = np.mean([1 - al[k].values[:, j].sum() for k, j in fillers])
    assert dust > 0.5  # B's fillers go to the dustbin row
    assert all(a.method["method"] == "trained" for a in al)


def test_untrained_cosine_links_filler_to_filler_and_training_helps(tiny, trained):
    enc, tr, dv, _ = tiny
    r0 = train(tr, dv, tiny_settings(enc.name, epochs=1, lr=1e-7, head_lr=1e-6), encoder=enc,
               threads=1)
    assert trained["sinkhorn"].dev_total_f1 > r0.dev_total_f1 + 0.05


def test_the_dustbin_layer_trains_at_eps_1_and_aligns_at_the_settings_eps(tiny, trained):
    """In training the plan is the coupling at ε = 1; aligning (eval mode) it is the one at
    the settings' ε, softer for ε > 1; A's words still total 1 with their dustbin (B's
    nearly, after the fixed half-steps)."""
    import dataclasses

    from engine.aligner.data import batch, prepare

    al = trained["sinkhorn"].aligner
    b = batch(prepare(tiny[3][:4], al), range(4))
    n, m = b.mask_a.shape[1], b.mask_b.shape[1]
    settings = al.settings
    try:
        with torch.no_grad():
            al.train()
            fit = al(b)
            al.eval()
            soft = al(b)
            al.settings = dataclasses.replace(settings, eps=1.0)
            one = al(b)
    finally:
        al.settings = settings
        al.eval()
    assert trained["sinkhorn"].settings.eps == engine_settings.ALIGNER_RATES["eps"][0] > 1
    torch.testing.assert_close(one, fit)
    P, P1 = soft.exp(), one.exp()
    assert torch.special.entr(P).sum() > torch.special.entr(P1).sum() + 0.1  # softer
    np.testing.assert_allclose(P[:, :n].sum(-1)[b.mask_a], 1.0, atol=1e-5)
    np.testing.assert_allclose(P[:, :, :m].sum(-2)[b.mask_b], 1.0, atol=0.05)


def test_training_is_deterministic_for_a_seed(tiny, trained):
    enc, tr, dv, _ = tiny
    again = train(tr, dv, tiny_settings(enc.name), encoder=enc, threads=1)
    first = trained["sinkhorn"]
    assert again.dev_total_f1 == first.dev_total_f1 and again.theta == first.theta
    for k, v in first.aligner.state_dict().items():
        assert torch.equal(v, again.aligner.state_dict()[k]), k


def test_progress_and_a_stop_request_keep_the_weights_reached(tiny):
    enc, tr, dv, _ = tiny
    seen, calls = [], []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 3

    r = train(tr, dv, tiny_settings(enc.name), encoder=enc, progress=seen.append,
              should_stop=stop, threads=1)
    assert r.stopped == "requested" and r.epochs == 1 and 0 <= r.dev_total_f1 <= 1
    assert {p.stage for p in seen} == {"read", "train", "dev"}
    assert [p.step for p in seen if p.stage == "train"] == [1, 2, 3]


def test_save_then_load_gives_identical_links(tiny, trained, tmp_path):
    enc, _, _, test = tiny
    r = trained["sinkhorn"]
    checkpoint.save(r, tmp_path / "al")
    doc = json.loads((tmp_path / "al" / "config.json").read_text())
    assert doc["base_model"] == enc.name and doc["theta"] == r.theta
    assert doc["base_sha256"] == checkpoint.weights_hash(enc)
    back = checkpoint.load(tmp_path / "al", encoder=enc)
    assert [a.links for a in align(back, test)] == [a.links for a in align(r.aligner, test)]
    back2 = checkpoint.load(tmp_path / "al")  # the base model loaded by its name
    assert [a.links for a in align(back2, test)] == [a.links for a in align(r.aligner, test)]
    # an aligner saved before ε was a setting aligns at the ε its θ was tuned at, 1
    doc["settings"].pop("eps")
    (tmp_path / "al" / "config.json").write_text(json.dumps(doc))
    assert checkpoint.load(tmp_path / "al", encoder=enc).settings.eps == 1.0


def test_a_checkpoint_of_another_base_model_is_refused(tiny, trained, tiny_models, tmp_path):
    from engine.models.encoder import Encoder

    checkpoint.save(trained["softmax"], tmp_path / "al")
    other = Encoder.load(str(tiny_models["roberta"]), device="cpu")
    with pytest.raises(AlignerError, match="was trained on the base model") as e:
        checkpoint.load(tmp_path / "al", encoder=other)
    assert e.value.code == "other_base"


def test_malformed_checkpoints_are_refused_with_a_message(tiny, trained, tmp_path):
    enc = tiny[0]
    with pytest.raises(AlignerError, match="is not a trained aligner"):
        checkpoint.load(tmp_path, encoder=enc)
    d = checkpoint.save(trained["sinkhorn"], tmp_path / "al")
    (d / "config.json").write_text("{not json")
    with pytest.raises(AlignerError, match="malformed aligner") as e:
        checkpoint.load(d, encoder=enc)
    assert e.value.code == "bad_checkpoint"
    checkpoint.save(trained["sinkhorn"], d)
    (d / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(AlignerError, match="malformed aligner"):
        checkpoint.load(d, encoder=enc)
    checkpoint.save(trained["sinkhorn"], d)
    doc = json.loads((d / "config.json").read_text())
    doc["settings"]["top"] = 2  # the weights hold one fine-tuned layer
    (d / "config.json").write_text(json.dumps(doc))
    with pytest.raises(AlignerError, match="malformed aligner"):
        checkpoint.load(d, encoder=enc)


def test_the_operators_allow_list(tiny, trained, tmp_path, monkeypatch):
    d = checkpoint.save(trained["sinkhorn"], tmp_path / "al")
    monkeypatch.setattr(engine_settings, "CONFIG", engine_settings.Config.from_env(
        {"SINKSCOPE_ALIGNERS": f"tiny={d}; missing={tmp_path / 'nothing'}"}))
    infos = checkpoint.describe()
    assert [i.name for i in infos] == ["tiny"] and infos[0].final == "sinkhorn"
    assert checkpoint.load_allowed("tiny", encoder=tiny[0]).name == "tiny"
    with pytest.raises(AlignerError, match="not on the allow-list; choose one of: missing, "
                                           "tiny"):
        checkpoint.load_allowed("other")
    monkeypatch.setattr(engine_settings, "CONFIG",
                        engine_settings.Config.from_env({"SINKSCOPE_ALIGNERS": "oops"}))
    with pytest.raises(AlignerError, match="not of the form name=folder"):
        checkpoint.allowed_aligners()


@pytest.mark.parametrize("kind", ["bert", "roberta", "distilbert", "mpnet"])
def test_cached_states_through_the_fine_tuned_layers_are_the_models_own(kind, tiny_models):
    """The frozen layers once, the copied top layers per step: the same word states as
    the model's own forward pass, for every architecture sinkscope reads (in training
    too: the fine-tuned layers have no dropout)."""
    from engine.aligner.data import batch, prepare
    from engine.alignment.sources import Source, encode_words
    from engine.aligner.model import Aligner
    from engine.models.encoder import Encoder

    enc = Encoder.load(str(tiny_models[kind]), device="cpu")
    aligner = Aligner(enc, AlignerSettings(model=enc.name, layer=2, top=1)).eval()
    pairs = synthetic_pairs(3, 5)
    corpus = prepare(pairs, aligner)
    b = batch(corpus, [0, 1, 2])
    with torch.no_grad():
        w = aligner.words(b.h, b.mask, b.pool)
        assert torch.equal(aligner.train().words(b.h, b.mask, b.pool), w)  # no dropout
    ref = encode_words([t for p in pairs for t in (p.text_a, p.text_b)], enc,
                       keep=Source("hidden", layer=2))
    for k in range(3):
        for side, r in ((0, k), (1, 3 + k)):
            n = corpus.texts[2 * k + side].n_words
            np.testing.assert_allclose(w[r, :n].numpy(), ref[2 * k + side].hidden[0],
                                       atol=2e-5)


def test_settings_out_of_range_say_what_to_change():
    for kw, msg in ((dict(top=4, layer=3), "top .4. cannot exceed layer .3."),
                    (dict(epochs=0), "epochs must be a whole number from 1 to 50"),
                    (dict(final="argmax"), "final must be one of sinkhorn, softmax"),
                    (dict(lr=-1.0), "lr must be a number from"),
                    (dict(half_steps=True), "half_steps must be a whole number")):
        with pytest.raises(AlignerError, match=msg):
            AlignerSettings(**kw)


def test_theta_is_tuned_by_total_f1_on_the_grid(tiny, trained):
    from engine.aligner.data import prepare
    from engine.alignment.score import score

    enc, _, dv, _ = tiny
    r = trained["sinkhorn"]
    corpus = prepare(dv, r.aligner)
    V = plans(r.aligner, corpus)
    theta, f1 = tune_theta(V, corpus)
    assert theta == r.theta and f1 == pytest.approx(r.dev_total_f1)
    for t in (0.0, theta, 0.9):
        got = score(align(r.aligner, dv, theta=t), dv, bootstrap=0).macro["total_f1"]
        assert got <= f1 + 1e-12
