"""``tables/packing.csv``: per (model, opt, core budget, total batch) the optimizer's plan, its
predicted latency and the measured one, and the fat instance's (numa_effects.plan.packing,
numa_effects.measure.group). Pure: rows from the plans and run JSONs.

Columns (docs/packing.md):

- ``plan``: ``2x(t1,b8)`` = two instances of 1 thread and 8 images; ``instances`` the same as
  ``threads:batch`` pairs; ``k``, ``cores``; ``is_fat``: the plan is the fat instance itself;
- ``predicted_latency_ms``, ``predicted_fat_latency_ms``, ``predicted_speedup``: from the grid's
  ``sequential`` cells (``statistic`` names the column: the median, or PackRat's mean);
- ``latency_ms`` with ``latency_ci_low_ms``/``latency_ci_high_ms``: the measured plan, the median
  round latency (slowest instance + signalling) over the clean timed rounds (rounds the
  contention probe excluded are left out) and its 95 % CI. ``ci_method`` says what the CI
  covers: ``within-process`` (one replicate: the order-statistic CI of the median round, i.e.
  round-to-round variation only) or ``two-level`` (``replicates`` >= 2 process groups:
  ``stats.combine_replicates`` on the replicates' medians, the process-level variance pooled
  over the table's fat instances and, apart, its plans: ``pooled_by_kind``);
- ``fat_latency_ms`` and its CI: the fat instance, measured the same way in the same job just
  before the plan (when the plan is the fat instance, one measurement serves both);
- ``prediction_error`` = measured / predicted - 1 (plan); ``speedup`` = fat / plan (measured
  medians) with ``speedup_ci_low``/``speedup_ci_high`` by the same ``ci_method``: two-level,
  the ratio of both two-level CIs (``stats.two_level_ratio_ci``); within-process, a
  percentile bootstrap over the clean rounds of both (round-to-round variation only);
- ``core_map``: ``i0:0-7 i1:8-15`` the CPUs of each plan instance; ``missing``: grid points
  (t, b) without a measured cell, which the optimizer could not use;
- ``status``/``failure``, ``contended`` (any replicate of fat or plan contended: too few clean
  rounds, ``timing.judge``), ``rounds`` (clean ones). A configuration none of whose replicates
  has a clean round has no latency, CI or speedup: the row's ``status`` is ``contended``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from numa_effects import stats
from numa_effects.stats import bootstrap_ratio, two_level_ratio_ci

COLUMNS = [
    "model",
    "opt",
    "budget",
    "budget_names",
    "batch_size",
    "plan",
    "instances",
    "k",
    "cores",
    "is_fat",
    "statistic",
    "predicted_latency_ms",
    "predicted_fat_latency_ms",
    "predicted_speedup",
    "latency_ms",
    "latency_ci_low_ms",
    "latency_ci_high_ms",
    "fat_latency_ms",
    "fat_ci_low_ms",
    "fat_ci_high_ms",
    "prediction_error",
    "speedup",
    "speedup_ci_low",
    "speedup_ci_high",
    "ci_method",
    "rounds",
    "fat_rounds",
    "replicates",
    "contended",
    "core_map",
    "fat_core_map",
    "missing",
    "status",
    "failure",
]


def clean_rounds(rec: dict) -> list[float]:
    """The timed rounds of one measured configuration that its statistics use: those the
    contention probe did not exclude (``timing``'s decision, recorded in ``excluded``); none
    when every round was excluded."""
    m = rec["measurement"]
    xs, excluded = m["latencies_s"], m.get("excluded") or []
    if not excluded:
        return list(xs)
    return [x for x, e in zip(xs, excluded, strict=True) if not e]


def measured(rec: dict) -> bool:
    """A replicate with statistics: ok, and at least one clean round (a record of the one
    measuring stack with none is ``status: contended``; older records said ``ok``)."""
    return rec.get("status") == "ok" and bool(clean_rounds(rec))


def contended(rec: dict) -> bool:
    """The replicate's contention verdict (older group records kept it at the top level)."""
    if "contended" in rec:
        return bool(rec["contended"])
    return bool((rec.get("contention") or {}).get("contended")) or rec.get("status") == "contended"


def _rounds(recs: list[dict]) -> np.ndarray:
    return np.array([x for r in recs if measured(r) for x in clean_rounds(r)])


def replicate_stats(recs: list[dict]) -> list[dict]:
    return [stats.summarize(clean_rounds(r)) for r in recs if measured(r)]


def estimate(recs: list[dict], pooled) -> dict | None:
    """Median and 95 % CI of one configuration: one replicate, the order-statistic CI of its
    median round (within-process); several, ``stats.combine_replicates`` (two-level); None
    when no replicate has a clean round."""
    reps = replicate_stats(recs)
    if not reps:
        return None
    if len(reps) == 1:
        s = reps[0]
        return {**s, "ci_method": "within-process"}
    return stats.combine_replicates(
        [r["median_s"] for r in reps],
        [stats.within_log_var(r["median_s"], r["ci_low_s"], r["ci_high_s"]) for r in reps],
        pooled,
    )


def _core_map(placements) -> str:
    if not placements or isinstance(placements, str):
        return ""
    return " ".join(f"i{j}:{p['cpu_list']}" for j, p in enumerate(placements))


def row(
    choice: dict,
    result: dict | None,
    budget_names: list[str] | None = None,
    pooled: dict | tuple[float, int] = (float("nan"), 0),
) -> dict:
    out = {c: None for c in COLUMNS}
    out.update(
        model=choice["model"],
        opt=choice["opt"],
        budget=choice["budget"],
        budget_names=",".join(budget_names or []),
        batch_size=choice["batch"],
        statistic=choice.get("statistic"),
        missing=" ".join(f"t{t}:b{b}" for t, b in choice.get("missing", [])),
    )
    if not choice.get("instances"):
        out.update(status="no-plan", failure=choice.get("reason"))
        return out
    out.update(
        plan=choice["label"],
        instances=" ".join(f"{i['threads']}:{i['batch']}" for i in choice["instances"]),
        k=choice["k"],
        cores=choice["cores"],
        is_fat=choice["is_fat"],
        predicted_latency_ms=choice["latency_s"] * 1e3,
        predicted_fat_latency_ms=choice["fat_latency_s"] * 1e3,
        predicted_speedup=choice["speedup"],
    )
    if result is None:
        out["status"] = "not-measured"
        return out
    placements = result.get("placements", {})
    out["fat_core_map"] = _core_map(placements.get("fat"))
    out["core_map"] = _core_map(placements.get("plan", placements.get("fat")))
    out["status"] = result["status"]
    if result["status"] != "ok":
        f = result.get("failure") or {}
        out["failure"] = f"{f.get('cause')}: {f.get('message')}"
        return out
    runs = result["runs"]
    fat = _rounds(runs["fat"])
    plan = _rounds(runs["plan"]) if "plan" in runs else fat
    out["replicates"] = len(runs["fat"])
    out["rounds"], out["fat_rounds"] = int(plan.size), int(fat.size)
    out["contended"] = any(contended(r) for recs in runs.values() for r in recs)
    pools = pooled if isinstance(pooled, dict) else {"fat": pooled, "plan": pooled}
    estimates = {"fat": estimate(runs["fat"], pools["fat"])}
    if "plan" in runs:
        estimates["plan"] = estimate(runs["plan"], pools["plan"])
    else:
        estimates["plan"] = estimates["fat"]
    for prefix, name in (("latency", "plan"), ("fat", "fat")):
        s = estimates[name]
        if s is None:  # no clean round in any replicate: not a number
            continue
        key = "latency_ms" if prefix == "latency" else "fat_latency_ms"
        out[key] = s["median_s"] * 1e3
        out[f"{prefix}_ci_low_ms"] = s["ci_low_s"] * 1e3
        out[f"{prefix}_ci_high_ms"] = s["ci_high_s"] * 1e3
    if estimates["plan"] is not None:
        out["ci_method"] = estimates["plan"]["ci_method"]
        out["prediction_error"] = out["latency_ms"] / out["predicted_latency_ms"] - 1.0
    if estimates["plan"] is None or estimates["fat"] is None:
        out["status"] = "contended"
        return out
    out["speedup"] = out["fat_latency_ms"] / out["latency_ms"]
    if "plan" not in runs:
        out["speedup_ci_low"] = out["speedup_ci_high"] = 1.0
    elif all(estimates[n]["ci_method"] == "two-level" for n in ("fat", "plan")):
        # fat / plan from both two-level CIs (Welch-Satterthwaite on the log scale, as
        # degradation.csv): the process-to-process variation of both configurations counts
        lo, hi = two_level_ratio_ci(
            *(
                (s["ci_low_s"], s["ci_high_s"], s["ci_df"])
                for s in (estimates["plan"], estimates["fat"])
            )
        )
        out["speedup_ci_low"], out["speedup_ci_high"] = lo, hi
    else:
        # one replicate: round-to-round only. bootstrap_ratio gives stat(compared) /
        # stat(baseline)
        lo, hi = bootstrap_ratio(plan, fat)
        out["speedup_ci_low"], out["speedup_ci_high"] = lo, hi
    return out


def pooled_by_kind(results: dict) -> dict:
    """{"fat"|"plan": (pooled variance of ln-medians, df)}: the process-level variance pooled
    over the fat instances of the table and, apart, over its plans, so a configuration with 2
    replicates gets a usable two-level CI. Apart, as cells.csv pools per thread count
    (``tidy.pooled_by_threads``): the fat instance uses every core of its budget and its
    processes vary more than those of small instances do."""
    groups: dict[str, list] = {"fat": [], "plan": []}
    for res in results.values():
        if res.get("status") != "ok":
            continue
        for kind, recs in res["runs"].items():
            groups.setdefault(kind, []).append([r["median_s"] for r in replicate_stats(recs)])
    return {kind: stats.pooled_replicate_var(g) for kind, g in groups.items()}


def table(plans: list[dict], results: dict, budget_names: dict | None = None) -> pd.DataFrame:
    """``plans``: the plans.json documents; ``results``: {(model, opt, budget, batch): run JSON}."""
    pools = pooled_by_kind(results)
    rows = []
    for doc in plans:
        for choice in doc["choices"]:
            key = (choice["model"], choice["opt"], choice["budget"], choice["batch"])
            names = (budget_names or {}).get(choice["budget"])
            rows.append(row(choice, results.get(key), names, pools))
    df = pd.DataFrame(rows, columns=COLUMNS)
    return df.sort_values(["model", "opt", "budget", "batch_size"]).reset_index(drop=True)


def benchmark_summary(df: pd.DataFrame, tolerance: float = 0.10) -> dict:
    """The ``packing`` benchmark's numbers: share of measured batch sizes whose prediction is
    within ``tolerance``, and the measured speedup per row."""
    ok = df[df["status"] == "ok"]
    within = ok["prediction_error"].abs() <= tolerance
    return {
        "measured": len(ok),
        "within": int(within.sum()),
        "share_within": float(within.mean()) if len(ok) else math.nan,
    }
