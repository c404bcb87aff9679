rule tables:
    input:
        cells=cell_outputs(),
    output:
        cells=f"{RESULTS}/tables/cells.csv",
        samples=f"{RESULTS}/tables/samples.csv",
        skipped=f"{RESULTS}/tables/skipped.csv",
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
        cells=rules.tables.output.cells,
        skipped=rules.tables.output.skipped,
        machine=rules.machine.output[0],
    output:
        f"{RESULTS}/summary.txt",
    log:
        f"{RESULTS}/logs/summary.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/summary.py"
