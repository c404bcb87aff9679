# Functions of the report rules (workflow/rules/report.smk): which figures exist, and the
# inputs, outputs and logs of the plot rules. Figures are planned from the grid (or the imported
# cells), never by globbing results: only figures whose data exist are requested.
import os

from numa_effects.report import registry as figures_mod  # noqa: E402

REPORT_DIR = f"{RESULTS}/report"
FIGURE_DIR = f"{REPORT_DIR}/figures"


def report_cell_keys():
    """The cells that run (or were imported): skipped cells get no figure of their own."""
    if PACKRAT_SOURCES:
        return packrat_mod.keys(PACKRAT_SOURCES)
    return list(GRID.cells)


FIGURES = figures_mod.figures(report_cell_keys(), packed=PACKED)


def report_placements():
    if PACKRAT_SOURCES:
        return sorted({k["placement"] for k in report_cell_keys()})
    return list(config["placements"])


def figure_targets():
    return [f.path(FIGURE_DIR) for f in FIGURES]


def figure_input(family):
    """The tables the family reads (``Family.tables``): results/tables/<name>.csv."""
    return {t: f"{RESULTS}/tables/{t}.csv" for t in figures_mod.BY_NAME[family].tables}


def figure_output(family):
    fam = figures_mod.BY_NAME[family]
    labels = {"model": "{model}"}
    labels.update(
        {
            w.replace("batch_size", "batch size"): f"{{{w}}}"
            for w in fam.wildcards
            if w != "model"
        }
    )
    return {
        "png": report(
            f"{FIGURE_DIR}/{fam.pattern}.png",
            caption="../report/figure.rst",  # renders params.caption (the registry's)
            category=figures_mod.SECTIONS[fam.section].heading,
            subcategory=fam.title,
            labels=labels,
        ),
        "svg": f"{FIGURE_DIR}/{fam.pattern}.svg",
    }


def figure_log(family):
    return f"{RESULTS}/logs/report/{figures_mod.BY_NAME[family].pattern}.log"


def report_page_tables():
    """Tables the page reads; failures.csv exists only for measured runs (not imports)."""
    tables = {
        "cells": f"{RESULTS}/tables/cells.csv",
        "skipped": f"{RESULTS}/tables/skipped.csv",
        "degradation": f"{RESULTS}/tables/degradation.csv",
        "machine": f"{RESULTS}/machine.json",
    }
    if not PACKRAT_SOURCES:
        tables["failures"] = f"{RESULTS}/tables/failures.csv"
    return tables
