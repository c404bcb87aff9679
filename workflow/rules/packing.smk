# PackRat's question from this grid (docs/packing.md): per (model, opt) the optimizer picks the
# best <instances, threads, batch> for every batch size and core budget from tables/cells.csv;
# each choice and the fat instance are then measured for real as concurrent pinned processes.
# The jobs are the plan's (PLAN.packing_jobs; none when packing is off); the packing key was
# checked with the rest of the config (numa_effects.config).


if PLAN.packing_jobs:

    rule packing_plan:
        input:
            cells=PLAN.table("cells"),
        output:
            PLAN.path(paths.PACKING_PLANS),
        log:
            PLAN.path(paths.PACKING_PLANS_LOG),
        conda:
            "../../envs/analysis.yaml"
        params:
            budgets=list(PLAN.packing["budgets"]),
            batch_sizes=PLAN.packing["batch_sizes"],
            threads=PLAN.packing["threads"],
            use_smt=PLAN.packing["use_smt"],
            topology=PLAN.topology.to_dict(),
        script:
            "../scripts/plan_packing.py"

    rule packing_run:
        input:
            plans=PLAN.path(paths.PACKING_PLANS),
        output:
            PLAN.path(paths.PACKING_RUN),
        log:
            PLAN.path(paths.PACKING_RUN_LOG),
        wildcard_constraints:
            budget=r"\d+",
            batch_size=r"\d+",
        conda:
            "../../envs/benchmark.yaml"
        threads: bench_threads
        resources:
            **bench_resources(4 * PLAN.cell_timeout_s),
        params:
            job=lambda wc: PLAN.packing_job(wc.model, wc.opt),
        script:
            "../scripts/run_packing.py"

    rule packing_table:
        input:
            plans=PLAN.packing_plan_paths(),
            runs=PLAN.packing_run_paths(),
        output:
            PLAN.table("packing"),
        log:
            PLAN.log("packing_table"),
        conda:
            "../../envs/analysis.yaml"
        params:
            budget_names={str(k): v for k, v in PLAN.packing["budgets"].items()},
            code=PLAN.code["tables"],
        script:
            "../scripts/tabulate_packing.py"
