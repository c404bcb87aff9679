"""Snakemake entry: write results/summary.txt."""

from pathlib import Path

import pandas as pd

from numa_effects.tables import summary

sm = snakemake  # noqa: F821
text = summary.render(
    pd.read_csv(sm.input.cells),
    pd.read_csv(sm.input.skipped),
    summary.load_machine(sm.input.machine),
    str(Path(sm.output[0]).parent),
)
Path(sm.output[0]).write_text(text)
