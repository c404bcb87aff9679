rule cell:
    output:
        f"{RESULTS}/cells/{{model}}/{{opt}}/{{placement}}/t{{threads}}/bs{{batch_size}}.json",
    log:
        f"{RESULTS}/logs/cells/{{model}}/{{opt}}/{{placement}}/t{{threads}}/bs{{batch_size}}.log",
    # Names only: no path separators or shell metacharacters can reach a cell.
    wildcard_constraints:
        model=r"[a-z][a-z0-9_]*",
        opt=r"[a-z][a-z0-9_]*",
        placement=r"[a-z][a-z-]*(\+smt)?",
        threads=r"\d+",
        batch_size=r"\d+",
    conda:
        "../../envs/benchmark.yaml"
    threads: bench_threads
    resources:
        **bench_resources(cell_timeout(None)),
    # The timeout (cell_timeout) and max_memory_mb are read from the config by the job, not
    # params: they decide whether a cell fails, not how it is measured, so changing them
    # re-runs nothing (`make retry-failed` re-runs the failed cells).
    params:
        spec=cell_spec,
    script:
        "../scripts/run_cell.py"
