"""Which method wins on a corpus, and by how much: the verdict, and the command that
reproduces a table.

- :func:`verdict`: the methods ranked by a macro metric (total F1 by default), the best
  marked, and paired comparisons on the same pairs (:func:`~engine.alignment.score.
  paired_bootstrap`'s resampling, one set of resamples for all of them): every method
  against the best, and each transport method against ``softmax-argmax``. Each is the
  difference δ = M(method) − M(vs), its 95 % paired-bootstrap interval and the two-sided
  p of "no difference" (not corrected for the number of comparisons), both read off the
  same B resampled differences δ*: the interval from the ⌈B/40⌉-th smallest to the
  ⌈B/40⌉-th largest δ*, and p = min(1, 2·min(k₋, k₊)/B) with k₋ = #{δ* ≤ 0} and
  k₊ = #{δ* ≥ 0}, so p < 0.05 exactly when the interval leaves out 0
  (:func:`~engine.alignment.score.interval95`, :func:`~engine.alignment.score.p_value`).
- :func:`command_line`: ``python -m engine align …`` with the flags that give the same
  table (file, source, reading flags, each method's settings where they are not the
  defaults), quoted for a POSIX shell; :func:`parse_setting` reads its ``--set`` values.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..errors import SettingsError
from .methods import DIRECTIONS, METHODS, Method
from .score import METRICS, CorpusScore, Paired, _paired, macro_of_means, per_pair_matrix, \
    resample_sums

#: The softmax baseline each transport method is compared with.
BASELINE = "softmax-argmax"
#: Methods whose links come from a transport plan.
TRANSPORT = ("sinkhorn-argmax", "sinkhorn-threshold", "exact", "partial", "unbalanced")
#: What ``--set`` may change, and the flag each setting has for one method.
FLAGS = {"threshold": "--threshold", "tau": "--tau", "mass": "--mass", "eps": "--eps",
         "direction": "--direction", "temperature": None}
PROGRAM = "python -m engine align"


@dataclass(frozen=True)
class Ranked:
    """One method's place in the verdict.

    Attributes:
        method: its label. rank: 1 for the best. value: its macro metric on the corpus.
        ci95: (low, high) bootstrap 95 % interval of the value (None without resamples).
        delta: value − the best's value (0 for the best). best: whether it is the best.
        settings: its settings (:meth:`Method.to_dict`; empty when not given).
    """

    method: str
    rank: int
    value: float
    ci95: tuple | None
    delta: float
    best: bool
    settings: dict

    def to_dict(self) -> dict:
        return {"method": self.method, "rank": self.rank, "value": self.value,
                "ci95": None if self.ci95 is None else list(self.ci95), "delta": self.delta,
                "best": self.best, "settings": dict(self.settings)}


@dataclass(frozen=True)
class Verdict:
    """Methods on one corpus ranked by ``metric``, with paired comparisons.

    Attributes:
        ranked: every method, best first (ties keep the given order).
        best: the best method's label.
        paired: every other method against the best, then each transport method against
            :data:`BASELINE` (:class:`~engine.alignment.score.Paired`, δ = method − vs).
        metric: the macro metric compared. n_pairs: pairs compared. bootstrap: resamples.
    """

    ranked: tuple[Ranked, ...]
    best: str
    paired: tuple[Paired, ...]
    metric: str
    n_pairs: int
    bootstrap: int

    def against_best(self) -> tuple[Paired, ...]:
        return tuple(p for p in self.paired if p.vs == self.best)

    def against_baseline(self) -> tuple[Paired, ...]:
        return tuple(p for p in self.paired if p.vs == BASELINE and p.method in TRANSPORT)

    def to_dict(self) -> dict:
        return {"metric": self.metric, "n_pairs": self.n_pairs, "bootstrap": self.bootstrap,
                "best": self.best, "ranked": [r.to_dict() for r in self.ranked],
                "paired": [p.to_dict() for p in self.paired]}


def verdict(scores: Mapping[str, CorpusScore], settings: Mapping[str, Method] | None = None,
            *, metric: str = "total_f1", bootstrap: int = 1000, seed: int = 0) -> Verdict:
    """Rank methods scored on the same pairs and compare them pair by pair.

    Args:
        scores: label → :class:`~engine.alignment.score.CorpusScore` with per-pair counts,
            every one on the same pairs in the same order.
        settings: label → :class:`Method`, carried into the ranking.
        metric: a macro metric of :data:`~engine.alignment.score.METRICS`.
        bootstrap: resamples of the pairs (0: no intervals, p = 1). seed: their seed.

    Returns:
        A :class:`Verdict`; δ = M(method) − M(vs) with M the macro metric, each interval
        and p from the same resamples (as :func:`~engine.alignment.score.paired_bootstrap`).

    Raises:
        SettingsError: no methods, methods on different pairs, an unknown metric.
    """
    if not scores:
        raise SettingsError("There is nothing to rank; score at least one method.")
    if metric not in METRICS:
        raise SettingsError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}.")
    labels = list(scores)
    N = scores[labels[0]].n_pairs
    if any(s.n_pairs != N or s.counts is None for s in scores.values()):
        raise SettingsError("Every method must be scored on the same pairs to compare them.")
    value = {k: float(scores[k].macro[metric]) for k in labels}
    order = sorted(labels, key=lambda k: (-value[k], labels.index(k)))
    best = order[0]
    ranked = tuple(Ranked(k, r + 1, value[k], scores[k].macro_ci.get(metric),
                          value[k] - value[best], k == best,
                          settings[k].to_dict() if settings and k in settings else {})
                   for r, k in enumerate(order))
    wanted = [(k, best) for k in order[1:]]
    if BASELINE in scores:
        wanted += [(k, BASELINE) for k in labels
                   if _name(k, settings) in TRANSPORT and (k, BASELINE) not in wanted]
    return Verdict(ranked, best, _compare(scores, wanted, metric, bootstrap, seed), metric, N,
                   int(bootstrap))


def _name(label: str, settings: Mapping[str, Method] | None) -> str:
    return settings[label].name if settings and label in settings else label


def _compare(scores: Mapping[str, CorpusScore], wanted: Sequence[tuple[str, str]],
             metric: str, bootstrap: int, seed: int) -> tuple[Paired, ...]:
    """The paired comparisons ``wanted`` ((method, vs) labels), all on one set of resamples."""
    if not wanted:
        return ()
    labels = list(dict.fromkeys(k for pair in wanted for k in pair))
    value = {k: float(scores[k].macro[metric]) for k in labels}
    if not bootstrap:
        return tuple(Paired(x, y, metric, value[x] - value[y], (value[x] - value[y],) * 2, 1.0)
                     for x, y in wanted)
    K = len(METRICS)
    per = np.concatenate([per_pair_matrix(scores[k].per_pair) for k in labels], -1)
    means = resample_sums(per, bootstrap, seed) / scores[labels[0]].n_pairs
    boot = {k: macro_of_means(means[:, i * K:(i + 1) * K])[metric]
            for i, k in enumerate(labels)}
    return tuple(_paired(x, y, metric, value[x] - value[y], boot[x] - boot[y])
                 for x, y in wanted)


def settings_text(method: Method) -> str:
    """A method's settings as ``key=value`` words to 3 significant digits ("threshold=0.42
    tau=4.94 eps=0.1"); :func:`command_line` writes them in full."""
    d = method.to_dict()
    d.pop("method")
    return " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in d.items())


