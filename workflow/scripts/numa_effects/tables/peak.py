"""``tables/peak.csv``: one row per GEMM peak result (``measure.peak``), measured or failed."""

from __future__ import annotations

import pandas as pd

from numa_effects.measure import result as cellresult

PEAK_COLUMNS = [
    "placement",
    "threads",
    "status",
    "peak_gflop_per_s",
    "median_gflop_per_s",
    "matrix_size",
    "reps",
    "measure_s",
    "planned_cpus",
    "cpus_allowed",
    "mempolicy",
    "failure_cause",
    "failure_message",
    "hostname",
    "torch_version",
    "peak_json",
]


def row(data: dict, path: str = "") -> dict:
    """One ``peak.csv`` row from a peak result JSON (measured or failed)."""
    cell, peak = data["cell"], data.get("peak") or {}
    bind, failure = data.get("binding") or {}, data.get("failure") or {}
    pol = bind.get("mempolicy") or {}
    prov = data.get("provenance") or {}
    return {
        "placement": cell["placement"],
        "threads": int(cell["threads"]),
        "status": data["status"],
        "peak_gflop_per_s": peak.get("peak_gflop_per_s"),
        "median_gflop_per_s": peak.get("median_gflop_per_s"),
        "matrix_size": peak.get("matrix_size"),
        "reps": peak.get("reps"),
        "measure_s": peak.get("measure_s"),
        "planned_cpus": (data.get("plan") or {}).get("cpu_list"),
        "cpus_allowed": bind.get("cpus_allowed_list"),
        "mempolicy": f"{pol.get('mode')}:{','.join(map(str, pol.get('nodes', [])))}"
        if pol
        else None,
        "failure_cause": failure.get("cause"),
        "failure_message": failure.get("message"),
        "hostname": (prov.get("host") or {}).get("hostname"),
        "torch_version": (prov.get("versions") or {}).get("torch"),
        "peak_json": path,
    }


def table(paths) -> pd.DataFrame:
    rows = [row(cellresult.read(p), str(p)) for p in paths]
    df = pd.DataFrame(rows, columns=PEAK_COLUMNS)
    return df.sort_values(["placement", "threads"], kind="stable").reset_index(drop=True)
