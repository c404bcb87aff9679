# numa-effects: CPU inference of torchvision ResNets across batch size x optimization x
# intra-op threads x NUMA placement, one pinned process per cell, aggregated into tidy tables.
# This file is the table of contents; logic lives in workflow/scripts/numa_effects/.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/resources.smk"
include: "workflow/rules/machine.smk"
include: "workflow/rules/benchmark.smk"
include: "workflow/rules/efficiency.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/degradation.smk"
include: "workflow/rules/packrat.smk"
include: "workflow/rules/packing.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        all_outputs(),


onsuccess:
    print_summary()
