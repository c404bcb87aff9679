# Importing PackRat results instead of measuring (config key `import`, README "Importing PackRat
# results"): one rule writes the tables and machine.json that the cells would have produced;
# everything downstream (degradation, summary, report) is unchanged.
from numa_effects.tables import packrat as packrat_mod  # noqa: E402

IMPORT = config.get("import") or {}
PACKRAT_SOURCES = list(IMPORT.get("packrat") or [])


if PACKRAT_SOURCES:

    ruleorder: import_packrat > tables
    ruleorder: import_packrat > machine

    rule import_packrat:
        input:
            packrat_mod.input_files(PACKRAT_SOURCES),
        output:
            cells=f"{RESULTS}/tables/cells.csv",
            samples=f"{RESULTS}/tables/samples.csv",
            skipped=f"{RESULTS}/tables/skipped.csv",
            machine=f"{RESULTS}/machine.json",
        log:
            f"{RESULTS}/logs/import_packrat.log",
        conda:
            "../../envs/analysis.yaml"
        params:
            sources=PACKRAT_SOURCES,
            description=IMPORT.get("machine"),
        script:
            "../scripts/import_packrat.py"
