# The report: every figure family of the reference NUMA-effects page, one rule per family whose
# wildcards are the varying part, and results/report/index.html. Figures are planned from the
# grid (or the imported cells), never by globbing results: only figures whose data exist are
# requested. Families, paths and sections: workflow/scripts/numa_effects/figures.py.
include: "report_functions.smk"


report: "../report/workflow.rst"


rule plot_latency_per_batch:
    input:
        **figure_input("latency_per_batch"),
    output:
        **figure_output("latency_per_batch"),
    log:
        figure_log("latency_per_batch"),
    wildcard_constraints:
        **figures_mod.WILDCARD_CONSTRAINTS,
    conda:
        "../../envs/analysis.yaml"
    params:
        family="latency_per_batch",
    script:
        "../scripts/plot_figure.py"


rule plot_latency_per_opt:
    input:
        **figure_input("latency_per_opt"),
    output:
        **figure_output("latency_per_opt"),
    log:
        figure_log("latency_per_opt"),
    wildcard_constraints:
        **figures_mod.WILDCARD_CONSTRAINTS,
    conda:
        "../../envs/analysis.yaml"
    params:
        family="latency_per_opt",
    script:
        "../scripts/plot_figure.py"


rule plot_throughput_per_batch:
    input:
        **figure_input("throughput_per_batch"),
    output:
        **figure_output("throughput_per_batch"),
    log:
        figure_log("throughput_per_batch"),
    wildcard_constraints:
        **figures_mod.WILDCARD_CONSTRAINTS,
    conda:
        "../../envs/analysis.yaml"
    params:
        family="throughput_per_batch",
    script:
        "../scripts/plot_figure.py"


rule plot_throughput_per_opt:
    input:
        **figure_input("throughput_per_opt"),
    output:
        **figure_output("throughput_per_opt"),
    log:
        figure_log("throughput_per_opt"),
    wildcard_constraints:
        **figures_mod.WILDCARD_CONSTRAINTS,
    conda:
        "../../envs/analysis.yaml"
    params:
        family="throughput_per_opt",
    script:
        "../scripts/plot_figure.py"


rule plot_speedup:
    input:
        **figure_input("speedup"),
    output:
        **figure_output("speedup"),
    log:
        figure_log("speedup"),
    wildcard_constraints:
        **figures_mod.WILDCARD_CONSTRAINTS,
    conda:
        "../../envs/analysis.yaml"
    params:
        family="speedup",
    script:
        "../scripts/plot_figure.py"


rule plot_throughput_per_batch_size:
    input:
        **figure_input("throughput_per_batch_size"),
    output:
        **figure_output("throughput_per_batch_size"),
    log:
        figure_log("throughput_per_batch_size"),
    wildcard_constraints:
        **figures_mod.WILDCARD_CONSTRAINTS,
    conda:
        "../../envs/analysis.yaml"
    params:
        family="throughput_per_batch_size",
    script:
        "../scripts/plot_figure.py"


rule plot_latency_degradation_heatmap:
    input:
        **figure_input("latency_degradation_heatmap"),
    output:
        **figure_output("latency_degradation_heatmap"),
    log:
        figure_log("latency_degradation_heatmap"),
    wildcard_constraints:
        **figures_mod.WILDCARD_CONSTRAINTS,
    conda:
        "../../envs/analysis.yaml"
    params:
        family="latency_degradation_heatmap",
    script:
        "../scripts/plot_figure.py"


rule plot_throughput_degradation_heatmap:
    input:
        **figure_input("throughput_degradation_heatmap"),
    output:
        **figure_output("throughput_degradation_heatmap"),
    log:
        figure_log("throughput_degradation_heatmap"),
    wildcard_constraints:
        **figures_mod.WILDCARD_CONSTRAINTS,
    conda:
        "../../envs/analysis.yaml"
    params:
        family="throughput_degradation_heatmap",
    script:
        "../scripts/plot_figure.py"


rule plot_numa_latency_per_batch:
    input:
        **figure_input("numa_latency_per_batch"),
    output:
        **figure_output("numa_latency_per_batch"),
    log:
        figure_log("numa_latency_per_batch"),
    wildcard_constraints:
        **figures_mod.WILDCARD_CONSTRAINTS,
    conda:
        "../../envs/analysis.yaml"
    params:
        family="numa_latency_per_batch",
    script:
        "../scripts/plot_figure.py"


rule plot_numa_latency_loss:
    input:
        **figure_input("numa_latency_loss"),
    output:
        **figure_output("numa_latency_loss"),
    log:
        figure_log("numa_latency_loss"),
    wildcard_constraints:
        **figures_mod.WILDCARD_CONSTRAINTS,
    conda:
        "../../envs/analysis.yaml"
    params:
        family="numa_latency_loss",
    script:
        "../scripts/plot_figure.py"


rule plot_numa_throughput_per_batch:
    input:
        **figure_input("numa_throughput_per_batch"),
    output:
        **figure_output("numa_throughput_per_batch"),
    log:
        figure_log("numa_throughput_per_batch"),
    wildcard_constraints:
        **figures_mod.WILDCARD_CONSTRAINTS,
    conda:
        "../../envs/analysis.yaml"
    params:
        family="numa_throughput_per_batch",
    script:
        "../scripts/plot_figure.py"


rule plot_numa_throughput_loss:
    input:
        **figure_input("numa_throughput_loss"),
    output:
        **figure_output("numa_throughput_loss"),
    log:
        figure_log("numa_throughput_loss"),
    wildcard_constraints:
        **figures_mod.WILDCARD_CONSTRAINTS,
    conda:
        "../../envs/analysis.yaml"
    params:
        family="numa_throughput_loss",
    script:
        "../scripts/plot_figure.py"


rule report_page:
    input:
        **report_page_tables(),
        figures=figure_targets(),
    output:
        f"{REPORT_DIR}/index.html",
    log:
        f"{RESULTS}/logs/report/index.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        figures=[f.as_dict() for f in FIGURES],
        figure_dir=lambda wildcards, output: os.path.join(
            os.path.dirname(output[0]), "figures"
        ),
        placements=report_placements(),
        imported=PACKRAT_SOURCES,
    script:
        "../scripts/report_page.py"
