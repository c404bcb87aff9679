"""Snakemake entry: the float32 GEMM peak at one (placement, threads), measured like a cell
(numa_effects.measure.launcher, workload ``gemm``)."""

import sys

from numa_effects.measure import launcher

sm = snakemake  # noqa: F821
result = launcher.run(
    sm.params.spec,
    sm.output[0],
    sm.log[0],
    float(sm.params.timeout_s),
    max_memory_mb=sm.config.get("max_memory_mb"),
)
where = f"{result['cell']['placement']}/t{result['cell']['threads']}"
if result["status"] == "ok":
    print(f"peak {where}: {result['peak']['peak_gflop_per_s']:.1f} GFLOP/s", file=sys.stderr)
elif result["status"] == "contended":
    why = result["contention"].get("contended_reason")
    print(f"peak {where}: CONTENDED, no peak: {why}", file=sys.stderr)
else:
    f = result["failure"]
    print(f"peak {where}: FAILED ({f['cause']}): {f['message']}", file=sys.stderr)
