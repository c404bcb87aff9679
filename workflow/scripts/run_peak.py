"""Snakemake entry: the peak of one dtype at one (placement, threads), measured like a cell
(numa_effects.measure.job, workload ``dtype_peaks``)."""

import sys

from numa_effects.measure import job

sm = snakemake  # noqa: F821
rec = job.run_rule(sm, float(sm.params.timeout_s))
where = f"{rec.cell['placement']}/t{rec.cell['threads']}"
ok = f"{rec.summary['peak_gflop_per_s']:.1f} GFLOP/s" if rec.status == "ok" else ""
print(job.outcome_line(rec, f"peak {where}", ok, "peak"), file=sys.stderr)
