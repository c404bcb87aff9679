# Functions of the report rules (workflow/rules/report.smk): which figures exist, and the
# inputs, outputs and logs of the plot rules. Figures are planned from the plan's cells (or the
# imported ones), never by globbing results: only figures whose data exist are requested.
import os

from numa_effects.report import registry as figures_mod  # noqa: E402

REPORT_DIR = PLAN.path(paths.REPORT_DIR)
FIGURE_DIR = PLAN.path(paths.FIGURE_DIR)
# The Packing figures exist for the (model, opt) pairs whose packing the plan measures.
FIGURES = figures_mod.figures(PLAN.figure_keys(), packed=PLAN.packed())
# A comparison's figures (config key compare) are planned from the cells its runs share; their
# rules write below results/compare/{compare}/figures/ and read its tables.
COMPARE_FIGURES = figures_mod.figures(
    PLAN.compare_keys, families=figures_mod.page_families(figures_mod.COMPARE_PAGE)
)


def figure_targets():
    return [f.path(FIGURE_DIR) for f in FIGURES]


def compare_figure_targets(name):
    folder = PLAN.compare_path(paths.COMPARE_FIGURE_DIR, name)
    return [f.path(folder) for f in COMPARE_FIGURES]


def on_compare_page(family):
    return figures_mod.BY_NAME[family].page == figures_mod.COMPARE_PAGE


def figure_dir(family):
    if on_compare_page(family):
        return PLAN.compare_path(paths.COMPARE_FIGURE_DIR)  # {compare}: a wildcard
    return FIGURE_DIR


def figure_input(family):
    """The tables the family reads (``Family.tables``): results/tables/<name>.csv, or a
    comparison's compare/{compare}/tables/<name>.csv."""
    tables = figures_mod.BY_NAME[family].tables
    if on_compare_page(family):
        return {t: PLAN.compare_table(t) for t in tables}
    return {t: PLAN.table(t) for t in tables}


def figure_output(family):
    fam = figures_mod.BY_NAME[family]
    folder = figure_dir(family)
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
            f"{folder}/{fam.pattern}.png",
            caption="../report/figure.rst",  # renders params.caption (the registry's)
            category=figures_mod.SECTIONS[fam.section].heading,
            subcategory=fam.title,
            labels=labels,
        ),
        "svg": f"{folder}/{fam.pattern}.svg",
    }


def figure_log(family):
    pattern = figures_mod.BY_NAME[family].pattern
    if on_compare_page(family):
        return PLAN.compare_path(paths.COMPARE_LOG, name=f"figures/{pattern}")
    return PLAN.log(f"report/{pattern}")


def report_page_tables():
    """Tables the page reads; failures.csv exists only for measured runs (not imports)."""
    tables = {
        "cells": PLAN.table("cells"),
        "skipped": PLAN.table("skipped"),
        "degradation": PLAN.table("degradation"),
        "machine": PLAN.path(paths.MACHINE),
    }
    if PLAN.measured:
        tables["failures"] = PLAN.table("failures")
    return tables
