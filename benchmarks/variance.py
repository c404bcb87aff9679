"""Benchmark, variance: which candidate sources move a cell's between-process spread. One
small grid (the grid's first model, batch size 1, eager, ``sequential``, its thread
counts) measured with ``REPLICATES`` fresh processes per cell, three times:

- ``variance``: the allocator axis (``default`` = glibc, ``glibc_tuned`` = glibc kept from giving
  memory back, whose processes re-fault no pages per step, ``jemalloc``, ``tcmalloc``; an
  allocator whose library is missing is a skipped cell, said so), transparent huge pages as
  the machine has them (torch asks for none in ``madvise`` mode);
- ``variance-thp``: the same with ``THP_MEM_ALLOC_ENABLE=1`` (torch's CPU allocator then asks
  for huge pages for its large blocks: the weights and activations), recorded by every cell
  (``provenance.env``) and seen in its ``anon_huge_mb``;
- ``variance-aslr-off``: the first run again under ``setarch -R`` (personality
  ADDR_NO_RANDOMIZE, inherited by Snakemake's children): every process gets the same virtual
  layout, so the spread that random layouts cause (cache and TLB aliasing of the code, the
  heap, the weights) is gone; recorded by every cell (``binding.aslr``, the ``aslr`` column);
- with the config key ``canary`` (on by default since 2026-12-04: after each timed iteration the
  process times a fixed cache-resident kernel, how fast its CPUs ran then; until then a fourth run,
  ``variance-canary``), the first run's second table (``canary_table``) says per cell how much of
  the spread between its processes the machine's own speed explains: the correlation of each
  process's median latency with its median canary, and the replicate SD of the latency divided by
  the canary (the process's speed taken out) beside the plain one.

Per cell: the SD of its replicates' log medians (``replicate_sd_pct``, % of the median) with a
95 % chi-square CI (r - 1 degrees of freedom: the replicates are independent processes), the
part of it that the iterations within a process explain (``within_sd_pct``) and the rest, the
process level (``between_sd_pct``); the median latency and the THP share. Two cells differ when
their SD CIs do not overlap. No goal: the table says which of these sources are worth removing
or recording (docs/performance.md).

The machine's THP mode, governor and load are printed with the table."""

from __future__ import annotations

import math
import platform
from pathlib import Path

import numpy as np
import pandas as pd

from .common import Context, pipeline, show

NAME = "variance"
REPLICATES = 8
ALLOCATORS = ["default", "glibc_tuned", "jemalloc", "tcmalloc"]
# per run, what differs from the first: config keys; common.pipeline's arguments (variables
# added to its environment, a command it runs under)
RUNS = {
    "variance": {},
    "variance-thp": {"env": {"THP_MEM_ALLOC_ENABLE": "1"}},
    "variance-aslr-off": {"prefix": ["setarch", platform.machine(), "-R"]},
}
# the run whose canary (config key ``canary``, on by default) the second table reads
CANARY_RUN = "variance"


def sd_ci(sd_pct: float, r: int, confidence: float = 0.95) -> tuple[float, float]:
    """95 % CI of a standard deviation estimated from ``r`` independent values (normal data:
    (r - 1) s^2 / sigma^2 is chi-square with r - 1 degrees of freedom)."""
    from scipy.stats import chi2

    if r < 2 or sd_pct != sd_pct:
        return math.nan, math.nan
    df = r - 1
    a = (1 - confidence) / 2
    return (
        sd_pct * math.sqrt(df / chi2.ppf(1 - a, df)),
        sd_pct * math.sqrt(df / chi2.ppf(a, df)),
    )


def _thp_mode() -> str:
    try:
        return Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip()
    except OSError:
        return "unknown"


def overrides(ctx: Context) -> dict:
    g = ctx.grid()
    return {
        "models": g["models"][:1],
        "batch_sizes": [1],
        "optimizations": ["none"],
        "placements": ["sequential"],
        "allocators": ALLOCATORS,
        "replicates": REPLICATES,
        "two_stage": {"enabled": False},  # exactly REPLICATES processes per cell
        "peak": False,
        "packing": {"enabled": False},
    }


