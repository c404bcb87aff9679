"""Snakemake entry: write results/summary.txt."""

from pathlib import Path

from numa_effects.tables import history, summary, tidy

sm = snakemake  # noqa: F821
results = str(Path(sm.output[0]).parent)
text = summary.render(
    tidy.read(sm.input.cells),
    tidy.read(sm.input.skipped),
    summary.load_machine(sm.input.machine),
    results,
    tidy.read(sm.input.packing) if hasattr(sm.input, "packing") else None,
    tidy.read(sm.input.interference) if hasattr(sm.input, "interference") else None,
    # where the records a re-run replaced are kept (results/history/)
    history.summary_lines(results),
    recommendation=(
        tidy.read(sm.input.recommendation) if hasattr(sm.input, "recommendation") else None
    ),
    loadtest_note=sm.params.loadtest,
)
Path(sm.output[0]).write_text(text)
