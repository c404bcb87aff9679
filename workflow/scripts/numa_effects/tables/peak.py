"""``tables/peak.csv``: one row per peak (``measure.workloads.dtype_peaks``: one dtype at one
placement and thread count) from its windows (``plan.peaks``: several short jobs spread over the
run; docs/precision.md), measured or failed, with the theoretical peak beside it
(``plan.cpu``). ``peak_gflop_per_s`` is the best clean window's best kernel's best rate (int8:
integer operations per second); ``status`` is ``ok`` when a window is clean, else the first
window's; ``spread_pct`` = 100 x (best - worst) / best over the clean windows.
"""

from __future__ import annotations

import pandas as pd

from numa_effects.measure import record
from numa_effects.measure.record import Record

# the peak entry's numbers (``measure.workloads.dtype_peaks.summary``)
MEASURED = ("peak_gflop_per_s", "median_gflop_per_s", "peak_kernel", "reps", "measure_s")
# the theoretical peak and how it was computed (``plan.cpu``)
THEORETICAL = (
    "theoretical_gflop_per_s",
    "cores",
    "flop_per_cycle_per_core",
    "nominal_mhz",
    "mhz_source",
)
PEAK_COLUMNS = [
    *("placement", "threads", "dtype", "status", "peak_gflop_per_s", "windows", "windows_clean"),
    *("window_gflop_per_s", "spread_pct", "best_window", "median_gflop_per_s", "peak_kernel"),
    *("kernels", "mm_gflop_per_s"),
    *THEORETICAL,
    *("reps", "measure_s", "planned_cpus", "cpus_allowed", "mempolicy", "failure_cause"),
    *("failure_message", "hostname", "torch_version", "peak_json"),
]


def kernels_text(kernels: dict) -> str | None:
    """``mm 82.7; conv1x1_cl 63.0; conv3x3_prepacked 84.4`` (GFLOP/s), a kernel without a rate
    with why: ``mm_bf16 dropped``, ``conv1x1_pt2e_int8 skipped: needs torchao``."""
    parts = []
    for name, k in (kernels or {}).items():
        if k.get("peak_gflop_per_s") is not None:
            parts.append(f"{name} {k['peak_gflop_per_s']:.1f}")
        elif k.get("dropped"):
            parts.append(f"{name} dropped ({k['dropped']})")
        elif k.get("skipped"):
            parts.append(f"{name} skipped: {k['skipped']}")
        elif k.get("error"):
            parts.append(f"{name} error: {k['error']}")
        else:
            parts.append(f"{name} no clean step")
    return "; ".join(parts) or None


def row(rec: Record, path: str = "") -> dict:
    """One window's row from a peak record (measured or failed; no window number: window 1)."""
    peak = rec.summary or {}
    theo = peak.get("theoretical") or {}
    kernels = peak.get("kernels") or {}
    return {
        "placement": rec.cell["placement"],
        "threads": int(rec.cell["threads"]),
        "dtype": rec.cell.get("dtype", "float32"),
        "status": rec.status,
        **{k: peak.get(k) for k in MEASURED},
        "best_window": int(rec.cell.get("window") or 1),
        "kernels": kernels_text(kernels),
        # torch.mm alone (float32: the denominator of efficiency before per-dtype peaks)
        "mm_gflop_per_s": (kernels.get("mm") or {}).get("peak_gflop_per_s"),
        **{k: theo.get(k) for k in THEORETICAL},
        "planned_cpus": (rec.plan or {}).get("cpu_list"),
        "cpus_allowed": rec.binding.get("cpus_allowed_list"),
        "mempolicy": rec.mempolicy,
        "failure_cause": rec.failure.cause if rec.failure else None,
        "failure_message": rec.failure.message if rec.failure else None,
        "hostname": rec.hostname,
        "torch_version": rec.version("torch"),
        "peak_json": path,
    }


KEYS = ["placement", "threads", "dtype"]


def clean(window: dict) -> bool:
    """Whether a window's row gave a rate (status ok with a peak)."""
    return window["status"] == "ok" and window.get("peak_gflop_per_s") is not None


def combine(windows: list[dict]) -> dict:
    """A peak's row from its windows' rows (``row``): the best clean window's, else the first's."""
    windows = sorted(windows, key=lambda w: w["best_window"])
    good = [w for w in windows if clean(w)]
    rates = [w["peak_gflop_per_s"] for w in good]
    out = dict(max(good, key=lambda w: w["peak_gflop_per_s"]) if good else windows[0])
    if not good:
        out.update(peak_gflop_per_s=None, best_window=None)
    spread = 100.0 * (max(rates) - min(rates)) / max(rates) if len(rates) > 1 else None
    out.update(
        windows=len(windows),
        windows_clean=len(good),
        window_gflop_per_s="; ".join(
            f"{w['peak_gflop_per_s']:.1f}" if clean(w) else str(w["status"]) for w in windows
        ),
        spread_pct=spread,
    )
    return out


def table(paths) -> pd.DataFrame:
    """``peak.csv`` from the windows' records: one row per (placement, threads, dtype)."""
    groups: dict[tuple, list[dict]] = {}
    for p in paths:
        r = row(record.read(p), str(p))
        groups.setdefault(tuple(r[k] for k in KEYS), []).append(r)
    df = pd.DataFrame([combine(g) for g in groups.values()], columns=PEAK_COLUMNS)
    df = df.astype({"windows": "Int64", "windows_clean": "Int64", "best_window": "Int64"})
    return df.sort_values(KEYS, kind="stable").reset_index(drop=True)
