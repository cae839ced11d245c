"""relate_batch: requests solved together equal each request solved alone.

The served engine answers concurrent slider moves with one batched softmax and Sinkhorn
call (solving at ε on S is solving at ε = 1 on S/ε); every field of every Relation must
match :func:`engine.relate_encodings` to rounding, errors included, in order.
"""

import dataclasses
import functools
import importlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from engine import SettingsError, encode_texts, relate_encodings
from engine.relation.relate import default_encoder, relate_batch

pytestmark = pytest.mark.model

A = "The bank of the river was steep and muddy."
B = "She sat on the river bank and watched the boats."


@functools.lru_cache(maxsize=1)
def encoded() -> dict:
    """Encodings of the test pairs in each mode (loaded once per process)."""
    enc = default_encoder()
    return {"separate": encode_texts(enc, A, B, "separate"),
            "joint": encode_texts(enc, A, B, "joint"),
            "self": encode_texts(enc, A, None, "self"),
            "other": encode_texts(enc, "A cat sat on the mat.", "Dogs bark.", "separate")}


@pytest.fixture
def pairs() -> dict:
    return encoded()


def assert_same(r1, r2, where="relation", atol=1e-12):
    """Every field equal: arrays to ``atol`` (±inf in the same places), the rest exactly,
    and of the same types (a 0-d array stays a 0-d array)."""
    if dataclasses.is_dataclass(r1):
        assert type(r1) is type(r2), where
        for f in dataclasses.fields(r1):
            assert_same(getattr(r1, f.name), getattr(r2, f.name), f"{where}.{f.name}", atol)
    elif isinstance(r1, (np.ndarray, np.generic, float)) and not isinstance(r1, bool):
        assert type(r1) is type(r2), (where, type(r1), type(r2))
        x, y = np.asarray(r1), np.asarray(r2)
        assert x.shape == y.shape and x.dtype == y.dtype, where
        if x.dtype == bool:
            assert np.array_equal(x, y), where
        else:
            np.testing.assert_allclose(x, y, rtol=0, atol=atol, err_msg=where)
    elif isinstance(r1, tuple) and r1 and dataclasses.is_dataclass(r1[0]):
        assert len(r1) == len(r2), where
        for i, (u, v) in enumerate(zip(r1, r2)):
            assert_same(u, v, f"{where}[{i}]", atol)
    else:
        assert r1 == r2, (where, r1, r2)


JOB = st.fixed_dictionaries({
    "pair": st.sampled_from(["separate", "joint", "self", "other"]),
    "eps": st.floats(0.03, 20),
    "view": st.sampled_from([(-1, "mean"), (5, "mean"), (2, 7), (0, 0), ("all", "all")]),
    "half_steps": st.sampled_from([1, 2, 7, 100]),
    "weights": st.sampled_from(["content", "content", "uniform"]),
})


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(JOB, min_size=1, max_size=12))
def test_batch_equals_each_request_alone(jobs):
    pairs = encoded()
    batch = [(pairs[j["pair"]], dict(layer=j["view"][0], head=j["view"][1], eps=j["eps"],
                                     half_steps=j["half_steps"], weights=j["weights"],
                                     mode="separate" if j["pair"] == "other" else j["pair"]))
             for j in jobs]
    for (encodings, kw), r in zip(batch, relate_batch(batch)):
        assert_same(r, relate_encodings(encodings, **kw))


def test_a_slider_sweep_is_one_solve_and_matches(pairs, monkeypatch):
    """Sixteen values of ε on one head: one batched Sinkhorn call, each plan a coupling
    at its own ε (half-step 1 is softmax at that ε), equal to the plan solved alone."""
    rel = importlib.import_module("engine.relation.relate")  # the module (engine.relate is the function)
    calls = []
    real = rel.sinkhorn
    monkeypatch.setattr(rel, "sinkhorn", lambda S, *a, **k: calls.append(S.shape) or real(S, *a, **k))
    eps = np.geomspace(0.05, 5, 16)
    batch = [(pairs["separate"], dict(layer=5, head=3, eps=float(e), half_steps=100))
             for e in eps]
    out = relate_batch(batch)
    assert len(calls) == 1 and calls[0][0] == 16
    monkeypatch.undo()
    for (encodings, kw), r in zip(batch, out):
        assert r.eps == kw["eps"] and r.coupling.eps == kw["eps"]
        alone = relate_encodings(encodings, **kw)
        assert_same(r, alone)
        # the coupling's numbers are measured against S, not S/ε
        np.testing.assert_allclose(r.coupling.cost, -(r.sinkhorn_plan * r.scores).sum(),
                                   rtol=1e-12)
        np.testing.assert_allclose(r.coupling.history.cost[-1], r.coupling.cost, rtol=1e-12)


