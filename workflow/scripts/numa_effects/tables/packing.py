"""``tables/packing.csv`` and ``tables/packing_candidates.csv`` (columns: docs/packing.md): per
(model, opt, core budget, total batch) the optimizer's plan with its latency predicted alone,
predicted with interference and measured, and the recommendation: the measured best of the
configurations the job measured. Pure: rows from the plans and run records.

A configuration's latency is the median round (slowest instance + signalling) over its clean
rounds. ``ci_method``: ``within-process`` (one replicate: the order-statistic CI, round-to-round
only) or ``two-level`` (``stats.combine_replicates`` over the replicates' medians, the
process-level variance pooled over the fat instances and, apart, the plans:
``pooled_by_kind``); ratios take the two-level ratio CI, else a bootstrap over both
configurations' clean rounds. A configuration with no clean round has no latency, CI or speedup:
the plan's makes the row ``contended``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from numa_effects import stats
from numa_effects.analysis import interference, packing
from numa_effects.measure.record import GroupRecord, Record
from numa_effects.plan import packing as packing_jobs
from numa_effects.stats import bootstrap_ratio, two_level_ratio_ci


def latency_columns(prefix: str) -> tuple[str, str, str]:
    """A measured latency's columns: ``<prefix>_latency_ms`` (``latency_ms`` for ``latency``)
    and its CI's, ``<prefix>_ci_low_ms`` and ``<prefix>_ci_high_ms``."""
    value = "latency_ms" if prefix == "latency" else f"{prefix}_latency_ms"
    return value, f"{prefix}_ci_low_ms", f"{prefix}_ci_high_ms"


# The column groups both tables share (``_predicted``, ``_errors``).
PLAN = ("plan", "instances", "k", "cores")
PREDICTED = ("predicted_alone_ms", "predicted_ms", "predicted_ci_low_ms", "predicted_ci_high_ms")
LATENCY = latency_columns("latency")
ERRORS = ("prediction_error", "prediction_error_alone")
COLUMNS = [
    "model",
    "opt",
    "budget",
    "budget_names",
    "batch_size",
    *PLAN,
    "is_fat",
    "statistic",
    "interference_model",
    *PREDICTED,
    "predicted_fat_latency_ms",
    "predicted_speedup",
    "alone_plan",
    *LATENCY,
    *latency_columns("fat"),
    *ERRORS,
    *stats.with_ci("speedup"),
    "ci_method",
    "candidates",
    "measured_ranking",
    "recommended_plan",
    *latency_columns("recommended"),
    *stats.with_ci("recommended_speedup"),
    *stats.with_ci("recommended_gain"),
    "recommended_is_predicted",
    "rounds",
    "fat_rounds",
    "replicates",
    "contended",
    "core_map",
    "fat_core_map",
    "recommended_core_map",
    "missing",
    "status",
    "failure",
]
CANDIDATE_COLUMNS = [
    *("model", "opt", "budget", "batch_size", "name"),
    *PLAN,
    *("is_fat", "busy", "predicted_rank"),
    *PREDICTED,
    *LATENCY,
    *ERRORS,
    *("measured_rank", "recommended", "ci_method", "replicates", "rounds", "contended", "core_map"),
    "status",
]


def clean_rounds(rec: Record, rounds: list | None = None) -> list[float]:
    """The timed rounds the contention probe did not exclude (none when all were): of the
    record's latencies, or of ``rounds`` (a value per round)."""
    xs = rec.measurement["latencies_s"] if rounds is None else rounds
    excluded = rec.measurement.get("excluded") or [False] * len(xs)
    return [x for x, e in zip(xs, excluded, strict=True) if not e]


def measured(rec: Record) -> bool:
    """A replicate with statistics: ok, and at least one clean round (a record of the one
    measuring stack with none is ``status: contended``; older records said ``ok``)."""
    return rec.status == "ok" and bool(clean_rounds(rec))


def contended(rec: Record) -> bool:
    """The replicate's contention verdict."""
    return bool(rec.contention.get("contended")) or rec.status == "contended"


def replicate_stats(recs) -> list[dict]:
    return [stats.summarize(clean_rounds(r)) for r in recs if measured(r)]


def estimate(recs, pooled) -> dict | None:
    """Median and 95 % CI of one configuration (``ci_method``: the module docstring); None
    when no replicate has a clean round."""
    reps = replicate_stats(recs)
    if not reps:
        return None
    if len(reps) == 1:
        return {**reps[0], "ci_method": stats.WITHIN}
    return stats.combine_replicates(
        [r["median_s"] for r in reps],
        [stats.within_log_var(clean_rounds(r)) for r in recs if measured(r)],
        pooled,
    )


def core_map_text(placements) -> str:
    """``i0:0-7 i1:8-15``: the CPUs of each instance of a configuration ("" without)."""
    if not placements or isinstance(placements, str):
        return ""
    return " ".join(f"i{j}:{p['cpu_list']}" for j, p in enumerate(placements))


