"""Snakemake entry: tables/recommendation.csv (see numa_effects.tables.deploy)."""

import json
from pathlib import Path

from numa_effects.measure import record
from numa_effects.tables import deploy

sm = snakemake  # noqa: F821
plan = json.loads(Path(sm.input.plan).read_text())
result = record.read_group(sm.input.run) if sm.input.get("run") else None
df = deploy.table(plan, result, sm.params.bound_ms)
df.to_csv(sm.output[0], index=False)
Path(sm.log[0]).write_text(f"recommendation.csv: {len(df)} rows\n")
