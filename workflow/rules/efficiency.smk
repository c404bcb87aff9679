# Work per cell and the machine's limit: FLOPs per (model, batch, image size) and the peak per
# (placement, threads, dtype of the grid's cells) on the models' own path (torch.mm and oneDNN's
# convolutions, the best kept; numa_effects.measure.workloads.dtype_peaks), pinned exactly like
# the cells that use it, in several windows spread over the cells by priority (plan.peaks), the
# best clean window kept (tables.peak), joined into cells.csv as gflop_per_s and efficiency.
# With `peak: false` (an emulated test guest) there is no peak job: peak.csv is empty and so is
# efficiency.


rule flops:
    input:
        manifest=PLAN.manifest_path,  # a grid change re-counts (plan.manifest)
    output:
        PLAN.table("flops"),
    log:
        PLAN.log("flops"),
    conda:
        "../../envs/benchmark.yaml"
    params:
        combos=PLAN.flops_combos(),
        code=PLAN.code["tables"],
    script:
        "../scripts/count_flops.py"


rule peak:
    output:
        PLAN.path(paths.PEAK),
    log:
        PLAN.path(paths.PEAK_LOG),
    wildcard_constraints:
        threads=r"\d+",
        dtype=r"[a-z0-9]+",
        window=r"\d+",
    # each window between the cells of its slot in the job order (plan.peaks)
    priority: lambda wc: PLAN.peak_priority(int(wc.window))
    conda:
        "../../envs/benchmark.yaml"
    threads: bench_threads
    resources:
        **bench_resources(plan_mod.PEAK_TIMEOUT_S),
    params:
        spec=lambda wc: PLAN.peak_spec(
            wc.placement, int(wc.threads), wc.dtype, int(wc.window)
        ).to_json(),
        timeout_s=plan_mod.PEAK_TIMEOUT_S,
    script:
        "../scripts/run_peak.py"


rule peak_table:
    input:
        peaks=PLAN.peak_outputs(),
        manifest=PLAN.manifest_path,  # a removed thread count drops its row
    output:
        PLAN.table("peak"),
    log:
        PLAN.log("peak_table"),
    conda:
        "../../envs/analysis.yaml"
    params:
        code=PLAN.code["tables"],
    script:
        "../scripts/tabulate_peak.py"
