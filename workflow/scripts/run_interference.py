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
runs = result.get("runs", {})
med = {
    n: [round(r["stats"]["median_s"] * 1e3, 2) if r.get("stats") else r["status"] for r in recs]
    for n, recs in runs.items()
}
w = sm.wildcards
msg = f"interference {w.model}/{w.opt} C={w.budget} t={w.threads} b={job['batch']}: "
msg += f"{result['status']}; round medians ms {med}"
if result["status"] != "ok":
    msg += f" ({result['failure']['cause']}: {result['failure']['message']})"
log.write_text(msg + "\n")
print(msg, file=sys.stderr)
