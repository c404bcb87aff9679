"""Snakemake entry: the interference profile jobs' JSONs -> results/tables/interference.csv."""

from pathlib import Path

from numa_effects.measure import record
from numa_effects.tables import interference, tidy

sm = snakemake  # noqa: F821
results = [record.read_group(p) for p in sm.input.runs]
df = interference.table(results)
tidy.write(df, sm.output[0])
Path(sm.log[0]).write_text(f"{len(df)} rows from {len(results)} profile job(s)\n")
