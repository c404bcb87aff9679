"""Snakemake entry: the grid manifest (numa_effects.plan.manifest) ->
results/grid/manifest-*.json."""

from numa_effects.plan import manifest

sm = snakemake  # noqa: F821
removed = manifest.write(sm.output[0], sm.params.manifest)
with open(sm.log[0], "w") as log:
    cells = len(sm.params.manifest["cells"])
    print(f"{cells} cells; removed {[p.name for p in removed]}", file=log)
