"""The deploy answer's judgement (docs/deploy.md, "How the answer is found"): which configuration
an objective row recommends and how sure that is, each configuration's request tail, and the
recommendation's gain split by cause (``factor_rows``). Pure, on the deploy job's records."""

from __future__ import annotations

import math

import numpy as np

from numa_effects import stats
from numa_effects.measure import deploy as measured
from numa_effects.plan import allocators as allocators_mod
from numa_effects.plan import optimizations as optimizations_mod
from numa_effects.plan.deploy import LATENCY
from numa_effects.plan.optimizations import EAGER

TAIL_MIN_N = 100  # requests a p99 needs; below, the tail is the maximum (``tail_kind`` max)
GAIN_KEYS = ("ratio", "ci_low", "ci_high", "ci_df")


def tail(runs: dict, cid: str, objective: str) -> dict:
    """``tail_ms`` (the p99 of every request over the rounds and instances, else their maximum),
    ``tail_kind`` (p99 or max) and ``tail_n`` (the requests) of one configuration."""
    xs = [x for rec in runs.get(cid) or () for x in measured.requests_s(rec, objective)]
    if not xs:
        return {"tail_ms": math.nan, "tail_kind": "", "tail_n": 0}
    kind = "p99" if len(xs) >= TAIL_MIN_N else "max"
    value = float(np.percentile(xs, 99)) if kind == "p99" else max(xs)
    return {"tail_ms": value * 1e3, "tail_kind": kind, "tail_n": len(xs)}


def simplicity(config: dict) -> tuple:
    """Sort key of "simpler": fewer instances, then the optimization and the allocator earlier
    in their registries (eager before compiled; glibc before a preloaded library)."""
    opts = list(optimizations_mod.OPTIMIZATIONS)
    rank = opts.index(config["opt"]) if config["opt"] in opts else len(opts)
    return (len(config["instances"]), rank, allocators_mod.order(config["allocator"]))


def significant(lo: float, hi: float) -> bool | None:
    """Does the gain's CI exclude 1 (None: no interval)?"""
    return bool(lo > 1.0 or hi < 1.0) if lo == lo and hi == hi else None


def equivalent(g: dict, margin: float) -> bool:
    """Is a gain's CI inside ratio 1 +- ``margin`` (on the log scale: [1/(1+m), 1+m])?"""
    return bool(g["ci_low"] >= 1 / (1 + margin) and g["ci_high"] <= 1 + margin)


def name(config: dict) -> str:
    return f"{config['opt']}, {config['allocator']}, {config['label']}"


def choose(runs: dict, row: dict, configs: dict, pool, equivalence_pct: float, excluded=()):
    """(the recommended configuration, why, its gains over the row's others): the measured best
    of those not ``excluded``, or the simplest configuration shown equivalent to it; where
    others are neither equivalent nor significantly worse, ``why`` says undecided."""
    cids = [c for c in measured.row_configs(row) if c not in excluded]
    top = measured.best(runs, cids, row["objective"])
    if top is None:
        return None, "no configuration measured" + (" meets the bound" if excluded else ""), {}
    gains = measured.gains(runs, row, pool, top)
    mine = {c: g for c, g in gains.items() if c in cids}
    margin = equivalence_pct / 100
    same = [c for c, g in mine.items() if equivalent(g, margin)]
    pick = min([top, *same], key=lambda c: simplicity(configs[c]))
    why = ["the measured best"]
    if pick != top:
        why = [
            f"equivalent to the measured best ({name(configs[top])}) within "
            f"+-{equivalence_pct:g} %: the simplest of {len(same) + 1}"
        ]
    undecided = {c: g for c, g in mine.items() if c not in same and significant(*_ci(g)) is False}
    if undecided:
        why.append(undecided_words(runs, row, configs, top, undecided, margin))
    over = gains if pick == top else measured.gains(runs, row, pool, pick)
    return pick, "; ".join(why), over


def _ci(g: dict) -> tuple[float, float]:
    return g["ci_low"], g["ci_high"]


