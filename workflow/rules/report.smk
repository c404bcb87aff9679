# The report: one rule per figure family that has figures in this run (generated from the
# registry; one job draws all of the family's figures) and results/report/index.html. Figures are planned from the grid (or the
# imported cells), never by globbing results: only figures whose data exist are requested.
# Families, paths, sections and captions: workflow/scripts/numa_effects/report/families.py.
include: "report_functions.smk"


report: "../report/workflow.rst"


for family in DRAWN_FAMILIES:

    rule:
        name:
            f"plot_{family.name}"
        input:
            **figure_input(family.name),
        output:
            figure_output(family.name),
        log:
            figure_log(family.name),
        conda:
            "../../envs/analysis.yaml"
        params:
            family=family.name,
            figures=figure_wildcards(family.name),
            caption=figure_caption(family.name),
            code=PLAN.code["report"],
        script:
            "../scripts/plot_figure.py"


rule report_page:
    input:
        **report_page_tables(),
        figures=figure_targets(),
    output:
        f"{REPORT_DIR}/index.html",
    log:
        PLAN.log("report/index"),
    conda:
        "../../envs/analysis.yaml"
    params:
        figures=[f.as_dict() for f in FIGURES],
        figure_dir=lambda wildcards, output: os.path.join(
            os.path.dirname(output[0]), "figures"
        ),
        placements=PLAN.placements(),
        imported=list(PLAN.imported),
        loadtest=PLAN.loadtest_note(ESTIMATE.shrunk),  # why the answer is not under load
        code=PLAN.code["report"],
    script:
        "../scripts/render_report.py"
