"""Snakemake entry: cell JSONs -> results/tables/{cells,samples,skipped,failures}.csv."""

import pandas as pd

from numa_effects.tables import cells as tidy
from numa_effects.tables import flops

sm = snakemake  # noqa: F821
cells, samples = tidy.tables(sm.input.cells)
# gflop, gflop_per_s, peak_gflop_per_s, efficiency (see numa_effects.tables.flops)
cells = flops.add_efficiency(cells, pd.read_csv(sm.input.flops), pd.read_csv(sm.input.peak))
tidy.write(cells, sm.output.cells)
tidy.write(samples, sm.output.samples)
tidy.write(tidy.skipped_table(sm.params.skipped), sm.output.skipped)
# Failed cells: keys, cause, exit status, last lines of output (`make retry-failed` re-runs them)
tidy.write(tidy.failures_table(cells), sm.output.failures)
