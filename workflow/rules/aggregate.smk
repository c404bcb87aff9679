# The grid as data, under a name that changes with it (numa_effects.plan.manifest): the
# aggregations take it as input, so an added or removed cell re-runs them without Snakemake's
# metadata.
rule grid_manifest:
    output:
        PLAN.manifest_path,
    log:
        PLAN.log("grid_manifest"),
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        manifest=PLAN.manifest,
    script:
        "../scripts/write_manifest.py"


rule tables:
    input:
        cells=replicate_outputs,
        manifest=PLAN.manifest_path,
        # two_stage: the checkpoint's records (each cell's first-stage variance, its reason)
        stages=PLAN.stages_path or [],
        flops=PLAN.table("flops"),
        peak=PLAN.table("peak"),
    output:
        cells=PLAN.table("cells"),
        samples=PLAN.table("samples"),
        skipped=PLAN.table("skipped"),
        failures=PLAN.table("failures"),
    log:
        PLAN.log("tables"),
    conda:
        "../../envs/analysis.yaml"
    params:
        skipped=PLAN.skipped_rows(),
        same=PLAN.same_binding_rows(),
        code=PLAN.code["tables"],
    script:
        "../scripts/aggregate_cells.py"


rule summary:
    input:
        **({"packing": PLAN.table("packing")} if PLAN.packing_jobs else {}),
        **(
            {"interference": PLAN.table("interference")}
            if PLAN.packing_jobs or PLAN.interference_jobs
            else {}
        ),
        # what to deploy: the summary's first lines
        **(
            {"recommendation": PLAN.table("recommendation")}
            if PLAN.deploy["enabled"]
            else {}
        ),
        # plain paths, not rules.tables.output: imported results (packrat.smk) make them too
        cells=PLAN.table("cells"),
        skipped=PLAN.table("skipped"),
        machine=PLAN.path(paths.MACHINE),
        # packing's recommendations and the interference profile's cost, when packing runs
    output:
        PLAN.path(paths.SUMMARY),
    log:
        PLAN.log("summary"),
    conda:
        "../../envs/analysis.yaml"
    params:
        loadtest=PLAN.loadtest_note(ESTIMATE.shrunk),  # why the answer is not under load
        code=PLAN.code["tables"],
    script:
        "../scripts/write_summary.py"
