"""Snakemake entry: memory probe JSONs -> results/tables/memory_matrix.csv (+ Parquet), with
the firmware distances of the run's machine.json."""

from numa_effects.plan import topology
from numa_effects.tables import memory_matrix, tidy

sm = snakemake  # noqa: F821
topo = topology.load(sm.input.machine)
tidy.write(memory_matrix.table(sm.input.memory, topo), sm.output[0])
