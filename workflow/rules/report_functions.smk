# Functions of the report rules (workflow/rules/report.smk): which figures exist, and the
# inputs, outputs and logs of the plot rules. Figures are planned from the plan's cells (or the
# imported ones), never by globbing results: only figures whose data exist are requested.
import os

from numa_effects.report import registry as figures_mod  # noqa: E402

REPORT_DIR = PLAN.path(paths.REPORT_DIR)
FIGURE_DIR = PLAN.path(paths.FIGURE_DIR)
# The Packing figures exist for the (model, opt) pairs whose packing the plan measures.
FIGURES = figures_mod.figures(PLAN.figure_keys(), packed=PLAN.packed())


# The families with at least one figure in this run: one plot rule each.
DRAWN_FAMILIES = [
    f for f in figures_mod.FAMILIES if any(g.family == f.name for g in FIGURES)
]


def figure_targets():
    return [f.path(FIGURE_DIR) for f in FIGURES]


def figure_input(family):
    """The tables the family reads (``Family.tables``): results/tables/<name>.csv."""
    return {t: PLAN.table(t) for t in figures_mod.BY_NAME[family].tables}


def family_figures(family):
    """The family's planned figures (none: the family has no rule in this run)."""
    return [f for f in FIGURES if f.family == family]


def figure_output(family):
    """Every figure of the family, PNG and SVG: one job draws them all (they read the same
    tables, so they would re-run together anyway, and one Python start draws dozens)."""
    fam = figures_mod.BY_NAME[family]
    out = []
    for f in family_figures(family):
        labels = {
            ("batch size" if w == "batch_size" else w): str(v)
            for w, v in f.wildcards.items()
        }
        png = report(
            f.path(FIGURE_DIR),
            caption="../report/figure.rst",  # renders params.caption (the registry's)
            category=figures_mod.SECTIONS[fam.section].heading,
            subcategory=fam.title,
            labels=labels,
        )
        out.append(png)
    return out + [f.path(FIGURE_DIR, "svg") for f in family_figures(family)]


def figure_wildcards(family):
    return [f.wildcards for f in family_figures(family)]


def figure_log(family):
    return PLAN.log(f"report/{family}")


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
