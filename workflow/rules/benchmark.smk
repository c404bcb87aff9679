rule cell:
    output:
        f"{RESULTS}/{grid_mod.CELL_PATTERN}",
    log:
        f"{RESULTS}/{grid_mod.LOG_PATTERN}",
    # Names only: no path separators or shell metacharacters can reach a cell.
    wildcard_constraints:
        model=r"[a-z][a-z0-9_]*",
        opt=r"[a-z][a-z0-9_]*",
        placement=r"[a-z][a-z-]*(\+smt)?",
        threads=r"\d+",
        batch_size=r"\d+",
        replicate=r"[1-9]\d*",
    # Replicates run round by round, a placement next to its baseline (grid.job_order).
    priority: cell_priority
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
