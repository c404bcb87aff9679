# Functions of the report rules (workflow/rules/report.smk): which figures exist, and the
# inputs, outputs and logs of the plot rules. Figures are planned from the plan's cells (or the
# imported ones), never by globbing results: only figures whose data exist are requested.
import os

from numa_effects.report import registry as figures_mod  # noqa: E402

REPORT_DIR = PLAN.path(paths.REPORT_DIR)
FIGURE_DIR = PLAN.path(paths.FIGURE_DIR)
# The Packing figures exist for the (model, opt) pairs whose packing the plan measures.
FIGURES = figures_mod.figures(PLAN.figure_keys(), packed=PLAN.packed())


def figure_targets():
    return [f.path(FIGURE_DIR) for f in FIGURES]


def figure_input(family):
    """The tables the family reads (``Family.tables``): results/tables/<name>.csv."""
    return {t: PLAN.table(t) for t in figures_mod.BY_NAME[family].tables}


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
    return PLAN.log(f"report/{figures_mod.BY_NAME[family].pattern}")


def report_page_tables():
    """Tables the page reads; failures.csv exists only for measured runs (not imports)."""
    tables = {
        "cells": PLAN.table("cells"),
        "skipped": PLAN.table("skipped"),
        "degradation": PLAN.table("degradation"),
        "precision": PLAN.table("precision"),
        "machine": PLAN.path(paths.MACHINE),
    }
    if PLAN.measured:
        tables["failures"] = PLAN.table("failures")
    return tables
