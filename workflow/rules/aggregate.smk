rule tables:
    input:
        cells=cell_outputs(),
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
        "../scripts/aggregate.py"


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
        "../scripts/summary.py"