def _kind(name: str) -> str:
    """The pool a configuration's process-level variance goes to: the fat instance, or plans."""
    return "fat" if name == "fat" else "plan"


def _ratio_ci(num: dict, den: dict) -> tuple[float, float]:
    """CI of ``num``'s latency over ``den``'s (two of ``evaluate``'s measured configurations):
    two-level when both estimates are, else a bootstrap over their clean rounds."""
    a, b = num["est"], den["est"]
    if a is b:
        return 1.0, 1.0
    method = stats.ratio_ci_method(stats.MEDIAN, b["ci_method"], a["ci_method"], rounds=True)
    if method == stats.TWO_LEVEL:
        return two_level_ratio_ci(
            (b["ci_low_s"], b["ci_high_s"], b["ci_df"]), (a["ci_low_s"], a["ci_high_s"], a["ci_df"])
        )
    # bootstrap_ratio gives stat(compared) / stat(baseline)
    return bootstrap_ratio(np.asarray(den["rounds"]), np.asarray(num["rounds"]))


def _candidates(choice: dict) -> dict[str, dict]:
    """{configuration name: its choice dict}, the fat instance among them (measured though it
    was no candidate: then without a ``rank``)."""
    out = {name: {**c, "rank": i} for name, i, c in packing_jobs.candidates(choice)}
    if "fat" not in out:
        b, batch = int(choice["budget"]), int(choice["batch"])
        out["fat"] = {
            "label": packing.label([packing.Instance(b, batch, choice["fat_latency_s"])]),
            "instances": [{"threads": b, "batch": batch}],
            "k": 1,
            "cores": b,
            "is_fat": True,
            "latency_s": choice["fat_latency_s"],
        }
    return out


def _ms(v) -> float:
    return math.nan if v is None else float(v) * 1e3


def _predicted(c: dict) -> dict:
    """The columns of a configuration's prediction (the job's choice, or one candidate)."""
    return {
        "plan": c["label"],
        "instances": " ".join(f"{i['threads']}:{i['batch']}" for i in c["instances"]),
        "k": c["k"],
        "cores": c["cores"],
        "predicted_alone_ms": _ms(c.get("alone_latency_s", c["latency_s"])),
        "predicted_ms": _ms(c["latency_s"]),
        "predicted_ci_low_ms": _ms(c.get("ci_low_s")),
        "predicted_ci_high_ms": _ms(c.get("ci_high_s")),
    }


def _errors(out: dict, est: dict) -> None:
    """A measured configuration's latency with its CI, and its errors against both predictions."""
    _prefixed(out, "latency", est)
    out["ci_method"] = est["ci_method"]
    out["prediction_error"] = out["latency_ms"] / out["predicted_ms"] - 1.0
    out["prediction_error_alone"] = out["latency_ms"] / out["predicted_alone_ms"] - 1.0


def _prefixed(out: dict, prefix: str, est: dict | None) -> None:
    if est is not None:
        values = (est[k] * 1e3 for k in ("median_s", "ci_low_s", "ci_high_s"))
        out.update(zip(latency_columns(prefix), values, strict=True))


def evaluate(choice: dict, result: GroupRecord, pooled) -> tuple[dict, list[str]]:
    """The measured configurations of one job: {name: {"est", "rounds", "contended",
    "replicates", "choice"}} (est None: no clean round), and the names by measured latency."""
    cands = _candidates(choice)
    got = {}
    for name, recs in result.runs.items():
        got[name] = {
            "est": estimate(recs, pooled[_kind(name)]),
            "rounds": np.array([x for r in recs if measured(r) for x in clean_rounds(r)]),
            "contended": any(contended(r) for r in recs),
            "replicates": len(recs),
            "choice": cands.get(name),
        }
    ranked = sorted(
        (n for n, g in got.items() if g["est"] is not None),
        key=lambda n: got[n]["est"]["median_s"],
    )
    return got, ranked


def row(choice: dict, result: GroupRecord | None, budget_names: list | None, pooled: dict) -> dict:
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
    curve = interference.Curve.from_dict(choice.get("curve"))
    alone_plan = choice.get("alone_plan") or {}
    out.update(
        _predicted(choice),
        is_fat=choice["is_fat"],
        interference_model="none" if not curve.points else curve.label(),
        predicted_fat_latency_ms=choice["fat_latency_s"] * 1e3,
        predicted_speedup=choice["speedup"],
        alone_plan=alone_plan.get("label"),
        candidates=len(_candidates(choice)),
    )
    if result is None:
        out["status"] = "not-measured"
        return out
    out["status"] = result.status
    if result.status != "ok":
        out["failure"] = failure_text(result.failure)
        return out
    return _measured(out, choice, result, pooled)