def _number(v: float) -> str:
    """The shortest of 3, 6 significant digits or repr that reads back as ``v``."""
    for text in (f"{v:.3g}", f"{v:.6g}", repr(float(v))):
        if float(text) == v:
            return text
    return repr(float(v))  # pragma: no cover - repr always reads back


def command_line(pairs: str, *, settings: Mapping[str, Method] | None = None,
                 source=None, gold: str | None = None, dev: str | None = None,
                 lowercase: bool = False, one_based: bool = False, transpose: bool = False,
                 fmt: str = "auto", model: str | None = None, bootstrap: int | None = None,
                 json: bool = False, aligner: str | None = None,
                 program: str = PROGRAM) -> str:
    """The ``python -m engine align`` command that prints this table, ready to copy.

    Args:
        pairs: the file of pairs as the command should name it. gold, dev: the same for
            a gold links file and a dev file (with ``dev``, settings are tuned there and
            ``settings`` is not written out).
        settings: label → :class:`Method` of each row (every method at its defaults when
            None). One method: ``--method`` and its own flags; every method (or several,
            which run as every method): ``--set name:key=value,…`` for each setting that
            is not the method's default for the source.
        source: the :class:`~engine.alignment.sources.Source` (the default one when None).
        lowercase, one_based, transpose, fmt, model, bootstrap, json: the reading and
            output flags (left out at their defaults; ``bootstrap`` None: the default).
        aligner: a trained aligner's folder (``--aligner``; its row is not a Method, and
            its θ is written as ``--set trained:threshold=θ``).

    Returns:
        One line, each argument quoted for a POSIX shell where it needs it.
    """
    from .api import DEFAULT_SOURCE, method_of

    src = source or DEFAULT_SOURCE
    words = ["--pairs", pairs]
    words += ["--gold", gold] if gold else []
    words += ["--dev", dev] if dev else []
    if src != DEFAULT_SOURCE:
        words += ["--source", src.kind, "--layer", str(src.layer)]
        words += ["--head", str(src.head)] if src.kind == "attention" else []
        words += ["--center"] if src.center else []
    words += [flag for flag, on in (("--lowercase", lowercase), ("--one-based", one_based),
                                    ("--transpose", transpose)) if on]
    words += ["--format", fmt] if fmt != "auto" else []
    words += ["--model", model] if model else []
    methods = [m for m in (settings or {}).values() if isinstance(m, Method)]
    words += ["--aligner", aligner] if aligner else []
    trained = (settings or {}).get("trained")
    if aligner and trained is not None and not dev:  # θ as this run used it
        words += ["--set", f"trained:threshold={_number(float(trained.threshold))}"]
    if len(methods) == 1:
        words += ["--method", methods[0].name]
    elif aligner and not methods and trained is not None:  # the trained aligner alone
        words += ["--method", "trained"]
    for m in methods if not dev else ():
        changes = _changes(m, method_of(m.name, src.kind))
        if len(methods) == 1:  # one method: its own flags where it has them
            words += [w for k, v in changes if FLAGS[k] for w in (FLAGS[k], v)]
            changes = [(k, v) for k, v in changes if not FLAGS[k]]
        if changes:
            words += ["--set", f"{m.name}:" + ",".join(f"{k}={v}" for k, v in changes)]
    if bootstrap is not None and int(bootstrap) != 1000:
        words += ["--bootstrap", str(int(bootstrap))]
    words += ["--json"] if json else []
    return " ".join([program] + [shlex.quote(w) for w in words])


