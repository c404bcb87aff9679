# numa-effects: CPU inference of torchvision ResNets across batch size x optimization x
# intra-op threads x NUMA placement, one pinned process per cell, aggregated into tidy tables.
# This file is the table of contents; the plan is numa_effects.plan.build (workflow/rules/
# common.smk) and the logic lives in workflow/scripts/numa_effects/ (docs/development.md).
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"  # the config checked, the plan built
include: "workflow/rules/resources.smk"  # one set of job resources for every executor
include: "workflow/rules/machine.smk"  # machine.json: topology, kernel knobs, versions
include: "workflow/rules/benchmark.smk"  # one pinned process per replicate of a cell
include: "workflow/rules/efficiency.smk"  # FLOPs and the GEMM peak
include: "workflow/rules/memory.smk"  # the node-pair matrix's memory latency and bandwidth
include: "workflow/rules/aggregate.smk"  # manifest, cells/samples/skipped/failures, summary
include: "workflow/rules/degradation.smk"  # placements vs baseline, optimizations vs eager
include: "workflow/rules/packrat.smk"  # importing PackRat's results instead of measuring
include: "workflow/rules/packing.smk"  # PackRat's packing question, measured
include: "workflow/rules/deploy.smk"  # what to deploy: the answer, against the launchers
include: "workflow/rules/report.smk"  # one rule per figure family and the report page
include: "workflow/rules/compare.smk"  # result folders compared (config key compare)
include: "workflow/rules/history.smk"  # records kept before a re-run replaces them


rule all:
    default_target: True
    input:
        PLAN.targets(),
        replicate_outputs,  # two_stage: the replicates decided after the first stage
        announce_plan,  # nothing: prints the budget and the estimate when all is what runs


onstart:
    keep_history()


onsuccess:
    print_summary()
