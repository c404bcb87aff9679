"""``tables/recommendation.csv``: what to deploy, per objective row, with the evidence: one row
per configuration the objective row compares, with its value over the rounds, its prediction,
the recommendation's gain over it (``measure.deploy.gains``) and the commands that start it
(docs/deploy.md, "Reading recommendation.csv"). An import has predictions only."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from numa_effects import stats
from numa_effects.measure import deploy as measured
from numa_effects.measure.record import GroupRecord
from numa_effects.plan import allocators as allocators_mod
from numa_effects.plan import cpulist
from numa_effects.plan import deploy as deploy_mod
from numa_effects.plan import optimizations as optimizations_mod

# a configuration's value and interval: measured, predicted; the recommendation's gain over it
VALUE = ("value", "ci_low", "ci_high")
PREDICTED = ("predicted", "predicted_low", "predicted_high")
GAIN = ("gain", "gain_ci_low", "gain_ci_high")
COLUMNS = [
    "model",
    "objective",
    "batch",
    "role",
    "baseline",
    "config",
    "opt",
    "dtype",
    "allocator",
    "layout",
    "instances",
    "threads",
    "cpus",
    "mem_nodes",
    "unit",
    *VALUE,
    "rounds",
    "per_core",
    "p99_ms",
    "meets_bound",
    *PREDICTED,
    *GAIN,
    "significant",
    "source",
    "command",
    "run_cpu",
    "notes",
]


def unit(objective: str) -> str:
    return "ms" if objective == deploy_mod.LATENCY else "images/s"


def _shown(objective: str, seconds_or_ips: float) -> float:
    """A value in the table's unit: latency in ms, throughput as is."""
    return seconds_or_ips * 1e3 if objective == deploy_mod.LATENCY else seconds_or_ips


def value_ci(runs: dict, cid: str, objective: str) -> dict:
    """The measured value of one configuration over its rounds: the mean on the log scale
    (the geometric mean) with the t interval of the rounds (each round a new set of processes:
    the interval covers process-to-process and round-to-round spread); NaN without rounds."""
    vals = list(measured.round_values(runs, cid, objective).values())
    if not vals:
        return {**dict.fromkeys(VALUE, math.nan), "rounds": 0}
    logs = np.log(vals)
    centre, half = float(logs.mean()), math.nan
    if len(vals) > 1:
        half = stats.t_quantile(len(vals) - 1) * float(logs.std(ddof=1)) / math.sqrt(len(vals))
    shown = (_shown(objective, math.exp(x)) for x in (centre, centre - half, centre + half))
    return {**dict(zip(VALUE, shown, strict=True)), "rounds": len(vals)}


def simplicity(config: dict) -> tuple:
    """Sort key of "simpler": fewer instances, then the optimization and the allocator earlier
    in their registries (eager before compiled; glibc before a preloaded library)."""
    opts = list(optimizations_mod.OPTIMIZATIONS)
    rank = opts.index(config["opt"]) if config["opt"] in opts else len(opts)
    return (len(config["instances"]), rank, allocators_mod.order(config["allocator"]))


def recommend(runs: dict, row: dict, configs: dict, gains: dict) -> tuple[str | None, str]:
    """(the recommended configuration, why): the measured best, or the simplest of those not
    significantly different from it."""
    cids = measured.row_configs(row)
    top = measured.best(runs, cids, row["objective"])
    if top is None:
        return None, "no configuration was measured"
    ties = [c for c, g in gains.items() if _significant(g["ci_low"], g["ci_high"]) is False]
    if not ties:
        return top, "the measured best"
    pick = min([top, *ties], key=lambda c: simplicity(configs[c]))
    if pick == top:
        return top, f"the measured best; {len(ties)} other(s) not significantly different"
    return pick, (
        f"not significantly different from the measured best ({configs[top]['label']}, "
        f"{configs[top]['opt']}): the simplest of {len(ties) + 1}"
    )


def _significant(lo: float, hi: float) -> bool | None:
    """Does the gain's CI exclude 1 (None: no interval)?"""
    return bool(lo > 1.0 or hi < 1.0) if lo == lo and hi == hi else None


