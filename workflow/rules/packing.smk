# PackRat's question from this grid (docs/packing.md): the interference profile measures how much
# identical instances side by side slow each other (per budget and thread count); per (model,
# opt) the optimizer then picks, for every batch size and core budget, the best <instances,
# threads, batch> predicted from tables/cells.csv and that slowdown; the fat instance and the
# best few predicted plans are measured for real as concurrent pinned processes, and the table
# recommends the measured best. The jobs are the plan's (PLAN.packing_jobs,
# PLAN.interference_jobs; none when packing is off); the packing key was checked with the rest
# of the config (numa_effects.config).


if PLAN.packing_jobs or PLAN.interference_jobs:

    rule interference_run:
        output:
            PLAN.path(paths.INTERFERENCE_RUN),
        log:
            PLAN.path(paths.INTERFERENCE_RUN_LOG),
        wildcard_constraints:
            budget=r"\d+",
            threads=r"\d+",
        conda:
            "../../envs/benchmark.yaml"
        threads: bench_threads
        resources:
            **bench_resources(PLAN.interference_timeout_s()),
        params:
            spec=lambda wc: PLAN.interference_spec(
                wc.model, wc.opt, int(wc.budget), int(wc.threads)
            ).to_json(),
        script:
            "../scripts/run_interference.py"

    rule interference_table:
        input:
            runs=PLAN.interference_run_paths(),
        output:
            PLAN.table("interference"),
        log:
            PLAN.log("interference_table"),
        conda:
            "../../envs/analysis.yaml"
        params:
            code=PLAN.code["tables"],
        script:
            "../scripts/tabulate_interference.py"


if PLAN.packing_jobs:

    rule packing_plan:
        input:
            cells=PLAN.table("cells"),
            interference=PLAN.table("interference"),
        output:
            PLAN.path(paths.PACKING_PLANS),
        log:
            PLAN.path(paths.PACKING_PLANS_LOG),
        conda:
            "../../envs/analysis.yaml"
        params:
            budgets=list(PLAN.packing["budgets"]),
            caps={str(k): v for k, v in PLAN.packing["caps"].items()},
            batch_sizes=PLAN.packing["batch_sizes"],
            threads=PLAN.packing["threads"],
            use_smt=PLAN.packing["use_smt"],
            measure_plans=PLAN.packing["measure_plans"],
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
            **bench_resources(PLAN.packing_timeout_s()),
        params:
            job=lambda wc: PLAN.packing_job(wc.model, wc.opt),
        script:
            "../scripts/run_packing.py"

    rule packing_table:
        input:
            plans=PLAN.packing_plan_paths(),
            runs=PLAN.packing_run_paths(),
        output:
            packing=PLAN.table("packing"),
            candidates=PLAN.table("packing_candidates"),
        log:
            PLAN.log("packing_table"),
        conda:
            "../../envs/analysis.yaml"
        params:
            budget_names={str(k): v for k, v in PLAN.packing["budgets"].items()},
            code=PLAN.code["tables"],
        script:
            "../scripts/tabulate_packing.py"
