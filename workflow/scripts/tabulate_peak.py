"""Snakemake entry: peak JSONs -> results/tables/peak.csv (+ Parquet)."""

from numa_effects.measure import peak
from numa_effects.tables import cells as tidy

sm = snakemake  # noqa: F821
tidy.write(peak.table(sm.input.peaks), sm.output[0])
