"""The interference model (docs/packing.md, "Interference"): an instance whose node has x
*other* busy cores runs s(x) = 1 + beta x^2 times slower than alone (beta >= 0); a plan's latency
is max_j L(t_j, b_j) s(x_j). Nodes do not slow each other (own L3 and memory controllers); no
linear term (co-runners take L3 and add memory traffic, two effects that multiply: on PackRat's
CloudLab profile a linear curve misses by up to -16 %, tests/test_interference.py). ``fit``:
weighted least squares, its error inflated by the reduced chi-square when the points scatter
more than their CIs say, and the model's own error out of sample: each co-runner count left out
in turn and predicted from the others (``cv_se_ln``). ``predict``: the 95 % interval from the
alone CIs, beta's error and that cross-validated error (coverage simulated, and checked on
PackRat's profile, in tests/test_interference.py); ``Curve.outside`` says when a prediction
leaves what the curve was fitted on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace

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
    """s(x) = 1 + beta x^2, fitted on ``points`` points (0 = no profile, s = 1 everywhere), with
    its error out of sample: the RMS of ln(predicted / measured) of each co-runner count left
    out (``cv_se_ln``, over ``cv_folds`` counts; 0 folds: not cross-validated), the co-runner
    counts (``x_range``) and instance threads (``threads``) it was fitted on."""

    beta: float = 0.0
    se_beta: float = 0.0
    df: float = math.inf
    points: int = 0
    method: str = "none"  # none, weighted, unweighted
    cv_se_ln: float = 0.0
    cv_folds: int = 0
    x_range: tuple[int, int] = (0, 0)
    threads: tuple[int, ...] = ()

    def s(self, x: float) -> float:
        return 1.0 + self.beta * float(x) ** 2

    def parts(self, x: float) -> list[tuple[float, float]]:
        """(standard error of ln s(x), its degrees of freedom) of each source of error: beta's
        (delta method: d ln s / d beta = x^2 / s(x)) and the cross-validated one; none at x = 0
        (alone on its node: s = 1 exactly)."""
        if x == 0 or not self.points:
            return []
        out = [(float(x) ** 2 * self.se_beta / self.s(x), self.df)]
        return out + ([(self.cv_se_ln, float(self.cv_folds))] if self.cv_folds else [])

    def ci(self, x: float) -> tuple[float, float]:
        return interval(self.s(x), self.parts(x))[1:]

    def outside(self, x: float, threads: int | None = None) -> str:
        """Why s(x) is a prediction beyond what the curve was fitted on ("" when it is not):
        more co-runners than profiled, another instance width, or no check out of sample."""
        if not self.points or x == 0:
            return ""
        why = []
        if x > self.x_range[1]:  # below the profiled counts s runs between s(0) = 1 and them
            why.append(f"{x:g} co-runner cores, more than the profiled {self.x_range[1]}")
        if threads is not None and self.threads and threads not in self.threads:
            fitted = "/".join(str(t) for t in self.threads)
            why.append(f"{threads}-thread instances, profiled with {fitted}-thread ones")
        if not self.cv_folds:
            why.append("one co-runner count profiled: no error out of sample")
        return "predicted beyond the interference profile: " + "; ".join(why) if why else ""

    def label(self) -> str:
        if not self.points:
            return "none (alone latencies)"
        cv = f", {self.cv_se_ln:.1%} out of sample" if self.cv_folds else ""
        return f"s(x) = 1 + {self.beta:.3g} x^2 (+- {self.se_beta:.2g}{cv}, {self.points} points)"

    def to_dict(self) -> dict:
        return {**asdict(self), "df": None if math.isinf(self.df) else self.df}

    @classmethod
    def from_dict(cls, d: dict | None) -> Curve:
        if not d:
            return NONE
        se, df = d.get("se_beta"), d.get("df")
        se, df = math.nan if se is None else float(se), math.inf if df is None else float(df)
        points, method = int(d.get("points", 0)), str(d.get("method", "weighted"))
        cv = (float(d.get("cv_se_ln") or 0.0), int(d.get("cv_folds") or 0))
        fitted = (tuple(d.get("x_range") or (0, 0)), tuple(d.get("threads") or ()))
        return cls(float(d["beta"]), se, df, points, method, *cv, *fitted)


def interval(value: float, parts: Sequence[tuple[float, float]]) -> tuple[float, float, float]:
    """(value, low, high): the 95 % interval of independent errors ``parts`` (se of the log,
    degrees of freedom) summed on the log scale, Welch-Satterthwaite's degrees of freedom."""
    var = sum(se**2 for se, _ in parts)
    if var != var:
        return value, math.nan, math.nan
    denom = sum(se**4 / d for se, d in parts if se > 0 and 0 < d < math.inf)
    half = t_quantile(var**2 / denom if denom > 0 else math.inf) * math.sqrt(var)
    return value, value * math.exp(-half), value * math.exp(half)


NONE = Curve()


def fit(points: Iterable[Point], weighted: bool = True) -> Curve:
    """beta of s(x) = 1 + beta x^2 on the points with x > 0 (``NONE`` without any), with its
    error out of sample (``cross_validated``): points at x = 0 (alone on their node, others on
    another) test the nodes' independence, not beta."""
    pts = [p for p in points if p.x > 0 and p.slowdown == p.slowdown and p.slowdown > 0]
    if not pts:
        return NONE
    curve = _fit(pts, weighted)
    cv, folds = cross_validated(pts, weighted)
    xs, threads = [p.x for p in pts], tuple(sorted({p.threads for p in pts}))
    return replace(curve, cv_se_ln=cv, cv_folds=folds, x_range=(min(xs), max(xs)), threads=threads)


def cross_validated(pts: list[Point], weighted: bool = True) -> tuple[float, int]:
    """(RMS of ln(predicted / measured), folds): each co-runner count left out in turn and
    predicted by the curve fitted on the others; (0, 0) with fewer than two counts."""
    xs = sorted({p.x for p in pts})
    if len(xs) < 2:
        return 0.0, 0
    errors = []
    for x in xs:
        curve = _fit([p for p in pts if p.x != x], weighted)
        errors += [math.log(curve.s(x) / p.slowdown) for p in pts if p.x == x]
    return math.sqrt(sum(e * e for e in errors) / len(errors)), len(xs)


def _fit(pts: list[Point], weighted: bool) -> Curve:
    """The weighted (else unweighted) least-squares beta of ``pts``, its error in sample."""
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
    """(latency, low, high) of one instance: L s(x), its interval over the alone CI and the
    curve's errors (``Curve.parts``)."""
    parts = [(alone.se_ln, alone.df), *curve.parts(x)]
    return interval(alone.latency_s * curve.s(x), parts)


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


def caveats(curve: Curve, instances: Sequence[tuple[int, int]]) -> list[str]:
    """``Curve.outside`` of each instance ``(threads, node)`` of a plan, each reason once."""
    xs = co_runners([t for t, _ in instances], [n for _, n in instances])
    said = (curve.outside(x, t) for (t, _), x in zip(instances, xs, strict=True))
    return list(dict.fromkeys(w for w in said if w))
