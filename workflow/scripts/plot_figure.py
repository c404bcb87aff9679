"""Snakemake entry: draw one report figure (PNG + SVG) from the tidy tables.

Every ``plot_<family>`` rule of workflow/rules/report.smk runs this with ``params.family``."""

import contextlib
import warnings

from numa_effects.report import data as figure_data
from numa_effects.report import plots

sm = snakemake  # noqa: F821
with open(sm.log[0], "w") as log, contextlib.redirect_stderr(log):
    warnings.simplefilter("default")
    # the family's tables (figures.Family.tables), by name: cells, skipped, degradation, ...
    tables = figure_data.Tables.load(**dict(sm.input.items()))
    fig = plots.draw(sm.params.family, tables, dict(sm.wildcards.items()))
    plots.save(fig, sm.output.png, sm.output.svg)
