"""Snakemake entry: the memory probe of one node pair (idle latency, read bandwidth), measured
like a cell (numa_effects.measure.launcher, workload ``memory_probe``)."""

import sys

from numa_effects.measure import launcher

sm = snakemake  # noqa: F821
result = launcher.run_rule(sm, float(sm.params.timeout_s))
m = result.get("memory") or {}
ok = (
    f"{m['latency_ns']:.1f} ns per load, {m['bandwidth_gb_per_s']:.1f} GB/s read"
    if result["status"] == "ok"
    else ""
)
print(
    launcher.outcome_line(result, f"memory {result['cell']['placement']}", ok, "numbers"),
    file=sys.stderr,
)