def undecided_words(runs: dict, row: dict, configs: dict, top: str, gains: dict, margin) -> str:
    """``undecided: P(best) ...; about N rounds (M more, T min) would decide``: each one's
    probability of being the best (``stats.prob_best``) and the rounds at which the least
    decided gain's CI would exclude 1 or show equivalence (half-width ~ 1/sqrt(rounds))."""
    p = stats.prob_best([tuple(g[k] for k in GAIN_KEYS) for g in gains.values()])
    ranked = sorted(zip([top, *gains], p, strict=True), key=lambda x: -x[1])
    odds = ", ".join(f"{name(configs[c])} {q:.0%}" for c, q in ranked)
    done, need = 0, 0.0
    for c, g in gains.items():
        n = len(measured.gain_rounds(runs, top, c, row["objective"]))
        done = max(done, n)
        need = max(need, stats.rounds_to_decide(n, g["ratio"], g["ci_low"], g["ci_high"], margin))
    if not math.isfinite(need):
        return f"undecided: P(best) {odds}"
    more = max(1, math.ceil(need) - done)
    minutes = more * measured.round_seconds(runs) / 60
    spent = f", {minutes:.0f} min" if minutes == minutes else ""
    return (
        f"undecided: P(best) {odds}; about {done + more} rounds ({more} more{spent}) would decide"
    )


def missing_bound(tails: dict, bound_ms: float | None) -> list[str]:
    """The configurations whose request tail exceeds ``bound_ms`` (none without a bound)."""
    return [c for c, t in tails.items() if bound_ms and not t["tail_ms"] <= bound_ms]


def geo(runs: dict, cid: str, objective: str) -> float:
    """A configuration's geometric mean over its rounds (NaN without one)."""
    vals = list(measured.round_values(runs, cid, objective).values())
    return math.exp(float(np.mean(np.log(vals)))) if vals else math.nan


def order_notes(runs: dict, row: dict, configs: dict, rec: str) -> list[str]:
    """Where the job and the cells' predictions (cells.csv's medians times the interference
    model) order the recommendation and another configuration differently, one note each."""
    preds = {c["config"]: c.get("predicted") for c in row["candidates"]}
    preds |= {b["config"]: b.get("predicted") for b in row["baselines"] if b.get("config")}
    sign = 1 if row["objective"] == LATENCY else -1  # lower latency, more images/s is better
    p0, m0 = preds.get(rec), geo(runs, rec, row["objective"])
    out = []
    for c, p in preds.items():
        m = geo(runs, c, row["objective"])
        if c == rec or not (p and p0 and m == m and m0 == m0):
            continue
        if (sign * (p - p0) < 0) != (sign * (m - m0) < 0):
            ahead = "ahead of" if sign * (p - p0) < 0 else "behind"
            out.append(f"the cells predict {name(configs[c])} {ahead} it, the job the reverse")
    return out


def factor_rows(row: dict, configs: dict, rec: str) -> list[dict]:
    """[{factor, baseline, config, note}]: the configurations against which the recommendation's
    gain splits by cause: ``total`` (the all-cores baseline: float32 eager, glibc as it comes),
    ``optimization`` (float32 eager), ``allocator`` (glibc as it comes), ``layout`` (each
    launcher's, at the recommendation's optimization and allocator). ``config`` is None where
    the job did not measure it, the recommendation's own where it is the same."""
    mine = configs[rec]
    by_key = {key(configs[c]): c for c in measured.row_configs(row)}
    total = [b["config"] for b in row["baselines"] if b["baseline"] == "all-cores"]
    out = [{"factor": "total", "baseline": "all-cores", "config": total[0] if total else None}]
    for factor, opt, alloc in (
        ("optimization", EAGER, mine["allocator"]),
        ("allocator", mine["opt"], allocators_mod.GLIBC),
    ):
        got = by_key.get((opt, alloc, key(mine)[2]))
        out.append({"factor": factor, "baseline": "", "config": got})
    for f in row.get("factors") or ():
        if f["factor"] == "layout":
            got = by_key.get((mine["opt"], mine["allocator"], key(configs[f["config"]])[2]))
            out.append({"factor": "layout", "baseline": f["baseline"], "config": got})
    return out


def key(config: dict) -> tuple:
    """(opt, allocator, instances) as ``analysis.deploy_plan.Config.key`` compares them."""

    def mem(i: dict) -> tuple:
        nodes = tuple(i.get("nodes") or ())
        return tuple(i["mem_nodes"]) or (nodes if len(nodes) == 1 else ("local", *nodes))

    insts = sorted(
        (tuple(sorted(i["cpus"])), i["threads"], i["batch"], mem(i)) for i in config["instances"]
    )
    return (config["opt"], config["allocator"], tuple(insts))
