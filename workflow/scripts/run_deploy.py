"""Snakemake entry: measure the deploy plan's configurations in ABBA rounds (see
numa_effects.measure.deploy)."""

import json
import sys
from pathlib import Path

from numa_effects.measure import deploy, job
from numa_effects.plan import settings

sm = snakemake  # noqa: F821
plan = json.loads(Path(sm.input.plan).read_text())
rec = deploy.run(
    sm.params.job,
    plan,
    sm.output[0],
    sm.log[0],
    settings.cell_timeout_s(sm.config),
    max_memory_mb=sm.config.get("max_memory_mb"),
)
msg = (
    f"deploy: {len(plan['configurations'])} configurations, {deploy.rounds(rec)} rounds"
    f" ({rec.stopped or 'all rounds'}): {job.summary_line(rec)}"
)
Path(sm.log[0]).write_text(msg + "\n")
print(msg, file=sys.stderr)
