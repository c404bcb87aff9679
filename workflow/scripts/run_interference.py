"""Snakemake entry: measure one interference profile job -- one instance alone, then k identical
instances side by side, replicate by replicate (see numa_effects.measure.job)."""

import sys
from pathlib import Path

from numa_effects.measure import job
from numa_effects.plan import settings

sm = snakemake  # noqa: F821
rec = job.run_rule(sm, settings.cell_timeout_s(sm.config))
w, batch = sm.wildcards, rec.job["batch"]
msg = f"interference {w.model}/{w.opt} C={w.budget} t={w.threads} b={batch}: "
msg += job.summary_line(rec)
Path(sm.log[0]).write_text(msg + "\n")
print(msg, file=sys.stderr)
