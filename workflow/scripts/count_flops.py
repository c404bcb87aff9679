"""Snakemake entry: FLOPs per (model, batch, image size) -> results/tables/flops.csv."""

from numa_effects.tables import flops, tidy

sm = snakemake  # noqa: F821
tidy.write(flops.table(sm.params.combos), sm.output[0])
