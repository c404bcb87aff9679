"""Snakemake entry: write results/machine.json for the machine this job runs on."""

from numa_effects import cellresult, machine, topology

cellresult.write_json_atomic(snakemake.output[0], machine.facts(topology.current()))  # noqa: F821
