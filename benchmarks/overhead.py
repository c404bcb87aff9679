"""Benchmark 3, harness overhead: the adaptive pipeline run's wall time against the sum of
timed inference, and each cell's fixed cost: process start (numactl, Python, the project's
modules), torch's import (``import_s``, recorded by the cell process since 2026-12-02; earlier
results count it in ``rest_s``), model build (with torchvision's import: the ResNet module alone,
or the whole package for a compiled cell), the optimization's conversion, first call, warm-up,
and what is left (verification, statistics, JSON, Snakemake's job start). Cells of the fixed
(PackRat) run are included when the cost benchmark ran, since only they reach >= 10 s of
measurement on a small grid.

Last, a replay of the adaptive run's iterations (``shorter_windows``): every process cut to the
minimum windows, to show what the timing beyond them buys the cells' spread, and at what cost.

Goal: <= 15 % overhead for cells with >= 10 s of measurement."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd

from .common import (
    KEYS,
    Context,
    covered_seconds,
    job_times,
    pipeline,
    process_span_s,
    replicate_records,
    show,
)

NAME = "overhead"
GOAL_PCT = 15.0
LONG_CELL_S = 10.0


def _ts(s: str) -> datetime:
    return datetime.fromisoformat(s)


def _cells(name: str, records: list[dict]) -> pd.DataFrame:
    rows = []
    for d in records:  # every replicate
        if d.get("status") != "ok":
            continue
        row = {**d["cell"], "replicate": d.get("replicate", 1)}
        m, prov = d["measurement"], d["provenance"]
        span = process_span_s(prov)
        start = (_ts(prov["started_at"]) - _ts(prov["launcher_started_at"])).total_seconds()
        warm = m["warmup_total_s"] - m["first_call_s"] if m["warmup_iterations"] else 0.0
        imp = m.get("import_s") or 0.0
        inside = imp + m["build_s"] + m["prepare_s"] + m["first_call_s"] + m["elapsed_s"]
        rows.append(
            {
                "run": name,
                **{k: row[k] for k in KEYS},
                "replicate": row["replicate"],
                "timed_s": m["timed_s"],
                "warmup_s": warm,
                "process_start_s": start,
                "import_s": imp,
                "build_s": m["build_s"],
                "prepare_s": m["prepare_s"],
                "first_call_s": m["first_call_s"],
                "rest_s": span - start - inside,
                "cell_span_s": span,
            }
        )
    df = pd.DataFrame(rows)
    df["harness_pct"] = (
        (df["cell_span_s"] - df["timed_s"] - df["warmup_s"] - df["first_call_s"])
        / df["timed_s"]
        * 100
    )
    df["overhead_pct"] = (df["cell_span_s"] - df["timed_s"]) / df["timed_s"] * 100
    return df


def shorter_windows(samples: pd.DataFrame, min_timed_s: float, min_iterations: int) -> pd.DataFrame:
    """A replay of a finished run, not a protocol: per cell, what its processes' timing would
    have given had each kept only its clean iterations up to ``min_timed_s`` seconds of timing or
    ``min_iterations``, whichever is more (the adaptive rule's minimum windows), instead of timing
    on to its own target or cap. ``timed_s`` / ``short_timed_s``: the seconds of the clean
    iterations; ``sd_pct`` / ``short_sd_pct``: the replicate SD of the processes' medians (log
    scale, in %); ``shift_pct``: the geometric mean of the short medians against the whole ones.
    It cannot see the drift inside a process that the minimum windows are there for (``bias``):
    it says what the timing beyond the minimum buys the cell's spread, not what a shorter
    protocol would measure."""
    from numa_effects import stats
    from numa_effects.compare import statistics as compare_stats

    rows = []
    clean = samples[~samples["excluded"].astype(bool)]
    for key, cell in clean.groupby(KEYS, sort=False):
        whole, short, timed, short_timed = [], [], 0.0, 0.0
        for _, proc in cell.groupby("replicate"):
            lat = proc.sort_values("iteration")["latency_ms"].to_numpy()
            cum_s = np.cumsum(lat) / 1000
            n = min(len(lat), max(min_iterations, int(np.searchsorted(cum_s, min_timed_s)) + 1))
            whole.append(np.median(lat))
            short.append(np.median(lat[:n]))
            timed += cum_s[-1]
            short_timed += cum_s[n - 1]
        rows.append(
            {
                **dict(zip(KEYS, key, strict=True)),
                "processes": len(whole),
                "timed_s": timed,
                "short_timed_s": short_timed,
                "sd_pct": stats.combine_replicates(whole)["replicate_sd_pct"],
                "short_sd_pct": stats.combine_replicates(short)["replicate_sd_pct"],
                "shift_pct": 100
                * (compare_stats.geomean_ratio(np.divide(short, whole))["geomean"] - 1),
            }
        )
    return pd.DataFrame(rows)


def shorter_windows_line(df: pd.DataFrame) -> str:
    """One line over ``shorter_windows``: the timed seconds saved, and where the spread grew."""
    grew = df[df["short_sd_pct"] > 1.5 * df["sd_pct"]]
    return (
        f"minimum windows only (a replay): timed seconds {df['timed_s'].sum():.0f} -> "
        f"{df['short_timed_s'].sum():.0f} s; the processes' SD grew by more than 1.5 x in "
        f"{len(grew)}/{len(df)} cells, short / whole SD median "
        f"{(df['short_sd_pct'] / df['sd_pct']).median():.2f}"
    )


def run(ctx: Context) -> pd.DataFrame:
    runs = [pipeline(ctx, "adaptive", {})]
    if "fixed" in ctx.runs:
        runs.append(ctx.runs["fixed"])
    records = [replicate_records(r.results) for r in runs]
    frames = [_cells(r.name, rec) for r, rec in zip(runs, records, strict=True)]
    df = pd.concat(frames, ignore_index=True)
    show("overhead: per cell (seconds; harness_pct excludes warm-up, overhead_pct includes it)", df)
    a = runs[0]
    fa = frames[0]
    jobs = job_times(a.log)
    cell_jobs = jobs[jobs["rule"] == "cell"]
    peak_jobs = jobs[jobs["rule"] == "peak"]
    other = jobs[~jobs["rule"].isin(["cell", "peak", "all"])]
    timed = fa["timed_s"].sum()
    parts = {
        "cell jobs": cell_jobs["seconds"].sum(),
        "  timed inference": timed,
        "  warm-up (first call included)": fa["warmup_s"].sum() + fa["first_call_s"].sum(),
        "  process start (numactl, python, the project's modules)": fa["process_start_s"].sum(),
        "  import torch": fa["import_s"].sum(),
        "  model build (torchvision's import included)": fa["build_s"].sum(),
        "  conversion (prepare)": fa["prepare_s"].sum(),
        "  rest of the cell process (verify, stats, JSON)": fa["rest_s"].sum(),
        "  snakemake job around the cell process": cell_jobs["seconds"].sum()
        - fa["cell_span_s"].sum(),
        "peak jobs (GEMM peak)": peak_jobs["seconds"].sum(),
        "other jobs (wall covered; they may run in parallel)": covered_seconds(other),
        **{
            f"  rule {r} (job-seconds)": v
            for r, v in other.groupby("rule")["seconds"].sum().items()
        },
    }
    parts["snakemake start, DAG, scheduling (wall not covered by any job)"] = a.wall_s - (
        covered_seconds(jobs[jobs["rule"] != "all"])
    )
    parts["pipeline wall"] = a.wall_s
    summary = pd.DataFrame(
        [{"part": k, "seconds": v, "pct_of_wall": v / a.wall_s * 100} for k, v in parts.items()]
    )
    show(
        f"overhead: where the adaptive pipeline's {a.wall_s:.0f} s go (job times: 1 s resolution)",
        summary,
    )
    long = df[df["timed_s"] + df["warmup_s"] >= LONG_CELL_S]
    print(
        f"pipeline wall {a.wall_s:.1f} s vs timed inference {timed:.1f} s: x{a.wall_s / timed:.2f};"
        f" cells with >= {LONG_CELL_S:.0f} s of measurement: {len(long)}, harness overhead max "
        f"{long['harness_pct'].max() if len(long) else float('nan'):.1f} % (with warm-up "
        f"{long['overhead_pct'].max() if len(long) else float('nan'):.1f} %), goal <= {GOAL_PCT} %"
    )
    settings = next(iter(records[0]), {}).get("settings", {})
    if settings.get("protocol") == "adaptive":
        windows = shorter_windows(
            pd.read_csv(a.results / "tables" / "samples.csv"),
            settings["min_timed_seconds"],
            settings["min_iterations"],
        )
        show(
            "overhead: each process cut to the minimum windows (a replay, not a protocol)", windows
        )
        print(shorter_windows_line(windows))
    summary.insert(0, "run", "adaptive-summary")
    return pd.concat([df, summary], ignore_index=True)
