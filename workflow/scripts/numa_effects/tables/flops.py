"""Work per cell: FLOPs of one forward pass, and the efficiency columns of ``cells.csv``
(docs/precision.md).

``FlopCounterMode`` counts 2 FLOPs per multiply-accumulate of the matrix operations; batch norm,
ReLU, pooling and residual additions (well under 1 % of a ResNet) are not counted. One count per
(model, batch size, image size) on the ``meta`` device, on the eager model: folding removes only
uncounted work and other dtypes do the same multiply-accumulates, so every optimization of a
model shares it and its efficiency is against its own dtype's peak.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd

from numa_effects.plan import placement as placement_mod
from numa_effects.plan.optimizations import OPTIMIZATIONS
from numa_effects.tables import peak as peak_mod

FLOPS_COLUMNS = ["model", "batch_size", "image_size", "flops", "gflop", "counted_on"]


def count(model_name: str, batch_size: int, image_size: int) -> tuple[int, str]:
    """FLOPs of one forward pass of ``batch_size`` images, and the device they were counted on
    (``meta``; ``cpu`` for a model whose forward needs real data)."""
    import torch
    import torchvision
    from torch.utils.flop_counter import FlopCounterMode

    def _count(device: str) -> int:
        with torch.device(device):
            model = torchvision.models.get_model(model_name, weights=None).eval()
            x = torch.zeros(batch_size, 3, image_size, image_size)
        counter = FlopCounterMode(display=False)
        with counter, torch.no_grad():
            model(x)
        return int(counter.get_total_flops())

    try:
        return _count("meta"), "meta"
    except (NotImplementedError, RuntimeError):
        return _count("cpu"), "cpu"


def table(combos: Iterable[dict]) -> pd.DataFrame:
    """One row per distinct (model, batch_size, image_size) in ``combos``."""
    keys = sorted({(c["model"], int(c["batch_size"]), int(c["image_size"])) for c in combos})
    rows = []
    for model, bs, size in keys:
        flops, device = count(model, bs, size)
        rows.append((model, bs, size, flops, flops / 1e9, device))
    return pd.DataFrame(rows, columns=FLOPS_COLUMNS)


EFFICIENCY_COLUMNS = [
    *("gflop", "gflop_per_s", "peak_gflop_per_s", "peak_kernel", "theoretical_gflop_per_s"),
    *("efficiency", "efficiency_note"),
]
EFFICIENCY_MAX = 1.05
# the peak table's columns a cell's note quotes (a table from before the windows has none)
WINDOW_COLUMNS = ["windows_clean", "spread_pct"]


def cell_dtypes(cells: pd.DataFrame) -> pd.Series:
    """Each cell's dtype: its ``dtype`` column, else its optimization's, else float32."""
    by_opt = cells["opt"].map(lambda o: getattr(OPTIMIZATIONS.get(str(o)), "dtype", "float32"))
    if "dtype" in cells.columns:
        return cells["dtype"].where(cells["dtype"].notna(), by_opt)
    return by_opt


def add_efficiency(
    cells: pd.DataFrame, flops: pd.DataFrame | None, peak: pd.DataFrame | None
) -> pd.DataFrame:
    """``cells`` with the efficiency columns, placed after the throughput columns. A cell with
    no FLOP count or no peak of its dtype at its (threads, placement) gets empty values, never a
    guess (a peak table without ``dtype``, from before per-dtype peaks, is float32's)."""
    out = cells.drop(columns=[c for c in EFFICIENCY_COLUMNS if c in cells.columns])
    if out.empty:
        return out.reindex(columns=[*out.columns, *EFFICIENCY_COLUMNS])
    n = len(out)
    gflop = pd.Series([float("nan")] * n, index=out.index)
    if flops is not None and not flops.empty and "image_size" in out.columns:
        f = flops.set_index(["model", "batch_size", "image_size"])["gflop"]
        idx = pd.MultiIndex.from_arrays(
            [out["model"], out["batch_size"].astype(int), out["image_size"].astype("Int64")]
        )
        gflop = pd.Series(f.reindex(idx).to_numpy(dtype=float), index=out.index)
    median_ms = out.get("latency_median_ms", out.get("latency_mean_ms", gflop * math.nan))
    gflop_per_s = gflop / (median_ms.astype(float) / 1000.0)
    quoted = ("peak_gflop_per_s", "peak_kernel", "theoretical_gflop_per_s", *WINDOW_COLUMNS)
    looked = pd.DataFrame({c: [None] * n for c in quoted}, index=out.index)
    if peak is not None and not peak.empty:
        ok = peak[peak["status"] == "ok"] if "status" in peak.columns else peak
        if "dtype" not in ok.columns:
            ok = ok.assign(dtype="float32")
        ok = ok.reindex(columns=[*peak_mod.KEYS, *looked.columns]).set_index(peak_mod.KEYS)
        where = out["placement"].map(placement_mod.peak_placement)  # a node pair: its diagonal
        idx = pd.MultiIndex.from_arrays([where, out["threads"].astype(int), cell_dtypes(out)])
        looked = ok.reindex(idx).set_axis(out.index)
    num = looked.drop(columns="peak_kernel").apply(pd.to_numeric, errors="coerce").astype(float)
    efficiency, note = capped(gflop_per_s / num["peak_gflop_per_s"], num)
    new = pd.DataFrame(
        {
            "gflop": gflop,
            "gflop_per_s": gflop_per_s,
            "peak_gflop_per_s": num["peak_gflop_per_s"],
            "peak_kernel": looked["peak_kernel"],
            "theoretical_gflop_per_s": num["theoretical_gflop_per_s"],
            "efficiency": efficiency,
            "efficiency_note": note,
        },
        index=out.index,
    )
    anchor = next((c for c in ("throughput_total_ips", "throughput_ips") if c in out.columns), None)
    at = out.columns.get_loc(anchor) + 1 if anchor else len(out.columns)
    left, right = out.iloc[:, :at], out.iloc[:, at:]
    return pd.concat([left, new, right], axis=1)


def capped(ratio: pd.Series, peak: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """(efficiency, efficiency_note): ``ratio`` where it is at most ``EFFICIENCY_MAX``, else
    empty with why, quoting the peak (each cell's ``peak`` row, numbers only), its clean windows
    and their spread (a peak table from before the windows has neither)."""
    over = ratio > EFFICIENCY_MAX
    note = pd.Series([None] * len(ratio), index=ratio.index, dtype=object)
    for i in ratio.index[over]:
        clean, spread, rate = peak.loc[i, [*WINDOW_COLUMNS, "peak_gflop_per_s"]]
        if pd.isna(clean):
            windows = "one window"
        else:
            windows = f"{int(clean)} clean window{'' if int(clean) == 1 else 's'}"
        spread_txt = "" if pd.isna(spread) else f", spread {spread:.0f} %"
        note[i] = (
            f"efficiency unknown: the cell ran at {ratio[i]:.2f} x its peak ({rate:.1f} GFLOP/s, "
            f"the best of {windows}{spread_txt}): the peak is under-measured"
        )
    return ratio.where(~over), note
