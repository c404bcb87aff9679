"""``tables/precision.csv`` (docs/precision.md, "Reading the results"): what each optimization
and each allocator buys over float32 eager on the run's baseline allocator
(``plan.allocators.baseline``), cell by cell, with ``tables.degradation``'s pair statistic and
CI, and the compared cell's dtype, how far to trust it and its cost. A cell that failed, was
skipped or has no clean iteration has no row: never a speedup.
"""

from __future__ import annotations

import pandas as pd

from numa_effects.plan import allocators, grid
from numa_effects.plan.grid import KEYS
from numa_effects.plan.optimizations import EAGER
from numa_effects.tables import degradation

VARY = ("opt", "allocator")
ORDER = ["model", "placement", "threads", "batch_size", "opt", "allocator"]
# the compared cell's own columns (cells.csv): what it computes in, how far to trust it, its cost
CELL_INFO = (
    *("dtype", "graph", "native", "precision_note", "dtype_verified", "numerics_ok"),
    *("agree_cosine", "onednn_kernels", "conversion_s", "efficiency"),
)
COLUMNS = [
    *ORDER,
    *CELL_INFO[:2],
    "baseline",
    *degradation.LATENCIES,
    *degradation.SPEEDUPS,
    "significant",
    "ci_method",
    *degradation.THROUGHPUTS,
    "contended",
    "noisy",
    *CELL_INFO[2:],
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
    out = pd.DataFrame(degradation.compared(p))
    info = grid.fill_keys(cells).reindex(columns=[*KEYS, *CELL_INFO])
    info = info.astype({"threads": int, "batch_size": int})
    out = out.merge(info, on=list(KEYS), how="left")
    same = [k for k in KEYS if k not in VARY]
    base = info[(info["opt"] == base_variant[0]) & (info["allocator"] == base_variant[1])]
    base = base[[*same, "efficiency"]].rename(columns={"efficiency": "baseline_efficiency"})
    out = out.merge(base, on=same, how="left")
    out = out.reindex(columns=COLUMNS)
    return out.sort_values(ORDER, kind="stable").reset_index(drop=True)
