"""Benchmark 10, canary: what the canary (config key ``canary``) costs a cell, and
which canary kernel follows the host's speed as the model does.

For the first model, eager, ``sequential``, the grid's smallest and largest thread count and its two
smallest batch sizes, ``PROCESSES`` pinned processes (``canary_child``: the pipeline's own model
build, the cell's binding and ``OMP_NUM_THREADS``), each stepping the model for ``SECONDS`` with
every canary kernel (``measure.cell.CANARY_KERNELS``) timed after a random half of its steps. Two
tables:

- ``canary.csv``, the cost, per configuration: the kernels' median time as a share of the step,
  and the effect of a canary on the next step's latency (``effect``: the difference of mean log
  latency after a canary and after none, within each process, the processes pooled: a
  regression on the indicator with one intercept per process, its 95 % t interval). The
  assignment is random within pairs of steps, so the host's drift cannot pose as an effect.
  The last row pools every configuration's processes (each with its own intercept). Comparing
  a run with the canary to one without (the variance benchmark's runs) cannot see an
  effect smaller than the between-process spread, this can.
- ``canary-kernels.csv``, per thread count and kernel: over the processes (each: log of its
  median latency, log of its median kernel time), the common within-configuration slope,
  correlation and residual SD, the fit ``tables.speed`` makes (``speed.fit``) -- a kernel that
  moves as the model does has a slope near 1 and leaves the smallest SD.

Goals: the effect's interval contains 0 and lies within +-``GOAL_PCT`` (a canary that costs
the cell nothing it can see); the default kernel's slope the closest to 1 at every thread
count."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from .common import KEYS, Context, pinned_child, show

NAME = "canary"
PROCESSES = 8
SECONDS = 4.0
BATCHES = 2
GOAL_PCT = 2.0


def configs(ctx: Context) -> list[dict]:
    """The configurations measured: first model, eager, the grid's smallest and largest thread
    count on this machine, its two smallest batch sizes."""
    from numa_effects.plan import grid, topology

    g = ctx.grid()
    counts = grid.thread_counts(g, topology.current())
    threads = sorted({counts[0], counts[-1]})
    batches = sorted(int(b) for b in g["batch_sizes"])[:BATCHES]
    size = int(g.get("image_size", 224))
    return [
        {"model": g["models"][0], "opt": "none", "threads": t, "batch_size": b, "image_size": size}
        for t in threads
        for b in batches
    ]


def run_child(cfg: dict, out, seed: int, seconds: float = SECONDS) -> list[dict]:
    from numa_effects.plan import placement as placement_mod
    from numa_effects.plan import topology

    plan = placement_mod.plan(topology.current(), cfg["threads"], "sequential")
    if isinstance(plan, placement_mod.NotApplicable):
        raise RuntimeError(f"canary: {cfg['threads']} threads cannot be pinned here: {plan}")
    args = ["--model", cfg["model"], "--opt", cfg["opt"], "--batch", str(cfg["batch_size"])]
    args += ["--threads", str(cfg["threads"]), "--image-size", str(cfg["image_size"])]
    args += ["--seconds", str(seconds), "--seed", str(seed)]
    return pinned_child("benchmarks.canary_child", plan, cfg["threads"], args, out)


def effect(steps: pd.DataFrame, confidence: float = 0.95) -> dict:
    """The canary's effect on the next step: ``steps`` has ``process``, ``latency_s`` and
    ``after_canary`` (bool; rows where it is unknown are dropped). Returns ``effect_pct`` (the
    latency after a canary over that after none, minus 1, in %), its interval and ``df``: the
    least-squares slope of log latency on the indicator, both centred within each process."""
    from scipy.stats import t as student_t

    d = steps.dropna(subset=["after_canary"])
    y = np.log(d["latency_s"].to_numpy(float))
    x = d["after_canary"].astype(float).to_numpy()
    proc = d["process"].to_numpy()
    yc = y - pd.Series(y).groupby(proc).transform("mean").to_numpy()
    xc = x - pd.Series(x).groupby(proc).transform("mean").to_numpy()
    sxx = float(xc @ xc)
    df = len(d) - len(set(proc)) - 1
    if sxx <= 0 or df < 1:
        return {"effect_pct": math.nan, "ci_low_pct": math.nan, "ci_high_pct": math.nan, "df": 0}
    b = float(xc @ yc) / sxx
    resid = yc - b * xc
    se = math.sqrt(float(resid @ resid) / df / sxx)
    q = float(student_t.ppf(0.5 + confidence / 2.0, df))

    def pct(v: float) -> float:
        return (math.exp(v) - 1.0) * 100.0

    return {
        "effect_pct": pct(b),
        "ci_low_pct": pct(b - q * se),
        "ci_high_pct": pct(b + q * se),
        "df": df,
    }


def kernel_fits(steps: pd.DataFrame, kernels) -> pd.DataFrame:
    """Per thread count and kernel: ``speed.fit`` over the processes (a configuration is a
    cell), with the pooled within-configuration correlation and the SD before and after."""
    from numa_effects.plan.grid import DEFAULTS
    from numa_effects.tables import speed

    rows = []
    keys = ["threads", "batch_size", "process"]
    for k in kernels:
        per = steps.groupby(keys)[["latency_s", k]].median().reset_index()
        reps = per.assign(
            y=np.log(per["latency_s"]),
            x=np.log(per[k]),
            model="m",
            opt="none",
            placement="sequential",
            replicate=per["process"],
            **DEFAULTS,
        )[[*KEYS, "replicate", "y", "x"]]
        for series, f in speed.fit(reps).items():
            threads = series[speed.SERIES.index("threads")]
            g = reps[reps["threads"] == threads]
            yc = g["y"] - g.groupby("batch_size")["y"].transform("mean")
            xc = g["x"] - g.groupby("batch_size")["x"].transform("mean")
            df_plain = len(g) - g["batch_size"].nunique()
            rows.append(
                {
                    "threads": threads,
                    "kernel": k,
                    "processes": len(g),
                    "kernel_ms": float(np.exp(g["x"]).median() * 1000.0),
                    "slope": f["slope"],
                    "r": float(np.corrcoef(xc, yc)[0, 1]),
                    "plain_sd_pct": math.sqrt(float(yc @ yc) / df_plain) * 100.0,
                    "adjusted_sd_pct": math.sqrt(f["s2"]) * 100.0,
                }
            )
    return pd.DataFrame(rows)


def run(ctx: Context) -> pd.DataFrame:
    from numa_effects.measure.cell import CANARY_KERNEL, CANARY_KERNELS

    work = ctx.work / NAME
    work.mkdir(parents=True, exist_ok=True)
    seconds = SECONDS if ctx.grid_name != "smoke" else 0.5
    steps = []
    todo = configs(ctx)
    for p in range(PROCESSES):  # configurations interleaved: the host's drift spreads evenly
        for i, cfg in enumerate(todo):
            out = work / f"t{cfg['threads']}-bs{cfg['batch_size']}-p{p}.json"
            if ctx.reuse and out.exists():
                rows = json.loads(out.read_text())
            else:
                rows = run_child(cfg, out, seed=1000 * p + i, seconds=seconds)
            steps += [{**cfg, "process": p, **r} for r in rows]
    steps = pd.DataFrame(steps)
    kernels = list(CANARY_KERNELS)
    cost = []
    for (t, b), g in steps.groupby(["threads", "batch_size"], sort=True):
        lat = g["latency_s"].median()
        cost.append(
            {
                "threads": t,
                "batch_size": b,
                "processes": g["process"].nunique(),
                "steps": len(g),
                "latency_ms": lat * 1000.0,
                **{f"{k}_share_pct": g[k].median() / lat * 100.0 for k in kernels},
                **effect(g),
            }
        )
    # every configuration's processes together (each its own intercept): the tightest bound
    pooled = steps.assign(process=steps.groupby(["threads", "batch_size", "process"]).ngroup())
    lat = pooled.groupby(["threads", "batch_size"])["latency_s"].transform("median")
    cost.append(
        {
            "threads": "all",
            "batch_size": "all",
            "processes": pooled["process"].nunique(),
            "steps": len(pooled),
            "latency_ms": math.nan,
            **{f"{k}_share_pct": (pooled[k] / lat).median() * 100.0 for k in kernels},
            **effect(pooled),
        }
    )
    cost = pd.DataFrame(cost)
    show(f"canary: effect of a canary on the next step (default kernel: {CANARY_KERNEL})", cost)
    fits = kernel_fits(steps, kernels)
    show("canary: kernels against the model's between-process spread", fits)
    fits.to_csv(ctx.out / "canary-kernels.csv", index=False)
    return cost
