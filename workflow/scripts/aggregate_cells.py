"""Snakemake entry: cell JSONs -> results/tables/{cells,samples,skipped,failures}.csv."""

from numa_effects import stats
from numa_effects.tables import cells as tidy
from numa_effects.tables import flops, stages

sm = snakemake  # noqa: F821
# under two_stage: each cell's record of the checkpoint (its first stage's variance, why it
# took the replicates it did), for the CI and the replicates_* columns
two_stage = stages.read_records(sm.input.stages) if sm.input.get("stages") else None
cells, samples = tidy.tables(sm.input.cells, two_stage)
# gflop, gflop_per_s, peak_gflop_per_s, efficiency (see numa_effects.tables.flops)
cells = flops.add_efficiency(
    cells, stats.read_table(sm.input.flops), stats.read_table(sm.input.peak)
)
# Failed cells: keys, cause, exit status, last lines of output (`make retry-failed` re-runs them)
tidy.write(tidy.failures_table(cells), sm.output.failures)
# the cells whose binding a measured cell has: its row under their names (plan.binding)
tidy.write(tidy.with_same_bindings(cells, sm.params.same), sm.output.cells)
tidy.write(samples, sm.output.samples)
tidy.write(tidy.skipped_table(sm.params.skipped), sm.output.skipped)
