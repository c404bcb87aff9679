"""Snakemake entry: draw every figure of one family (PNG + SVG) from the tidy tables.

Every ``plot_<family>`` rule of workflow/rules/report.smk runs this with ``params.family`` and
its figures' wildcard values (``params.figures``); the outputs are the PNGs, then the SVGs, in
the same order."""

import contextlib
import warnings

from numa_effects.report import data as figure_data
from numa_effects.report import plots

sm = snakemake  # noqa: F821
figures = sm.params.figures
pngs, svgs = sm.output[: len(figures)], sm.output[len(figures) :]
with open(sm.log[0], "w") as log, contextlib.redirect_stderr(log):
    warnings.simplefilter("default")
    # the family's tables (families.Family.tables), by name: cells, skipped, degradation, ...
    tables = figure_data.Tables.load(**dict(sm.input.items()))
    for wildcards, png, svg in zip(figures, pngs, svgs, strict=True):
        plots.save(plots.draw(sm.params.family, tables, wildcards), png, svg)
        print(f"drew {png}", file=log)
