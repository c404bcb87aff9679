# What to deploy (docs/deploy.md): after the cells (the isolated profiles) and the interference
# profile, the plan searches every optimization and allocator of the grid for each objective
# and names the configurations to measure (the best predictions and the launchers' layouts);
# one job measures them side by side in blocks of ABBA slices; the table judges them, with the
# gains' paired CIs. An imported run gets the plan only: its answer is predicted.


if PLAN.deploy["enabled"]:

    rule deploy_plan:
        input:
            cells=PLAN.table("cells"),
            interference=(
                PLAN.table("interference")
                if PLAN.interference_jobs
                or (PLAN.config.get("import") or {}).get("interference")
                else []
            ),
        output:
            PLAN.path(paths.DEPLOY_PLAN),
        log:
            PLAN.path(paths.DEPLOY_PLAN_LOG),
        conda:
            "../../envs/analysis.yaml"
        params:
            # the judging's and the load test's keys out: changing them never re-measures
            settings={
                k: v
                for k, v in PLAN.deploy.items()
                if k not in ("equivalence_pct", "loadtest")
            },
            topology=PLAN.topology.to_dict(),
            code=PLAN.code["tables"],
        script:
            "../scripts/plan_deploy.py"

    rule deploy_table:
        input:
            plan=PLAN.path(paths.DEPLOY_PLAN),
            run=PLAN.path(paths.DEPLOY_RUN) if PLAN.deploy["measured"] else [],
        output:
            PLAN.table("recommendation"),
        log:
            PLAN.log("recommendation"),
        conda:
            "../../envs/analysis.yaml"
        params:
            bound_ms=PLAN.deploy["latency_bound_ms"],
            equivalence_pct=PLAN.deploy["equivalence_pct"],
            code=PLAN.code["tables"],
        script:
            "../scripts/tabulate_deploy.py"


if PLAN.deploy["measured"]:

    rule deploy_run:
        input:
            plan=PLAN.path(paths.DEPLOY_PLAN),
        output:
            PLAN.path(paths.DEPLOY_RUN),
        log:
            PLAN.path(paths.DEPLOY_RUN_LOG),
        conda:
            "../../envs/benchmark.yaml"
        threads: bench_threads
        resources:
            **bench_resources(PLAN.deploy_timeout_s()),
        params:
            job=PLAN.deploy_job(DEPLOY_ALLOWANCE),
        script:
            "../scripts/run_deploy.py"


# The throughput answer under load (docs/deploy.md, "Under load"): MLPerf LoadGen drives the
# recommendation and its strongest baseline, started warm and pinned as the deploy job measured
# them; a measuring job, so it holds the machine like deploy_run. A budget may drop it
# (plan.cost), and the summary and report then say so.
if PLAN.deploy["loadtest"]:

    rule loadtest:
        input:
            table=PLAN.table("recommendation"),
            plan=PLAN.path(paths.DEPLOY_PLAN),
            run=PLAN.path(paths.DEPLOY_RUN),
        output:
            table=PLAN.table("loadtest"),
            logs=directory(PLAN.path(paths.LOADTEST_DIR)),
        log:
            PLAN.log("loadtest"),
        conda:
            "../../envs/benchmark.yaml"
        threads: bench_threads
        resources:
            **bench_resources(PLAN.loadtest_timeout_s()),
        params:
            args=PLAN.loadtest_args(),
            code=PLAN.code["loadtest"],
        script:
            "../scripts/run_loadtest.py"

    rule plot_loadtest:
        input:
            PLAN.table("loadtest"),
        output:
            png=report(
                PLAN.loadtest_figure("png"),
                caption="../report/figure.rst",
                category="What to deploy",
                subcategory="Under load",
            ),
            svg=PLAN.loadtest_figure("svg"),
        log:
            PLAN.log("report/latency_under_load"),
        conda:
            "../../envs/analysis.yaml"
        params:
            model=PLAN.deploy["models"][0],
            caption=lambda wildcards: families_mod.UNDER_LOAD,
            code=PLAN.code["report"],
        script:
            "../scripts/plot_loadtest.py"
