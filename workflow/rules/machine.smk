rule machine:
    output:
        f"{RESULTS}/machine.json",
    log:
        f"{RESULTS}/logs/machine.log",
    conda:
        "../../envs/benchmark.yaml"
    script:
        "../scripts/record_machine.py"
