# Functions of the report rules (workflow/rules/report.smk): which figures exist, and the
# inputs, outputs and logs of the plot rules. Figures are planned from the plan's cells (or the
# imported ones, or a comparison's matched ones), never by globbing results: only figures whose
# data exist are requested.
import os

from numa_effects.report import families as families_mod  # noqa: E402
from numa_effects.report import figures as figures_mod  # noqa: E402

REPORT_DIR = PLAN.path(paths.REPORT_DIR)
FIGURE_DIR = PLAN.path(paths.FIGURE_DIR)
# The Packing figures exist for the (model, opt) pairs whose packing the plan measures.
FIGURES = figures_mod.figures(PLAN.figure_keys(), packed=PLAN.packed())
# A comparison's figures (config key compare) are planned from the cells its runs share; they
# go below results/compare/<name>/figures/ and read its tables.
COMPARE_NAME = PLAN.compare["name"] if PLAN.compare else None
COMPARE_FIGURES = figures_mod.figures(PLAN.compare_keys, page=families_mod.COMPARE_PAGE)
# The families with at least one figure in this run: one plot rule each, drawing all of them.
DRAWN_FAMILIES = [
    f
    for f in families_mod.FAMILIES
    if any(g.family == f.name for g in (*FIGURES, *COMPARE_FIGURES))
]


def figure_targets():
    return [f.path(FIGURE_DIR) for f in FIGURES]


def compare_figure_targets(name):
    folder = PLAN.compare_path(paths.COMPARE_FIGURE_DIR, name)
    return [f.path(folder) for f in COMPARE_FIGURES]


def on_compare_page(family):
    return families_mod.BY_NAME[family].page == families_mod.COMPARE_PAGE


def figure_dir(family):
    if on_compare_page(family):
        return PLAN.compare_path(paths.COMPARE_FIGURE_DIR, COMPARE_NAME)
    return FIGURE_DIR


def family_figures(family):
    """The family's planned figures (none: the family has no rule in this run)."""
    figures = COMPARE_FIGURES if on_compare_page(family) else FIGURES
    return [f for f in figures if f.family == family]


def figure_input(family):
    """The tables the family reads (``Family.tables``): results/tables/<name>.csv, or a
    comparison's compare/<name>/tables/<table>.csv."""
    tables = families_mod.BY_NAME[family].tables
    if on_compare_page(family):
        return {t: PLAN.compare_table(t, COMPARE_NAME) for t in tables}
    return {t: PLAN.table(t) for t in tables}


def figure_output(family):
    """Every figure of the family, PNG and SVG: one job draws them all (they read the same
    tables, so they would re-run together anyway, and one Python start draws dozens)."""
    fam = families_mod.BY_NAME[family]
    folder = figure_dir(family)
    out = []
    for f in family_figures(family):
        labels = {
            ("batch size" if w == "batch_size" else w): str(v)
            for w, v in f.wildcards.items()
        }
        png = report(
            f.path(folder),
            caption="../report/figure.rst",  # renders params.caption (the registry's)
            category=families_mod.SECTIONS[fam.section].heading,
            subcategory=fam.title,
            labels=labels,
        )
        out.append(png)
    return out + [f.path(folder, "svg") for f in family_figures(family)]


def figure_caption(family):
    """The family's caption, as a function: Snakemake would read a params string's braces
    (``n{cpu}m{mem}``) as wildcards."""
    return lambda wildcards: families_mod.BY_NAME[family].caption


def figure_wildcards(family):
    return [f.wildcards for f in family_figures(family)]


def figure_log(family):
    if on_compare_page(family):
        return PLAN.compare_path(
            paths.COMPARE_LOG, COMPARE_NAME, name=f"figures/{family}"
        )
    return PLAN.log(f"report/{family}")


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
    if PLAN.memory:
        tables["memory_matrix"] = PLAN.table("memory_matrix")
    if PLAN.deploy["enabled"]:
        tables["recommendation"] = PLAN.table("recommendation")
    if PLAN.deploy["loadtest"]:  # the answer under load (workflow/rules/deploy.smk)
        tables["loadtest_figure"] = PLAN.loadtest_figure()
    return tables
