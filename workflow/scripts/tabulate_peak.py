"""Snakemake entry: peak JSONs -> results/tables/peak.csv (+ Parquet)."""

from numa_effects.tables import peak, tidy

sm = snakemake  # noqa: F821
tidy.write(peak.table(sm.input.peaks), sm.output[0])
