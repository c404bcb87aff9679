"""Snakemake entry: measure the deploy plan's configurations in ABBA rounds (see
numa_effects.measure.deploy)."""

import json
import sys
from pathlib import Path

from numa_effects.measure import deploy
from numa_effects.plan import settings

sm = snakemake  # noqa: F821
plan = json.loads(Path(sm.input.plan).read_text())
job = {**sm.params.job, **{k: plan[k] for k in ("objectives", "configurations")}}
log = Path(sm.log[0])
result = deploy.run(
    job,
    sm.output[0],
    log.parent / log.stem,
    settings.cell_timeout_s(sm.config),
    max_memory_mb=sm.config.get("max_memory_mb"),
)
msg = (
    f"deploy: {len(job['configurations'])} configurations, {result.get('rounds', 0)} rounds "
    f"({result.get('stop_reason') or result.get('failure')})"
)
log.write_text(msg + "\n")
print(msg, file=sys.stderr)