def _changes(m: Method, default: Method) -> list[tuple[str, str]]:
    """(setting, value as text) of the settings ``m`` shows that differ from ``default``."""
    shown = m.to_dict()
    return [(k, _number(v) if isinstance(v, float) else str(v))
            for k in FLAGS if k in shown and (v := getattr(m, k)) != getattr(default, k)]


def parse_setting(text: str, methods: Sequence[str] = METHODS) -> tuple[str, dict]:
    """``"unbalanced:threshold=0.42,tau=4.94"`` → ("unbalanced", {"threshold": 0.42, …}).

    Raises:
        SettingsError: an unknown method or setting, a value that is not a number.
    """
    name, sep, rest = text.partition(":")
    name = name.strip()
    if not sep or name not in methods:
        raise SettingsError(f"--set takes METHOD:KEY=VALUE[,KEY=VALUE], METHOD one of "
                            f"{', '.join(methods)}; got {text!r}.")
    out: dict = {}
    for item in rest.split(","):
        key, eq, value = (x.strip() for x in item.partition("="))
        if not eq or key not in FLAGS:
            raise SettingsError(f"--set {name}: {item.strip()!r} is not KEY=VALUE with KEY one "
                                f"of {', '.join(FLAGS)}.")
        if key == "direction":
            if value not in DIRECTIONS:
                raise SettingsError(f"--set {name}: direction must be one of "
                                    f"{', '.join(DIRECTIONS)}; got {value!r}.")
            out[key] = value
            continue
        try:
            out[key] = float(value)
        except ValueError:
            raise SettingsError(f"--set {name}: {key} must be a number, got {value!r}.") \
                from None
    return name, out
