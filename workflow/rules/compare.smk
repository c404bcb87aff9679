# Comparing result folders instead of measuring (config key `compare`, docs/comparing.md): the
# compared folders' cells.csv and machine.json are read-only inputs that no rule makes (the
# config check keeps `results` outside them); the tables, the figures (the registry's Comparison
# families, generated with the others in report.smk) and the page go to
# <results>/compare/<name>/. With `compare` the plan has no grid: no cell, peak or table job.


include: "compare_functions.smk"


# The comparison's tables and page (with a compare config, `all` asks for the same).
rule compare:
    input:
        compare_targets,


rule compare_tables:
    input:
        unpack(compare_tables_input),
    output:
        **{t: PLAN.compare_table(t) for t in paths.COMPARE_TABLES},
    log:
        PLAN.compare_path(paths.COMPARE_LOG, name="tables"),
    wildcard_constraints:
        compare=compare_plan.LABEL,
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        compare=PLAN.compare,
        code=PLAN.code["tables"],
    script:
        "../scripts/compare_results.py"


rule compare_page:
    input:
        unpack(compare_page_input),
    output:
        PLAN.compare_path(paths.COMPARE_PAGE),
    log:
        PLAN.compare_path(paths.COMPARE_LOG, name="index"),
    wildcard_constraints:
        compare=compare_plan.LABEL,
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        compare=PLAN.compare,
        figures=[f.as_dict() for f in COMPARE_FIGURES],
        figure_dir=lambda wildcards, output: os.path.join(
            os.path.dirname(output[0]), "figures"
        ),
        code=PLAN.code["report"],
    script:
        "../scripts/render_comparison.py"
