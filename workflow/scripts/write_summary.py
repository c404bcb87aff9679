"""Snakemake entry: write results/summary.txt."""

from pathlib import Path

from numa_effects import stats
from numa_effects.tables import summary

sm = snakemake  # noqa: F821
text = summary.render(
    stats.read_table(sm.input.cells),
    stats.read_table(sm.input.skipped),
    summary.load_machine(sm.input.machine),
    str(Path(sm.output[0]).parent),
    stats.read_table(sm.input.packing) if hasattr(sm.input, "packing") else None,
    stats.read_table(sm.input.interference) if hasattr(sm.input, "interference") else None,
    stats.read_table(sm.input.recommendation) if hasattr(sm.input, "recommendation") else None,
)
Path(sm.output[0]).write_text(text)
