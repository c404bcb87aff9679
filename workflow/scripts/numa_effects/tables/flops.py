"""Work per cell: FLOPs of one forward pass, and the efficiency columns of ``cells.csv``.

Convention: ``torch.utils.flop_counter.FlopCounterMode`` counts **2 FLOPs per multiply-
accumulate** (multiply and add separately) of the matrix operations: convolutions, ``mm``,
``addmm``, ``bmm`` and attention. Batch norm, ReLU, pooling and the residual additions are not
counted (well under 1 % of a ResNet's work). ResNet-50 at 224 x 224 is 4.09 GMACs = 8.18 GFLOP
per image in this convention; ResNet-18 is 1.82 GMACs = 3.63 GFLOP.

FLOPs are counted once per (model, batch size, image size) on the ``meta`` device (shapes only,
no arithmetic, so batch 1024 costs the same as batch 1), on the eager model: TorchScript's
conv/batch-norm folding removes only uncounted work, so every optimization of a model shares one
count and GFLOP/s compare the same work.

Columns added to ``cells.csv`` (``add_efficiency``): ``gflop`` (one forward pass of the whole
batch), ``gflop_per_s`` = gflop / median latency, ``peak_gflop_per_s`` (float32 GEMM peak at the
cell's threads and placement, ``peak``) and ``efficiency`` = gflop_per_s / peak_gflop_per_s.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

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


def combos(grid, image_size: int) -> list[dict]:
    """The distinct (model, batch_size, image_size) of a ``grid.Grid``'s runnable cells."""
    keys = sorted({(k.model, k.batch_size) for k in grid.cells})
    return [{"model": m, "batch_size": b, "image_size": int(image_size)} for m, b in keys]


def table(combos: Iterable[dict]) -> pd.DataFrame:
    """One row per distinct (model, batch_size, image_size) in ``combos``."""
    keys = sorted({(c["model"], int(c["batch_size"]), int(c["image_size"])) for c in combos})
    rows = []
    for model, bs, size in keys:
        flops, device = count(model, bs, size)
        rows.append(
            {
                "model": model,
                "batch_size": bs,
                "image_size": size,
                "flops": flops,
                "gflop": flops / 1e9,
                "counted_on": device,
            }
        )
    return pd.DataFrame(rows, columns=FLOPS_COLUMNS)


EFFICIENCY_COLUMNS = ["gflop", "gflop_per_s", "peak_gflop_per_s", "efficiency"]


def add_efficiency(
    cells: pd.DataFrame, flops: pd.DataFrame | None, peak: pd.DataFrame | None
) -> pd.DataFrame:
    """``cells`` with the efficiency columns, placed after the throughput columns. A cell with
    no FLOP count or no peak at its (threads, placement) gets empty values, never a guess."""
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
    median_ms = out["latency_median_ms"] if "latency_median_ms" in out.columns else None
    if median_ms is None:
        median_ms = out.get("latency_mean_ms", pd.Series([float("nan")] * n, index=out.index))
    gflop_per_s = gflop / (median_ms.astype(float) / 1000.0)
    peak_v = pd.Series([float("nan")] * n, index=out.index)
    if peak is not None and not peak.empty:
        ok = peak[peak.get("status", "ok") == "ok"] if "status" in peak.columns else peak
        p = ok.set_index(["placement", "threads"])["peak_gflop_per_s"]
        idx = pd.MultiIndex.from_arrays([out["placement"], out["threads"].astype(int)])
        peak_v = pd.Series(p.reindex(idx).to_numpy(dtype=float), index=out.index)
    new = pd.DataFrame(
        {
            "gflop": gflop,
            "gflop_per_s": gflop_per_s,
            "peak_gflop_per_s": peak_v,
            "efficiency": gflop_per_s / peak_v,
        },
        index=out.index,
    )
    anchor = next((c for c in ("throughput_total_ips", "throughput_ips") if c in out.columns), None)
    at = out.columns.get_loc(anchor) + 1 if anchor else len(out.columns)
    left, right = out.iloc[:, :at], out.iloc[:, at:]
    return pd.concat([left, new, right], axis=1)
