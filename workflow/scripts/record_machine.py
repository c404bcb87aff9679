"""Snakemake entry: write results/machine.json for the machine this job runs on.

Under Slurm this is a compute node, and the file doubles as the topology the grid is planned
against (config key `topology`); its `slurm` part says which node and partition it describes."""

from numa_effects.measure import machine, provenance, record
from numa_effects.plan import topology

facts = machine.facts(topology.current())
facts["slurm"] = provenance.slurm()
record.write(snakemake.output[0], facts)  # noqa: F821
