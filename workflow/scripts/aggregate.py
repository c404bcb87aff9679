"""Snakemake entry: cell JSONs -> results/tables/{cells,samples,skipped}.csv (+ Parquet)."""

from numa_effects import tidy

sm = snakemake  # noqa: F821
cells, samples = tidy.tables(sm.input.cells)
tidy.write(cells, sm.output.cells)
tidy.write(samples, sm.output.samples)
tidy.write(tidy.skipped_table(sm.params.skipped), sm.output.skipped)
