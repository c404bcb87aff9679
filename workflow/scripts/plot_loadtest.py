"""Snakemake entry: the latency-throughput figure of tables/loadtest.csv, PNG and SVG
(numa_effects.report.loadtest_plots)."""

from pathlib import Path

import pandas as pd

from numa_effects.report import loadtest_plots

sm = snakemake  # noqa: F821
loadtest_plots.draw(pd.read_csv(sm.input[0]), sm.params.model, sm.output.png, sm.output.svg)
Path(sm.log[0]).write_text(f"drew {sm.output.png}\n")
