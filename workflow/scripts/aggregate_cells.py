"""Snakemake entry: cell JSONs -> results/tables/{cells,samples,skipped,failures}.csv."""

from numa_effects.tables import cells as cell_tables
from numa_effects.tables import flops, stages, tidy

sm = snakemake  # noqa: F821
# under two_stage: each cell's record of the checkpoint (its first stage's variance, why it
# took the replicates it did), for the CI and the replicates_* columns
two_stage = stages.read_records(sm.input.stages) if sm.input.get("stages") else None
cells, samples = cell_tables.tables(sm.input.cells, two_stage)
# gflop, gflop_per_s, peak_gflop_per_s, efficiency (see numa_effects.tables.flops)
cells = flops.add_efficiency(cells, tidy.read(sm.input.flops), tidy.read(sm.input.peak))
# Failed cells: keys, cause, exit status, last lines of output (`make retry-failed` re-runs them)
tidy.write(cell_tables.failures_table(cells), sm.output.failures)
# the cells whose binding a measured cell has: its row under their names (plan.binding)
tidy.write(cell_tables.with_same_bindings(cells, sm.params.same), sm.output.cells)
tidy.write(samples, sm.output.samples)
tidy.write(cell_tables.skipped_table(sm.params.skipped), sm.output.skipped)
