"""Benchmark, variance: which candidate sources move a cell's between-process spread (issue 23
item 4). One small grid (the grid's first model, batch size 1, eager, ``sequential``, its thread
counts) measured with ``REPLICATES`` fresh processes per cell, three times:

- ``variance``: the allocator axis (``default`` = glibc, ``jemalloc``, ``tcmalloc``; an allocator
  whose library is missing is a skipped cell, said so), transparent huge pages as the machine
  has them (torch asks for none in ``madvise`` mode);
- ``variance-thp``: the same with ``THP_MEM_ALLOC_ENABLE=1`` (torch's CPU allocator then asks
  for huge pages for its large blocks: the weights and activations), recorded by every cell
  (``provenance.env``) and seen in its ``anon_huge_mb``;
- ``variance-aslr-off``: the first run again under ``setarch -R`` (personality
  ADDR_NO_RANDOMIZE, inherited by Snakemake's children): every process gets the same virtual
  layout, so the spread that random layouts cause (cache and TLB aliasing of the code, the
  heap, the weights) is gone; recorded by every cell (``binding.aslr``, the ``aslr`` column).

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

import pandas as pd

from .common import Context, pipeline, show

NAME = "variance"
REPLICATES = 8
ALLOCATORS = ["default", "jemalloc", "tcmalloc"]
# per run, common.pipeline's arguments: variables added to its environment, a command it runs under
RUNS = {
    "variance": {},
    "variance-thp": {"env": {"THP_MEM_ALLOC_ENABLE": "1"}},
    "variance-aslr-off": {"prefix": ["setarch", platform.machine(), "-R"]},
}


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
                }
            )
    return pd.DataFrame(rows).sort_values(["threads", "allocator", "run"], ignore_index=True)


def run(ctx: Context):
    base = overrides(ctx)
    results = {}
    for name, how in RUNS.items():
        run_ = pipeline(ctx, name, base, target="tables/cells.csv", **how)
        results[name] = run_.cells()
    df = table(results)
    show(
        f"variance: {REPLICATES} processes per cell; THP {_thp_mode()}; "
        "replicate SD with its 95 % chi-square CI, and its within/between parts",
        df,
    )
    return df
