"""Snakemake entry: write compare/<name>/index.html (numa_effects.compare.page)."""

import os
from pathlib import Path

from numa_effects.compare import page as compare_page
from numa_effects.compare import provenance as compare_provenance
from numa_effects.tables import tidy

sm = snakemake  # noqa: F821
provenance = tidy.read(sm.input.provenance)
page = compare_page.render(
    sm.params.compare,
    sm.params.figures,
    tidy.read(sm.input.compare),
    tidy.read(sm.input.summary),
    provenance,
    tidy.read(sm.input.unmatched),
    compare_provenance.machines(provenance),
    page_dir=os.path.dirname(sm.output[0]),
    figure_dir=sm.params.figure_dir,
    peaks=tidy.read(sm.input.peaks),
)
tmp = f"{sm.output[0]}.tmp"
Path(tmp).write_text(page)
os.replace(tmp, sm.output[0])
