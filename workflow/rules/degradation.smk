# Placement vs sequential and optimization vs eager, with bootstrap CIs over the raw samples.


rule degradation:
    input:
        cells=f"{RESULTS}/tables/cells.csv",
        samples=f"{RESULTS}/tables/samples.csv",
    output:
        degradation=f"{RESULTS}/tables/degradation.csv",
        opt_speedup=f"{RESULTS}/tables/opt_speedup.csv",
    log:
        f"{RESULTS}/logs/degradation.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/compare_cells.py"
