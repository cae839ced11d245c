"""Word alignment on the development sets: ``python -m benchmarks.align [--quick]``.

Reads MultiMWA-MTRef dev (transposed, as OTAlign), MultiMWA-Wiki dev and Edinburgh++ dev
from ``$SINKSCOPE_ALIGN_DATA`` or ``../shared/data/align`` (skipped with a message when
absent), lower-cased and split on whitespace. For each set:

1. every layer of both sources (hidden states with and without centring, attention
   logits averaged over heads), scored by 5-fold cross-validated total F1 of
   ``sinkhorn-threshold``; the best layer of each source goes on;
2. every method at those sources, its threshold and τ/m tuned by 5-fold cross-validation
   within dev (each fold scored at the setting best on the other four): F1, null F1,
   total F1 and AER (macro over pairs, as OTAlign), and the time of the whole protocol;
3. the unbalanced method's protocol run by a per-pair POT loop
   (``ot.unbalanced.sinkhorn_stabilized_unbalanced``, 1,000 iterations per pair per τ, as
   the published code does) and by the engine's batched solver on the same pairs, same
   τ grid, same thresholds: time ratio and total F1 of both;
4. ``python -m engine align`` on Edinburgh++ at its defaults (a process) against the Align
   page's corpus path on the same file (in this process, the model loaded) plus a process
   start (imports and model load); the page's path on MTRef; and ``engine align`` on MTRef
   with every method tuned on Wiki dev, beside the POT loop of 3. on MTRef. ``--commands``
   runs 4. alone, beside the POT loop on MTRef's first ``--pot-pairs`` pairs (100).

``--quick`` uses the first 60 pairs of each set (and 16 for the POT loop); otherwise the POT
loop runs on every pair the protocol uses (``--pot-pairs N`` limits it to the first N).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
SETS = (("MTRef", "mtref-dev.tsv", True), ("Wiki", "wiki-dev.tsv", False),
        ("Edinburgh++", "edinburgh-sure-and-possible-dev.txt", False))
FOLDS = 5


def data_dir() -> Path | None:
    for d in (os.environ.get("SINKSCOPE_ALIGN_DATA"), ROOT.parent / "shared" / "data" / "align"):
        if d and Path(d).is_dir():
            return Path(d)
    return None


def encode_set(pairs, encoder):
    """Scores of every layer of both sources: {(kind, layer, centred): [S per pair]}."""
    from engine.alignment.sources import Source, encode_words, scores

    texts = [t for p in pairs for t in (p.text_a, p.text_b)]
    words = encode_words(texts, encoder, keep=None, batch_size=32)
    L = encoder.n_layers
    out = {}
    for layer in range(L + 1):
        mu = np.mean(np.concatenate([w.hidden[layer][w.valid] for w in words]), 0)
        for centre in (False, True):
            src = Source("hidden", layer, center=centre)
            out[(src.kind, layer, centre)] = [scores(src, words[2 * k], words[2 * k + 1],
                                                     mu=mu if centre else None)
                                              for k in range(len(pairs))]
    for layer in range(L):
        src = Source("attention", layer)
        out[("attention", layer, False)] = [scores(src, words[2 * k], words[2 * k + 1])
                                            for k in range(len(pairs))]
    valid = [(words[2 * k].valid, words[2 * k + 1].valid) for k in range(len(pairs))]
    return out, valid


def scored_of(pairs, S, valid, key):
    from engine.alignment.api import Scored
    from engine.alignment.sources import Source

    kind, layer, centre = key
    return Scored(tuple(pairs), tuple(S), tuple(v[0] for v in valid), tuple(v[1] for v in valid),
                  Source(kind, layer, center=centre))


def folds_of(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.permutation(np.arange(n) % FOLDS)


def cv(scored, method, grid=None, keep=None):
    """5-fold cross-validation of a method; ``keep``: a list the grid result goes on."""
    from engine.alignment.api import cross_validate, evaluate_grid

    res = evaluate_grid(scored, method, folds=folds_of(len(scored.pairs)), grid=grid)
    if keep is not None:
        keep.append(res)
    return cross_validate(res)


def profile(res, values):
    """Best macro total F1 over θ on all of dev at the grid values nearest ``values``."""
    from engine.alignment.api import macro_at

    sums, n = res.metric_sums.sum(0), int(res.n_pairs.sum())
    out = []
    for v in values:
        t = int(np.argmin([abs(x - v) for x in res.grid]))
        out.append((res.grid[t], max(macro_at(sums[t, g], n)["total_f1"]
                                     for g in range(sums.shape[1]))))
    return out


def pot_loop_unbalanced(scored, taus, eps, iters=1000):
    """Plans of every pair for every τ, one POT call each: (T, N) list of (n, m) arrays."""
    import warnings

    import ot

    from engine.alignment.transport import cost_of

    out = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for tau in taus:
            row = []
            for S, va, vb in zip(scored.S, scored.valid_a, scored.valid_b):
                C = cost_of(S, va, vb)
                a = va / va.sum()
                b = vb / vb.sum()
                P = np.zeros_like(C)
                ia, ib = np.flatnonzero(va), np.flatnonzero(vb)
                P[np.ix_(ia, ib)] = ot.unbalanced.sinkhorn_stabilized_unbalanced(
                    a[ia], b[ib], C[np.ix_(ia, ib)], eps, tau, numItermax=iters, stopThr=0)
                row.append(P)
            out.append(row)
    unconverged = sum("did not converge" in str(w.message) for w in caught)
    return out, unconverged


def grid_from_plans(scored, plans_tn, folds):
    """The same grid evaluation as ``evaluate_grid`` on plans computed elsewhere."""
    from engine.alignment import extract
    from engine.alignment.api import GridResult, _batch, method_of
    from engine.alignment.score import COUNTS, METRICS, metrics_from_counts

    T, N = len(plans_tn), len(scored.pairs)
    K = int(folds.max()) + 1
    msum = np.zeros((K, T, extract.GRID, len(METRICS)))
    csum = np.zeros((K, T, extract.GRID, len(COUNTS)), dtype=np.int64)
    batch = _batch(scored, range(N))
    n, m = batch.S.shape[1:]
    P = torch.zeros((T, N, n, m), dtype=torch.float64)
    for t in range(T):
        for k in range(N):
            pk = plans_tn[t][k]
            P[t, k, :pk.shape[0], :pk.shape[1]] = torch.from_numpy(pk)
    V = extract._minmax(P, batch.valid.unsqueeze(0))
    c = extract.grid_counts(V, batch).numpy()
    per = metrics_from_counts(c)
    for f in range(K):
        sel = folds == f
        msum[f] = np.stack([per[name][:, sel].sum(1) for name in METRICS], -1)
        csum[f] = c[:, sel].sum(1)
    return GridResult(method_of("unbalanced"), tuple(extract.TAU_GRID), msum, csum,
                      np.bincount(folds, minlength=K))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="first 60 pairs of each set")
    ap.add_argument("--pairs", type=int, default=None, help="first N pairs of each set")
    ap.add_argument("--pot-pairs", default=None,
                    help="pairs of each set in the POT comparison: N or 'all' (default 16 "
                         "with --quick, else all: the same pairs as the protocol)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--commands", action="store_true",
                    help="only 4.: the command line and the page's corpus path, beside the "
                         "POT loop on MTRef's first --pot-pairs pairs (default 100)")
    args = ap.parse_args(argv)
    d = data_dir()
    if d is None:
        print("benchmarks.align: skipped: no gold alignments found (set SINKSCOPE_ALIGN_DATA "
              "or put them in ../shared/data/align).")
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(args.threads)
    from engine.alignment.readers import read_pairs
    from engine.io.bench import machine
    from engine.relation.relate import default_encoder

    limit = args.pairs or (60 if args.quick else None)
    if args.pot_pairs in (None, "all"):
        pot_n = 16 if args.quick and args.pot_pairs is None else None
    else:
        try:
            pot_n = int(args.pot_pairs)
        except ValueError:
            ap.error(f"--pot-pairs takes a number or 'all', got {args.pot_pairs!r}")
        if pot_n < 1:
            ap.error("--pot-pairs must be at least 1")
    print(f"benchmarks.align · {time.strftime('%Y-%m-%d')} · {machine()}")
    print(f"data: {d} · {'first ' + str(limit) + ' pairs per set' if limit else 'all pairs'}"
          f" · lower-cased · {FOLDS}-fold cross-validation within dev · macro over pairs")
    t0 = time.perf_counter()
    encoder = default_encoder()
    if args.commands:
        commands(d, limit, encoder, mtref_loop(d, encoder, pot_n or 100))
        print(f"\ntotal {time.perf_counter() - t0:.1f} s")
        return 0
    sets = []
    for name, file, transpose in SETS:
        if not (d / file).is_file():
            print(f"{name}: {file} missing, skipped")
            continue
        pairs = read_pairs(d / file, lowercase=True, transpose=transpose)[:limit]
        t = time.perf_counter()
        S, valid = encode_set(pairs, encoder)
        sets.append((name, pairs, S, valid, time.perf_counter() - t))
    print(f"model load + encoding: {time.perf_counter() - t0:.1f} s "
          f"({', '.join(f'{n}: {len(p)} pairs {e:.1f} s' for n, p, _, _, e in sets)})")

    best = layers_section(sets)
    methods_section(sets, best)
    # 3. the POT loop
    loops = pot_comparison(sets, best["hidden"], pot_n)
    # 4. the command line and the page's corpus path, beside the POT loop on MTRef
    commands(d, limit, encoder, loops.get("MTRef"))
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")
    return 0


def layers_section(sets) -> dict:
    """1. Every layer of both sources, by CV total F1 of ``sinkhorn-threshold``; returns the
    best (kind, layer, centred) of each source."""
    print("\n1. layer by layer: CV total F1 of sinkhorn-threshold")
    keys = list(sets[0][2])
    totals = {}
    print(f"{'source':<22}" + "".join(f"{n:>13}" for n, *_ in sets) + f"{'mean':>8}")
    for key in keys:
        row = [cv(scored_of(p, S[key], v, key), "sinkhorn-threshold")[0]["total_f1"]
               for _, p, S, v, _ in sets]
        totals[key] = float(np.mean(row))
        label = f"{key[0]} L{key[1]}{' centred' if key[2] else ''}"
        print(f"{label:<22}" + "".join(f"{x:13.3f}" for x in row) + f"{totals[key]:8.3f}")
    best = {kind: max((k for k in keys if k[0] == kind), key=totals.get)
            for kind in ("hidden", "attention")}
    print("best: " + ", ".join(f"{k}: layer {v[1]}{' centred' if v[2] else ''}"
                               for k, v in best.items()))

    return best


def methods_section(sets, best) -> None:
    """2. Every method at the best layer of each source, tuned by CV within dev."""
    from engine.alignment import extract

    print("\n2. every method, tuned by CV within dev (macro; settings: the fold picks' median)")
    t_protocol = time.perf_counter()
    n_pairs = 0
    summary = {}
    profiles: dict[str, list] = {}
    for kind, key in best.items():
        print(f"\nsource {kind}, layer {key[1]}{' centred' if key[2] else ''}")
        print(f"{'method':<21}{'set':<12}{'F1':>7}{'null F1':>9}{'total F1':>10}{'AER':>7}"
              f"{'AER µ':>7}  settings")
        for method in extract.METHODS:
            for name, p, S, v, _ in sets:
                sc = scored_of(p, S[key], v, key)
                kept = []
                macro, micro, picked = cv(sc, method, keep=kept)
                if method == "partial":
                    profiles.setdefault(kind, []).append(
                        (name, profile(kept[0], (0.1, 0.3, 0.5, 0.7, 0.9, 1.0))))
                n_pairs += len(p)
                st = picked[0].to_dict()
                for field in ("threshold", "tau", "mass"):
                    if field in st:
                        st[field] = float(np.median([getattr(x, field) for x in picked]))
                if method in ("partial", "unbalanced"):  # every fold's pick, not only the median
                    field = "mass" if method == "partial" else "tau"
                    st["picks"] = "/".join(f"{getattr(x, field):.3g}" for x in picked)
                st.pop("method")
                summary.setdefault((kind, method), []).append((macro, st))
                sets_s = " ".join(f"{k}={x:.3g}" if isinstance(x, float) else f"{k}={x}"
                                  for k, x in st.items())
                print(f"{method:<21}{name:<12}{macro['f1']:7.3f}{macro['null_f1']:9.3f}"
                      f"{macro['total_f1']:10.3f}{macro['aer']:7.3f}{micro['aer']:7.3f}  "
                      f"{sets_s}")
    elapsed = time.perf_counter() - t_protocol
    print(f"\nwhole protocol (2 sources × {len(extract.METHODS)} methods × {len(sets)} sets, "
          f"full grids: θ × {len(extract.TAU_GRID)} τ / {len(extract.MASS_GRID)} m, "
          f"{FOLDS}-fold CV): {elapsed:.1f} s, {n_pairs / elapsed:.1f} pairs/s "
          f"({n_pairs} pair-evaluations)")
    print("\npartial: best total F1 over θ on all of dev at each m (does m matter?)")
    for kind, rows in profiles.items():
        for name, prof in rows:
            print(f"  {kind:<10}{name:<12}" + "  ".join(f"m={m:.2f}: {f:.3f}" for m, f in prof))
    print("\nmean total F1 over the sets:")
    for (kind, method), rows in summary.items():
        print(f"  {kind:<10}{method:<21}{np.mean([r[0]['total_f1'] for r in rows]):.3f}")



def pot_comparison(sets, key, pot_n) -> dict[str, tuple[float, int]]:
    """3. The unbalanced protocol by the per-pair POT loop and by the engine, per set;
    returns each set's (POT loop seconds, pairs)."""
    from engine.alignment import extract
    from engine.alignment.api import cross_validate, evaluate_grid

    which = "every pair" if pot_n is None else f"first {pot_n} pairs"
    print(f"\n3. unbalanced: per-pair POT loop vs batched engine ({which} of each "
          f"set, {len(extract.TAU_GRID)} τ, source {key[0]} layer "
          f"{key[1]}{' centred' if key[2] else ''})")
    t_pot = t_eng = 0.0
    out = {}
    for name, p, S, v, _ in sets:
        sc = scored_of(p[:pot_n], S[key][:pot_n], v[:pot_n], key)
        folds = folds_of(len(sc.pairs))
        t = time.perf_counter()
        plans, warned = pot_loop_unbalanced(sc, extract.TAU_GRID,
                                            extract.Method("unbalanced").eps)
        pot = cross_validate(grid_from_plans(sc, plans, folds))
        dt_pot = time.perf_counter() - t
        t = time.perf_counter()
        eng = cross_validate(evaluate_grid(sc, "unbalanced", folds=folds))
        dt_eng = time.perf_counter() - t
        t_pot += dt_pot
        t_eng += dt_eng
        out[name] = (dt_pot, len(sc.pairs))
        print(f"  {name:<12} POT loop {dt_pot:7.1f} s total F1 {pot[0]['total_f1']:.3f} · "
              f"engine {dt_eng:6.1f} s total F1 {eng[0]['total_f1']:.3f} · "
              f"{dt_pot / dt_eng:5.1f}× faster (POT warned 'did not converge' on {warned} of "
              f"{len(sc.pairs) * len(extract.TAU_GRID)} solves)")
    print(f"  all sets: POT loop {t_pot:.1f} s, engine {t_eng:.1f} s: {t_pot / t_eng:.1f}× faster")
    return out


