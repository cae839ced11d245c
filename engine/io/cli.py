"""Command line: ``python -m engine relate "text A" "text B" [--json]``, ``serve``,
``warmup``, and the commands of the sub-packages that have one (``align``, ``lab``,
``train-aligner``).

A sub-package adds a command with a ``cli`` module of its own holding
``add_parser(sub)``, which registers its sub-parser and sets ``run=`` (a function of the
parsed arguments returning the exit status) as a default; that module imports nothing
heavy at import time, so ``--help`` stays fast. Its ``run`` lets engine errors and
``OSError`` go up: :func:`main` turns them into ``error: <message>`` and status 2 for
every command alike.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

import numpy as np

from ..errors import SinkscopeError
from .export import relation_to_dict
from ..settings import MODES, WEIGHTS, Settings
from ..relation.summary import half_steps_text, rows

# Sub-packages whose ``cli`` module adds a command (see the module docstring).
COMMANDS = ("engine.alignment.cli", "engine.lab.cli", "engine.aligner.cli")


def _layer_or_all(x: str) -> int | str:
    return x if x == "all" else int(x)


def _head(x: str) -> int | str:
    return x if x in ("mean", "all") else int(x)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m engine",
                                description="Softmax attention beside Sinkhorn couplings.")
    sub = p.add_subparsers(dest="command", required=True)
    d = Settings()  # the flags' defaults are the Settings' own
    r = sub.add_parser("relate", help="relate two texts and print plans and diagnostics")
    r.add_argument("text_a")
    r.add_argument("text_b", nargs="?", default=None,
                   help="omit with --mode self")
    r.add_argument("--layer", type=_layer_or_all, default=d.layer,
                   help=f"layer index (negative from the end) or 'all' (default {d.layer})")
    r.add_argument("--head", type=_head, default=d.head,
                   help=f"head index, 'mean' or 'all' (default {d.head})")
    r.add_argument("--eps", type=float, default=d.eps,
                   help=f"entropy ε > 0 (default {d.eps:g})")
    r.add_argument("--half-steps", type=int, default=d.half_steps,
                   help=f"Sinkhorn half-steps; 1 = softmax (default {d.half_steps})")
    r.add_argument("--mode", default=d.mode, choices=list(MODES))
    r.add_argument("--weights", default=d.weights, choices=list(WEIGHTS))
    r.add_argument("--pool-words", action="store_true", help="merge subwords into words")
    r.add_argument("--model", default=None,
                   help="an allowed model's name (SINKSCOPE_MODELS) or a local "
                        "sentence-transformers folder (default: the packaged all-MiniLM-L6-v2)")
    r.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sub.add_parser("warmup", help="load the model and compile UMAP once (set-up)")
    s = sub.add_parser("serve", help="serve the engine over HTTP (Ray Serve, local instance)",
                       description="Start a local Ray instance with the engine's Serve app "
                       "and print its URL; Ctrl+C stops it. For a cluster, deploy "
                       "deploy/serve.yaml with `serve deploy` instead.")
    s.add_argument("--host", default="127.0.0.1",
                   help="interface to listen on (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    s.add_argument("--replicas", type=_positive_int, default=1,
                   help="engine replicas, each with its own model copy (default 1)")
    s.add_argument("--gpus-per-replica", type=float, default=None,
                   help="GPUs per replica; fractions share one (default: 1 when Ray sees a "
                        "GPU, else 0)")
    s.add_argument("--max-batch-size", type=_positive_int, default=16,
                   help="most requests encoded in one forward pass (default 16; 1: no batching)")
    s.add_argument("--batch-wait-ms", type=float, default=5.0,
                   help="how long a batch waits to fill, in ms (default 5)")
    s.add_argument("--max-queued", type=_positive_int, default=64,
                   help="requests queued beyond those the replicas hold; above it the "
                        "engine answers 503 with Retry-After (default 64)")
    for name in COMMANDS:
        importlib.import_module(name).add_parser(sub)
    return p


def _positive_int(x: str) -> int:
    v = int(x)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {v}")
    return v


def _table(r) -> str:
    s = r.summary
    lines = [f"{r.model} · layer {r.layer} · head {r.head} · ε = {r.eps:g} · "
             f"{half_steps_text(r.half_steps)} · {r.mode}",
             f"A: {' '.join(r.tokens_a)}", f"B: {' '.join(r.tokens_b)}", ""]
    if np.ndim(s.cost) == 0:
        table = [(m.label, m.value + (f"  ({m.detail})" if m.detail else "")) for m in rows(r)]
        w = max(len(k) for k, _ in table)
        lines += [f"{k:<{w}}  {v}" for k, v in table]
        lines += ["", "Sinkhorn plan (rows A, columns B):"]
        lines += [_matrix(r.sinkhorn_plan, r.tokens_a, r.tokens_b)]
    else:
        lines.append("softmax column-marginal error per layer (rows) and head (columns):")
        lines += ["  ".join(f"{v:5.2f}" for v in row) for row in s.softmax_col_err]
    lines += [f"{n.level}: {n.message}" for n in r.notices]
    return "\n".join(lines)


def _matrix(P, ta, tb) -> str:
    w = min(12, max(len(t) for t in ta))
    head = " " * (w + 1) + " ".join(f"{t[:6]:>6}" for t in tb)
    rows = [f"{t[:w]:<{w}} " + " ".join(f"{v:6.3f}" for v in row) for t, row in zip(ta, P)]
    return "\n".join([head] + rows)


def main(argv: list[str] | None = None) -> int:
    """Run one command and return its exit status.

    The one place that turns errors into what a shell sees, for every command (``relate``,
    ``warmup``, ``serve`` and the sub-packages' ``align`` and ``lab``): an engine error
    (:class:`~engine.errors.SinkscopeError`, whose message says what to change) or a file
    that cannot be read or written (``OSError``) prints ``error: <message>`` on stderr and
    exits with status 2, with no traceback. Bad flags are argparse's (status 2 too).
    """
    args = parser().parse_args(argv)
    try:
        return _command(args)
    except (SinkscopeError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _command(args) -> int:
    """Dispatch the parsed arguments to their command; errors go up to :func:`main`."""
    if getattr(args, "run", None) is not None:
        return args.run(args)
    if args.command == "warmup":
        return _warmup()
    if args.command == "serve":
        return _serve(args)
    from ..relation.relate import relate

    encoder = None
    if args.model:
        from ..models.encoder import Encoder

        encoder = Encoder.load(args.model)
    r = relate(args.text_a, args.text_b if args.text_b is not None else
               (args.text_a if args.mode == "self" else None), encoder=encoder,
               settings=cli_settings(args))
    if args.json:
        json.dump(relation_to_dict(r), sys.stdout, allow_nan=False, ensure_ascii=False)
        print()
    else:
        print(_table(r))
    return 0


def cli_settings(args) -> Settings:
    """The :class:`Settings` that ``relate``'s flags name (``--model`` is a name or, here,
    a folder: it picks the encoder, and the Relation carries the model's own name)."""
    return Settings(layer=args.layer, head=args.head, eps=args.eps,
                    half_steps=args.half_steps, mode=args.mode, weights=args.weights,
                    pool_words=args.pool_words)


def _serve(args) -> int:
    """Run the Serve app on a local Ray instance until Ctrl+C or SIGTERM."""
    import signal
    import time

    try:
        from ..serving import service
    except ImportError as e:
        print(f"error: the served engine needs Ray Serve ({e}). Install it with "
              "`pip install -e '.[serve]'` or run `make engine`.", file=sys.stderr)
        return 2

    def stop(*_):
        raise KeyboardInterrupt

    try:
        with service.local_ray(num_cpus=max(os.cpu_count() or 1, args.replicas)):
            import ray

            signal.signal(signal.SIGTERM, stop)  # after Ray's own handler: shut down cleanly

            gpus = args.gpus_per_replica
            if gpus is None:
                n_gpus = ray.cluster_resources().get("GPU", 0)
                gpus = min(1.0, n_gpus / args.replicas) if n_gpus else 0.0
            app = service.build(replicas=args.replicas, gpus_per_replica=gpus,
                                cpus_per_replica=min(1.0, (os.cpu_count() or 1) / args.replicas),
                                max_batch_size=args.max_batch_size,
                                max_queued_requests=args.max_queued,
                                batch_wait_timeout_s=args.batch_wait_ms / 1000)
            try:
                url = service.start(app, host=args.host, port=args.port)
            except Exception as e:  # port taken, a replica that cannot start, ...
                print(f"error: the engine could not start on {args.host}:{args.port}: "
                      f"{type(e).__name__}: {e}", file=sys.stderr)
                return 2
            health = _get_json(url + "/v1/health")
            print(f"sinkscope engine: {url}  ({args.replicas} replica"
                  f"{'s' if args.replicas > 1 else ''}, device {health.get('device', '?')}, "
                  f"{gpus:g} GPU each)", flush=True)
            print(f"Point the app at it: SINKSCOPE_ENGINE={url} (make run ENGINE={url}). "
                  "Ctrl+C stops it.", flush=True)
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        print("stopping the engine…", file=sys.stderr, flush=True)
    return 0


def _get_json(url: str) -> dict:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return {}


def _warmup() -> int:
    """Load the model once and compile UMAP into numba's disk cache."""
    import time

    from ..relation.projection import project, warm_up_umap
    from ..relation.relate import relate

    t = time.perf_counter()
    r = relate("The bank of the river.", "She sat on the river bank.")
    project(r, method="pca")
    warm_up_umap()
    print(f"warm-up done in {time.perf_counter() - t:.1f} s")
    return 0