def table(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    rows = []
    for name, cells in runs.items():
        for r in cells.itertuples():
            if getattr(r, "status", "ok") != "ok":
                rows.append({"run": name, "threads": r.threads, "allocator": r.allocator})
                continue
            lo, hi = sd_ci(r.replicate_sd_pct, int(r.replicates))
            rows.append(
                {
                    "run": name,
                    "threads": r.threads,
                    "allocator": r.allocator,
                    "replicates": int(r.replicates),
                    "median_ms": r.latency_median_ms,
                    "replicate_sd_pct": r.replicate_sd_pct,
                    "sd_ci_low": lo,
                    "sd_ci_high": hi,
                    "within_sd_pct": r.within_sd_pct,
                    "between_sd_pct": r.between_sd_pct,
                    "anon_huge_mb": getattr(r, "anon_huge_mb", math.nan),
                    "aslr": getattr(r, "aslr", None),
                    "ci_halfwidth_pct": r.ci_halfwidth_pct,
                    # with the canary: the CI at the run's reference speed (tables.speed)
                    "speed_ci_halfwidth_pct": getattr(r, "speed_ci_halfwidth_pct", math.nan),
                }
            )
    return pd.DataFrame(rows).sort_values(["threads", "allocator", "run"], ignore_index=True)


def canary_table(samples: pd.DataFrame) -> pd.DataFrame:
    """Per cell of a run with the canary (``samples.csv``: clean iterations only): its
    processes' median latency and median canary, their correlation across the processes
    (``r``, of the logs), the replicate SD of the latency (``sd_pct``, % of the median) and of
    the latency divided by the canary (``normalized_sd_pct``: each process's own speed taken
    out), each with its 95 % chi-square CI, and the share of the latency's variance across
    processes that the canary explains (``explained``: 1 - normalized / plain variance; it can
    be negative: a canary that does not follow the latency adds its own noise)."""
    from numa_effects.tables import speed

    rows = []
    # per replicate its logs of the clean iterations' medians, as the cells' table takes them
    for (threads, allocator), per in speed.replicates(samples).groupby(
        ["threads", "allocator"], sort=True
    ):
        r = len(per)
        lat, can = per["y"].to_numpy(), per["x"].to_numpy()
        sd = 100 * float(np.std(lat, ddof=1)) if r >= 2 else math.nan
        nsd = 100 * float(np.std(lat - can, ddof=1)) if r >= 2 else math.nan
        corr = float(np.corrcoef(lat, can)[0, 1]) if r >= 3 else math.nan
        (lo, hi), (nlo, nhi) = sd_ci(sd, r), sd_ci(nsd, r)
        rows.append(
            {
                "threads": int(threads),
                "allocator": allocator,
                "replicates": r,
                "median_ms": float(np.exp(np.median(lat))),
                "canary_median_ms": float(np.exp(np.median(can))),
                "r": corr,
                "sd_pct": sd,
                "sd_ci_low": lo,
                "sd_ci_high": hi,
                "normalized_sd_pct": nsd,
                "normalized_sd_ci_low": nlo,
                "normalized_sd_ci_high": nhi,
                "explained": 1 - (nsd / sd) ** 2 if sd > 0 else math.nan,
            }
        )
    return pd.DataFrame(rows)


def run(ctx: Context):
    base = overrides(ctx)
    runs = {}
    for name, how in RUNS.items():
        how = dict(how)
        cfg = {**base, **how.pop("config", {})}
        runs[name] = pipeline(ctx, name, cfg, target="tables/cells.csv", **how)
    df = table({name: r.cells() for name, r in runs.items()})
    show(
        f"variance: {REPLICATES} processes per cell; THP {_thp_mode()}; "
        "replicate SD with its 95 % chi-square CI, and its within/between parts",
        df,
    )
    samples = pd.read_csv(runs[CANARY_RUN].results / "tables" / "samples.csv")
    canary = canary_table(samples)
    show(
        f"variance, {CANARY_RUN}: what each process's own speed (its median canary) explains of "
        "the spread of its median latency",
        canary,
    )
    canary.to_csv(ctx.out / f"{NAME}-canary.csv", index=False)
    return df
