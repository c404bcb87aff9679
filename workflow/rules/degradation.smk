# Each placement against its baseline and each optimization against eager, with two-level CIs.


rule degradation:
    input:
        cells=PLAN.table("cells"),
        samples=PLAN.table("samples"),
    output:
        degradation=PLAN.table("degradation"),
        opt_speedup=PLAN.table("opt_speedup"),
    log:
        PLAN.log("degradation"),
    conda:
        "../../envs/analysis.yaml"
    params:
        code=PLAN.code["tables"],
    script:
        "../scripts/compare_cells.py"
