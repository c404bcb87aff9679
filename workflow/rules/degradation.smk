# Each placement against its baseline, each optimization against eager, and each optimization
# and allocator against float32 eager with glibc (precision.csv), with two-level CIs.


rule degradation:
    input:
        cells=PLAN.table("cells"),
        samples=PLAN.table("samples"),
    output:
        degradation=PLAN.table("degradation"),
        opt_speedup=PLAN.table("opt_speedup"),
        precision=PLAN.table("precision"),
    log:
        PLAN.log("degradation"),
    conda:
        "../../envs/analysis.yaml"
    params:
        code=PLAN.code["tables"],
    script:
        "../scripts/tabulate_degradation.py"
