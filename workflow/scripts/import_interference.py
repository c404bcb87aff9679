"""Snakemake entry: PackRat's multi-instance runs as tables/interference.csv (config key
``import.interference``; see numa_effects.tables.packrat.interference_table)."""

from pathlib import Path

from numa_effects.tables import packrat, tidy

sm = snakemake  # noqa: F821
table = packrat.interference_table(sm.params.source)
tidy.write(table, sm.output[0])
Path(sm.log[0]).write_text(f"imported {len(table)} groups from {sm.params.source}\n")
