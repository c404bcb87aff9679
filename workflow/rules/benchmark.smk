# One pinned process per replicate of a cell (numa_effects.measure): the grid's cells, their
# replicates and the order they run in come from the plan (PLAN.order via priorities).
rule cell:
    output:
        PLAN.path(paths.CELL),
    log:
        PLAN.path(paths.CELL_LOG),
    # Names only (from the axis registry): no path separators or shell metacharacters.
    wildcard_constraints:
        **grid_mod.wildcard_constraints(),
    # Replicates run round by round, a placement next to its baseline (plan.grid.job_order).
    priority: lambda wc: PLAN.priority(cell_key(wc), wc.replicate)
    conda:
        "../../envs/benchmark.yaml"
    threads: bench_threads
    resources:
        **bench_resources(PLAN.cell_timeout_s),
    # The timeout and max_memory_mb are read from the config by the job, not params: they
    # decide whether a cell fails, not how it is measured, so changing them re-runs nothing
    # (`make retry-failed` re-runs the failed cells). The spec carries the measuring code's
    # digest: an edit that changes what it does re-measures (plan.code).
    params:
        spec=lambda wc: PLAN.cell_spec(cell_key(wc), wc.replicate).to_json(),
    script:
        "../scripts/run_cell.py"


# Replicates where the noise is (config key two_stage): after the first stage, one checkpoint
# gives every cell the replicates it needs for the target CI, at most the cap (Stein's rule),
# and cells compared side by side the larger count where the first stage shows that pairing pays
# (numa_effects.tables.stages); the further replicates are the same `cell` jobs, asked for by
# replicate_outputs (common.smk) once it has run.
if PLAN.two_stage:

    checkpoint replicates:
        input:
            cells=PLAN.cell_outputs(),
            manifest=PLAN.manifest_path,
        output:
            PLAN.stages_path,
        log:
            PLAN.log("replicates"),
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            settings=PLAN.two_stage,
            code=PLAN.code["tables"],
        script:
            "../scripts/plan_replicates.py"
