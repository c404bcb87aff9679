"""Snakemake entry: tables/recommendation.csv (see numa_effects.tables.deploy)."""

import json
from pathlib import Path

from numa_effects import launch
from numa_effects.measure import record
from numa_effects.tables import deploy, tidy

sm = snakemake  # noqa: F821
plan = json.loads(Path(sm.input.plan).read_text())
# each configuration's command: the launcher's (docs/deploy.md, "Starting it")
launch.attach(plan, Path(sm.input.plan).parents[1])
result = record.read_group(sm.input.run) if sm.input.get("run") else None
df = deploy.table(plan, result, sm.params.bound_ms, sm.params.equivalence_pct)
tidy.write(df, sm.output[0])
Path(sm.log[0]).write_text(f"recommendation.csv: {len(df)} rows\n")
