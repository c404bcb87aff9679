"""Snakemake entry: the memory probe of one node pair (idle latency, read bandwidth), measured
like a cell (numa_effects.measure.job, workload ``memory_probe``)."""

import sys

from numa_effects.measure import job

sm = snakemake  # noqa: F821
rec = job.run_rule(sm, float(sm.params.timeout_s))
m = rec.summary or {}
ok = (
    f"{m['latency_ns']:.1f} ns per load, {m['bandwidth_gb_per_s']:.1f} GB/s read"
    if rec.status == "ok"
    else ""
)
print(job.outcome_line(rec, f"memory {rec.cell['placement']}", ok, "numbers"), file=sys.stderr)
