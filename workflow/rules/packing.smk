# PackRat's question from this grid (docs/packing.md): per (model, opt) the optimizer picks the
# best <instances, threads, batch> for every batch size and core budget from tables/cells.csv;
# each choice and the fat instance are then measured for real as concurrent pinned processes.
from numa_effects.plan import packing as packing_mod  # noqa: E402

try:
    PACKING = packing_mod.settings(
        config, TOPOLOGY, grid_mod.thread_counts(config, TOPOLOGY)
    )
except packing_mod.PackingConfigError as exc:
    raise WorkflowError(str(exc)) from None
PACKING_JOBS = packing_mod.jobs(PACKING)
# The report's Packing figures exist for the packed (model, opt) (report_functions.smk passes
# them to numa_effects.report.registry.figures).
PACKED = packing_mod.packed(PACKING)


# What `all` asks of packing (workflow/rules/common.smk): the table, or nothing when it is off.
PACKING_OUTPUTS = [f"{RESULTS}/tables/packing.csv"] if PACKING_JOBS else []


if PACKING_JOBS:

    rule packing_plan:
        input:
            cells=f"{RESULTS}/tables/cells.csv",
        output:
            f"{RESULTS}/packing/{{model}}/{{opt}}/plans.json",
        log:
            f"{RESULTS}/logs/packing/{{model}}/{{opt}}/plans.log",
        conda:
            "../../envs/analysis.yaml"
        params:
            budgets=list(PACKING["budgets"]),
            batch_sizes=PACKING["batch_sizes"],
            threads=PACKING["threads"],
            use_smt=PACKING["use_smt"],
            topology=TOPOLOGY.to_dict(),
        script:
            "../scripts/plan_packing.py"

    rule packing_run:
        input:
            plans=f"{RESULTS}/packing/{{model}}/{{opt}}/plans.json",
        output:
            f"{RESULTS}/packing/{{model}}/{{opt}}/c{{budget}}/bs{{batch_size}}.json",
        log:
            f"{RESULTS}/logs/packing/{{model}}/{{opt}}/c{{budget}}/bs{{batch_size}}.log",
        wildcard_constraints:
            budget=r"\d+",
            batch_size=r"\d+",
        conda:
            "../../envs/benchmark.yaml"
        threads: bench_threads
        resources:
            **bench_resources(4 * cell_timeout(None)),
        params:
            job=lambda wc: {
                "model": wc.model,
                "opt": wc.opt,
                "image_size": config["image_size"],
                "use_smt": config["use_smt"],
                "replicates": config.get("replicates", 1),
                "settings": {
                    **{k: config.get(k) for k in MEASUREMENT_KEYS},
                    "max_seconds_per_cell": PACKING["max_seconds"],
                },
            },
        script:
            "../scripts/run_packing.py"

    rule packing_table:
        input:
            plans=sorted(
                {
                    packing_mod.plan_path(RESULTS, j["model"], j["opt"])
                    for j in PACKING_JOBS
                }
            ),
            runs=[packing_mod.run_path(RESULTS, j) for j in PACKING_JOBS],
        output:
            f"{RESULTS}/tables/packing.csv",
        log:
            f"{RESULTS}/logs/packing_table.log",
        conda:
            "../../envs/analysis.yaml"
        params:
            budget_names={str(k): v for k, v in PACKING["budgets"].items()},
        script:
            "../scripts/tabulate_packing.py"
