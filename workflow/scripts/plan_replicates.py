"""Snakemake entry (checkpoint, config key two_stage): the first stage's cell JSONs ->
grid/replicates-<digest>.json, every cell's replicates in all (numa_effects.tables.stages)."""

import sys

from numa_effects.tables import stages

sm = snakemake  # noqa: F821
settings = sm.params.settings
rounds = stages.first_stage_rounds(sm.input.cells)
pairs = stages.pairing(rounds)
records = stages.decide(stages.round_order(rounds), settings, pairs)
stages.write(sm.output[0], settings, records, pairs)
line = stages.summary_line(records, settings, pairs)
print(line, file=sys.stderr)
with open(sm.log[0], "w") as log:
    print(line, file=log)
