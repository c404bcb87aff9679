# Importing PackRat results instead of measuring (config key `import`, docs/report.md): one rule
# writes the tables and machine.json that the cells would have produced; everything downstream
# (degradation, summary, report) is unchanged.


if PLAN.imported:

    ruleorder: import_packrat > tables
    ruleorder: import_packrat > machine

    rule import_packrat:
        input:
            packrat_inputs(PLAN.imported),
        output:
            cells=PLAN.table("cells"),
            samples=PLAN.table("samples"),
            skipped=PLAN.table("skipped"),
            machine=PLAN.path(paths.MACHINE),
        log:
            PLAN.log("import_packrat"),
        conda:
            "../../envs/analysis.yaml"
        params:
            sources=list(PLAN.imported),
            description=PLAN.config["import"].get("machine"),
            code=PLAN.code["tables"],
        script:
            "../scripts/import_packrat.py"

    if PLAN.config["import"].get("interference"):

        rule import_interference:
            input:
                packrat_interference_inputs(PLAN.config["import"]["interference"]),
            output:
                PLAN.table("interference"),
            log:
                PLAN.log("import_interference"),
            conda:
                "../../envs/analysis.yaml"
            params:
                source=PLAN.config["import"]["interference"],
                code=PLAN.code["tables"],
            script:
                "../scripts/import_interference.py"
