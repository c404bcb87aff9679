"""``tables/memory_matrix.csv`` (docs/placements.md): one row per memory probe job
(``measure.workloads.memory_probe``: one thread on CPU node ``cpu_node``, memory on ``mem_node``),
measured, skipped (no compiler) or failed: idle latency and one core's read bandwidth (the best
clean step, the median beside it), the firmware's ``distance`` (from the run's ``machine.json``)
and the ratios to the CPU node's diagonal ``n{cpu}m{cpu}`` (empty where it has no number).
"""

from __future__ import annotations

import pandas as pd

from numa_effects.measure import record
from numa_effects.measure.record import Record

MEASURED = ("latency_ns", "latency_median_ns", "bandwidth_gb_per_s", "bandwidth_median_gb_per_s")
FACTS = ("buffer_bytes", "llc_bytes", "loads_per_step", "steps", "measure_s")
MEMORY_COLUMNS = [
    *("cpu_node", "mem_node", "placement", "status"),
    *MEASURED,
    *("distance", "latency_ratio", "bandwidth_ratio", "reason", "failure_cause"),
    *FACTS,
    *("planned_cpus", "cpus_allowed", "mempolicy", "hostname", "memory_json"),
]


def row(rec: Record, path: str = "", topology=None) -> dict:
    """One ``memory_matrix.csv`` row from a memory job's result (any status); ``topology``
    (``plan.topology.Topology``, or None) gives the distance. Ratios are ``table``'s."""
    mem = rec.summary or {}
    cpu_node, mem_node = int(rec.cell["cpu_node"]), int(rec.cell["mem_node"])
    ok = rec.status == "ok"
    return {
        "cpu_node": cpu_node,
        "mem_node": mem_node,
        "placement": rec.cell.get("placement"),
        "status": rec.status,
        **{k: mem.get(k) if ok else None for k in MEASURED},
        "distance": topology.distance(cpu_node, mem_node) if topology is not None else None,
        "reason": rec.skip_reason or (rec.failure.message if rec.failure else None),
        "failure_cause": rec.failure.cause if rec.failure else None,
        **{k: mem.get(k) for k in FACTS},
        "planned_cpus": (rec.plan or {}).get("cpu_list"),
        "cpus_allowed": rec.binding.get("cpus_allowed_list"),
        "mempolicy": rec.mempolicy,
        "hostname": rec.hostname,
        "memory_json": path,
    }


def table(paths, topology=None) -> pd.DataFrame:
    """The memory matrix of the memory jobs' records, by CPU node then memory node."""
    rows = [row(record.read(p), str(p), topology) for p in paths]
    df = pd.DataFrame(rows, columns=MEMORY_COLUMNS)
    df = df.sort_values(["cpu_node", "mem_node"], kind="stable").reset_index(drop=True)
    diag = df[df["cpu_node"] == df["mem_node"]].set_index("cpu_node")
    for col, ratio in (("latency_ns", "latency_ratio"), ("bandwidth_gb_per_s", "bandwidth_ratio")):
        base = pd.to_numeric(df["cpu_node"].map(diag[col]), errors="coerce")
        df[ratio] = pd.to_numeric(df[col], errors="coerce") / base
    return df
