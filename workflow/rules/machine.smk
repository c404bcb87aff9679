rule machine:
    output:
        PLAN.path(paths.MACHINE),
    log:
        PLAN.log("machine"),
    conda:
        "../../envs/benchmark.yaml"
    script:
        "../scripts/record_machine.py"
