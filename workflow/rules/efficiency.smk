# Work per cell and the machine's limit: FLOPs per (model, batch, image size) and the float32
# GEMM peak per (placement, threads), joined into cells.csv as gflop_per_s and efficiency.

from numa_effects.tables import flops as flops_mod  # noqa: E402
from numa_effects.measure import peak as peak_mod  # noqa: E402

# One plan per (placement, threads): the peak is pinned exactly like the cells that use it.
# None with `peak: false` (an emulated test guest): peak.csv is then empty and so is efficiency.
PEAK_PLANS = peak_mod.plans(GRID) if config["peak"] else {}


rule flops:
    input:
        manifest=GRID_MANIFEST_PATH,  # a grid change re-counts (common.smk)
    output:
        f"{RESULTS}/tables/flops.csv",
    log:
        f"{RESULTS}/logs/flops.log",
    conda:
        "../../envs/benchmark.yaml"
    params:
        combos=flops_mod.combos(GRID, config["image_size"]),
    script:
        "../scripts/count_flops.py"


rule peak:
    output:
        f"{RESULTS}/peak/{{placement}}/t{{threads}}.json",
    log:
        f"{RESULTS}/logs/peak/{{placement}}/t{{threads}}.log",
    wildcard_constraints:
        threads=r"\d+",
    conda:
        "../../envs/benchmark.yaml"
    threads: bench_threads
    resources:
        **bench_resources(300),
    params:
        spec=lambda wc: peak_mod.spec(
            PEAK_PLANS, wc.placement, int(wc.threads), config["use_smt"]
        ),
        timeout_s=300,
    script:
        "../scripts/run_peak.py"


rule peak_table:
    input:
        peaks=peak_mod.outputs(PEAK_PLANS, RESULTS),
        manifest=GRID_MANIFEST_PATH,  # a removed thread count drops its row (common.smk)
    output:
        f"{RESULTS}/tables/peak.csv",
    log:
        f"{RESULTS}/logs/peak_table.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/tabulate_peak.py"
