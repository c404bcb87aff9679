# The grid as data, under a name that changes with it (numa_effects.plan.manifest): the aggregations
# take it as input, so an added or removed cell re-runs them without Snakemake's metadata.
rule grid_manifest:
    output:
        GRID_MANIFEST_PATH,
    log:
        f"{RESULTS}/logs/grid_manifest.log",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        manifest=GRID_MANIFEST,
    script:
        "../scripts/write_manifest.py"


rule tables:
    input:
        cells=cell_outputs(),
        manifest=GRID_MANIFEST_PATH,
        flops=f"{RESULTS}/tables/flops.csv",
        peak=f"{RESULTS}/tables/peak.csv",
    output:
        cells=f"{RESULTS}/tables/cells.csv",
        samples=f"{RESULTS}/tables/samples.csv",
        skipped=f"{RESULTS}/tables/skipped.csv",
        failures=f"{RESULTS}/tables/failures.csv",
    log:
        f"{RESULTS}/logs/tables.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        skipped=skipped_rows(),
    script:
        "../scripts/aggregate_cells.py"


rule summary:
    input:
        # plain paths, not rules.tables.output: imported results (packrat.smk) make them too
        cells=f"{RESULTS}/tables/cells.csv",
        skipped=f"{RESULTS}/tables/skipped.csv",
        machine=f"{RESULTS}/machine.json",
    output:
        f"{RESULTS}/summary.txt",
    log:
        f"{RESULTS}/logs/summary.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/write_summary.py"
