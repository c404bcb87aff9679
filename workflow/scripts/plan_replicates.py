"""Snakemake entry (checkpoint, config key two_stage): the first stage's cell JSONs ->
grid/replicates-<digest>.json, every cell's replicates in all (numa_effects.tables.stages)."""

import sys

from numa_effects.tables import stages

sm = snakemake  # noqa: F821
settings = sm.params.settings
records = stages.decide(stages.first_stage(sm.input.cells), settings)
stages.write(sm.output[0], settings, records)
line = stages.summary_line(records, settings)
print(line, file=sys.stderr)
with open(sm.log[0], "w") as log:
    print(line, file=log)