def mtref_loop(d: Path, encoder, n: int) -> tuple[float, int] | None:
    """Seconds of the per-pair POT loop of the unbalanced protocol (as 3.) on MTRef's first
    ``n`` pairs at the default source, and n."""
    from engine.alignment import extract
    from engine.alignment.api import cross_validate, score_corpus
    from engine.alignment.readers import read_pairs

    if not (d / "mtref-dev.tsv").is_file():
        return None
    sc = score_corpus(read_pairs(d / "mtref-dev.tsv", lowercase=True, transpose=True)[:n],
                      encoder=encoder)
    t = time.perf_counter()
    plans, _ = pot_loop_unbalanced(sc, extract.TAU_GRID, extract.Method("unbalanced").eps)
    cross_validate(grid_from_plans(sc, plans, folds_of(len(sc.pairs))))
    return time.perf_counter() - t, len(sc.pairs)


#: A process that imports what ``engine align`` imports (torch, the model, POT) and loads the
#: model: what any run pays before it reads a file.
START = ("import ot; import engine.alignment.api; from engine.relation.relate import "
         "default_encoder; default_encoder().encode('warm')")


def _wall(argv: list[str]) -> float:
    """Seconds one command takes, start to exit (its output dropped; it must succeed)."""
    import subprocess

    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    return time.perf_counter() - t


