"""Snakemake entry: cells.csv + samples.csv -> degradation.csv, opt_speedup.csv and
precision.csv."""

from numa_effects import stats
from numa_effects.tables import cells as tidy
from numa_effects.tables import degradation, precision

sm = snakemake  # noqa: F821
cells = stats.read_table(sm.input.cells)
samples = stats.read_table(sm.input.samples)
tidy.write(degradation.degradation_table(cells, samples), sm.output.degradation)
tidy.write(degradation.opt_speedup_table(cells, samples), sm.output.opt_speedup)
# each optimization and allocator against float32 eager with glibc (docs/precision.md)
tidy.write(precision.precision_table(cells, samples), sm.output.precision)
