"""Snakemake entry: cells.csv + samples.csv -> degradation.csv, opt_speedup.csv and
precision.csv."""

from numa_effects.tables import degradation, precision, tidy

sm = snakemake  # noqa: F821
cells = tidy.read(sm.input.cells)
samples = tidy.read(sm.input.samples)
tidy.write(degradation.degradation_table(cells, samples), sm.output.degradation)
tidy.write(degradation.opt_speedup_table(cells, samples), sm.output.opt_speedup)
# each optimization and allocator against float32 eager with glibc (docs/precision.md)
tidy.write(precision.precision_table(cells, samples), sm.output.precision)
