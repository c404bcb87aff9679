"""Snakemake entry: write results/summary.txt."""

from pathlib import Path

from numa_effects import stats
from numa_effects.tables import history, summary

sm = snakemake  # noqa: F821
results = str(Path(sm.output[0]).parent)
text = summary.render(
    stats.read_table(sm.input.cells),
    stats.read_table(sm.input.skipped),
    summary.load_machine(sm.input.machine),
    results,
    stats.read_table(sm.input.packing) if hasattr(sm.input, "packing") else None,
    stats.read_table(sm.input.interference) if hasattr(sm.input, "interference") else None,
    # where the records a re-run replaced are kept (results/history/)
    history.summary_lines(results),
    recommendation=(
        stats.read_table(sm.input.recommendation) if hasattr(sm.input, "recommendation") else None
    ),
)
Path(sm.output[0]).write_text(text)
