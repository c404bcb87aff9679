"""``tables/precision.csv``: what each optimization and each allocator buys over float32 eager
on the run's baseline allocator (``baseline``), cell by cell, with the two-level CI. The
baseline allocator is ``plan.allocators.baseline`` of the table's: glibc as it comes
(``none`` / ``default``) where the grid has it, as in PackRat's, else the first of the grid's
in registry order (the default grid's ``none`` / ``glibc_tuned``).

One row per cell whose (opt, allocator) is not the baseline's and that has the baseline cell
at the same (model, placement, threads, batch_size): the pair is
``tables.degradation``'s (the same statistic, the same CI: two-level over both cells' replicates
when both have one, else the within-process bootstrap, ``ci_method``). ``none/jemalloc`` is the
allocator's own speedup, ``bf16/default`` the dtype's with its compiler, ``bf16/jemalloc``
both. Columns:

- the cell keys of the compared cell and ``baseline`` (e.g. ``none/default``);
- ``dtype``, ``graph``: what the compared cell computes in and how it is run;
- ``latency_statistic, latency_baseline_ms, latency_compared_ms``; ``speedup`` = baseline /
  compared latency (> 1: faster than the baseline), ``speedup_ci_low,
  speedup_ci_high``, ``significant`` (the CI excludes 1), ``ci_method``;
  ``throughput_baseline_ips, throughput_compared_ips``; ``contended``, ``noisy`` (either cell);
- how far to trust it: ``native`` (the CPU computes the dtype natively, ``plan.cpu``; false =
  an emulated or fallback bf16, or int8 without VNNI: ``precision_note`` says which),
  ``dtype_verified`` (the oneDNN kernels that ran compute in that dtype), ``numerics_ok`` and
  ``agree_cosine`` (the outputs agree with float32 eager: a cell that does not is failed with
  cause ``numerics`` and has no row here), ``onednn_kernels``;
- cost: ``conversion_s`` (the compared cell's prepare + first call, summed over its replicates);
- ``efficiency``, ``baseline_efficiency``: each against its own dtype's peak.

A cell that failed, was skipped or has no clean iteration has no row: never a speedup.
"""

from __future__ import annotations

import pandas as pd

from numa_effects.plan import allocators, grid
from numa_effects.plan.grid import KEYS
from numa_effects.plan.optimizations import EAGER
from numa_effects.tables import degradation

VARY = ("opt", "allocator")
CELL_INFO = (
    "dtype",
    "graph",
    "native",
    "precision_note",
    "dtype_verified",
    "numerics_ok",
    "agree_cosine",
    "onednn_kernels",
    "conversion_s",
    "efficiency",
)
COLUMNS = [
    "model",
    "placement",
    "threads",
    "batch_size",
    "opt",
    "allocator",
    "dtype",
    "graph",
    "baseline",
    "latency_statistic",
    "latency_baseline_ms",
    "latency_compared_ms",
    "speedup",
    "speedup_ci_low",
    "speedup_ci_high",
    "significant",
    "ci_method",
    "throughput_baseline_ips",
    "throughput_compared_ips",
    "contended",
    "noisy",
    "native",
    "precision_note",
    "dtype_verified",
    "numerics_ok",
    "agree_cosine",
    "onednn_kernels",
    "conversion_s",
    "efficiency",
    "baseline_efficiency",
]


def baseline(cells: pd.DataFrame) -> tuple[str, str]:
    """(opt, allocator) every other cell of ``cells`` is compared with: float32 eager on the
    run's baseline allocator (``plan.allocators.baseline``)."""
    return EAGER, allocators.baseline(grid.fill_keys(cells)["allocator"])


def precision_table(cells: pd.DataFrame, samples: pd.DataFrame | None = None) -> pd.DataFrame:
    """See the module docstring; works on cells.csv alone (samples: the bootstrap fallback)."""
    base_variant = baseline(cells)

    def baseline_of(variant: tuple) -> tuple | None:
        return None if tuple(variant) == base_variant else base_variant

    p = degradation.pair_table(cells, samples, VARY, baseline_of)
    if p.empty:
        return pd.DataFrame(columns=COLUMNS)
    bs = p["batch_size"].astype(float)
    out = pd.DataFrame(
        {
            **{k: p[k] for k in KEYS},
            "baseline": p["baseline"],
            "latency_statistic": p["latency_statistic"],
            "latency_baseline_ms": p["latency_baseline_ms"],
            "latency_compared_ms": p["latency_compared_ms"],
            "speedup": 1.0 / p["ratio"],
            "speedup_ci_low": 1.0 / p["ratio_ci_high"],
            "speedup_ci_high": 1.0 / p["ratio_ci_low"],
            "significant": degradation.significant(p["ratio_ci_low"], p["ratio_ci_high"], 1.0),
            "ci_method": p["ci_method"],
            "throughput_baseline_ips": bs * 1000.0 / p["latency_baseline_ms"],
            "throughput_compared_ips": bs * 1000.0 / p["latency_compared_ms"],
            "contended": p["contended"].astype(bool),
            "noisy": p["noisy"].astype(bool),
        }
    )
    info = grid.fill_keys(cells).reindex(columns=[*KEYS, *CELL_INFO])
    info = info.astype({"threads": int, "batch_size": int})
    out = out.merge(info, on=list(KEYS), how="left")
    base = info[(info["opt"] == base_variant[0]) & (info["allocator"] == base_variant[1])]
    base = base[[k for k in KEYS if k not in VARY] + ["efficiency"]]
    base = base.rename(columns={"efficiency": "baseline_efficiency"})
    out = out.merge(base, on=[k for k in KEYS if k not in VARY], how="left")
    out = out.reindex(columns=COLUMNS)
    order = ["model", "placement", "threads", "batch_size", "opt", "allocator"]
    return out.sort_values(order, kind="stable").reset_index(drop=True)


def variant(opt: str, allocator: str) -> str:
    """How the report and the tables name an (optimization, allocator) pair."""
    return opt if allocator == grid.DEFAULTS["allocator"] else f"{opt}+{allocator}"
