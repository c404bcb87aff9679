"""Snakemake entry: the float32 GEMM peak at one (placement, threads), measured like a cell
(numa_effects.measure.launcher, workload ``gemm``)."""

import sys

from numa_effects.measure import launcher

sm = snakemake  # noqa: F821
result = launcher.run_rule(sm, float(sm.params.timeout_s))
where = f"{result['cell']['placement']}/t{result['cell']['threads']}"
ok = f"{result['peak']['peak_gflop_per_s']:.1f} GFLOP/s" if result["status"] == "ok" else ""
print(launcher.outcome_line(result, f"peak {where}", ok, "peak"), file=sys.stderr)
