"""Snakemake entry: write results/report/index.html (see numa_effects.report.page)."""

import json
import os
from pathlib import Path

from numa_effects.report import data as figure_data
from numa_effects.report import deploy_section
from numa_effects.report import page as report_html

sm = snakemake  # noqa: F821
tables = figure_data.Tables.load(
    sm.input.cells,
    sm.input.skipped,
    sm.input.get("degradation"),
    precision=sm.input.get("precision"),
    memory_matrix=sm.input.get("memory_matrix"),
)
failures = figure_data.read_csv(sm.input.get("failures")) if sm.input.get("failures") else None
page = report_html.render(
    sm.params.figures,
    tables.cells,
    tables.skipped,
    tables.degradation,
    json.loads(Path(sm.input.machine).read_text()),
    page_dir=os.path.dirname(sm.output[0]),
    figure_dir=sm.params.figure_dir,
    placements=sm.params.placements,
    imported=sm.params.imported,
    latency_stat=tables.latency_stat,
    failures=failures,
    precision=tables.precision,
    memory_matrix=tables.memory_matrix,
    recommendation=(
        figure_data.read_csv(sm.input.recommendation) if sm.input.get("recommendation") else None
    ),
    # the answer under load: its figure, or why the run has none
    under_load=deploy_section.under_load(
        sm.input.get("loadtest_figure"), sm.params.loadtest, os.path.dirname(sm.output[0])
    ),
)
tmp = f"{sm.output[0]}.tmp"
Path(tmp).write_text(page)
os.replace(tmp, sm.output[0])