def _config_columns(config: dict) -> dict:
    opt = optimizations_mod.OPTIMIZATIONS.get(config["opt"])
    insts = config["instances"]
    return {
        "opt": config["opt"],
        "dtype": opt.dtype if opt else None,
        "allocator": config["allocator"],
        "layout": config["label"],
        "instances": len(insts),
        "threads": sum(int(i["threads"]) for i in insts),
        "cpus": " ".join(cpulist.format(i["cpus"]) for i in insts),
        "mem_nodes": " ".join(
            cpulist.format(i["mem_nodes"]) if i["mem_nodes"] else "local" for i in insts
        ),
        # the launcher's script and run_cpu line (``launch.attach``), "" where none runs here
        "command": config.get("launch", ""),
        "run_cpu": config.get("launch_run_cpu", ""),
    }


def _roles(row: dict) -> dict[str, dict]:
    """{configuration: {"role", "baseline" names, "prediction", "notes"}} of one row."""
    out: dict[str, dict] = {}
    for c in row["candidates"]:
        out.setdefault(c["config"], {"role": "candidate", "baselines": [], "notes": []})
        out[c["config"]]["prediction"] = c
    for b in row["baselines"]:
        if not b.get("config"):
            continue
        got = out.setdefault(b["config"], {"role": "baseline", "baselines": [], "notes": []})
        got["baselines"].append(b["baseline"])
        if "predicted" in b and "prediction" not in got:
            got["prediction"] = b
        got["notes"] += [n for n in b.get("notes") or () if n not in got["notes"]]
    return out


def objective_rows(row: dict, plan: dict, runs: dict | None, pool, bound_ms) -> list[dict]:
    """The table's rows of one objective row (see the module docstring)."""
    configs, objective = plan["configurations"], row["objective"]
    roles = _roles(row)
    g = measured.gains(runs, row, pool) if runs else {}
    rec, why = recommend(runs, row, configs, g) if runs else _predicted_pick(row)
    # the recommendation's gains: ``g`` when it is the measured best (``g`` has no row of it)
    over = measured.gains(runs, row, pool, rec) if rec in g else g
    out = []
    for cid, info in roles.items():
        config = configs[cid]
        base = {
            "model": row["model"],
            "objective": row["name"],
            "batch": row.get("batch"),
            "role": "recommended" if cid == rec else info["role"],
            "baseline": " = ".join(info["baselines"]),
            "config": cid,
            "unit": unit(objective),
            **_config_columns(config),
            "source": "measured" if runs else "predicted",
        }
        pred = info.get("prediction") or {}
        for k in PREDICTED:
            base[k] = _shown(objective, pred[k]) if pred.get(k) is not None else math.nan
        if runs:
            base.update(value_ci(runs, cid, objective))
            if objective == deploy_mod.THROUGHPUT:  # images/s per physical core it takes
                cores = sum(int(i.get("cores") or len(i["cpus"])) for i in config["instances"])
                base["per_core"] = base["value"] / max(1, cores)
            p99 = [measured.p99_s(r) for r in runs.get(cid, ()) if r.status == "ok"]
            base["p99_ms"] = float(np.nanmedian(p99)) * 1e3 if p99 else math.nan
            if bound_ms:
                base["meets_bound"] = bool(base["p99_ms"] <= bound_ms)
        if cid in over:
            _set_gain(base, *(over[cid][k] for k in ("ratio", "ci_low", "ci_high")))
        notes = [*info["notes"], *(n for n in config.get("notes") or () if n not in info["notes"])]
        if cid == rec:
            notes.insert(0, why)
        base["notes"] = "; ".join(notes)
        out.append(base)
    if not runs:  # predictions only: the gains of the predictions
        top = next((o for o in out if o["role"] == "recommended"), None)
        for o in out:
            if o is not top:
                _predicted_gain(o, top, objective)
    return out


def _predicted_gain(base: dict, rec_row: dict | None, objective: str) -> None:
    """Without a measurement: the gain of the predictions, with an interval from both
    predicted intervals (log scale, independent)."""
    if rec_row is None:
        return
    a, b = rec_row["predicted"], base["predicted"]
    if not (a > 0 and b > 0):  # also where either is NaN
        return
    gain = b / a if objective == deploy_mod.LATENCY else a / b
    half = 0.0
    for r in (rec_row, base):
        lo, hi = r["predicted_low"], r["predicted_high"]
        if not (lo > 0 and hi == hi):
            return base.update(gain=gain)
        half = math.hypot(half, math.log(hi / lo) / 2)
    _set_gain(base, gain, gain * math.exp(-half), gain * math.exp(half))