def _measured(out: dict, choice: dict, result: GroupRecord, pooled) -> dict:
    """``row``'s measured columns: the plan's and the fat instance's latencies and CIs, the
    prediction errors, the recommendation, the speedup; contended without both estimates."""
    placements = result.placements
    got, ranked = evaluate(choice, result, pooled)
    plan_name = "plan" if "plan" in got else "fat"
    fat, plan = got["fat"], got[plan_name]
    out["fat_core_map"] = core_map_text(placements.get("fat"))
    out["core_map"] = core_map_text(placements.get(plan_name))
    out["replicates"] = fat["replicates"]
    out["rounds"], out["fat_rounds"] = int(plan["rounds"].size), int(fat["rounds"].size)
    out["contended"] = any(g["contended"] for g in got.values())
    _prefixed(out, "fat", fat["est"])
    out["measured_ranking"] = " < ".join(got[n]["choice"]["label"] for n in ranked)
    if plan["est"] is not None:
        _errors(out, plan["est"])
    if ranked:
        best = ranked[0]
        out.update(
            recommended_plan=got[best]["choice"]["label"],
            recommended_is_predicted=best == plan_name,
            recommended_core_map=core_map_text(placements.get(best)),
        )
        # the measured best's latency, its speedup over the fat instance, its gain over the plan
        b = got[best]
        _prefixed(out, "recommended", b["est"])
        for col, than in (("recommended_speedup", fat), ("recommended_gain", plan)):
            if than["est"] is not None:
                value = than["est"]["median_s"] / b["est"]["median_s"]
                out.update(zip(stats.with_ci(col), (value, *_ratio_ci(than, b)), strict=True))
    if plan["est"] is None or fat["est"] is None:
        out["status"] = "contended"
        return out
    speedup = out["fat_latency_ms"] / out["latency_ms"]
    out.update(zip(stats.with_ci("speedup"), (speedup, *_ratio_ci(fat, plan)), strict=True))
    return out


def failure_text(f) -> str:
    """A failed job's ``failure`` column: ``cause: message``."""
    return f"{f.cause}: {f.message}" if f else "None: None"


def candidate_rows(choice: dict, result: GroupRecord | None, pooled) -> list[dict]:
    """One row of ``packing_candidates.csv`` per configuration the job measured."""
    if not choice.get("instances") or result is None or result.status != "ok":
        return []
    got, ranked = evaluate(choice, result, pooled)
    placements = result.placements
    rows = []
    for name, g in got.items():
        c = g["choice"]
        r = {col: None for col in CANDIDATE_COLUMNS}
        r.update(
            _predicted(c),
            model=choice["model"],
            opt=choice["opt"],
            budget=choice["budget"],
            batch_size=choice["batch"],
            name=name,
            is_fat=bool(c.get("is_fat", name == "fat")),
            busy=" ".join(str(v) for v in c.get("busy") or []),
            predicted_rank=c.get("rank"),
            replicates=g["replicates"],
            rounds=int(g["rounds"].size),
            contended=g["contended"],
            core_map=core_map_text(placements.get(name)),
            status="ok" if g["est"] is not None else "contended",
        )
        if g["est"] is not None:
            _errors(r, g["est"])
            r["measured_rank"] = ranked.index(name)
            r["recommended"] = ranked.index(name) == 0
        rows.append(r)
    return rows


def pooled_by_kind(results: dict) -> dict:
    """{"fat"|"plan": (pooled variance of ln-medians, df)} over the table's fat instances and,
    apart, its plans: a fat instance's processes vary more than small instances' do."""
    groups: dict[str, list] = {"fat": [], "plan": []}
    for res in results.values():
        if res.status != "ok":
            continue
        for name, recs in res.runs.items():
            groups[_kind(name)].append([r["median_s"] for r in replicate_stats(recs)])
    return {kind: stats.pooled_replicate_var(g) for kind, g in groups.items()}


def _jobs(plans: list[dict], results: dict):
    """(choice, its ``GroupRecord`` or None) of every job of the plans.json documents."""
    for doc in plans:
        for c in doc["choices"]:
            yield c, results.get((c["model"], c["opt"], c["budget"], c["batch"]))


def table(plans: list[dict], results: dict, budget_names: dict | None = None) -> pd.DataFrame:
    """``plans``: the plans.json documents; ``results``: {(model, opt, budget, batch): its
    ``GroupRecord``}."""
    pools = pooled_by_kind(results)
    names = budget_names or {}
    rows = [row(c, res, names.get(c["budget"]), pools) for c, res in _jobs(plans, results)]
    df = pd.DataFrame(rows, columns=COLUMNS)
    return df.sort_values(["model", "opt", "budget", "batch_size"]).reset_index(drop=True)


def candidates_table(plans: list[dict], results: dict) -> pd.DataFrame:
    """``packing_candidates.csv``: every measured configuration of every job."""
    pools = pooled_by_kind(results)
    rows = [r for c, res in _jobs(plans, results) for r in candidate_rows(c, res, pools)]
    df = pd.DataFrame(rows, columns=CANDIDATE_COLUMNS)
    return df.sort_values(["model", "opt", "budget", "batch_size", "name"]).reset_index(drop=True)