def test_errors_stay_in_their_place(pairs):
    good = (pairs["separate"], dict(eps=0.5))
    out = relate_batch([good, (pairs["separate"], dict(eps=-1.0)), good,
                        (pairs["separate"], dict(layer=9)), (pairs["self"], dict(eps=2.0, mode="self"))])
    assert isinstance(out[1], SettingsError) and "ε" in str(out[1])
    assert isinstance(out[3], SettingsError) and "layer" in str(out[3]).lower()
    assert_same(out[0], relate_encodings(*good[:1], **good[1]))
    assert_same(out[2], out[0])
    assert_same(out[4], relate_encodings(pairs["self"], eps=2.0, mode="self"))
    assert relate_batch([]) == []


def test_one_settings_object_and_keywords_give_the_same_relation(pairs):
    """relate_encodings(settings=s) equals the same settings as keywords; Relation.settings
    gives them back (normalised), and relating with them again gives the same relation."""
    from engine.settings import Settings

    s = Settings(layer=-1, head=7, eps=0.4, half_steps=30, weights="uniform", tol=1e-4)
    r = relate_encodings(pairs["separate"], settings=s)
    assert_same(r, relate_encodings(pairs["separate"], layer=-1, head=7, eps=0.4,
                                    half_steps=30, weights="uniform", tol=1e-4))
    assert r.settings == s.replace(layer=5)  # the layer as the model numbers it
    assert_same(relate_encodings(pairs["separate"], settings=r.settings), r)
    assert_same(relate_encodings(pairs["separate"], settings=s, eps=2.0),
                relate_encodings(pairs["separate"], settings=s.replace(eps=2.0)))
    with pytest.raises(SettingsError, match="Unknown setting 'epsilon'"):
        relate_encodings(pairs["separate"], epsilon=1.0)


SETTINGS = st.builds(
    dict, layer=st.one_of(st.integers(-6, 5), st.just("all")),
    head=st.one_of(st.integers(-12, 11), st.sampled_from(["mean", "all"])),
    eps=st.floats(1e-6, 1e6), half_steps=st.integers(1, 100_000),
    mode=st.sampled_from(["separate", "joint", "self"]),
    weights=st.sampled_from(["content", "uniform", "norm"]), pool_words=st.booleans(),
    tol=st.floats(1e-12, 1.0))


@settings(max_examples=60, deadline=None)
@given(SETTINGS)
def test_settings_round_trip_through_plain_values(d):
    """to_dict / from_dict (what a URL or a request body holds) loses nothing, and
    allowed values pass check() unchanged."""
    import json

    from engine.settings import Settings

    s = Settings.from_dict(d)
    back = Settings.from_dict(json.loads(json.dumps(s.to_dict())))
    assert back == s and s.check() == s


@pytest.mark.parametrize("field, value, words", [
    ("eps", 0.0, "ε must be a finite number > 0"), ("eps", "x", "ε must be a number"),
    ("half_steps", 2.5, "whole number"), ("half_steps", 10**6, "at most"),
    ("layer", float("inf"), "layer must be a whole number"), ("head", "max", '"mean"'),
    ("mode", "both", "mode must be one of"), ("pool_words", "yes", "true or false"),
    ("tol", 0, "tol must be a number > 0"), ("weights", None, "weights must be one of")])
def test_settings_check_says_what_to_change(field, value, words):
    from engine.settings import Settings

    with pytest.raises(SettingsError, match=words):
        Settings(**{field: value}).check()
