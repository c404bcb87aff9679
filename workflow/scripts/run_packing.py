"""Snakemake entry: measure the fat instance and the chosen plans of one (model, opt, budget,
batch) for real (see numa_effects.measure.job): the job's spec from its settings and the
optimizer's choice in plans.json, with the placements made on the scheduling topology."""

import json
import sys
from pathlib import Path

from numa_effects.measure import job
from numa_effects.plan import settings
from numa_effects.plan import spec as spec_mod

sm = snakemake  # noqa: F821
plans = json.loads(Path(sm.input.plans).read_text())
budget, batch = int(sm.wildcards.budget), int(sm.wildcards.batch_size)
choice = next(c for c in plans["choices"] if c["budget"] == budget and c["batch"] == batch)
spec = spec_mod.packing(sm.params.job, budget, batch, choice)
rec = job.run_rule(sm, settings.cell_timeout_s(sm.config), spec)
msg = f"packing {sm.wildcards.model}/{sm.wildcards.opt} C={budget} B={batch} "
msg += f"{choice.get('label')}: {job.summary_line(rec)}"
Path(sm.log[0]).write_text(msg + "\n")
print(msg, file=sys.stderr)
