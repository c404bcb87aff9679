"""Snakemake entry: measure one interference profile job -- one instance alone, then k identical
instances side by side, replicate by replicate (see numa_effects.measure.group)."""

import sys
from pathlib import Path

from numa_effects.measure import group
from numa_effects.plan import settings

sm = snakemake  # noqa: F821
job = sm.params.job  # its placements were planned on the scheduling topology
log = Path(sm.log[0])
result = group.run_interference(
    job,
    sm.output[0],
    log.parent / log.stem,
    settings.cell_timeout_s(sm.config),
    max_memory_mb=sm.config.get("max_memory_mb"),
)
w = sm.wildcards
msg = f"interference {w.model}/{w.opt} C={w.budget} t={w.threads} b={job['batch']}: "
msg += group.summary_line(result)
log.write_text(msg + "\n")
print(msg, file=sys.stderr)
