"""Snakemake entry: measure the deploy plan's configurations in blocks of ABBA slices (see
numa_effects.measure.deploy); the cells' peak RSS, where the run has it, checks that every
configuration's processes fit in memory at once."""

import json
import sys
from pathlib import Path

from numa_effects.measure import deploy, job
from numa_effects.plan import paths, settings

sm = snakemake  # noqa: F821
plan = json.loads(Path(sm.input.plan).read_text())
results = Path(sm.input.plan).parent.parent  # deploy/plan.json's results folder
rec = deploy.run(
    sm.params.job,
    plan,
    sm.output[0],
    sm.log[0],
    settings.cell_timeout_s(sm.config),
    max_memory_mb=sm.config.get("max_memory_mb"),
    rss_mb=deploy.expected_rss_mb(plan["configurations"], results / paths.table("cells")),
)
msg = (
    f"deploy: {len(plan['configurations'])} configurations, {deploy.rounds(rec)} blocks"
    f" ({rec.stopped or 'all blocks'}): {job.summary_line(rec)}"
)
Path(sm.log[0]).write_text(msg + "\n")
print(msg, file=sys.stderr)