def page_corpus(pairs, encoder) -> float:
    """Seconds of the Align page's Corpus view (``sinkscope_app.align.corpus``'s engine
    calls): word scores, then every method by ``compare_methods`` (one batched pass, scores
    and the verdict with 1,000 resamples)."""
    from engine.alignment.api import compare_methods, score_corpus

    t = time.perf_counter()
    compare_methods(score_corpus(pairs, encoder=encoder), bootstrap=1000)
    return time.perf_counter() - t


def commands(d: Path, limit: int | None, encoder, peer: tuple[float, int] | None) -> None:
    """4. ``python -m engine align`` end to end (a process each) and the Align page's corpus
    path (in this process, the model loaded), beside the per-pair POT loop on MTRef."""
    import tempfile

    from engine.alignment.readers import read_pairs

    py = [sys.executable]
    files = {k: d / f for k, f in (("ed", "edinburgh-sure-and-possible-dev.txt"),
                                   ("mtref", "mtref-dev.tsv"), ("wiki", "wiki-dev.tsv"))}
    if not all(f.is_file() for f in files.values()):
        print("\n4. commands: skipped (Edinburgh++, MTRef or Wiki dev missing)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        if limit:  # one pair per line in these three formats
            for k, f in files.items():
                files[k] = Path(tmp) / f.name
                lines = (d / f.name).read_text(encoding="utf-8").splitlines()[:limit]
                files[k].write_text("\n".join(lines) + "\n", encoding="utf-8")
        ed = read_pairs(files["ed"])
        print(f"\n4. python -m engine align (a process each) and the Align page's corpus path "
              f"(this process, model loaded; 1 torch thread)")
        start = _wall(py + ["-c", START])
        cli = _wall(py + ["-m", "engine", "align", "--pairs", str(files["ed"]), "--quiet"])
        page = page_corpus(ed, encoder)
        print(f"  Edinburgh++, {len(ed)} pairs, defaults: engine align {cli:.1f} s · page's "
              f"corpus path {page:.1f} s + process start {start:.1f} s = {page + start:.1f} s: "
              f"{'within' if cli <= page + start else 'over'}")
        mt = read_pairs(files["mtref"])
        print(f"  MTRef, {len(mt)} pairs, the page's corpus path {page_corpus(mt, encoder):.1f} s")
        argv = py + ["-m", "engine", "align", "--pairs", str(files["mtref"]), "--dev",
                     str(files["wiki"]), "--lowercase", "--transpose", "--quiet"]
        run = _wall(argv)
        line = (f"  engine align --pairs {files['mtref'].name} --dev {files['wiki'].name} "
                f"--lowercase --transpose: {run:.1f} s")
        if peer:
            line += (f" · per-pair POT loop of the unbalanced protocol on {peer[1]} MTRef pairs "
                     f"(3.) {peer[0]:.1f} s: {run / peer[0]:.2f}× its time")
        print(line)


if __name__ == "__main__":
    sys.exit(main())
