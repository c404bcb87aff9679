rule cell:
    output:
        f"{RESULTS}/cells/{{model}}/{{opt}}/{{placement}}/t{{threads}}/bs{{batch_size}}.json",
    log:
        f"{RESULTS}/logs/cells/{{model}}/{{opt}}/{{placement}}/t{{threads}}/bs{{batch_size}}.log",
    wildcard_constraints:
        threads=r"\d+",
        batch_size=r"\d+",
    conda:
        "../../envs/benchmark.yaml"
    resources:
        bench_slot=1,
    params:
        spec=cell_spec,
        timeout_s=cell_timeout,
    script:
        "../scripts/run_cell.py"
