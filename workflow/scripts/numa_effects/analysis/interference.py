"""The interference model (docs/packing.md, "Interference"): an instance whose node has x
*other* busy cores runs s(x) = 1 + beta x^2 times slower than alone (beta >= 0); a plan's latency
is max_j L(t_j, b_j) s(x_j). Nodes do not slow each other (own L3 and memory controllers); no
linear term (co-runners take L3 and add memory traffic, two effects that multiply: on PackRat's
CloudLab profile a linear curve misses by up to -16 %, tests/test_interference.py). ``fit``:
weighted least squares, its error inflated by the reduced chi-square when the points scatter
more than their CIs say. ``predict``: the 95 % interval from the alone CIs and beta's error,
valid if the model holds (coverage simulated in tests/test_interference.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from numa_effects.stats import log_se, t_quantile


@dataclass(frozen=True)
class Point:
    """One measured slowdown of instances with ``x`` other busy cores on their node, with its
    95 % CI (NaN: none) and the CI's degrees of freedom (inf: normal)."""

    x: int
    slowdown: float
    ci_low: float = math.nan
    ci_high: float = math.nan
    df: float = math.inf
    threads: int = 1
    k: int = 2
    node: int = 0


@dataclass(frozen=True)
class Curve:
    """s(x) = 1 + beta x^2, fitted on ``points`` points (0 = no profile, s = 1 everywhere)."""

    beta: float = 0.0
    se_beta: float = 0.0
    df: float = math.inf
    points: int = 0
    method: str = "none"  # none, weighted, unweighted

    def s(self, x: float) -> float:
        return 1.0 + self.beta * float(x) ** 2

    def se_ln(self, x: float) -> float:
        """Standard error of ln s(x) (delta method: d ln s / d beta = x^2 / s(x))."""
        return 0.0 if x == 0 else float(x) ** 2 * self.se_beta / self.s(x)

    def ci(self, x: float) -> tuple[float, float]:
        s, se = self.s(x), self.se_ln(x)
        if se != se:
            return math.nan, math.nan
        half = t_quantile(self.df) * se
        return s * math.exp(-half), s * math.exp(half)

    def label(self) -> str:
        if not self.points:
            return "none (alone latencies)"
        return f"s(x) = 1 + {self.beta:.3g} x^2 (+- {self.se_beta:.2g}, {self.points} points)"

    def to_dict(self) -> dict:
        return {**asdict(self), "df": None if math.isinf(self.df) else self.df}

    @classmethod
    def from_dict(cls, d: dict | None) -> Curve:
        if not d:
            return NONE
        se, df = d.get("se_beta"), d.get("df")
        se, df = math.nan if se is None else float(se), math.inf if df is None else float(df)
        points, method = int(d.get("points", 0)), str(d.get("method", "weighted"))
        return cls(float(d["beta"]), se, df, points, method)


NONE = Curve()


def fit(points: Iterable[Point], weighted: bool = True) -> Curve:
    """beta of s(x) = 1 + beta x^2 on the points with x > 0 (``NONE`` without any): points at
    x = 0 (alone on their node, others on another) test the nodes' independence, not beta."""
    pts = [p for p in points if p.x > 0 and p.slowdown == p.slowdown and p.slowdown > 0]
    if not pts:
        return NONE
    x2 = [float(p.x) ** 2 for p in pts]
    y = [p.slowdown - 1.0 for p in pts]
    sd = [p.slowdown * log_se(p.ci_low, p.ci_high, p.df) for p in pts]
    use_weights = weighted and all(v == v and v > 0 for v in sd)
    w = [1.0 / v**2 for v in sd] if use_weights else [1.0] * len(pts)
    sxx = sum(wi * a * a for wi, a in zip(w, x2, strict=True))
    beta = sum(wi * a * yi for wi, a, yi in zip(w, x2, y, strict=True)) / sxx
    n = len(pts)
    chi2 = sum(wi * (yi - beta * a) ** 2 for wi, a, yi in zip(w, x2, y, strict=True))
    if use_weights:
        inflate = max(1.0, chi2 / (n - 1)) if n >= 2 else 1.0
        se = math.sqrt(inflate / sxx)
        df = min(p.df for p in pts)
        if inflate > 1.0:  # the scatter, not the CIs, sets the error: its degrees of freedom
            df = min(df, float(n - 1))
        method = "weighted"
    elif n >= 2:
        se = math.sqrt(chi2 / (n - 1) / sxx)
        df, method = float(n - 1), "unweighted"
    else:
        se, df, method = math.nan, math.nan, "unweighted"
    return Curve(beta=max(0.0, beta), se_beta=se, df=df, points=n, method=method)


@dataclass(frozen=True)
class Alone:
    """An instance's alone latency with its cell's 95 % CI and degrees of freedom (NaN: none)."""

    latency_s: float
    ci_low_s: float = math.nan
    ci_high_s: float = math.nan
    df: float = math.inf

    @property
    def se_ln(self) -> float:
        if self.ci_low_s != self.ci_low_s:
            return 0.0  # no CI recorded: the cell's own uncertainty is unknown, not counted
        return log_se(self.ci_low_s, self.ci_high_s, self.df)


@dataclass(frozen=True)
class Prediction:
    latency_s: float  # max_j L_j s(x_j)
    ci_low_s: float
    ci_high_s: float


def instance_interval(alone: Alone, x: int, curve: Curve) -> tuple:
    """(latency, low, high) of one instance: L s(x), Welch-Satterthwaite on the log scale."""
    value = alone.latency_s * curve.s(x)
    se_a, se_c = alone.se_ln, curve.se_ln(x)
    if not (se_a == se_a and se_c == se_c):
        return value, math.nan, math.nan
    var = se_a**2 + se_c**2
    if var == 0:
        return value, value, value
    parts = [(se_a, alone.df), (se_c, curve.df)]
    denom = sum(s**4 / d for s, d in parts if s > 0 and 0 < d < math.inf)
    df = var**2 / denom if denom > 0 else math.inf
    half = t_quantile(df) * math.sqrt(var)
    return value, value * math.exp(-half), value * math.exp(half)


def predict(instances: Sequence[tuple[Alone, int]], curve=NONE) -> Prediction:
    """A plan's latency max_j L_j s(x_j) of its ``[(Alone, x), ...]`` with its 95 % interval."""
    if not instances:
        raise ValueError("a plan has at least one instance")
    per = [instance_interval(a, x, curve) for a, x in instances]
    return Prediction(*(max(column) for column in zip(*per, strict=True)))


def co_runners(threads: Sequence[int], nodes: Sequence[int]) -> list[int]:
    """x_j: the cores of the other instances on instance j's node (``nodes[j]``)."""
    busy: dict[int, int] = {}
    for t, n in zip(threads, nodes, strict=True):
        busy[n] = busy.get(n, 0) + t
    return [busy[n] - t for t, n in zip(threads, nodes, strict=True)]
