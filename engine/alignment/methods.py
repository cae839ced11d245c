"""The alignment methods as data, torch-free: their names, settings and tuned defaults
(:class:`Method`, :data:`DEFAULTS`, :func:`method_of`, :func:`opening`) and one pair's
links (:class:`Alignment`). What a page or a client needs to name a method, show its
settings or read an alignment back; the solving is :mod:`engine.alignment.extract`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import SettingsError
from .readers import links_text

#: ε of the transport methods, on the cost min-max scaled to [0, 1].
ALIGN_EPS = 0.1
METHODS = ("softmax-argmax", "softmax-both", "similarity-threshold", "sinkhorn-argmax",
           "sinkhorn-threshold", "exact", "partial", "unbalanced")
THRESHOLDED = ("softmax-both", "similarity-threshold", "sinkhorn-threshold", "exact",
               "partial", "unbalanced")
DIRECTIONS = ("intersection", "forward", "backward", "union")
#: Grid resolution of θ on V: θ_k = k / GRID, k = 0 … GRID − 1.
GRID = 100
#: The τ and m a method takes: beyond them float32 solves underflow (τ, m → 0).
TAU_MIN, TAU_MAX, MASS_MIN = 1e-6, 1e6, 1e-6
TAU_GRID = tuple(float(x) for x in np.logspace(-2, 1, 50))
#: m of ``partial``: OTAlign's grid, k/51 for k = 1 … 50 (0.0196 … 0.980). m = 1 is left
#: out: it moves all of the shorter text, which ``sinkhorn-threshold`` nearly covers.
MASS_GRID = tuple(float(x) for x in np.linspace(0.0, 1.0, 51, endpoint=False)[1:])


@dataclass(frozen=True)
class Method:
    """One extraction method and its settings.

    Attributes:
        name: one of :data:`METHODS`.
        threshold: θ on the min-max scaled plan or similarity; for ``softmax-both`` the
            probability threshold t (awesome-align's 10⁻³). Unused by argmax methods.
        tau: τ of ``unbalanced`` (KL marginal strength; τ → ∞ is balanced).
        mass: m of ``partial``: the share of min(‖a‖, ‖b‖) moved, in (0, 1], with every
            word of capacity 1 (OTAlign's weights; see the module docstring).
        eps: ε of the transport methods (on the cost scaled to [0, 1]).
        temperature: softmax temperature of ``softmax-both``.
        direction: ``softmax-argmax``'s direction (see :data:`DIRECTIONS`).
    """

    name: str
    threshold: float = 0.1
    tau: float = 1.0
    mass: float = 0.8
    eps: float = ALIGN_EPS
    temperature: float = 0.1
    direction: str = "intersection"

    def __post_init__(self):
        if self.name not in METHODS:
            raise SettingsError(f"method must be one of {', '.join(METHODS)}; got "
                                f"{self.name!r}.")
        if self.direction not in DIRECTIONS:
            raise SettingsError(f"direction must be one of {', '.join(DIRECTIONS)}; got "
                                f"{self.direction!r}.")
        for k in ("threshold", "tau", "mass", "eps", "temperature"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
                raise SettingsError(f"{k} must be a finite number, got {v!r}.")
        if not 0 <= self.threshold < 1:
            raise SettingsError(f"threshold must lie in [0, 1), got {self.threshold:g}.")
        if self.tau <= 0 or self.eps <= 0 or self.temperature <= 0:
            raise SettingsError("tau, eps and temperature must be > 0.")
        if not TAU_MIN <= self.tau <= TAU_MAX:
            raise SettingsError(f"tau must lie in [{TAU_MIN:g}, {TAU_MAX:g}], got "
                                f"{self.tau:g}.")
        if not MASS_MIN <= self.mass <= 1:
            raise SettingsError(f"mass must lie in [{MASS_MIN:g}, 1], got {self.mass:g}.")

    @property
    def theta(self) -> float:
        """The threshold on V (see the module docstring)."""
        if self.name == "softmax-both":
            return float(np.clip((np.log10(max(self.threshold, 1e-12)) + 4) / 4, 0, 1))
        if self.name in THRESHOLDED:
            return float(self.threshold)
        return 0.5

    def with_theta(self, theta: float) -> "Method":
        """The same method with the threshold whose V-threshold is ``theta``."""
        if self.name == "softmax-both":
            return replace(self, threshold=float(10 ** (4 * theta - 4)))
        if self.name in THRESHOLDED:
            return replace(self, threshold=float(theta))
        return self

    @property
    def grid_param(self) -> str | None:
        """The setting tuned beside θ: "tau", "mass" or None."""
        return {"unbalanced": "tau", "partial": "mass"}.get(self.name)

    def to_dict(self) -> dict:
        d = {"method": self.name}
        if self.name in THRESHOLDED:
            d["threshold"] = self.threshold
        if self.name == "unbalanced":
            d["tau"] = self.tau
        if self.name == "partial":
            d["mass"] = self.mass
        if self.name.startswith("sinkhorn") or self.name in ("partial", "unbalanced"):
            d["eps"] = self.eps
        if self.name == "softmax-both":
            d["temperature"] = self.temperature
        if self.name == "softmax-argmax":
            d["direction"] = self.direction
        return d


#: Settings picked by 5-fold cross-validation within the development sets (median of the
#: folds' and sets' picks; ``python -m benchmarks.align``, all dev pairs, 2026-12-01).
DEFAULTS: dict[str, dict[str, Method]] = {
    "hidden": {
        "softmax-argmax": Method("softmax-argmax"),
        "softmax-both": Method("softmax-both", threshold=0.3),
        "similarity-threshold": Method("similarity-threshold", threshold=0.67),
        "sinkhorn-argmax": Method("sinkhorn-argmax"),
        "sinkhorn-threshold": Method("sinkhorn-threshold", threshold=0.45),
        "exact": Method("exact", threshold=0.94),
        "partial": Method("partial", threshold=0.34, mass=0.98),
        "unbalanced": Method("unbalanced", threshold=0.42, tau=4.94),
    },
    "attention": {
        "softmax-argmax": Method("softmax-argmax"),
        "softmax-both": Method("softmax-both", threshold=0.005),
        "similarity-threshold": Method("similarity-threshold", threshold=0.79),
        "sinkhorn-argmax": Method("sinkhorn-argmax"),
        "sinkhorn-threshold": Method("sinkhorn-threshold", threshold=0.37),
        "exact": Method("exact", threshold=0.49),
        "partial": Method("partial", threshold=0.39, mass=0.98),
        "unbalanced": Method("unbalanced", threshold=0.36, tau=1.39),
    },
}
#: The method with the best mean total F1 over the development sets (hidden, layer 3;
#: the hidden-state methods other than similarity-threshold, exact and sinkhorn-argmax lie
#: within 0.004 of it).
DEFAULT_METHOD = "softmax-both"
#: The method a view of one pair opens with, at its tuned settings (:func:`opening`).
PAIR_METHOD = "unbalanced"
@dataclass(frozen=True)
class Alignment:
    """Links between the whitespace words of two texts, and their scores when gold is known.

    Attributes:
        words_a, words_b: the words (``str.split()``), lower-cased when asked.
        links: sorted (i, j) 0-based links.
        null_a, null_b: words of A and of B left without a link.
        method: the method's settings (:meth:`Method.to_dict`). source: the source's.
        values: (n, m) the values the links were read from (V > θ; −1 where a word takes
            no part): the min-max scaled plan, similarity or softmax, or the argmax mask.
        scores: metric → value for this pair when it has gold, else None.
    """

    words_a: tuple[str, ...]
    words_b: tuple[str, ...]
    links: tuple[tuple[int, int], ...]
    null_a: tuple[int, ...]
    null_b: tuple[int, ...]
    method: dict
    source: dict
    values: np.ndarray | None = field(default=None, repr=False)
    scores: dict | None = None

    @property
    def pharaoh(self) -> str:
        """The links as 0-based Pharaoh text, "0-0 1-2"."""
        return links_text(self.links)

    def to_dict(self, *, values: bool = True) -> dict:
        d = {"words_a": list(self.words_a), "words_b": list(self.words_b),
             "links": [list(x) for x in self.links], "pharaoh": self.pharaoh,
             "null_a": list(self.null_a), "null_b": list(self.null_b),
             "method": dict(self.method), "source": dict(self.source),
             "scores": None if self.scores is None else dict(self.scores)}
        if values and self.values is not None:
            d["values"] = np.round(self.values, 6).tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Alignment":
        v = d.get("values")
        return cls(tuple(d["words_a"]), tuple(d["words_b"]),
                   tuple((int(i), int(j)) for i, j in d["links"]),
                   tuple(int(i) for i in d["null_a"]), tuple(int(j) for j in d["null_b"]),
                   dict(d["method"]), dict(d["source"]),
                   None if v is None else np.asarray(v, dtype=np.float64),
                   None if d.get("scores") is None else dict(d["scores"]))


def method_of(method: str | Method, kind: str = "hidden", **overrides) -> Method:
    """A :class:`Method` from a name (its defaults for the source ``kind``) or a Method,
    with the settings given (not None) replaced."""
    if isinstance(method, Method):
        m = method
    elif isinstance(method, str) and method in METHODS:
        m = DEFAULTS.get(kind, DEFAULTS["hidden"])[method]
    else:
        raise SettingsError(f"method must be one of {', '.join(METHODS)}; got {method!r}.")
    over = {k: v for k, v in overrides.items() if v is not None}
    return replace(m, **over) if over else m


def opening(method: str = PAIR_METHOD, kind: str = "hidden") -> dict:
    """Where a view of one pair starts: the method and its tuned settings (:data:`DEFAULTS`)
    as sliders read them, ``{"method", "theta", "tau", "mass", "eps"}`` with θ the
    threshold on V (:attr:`Method.theta`) to two decimals: ``unbalanced`` at θ 0.42,
    τ 4.94 on hidden states."""
    m = method_of(method, kind)
    return {"method": m.name, "theta": round(m.theta, 2), "tau": m.tau, "mass": m.mass,
            "eps": m.eps}


__all__ = ["ALIGN_EPS", "Alignment", "DEFAULTS", "DEFAULT_METHOD", "DIRECTIONS", "GRID",
           "MASS_GRID", "METHODS", "Method", "PAIR_METHOD", "TAU_GRID", "THRESHOLDED",
           "method_of", "opening"]