def _set_gain(base: dict, gain: float, lo: float, hi: float) -> None:
    base.update(zip(GAIN, (gain, lo, hi), strict=True))
    base["significant"] = _significant(lo, hi)


def _predicted_pick(row: dict) -> tuple[str | None, str]:
    if not row["candidates"]:
        return None, "no configuration of the profiles serves it"
    return row["candidates"][0]["config"], "predicted best (nothing measured here)"


def table(plan: dict, result: GroupRecord | None, bound_ms: float | None = None) -> pd.DataFrame:
    """recommendation.csv from the deploy plan and the deploy job's record (None: predictions)."""
    runs = result.runs if result is not None and result.runs else None
    rows = plan["objectives"]
    pool = measured.pooled(runs, rows) if runs else (math.nan, 0)
    out = [r for row in rows for r in objective_rows(row, plan, runs, pool, bound_ms)]
    df = pd.DataFrame(out, columns=COLUMNS)
    order = {"recommended": 0, "candidate": 1, "baseline": 2}
    df["_o"] = df["role"].map(order)
    df["_k"] = df["objective"].str.split().str[0].map(deploy_mod.OBJECTIVES.index)
    keys = ["model", "_k", "batch", "_o", "config"]
    return df.sort_values(keys, kind="stable").drop(columns=["_o", "_k"]).reset_index(drop=True)


# -- the answer in words ---------------------------------------------------------------------------


def _num(v: float) -> str:
    return f"{v:.3g}" if v == v else "?"


def _interval(lo: float, hi: float) -> str:
    """`` [lo, hi]``; nothing without an interval, or with one of no width (predictions from
    cells that carry no CI: PackRat's)."""
    return f" [{_num(lo)}, {_num(hi)}]" if lo == lo and hi == hi and lo < hi else ""


def gain_words(r, objective: str) -> str:
    """``1.8x faster [1.6, 2.0]`` / ``1.3x the images/s [...]`` / ``not significantly ...``."""
    g = r.gain
    if g != g:
        return "no gain: not measured" if r.source == "measured" else "no gain: not predicted"
    what = "faster" if objective.startswith(deploy_mod.LATENCY) else "the images/s"
    sig = "" if stats.as_bool(r.significant) else " (not significant)"
    return f"{g:.2f}x {what}{_interval(r.gain_ci_low, r.gain_ci_high)}{sig}"


def shown(r) -> tuple[float, float, float, bool]:
    """(value, low, high, measured) of a table row: measured, else its prediction."""
    got = r["source"] == "measured"
    return (*(r[c] for c in (VALUE if got else PREDICTED)), got)


def text(v) -> str:
    """A text column's value, "" where the CSV read back a blank (NaN)."""
    return v if isinstance(v, str) else ""


def answer_lines(df: pd.DataFrame) -> list[str]:
    """The summary's first lines: per objective row the recommendation, its value, its gains
    over the baselines and the command."""
    if df is None or df.empty:
        return []
    source = (
        "predicted from imported results" if (df["source"] == "predicted").all() else "measured"
    )
    lines = [f"What to deploy ({source}; tables/recommendation.csv, docs/deploy.md):"]
    for (model, objective), g in df.groupby(["model", "objective"], sort=False):
        rec = g[g["role"] == "recommended"]
        if rec.empty:
            lines.append(f"  {model} {objective}: no configuration measured")
            continue
        r = rec.iloc[0]
        value, lo, hi, got = shown(r)
        same = f" (the layout of {r['baseline']})" if text(r["baseline"]) else ""
        lines.append(
            f"  {model} {objective}: {r['opt']}, {r['allocator']}, {r['layout']}{same}: "
            f"{_num(value)} {r['unit']}{_interval(lo, hi)}" + ("" if got else " (predicted)")
        )
        for b in g[g["role"] == "baseline"].itertuples():
            lines.append(f"    vs {b.baseline}: {gain_words(b, objective)}")
        lines.append(f"    run: {r['command']}")
        if text(r["run_cpu"]):
            lines.append(f"    or: {r['run_cpu']}")
    return lines
