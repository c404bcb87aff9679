"""Snakemake entry: result folders compared cell by cell -> compare/<name>/tables/
(compare.csv, summary.csv, provenance.csv, unmatched.csv, peaks.csv;
numa_effects.compare.tables). The compared folders are only read."""

import contextlib

from numa_effects.compare import provenance, runs, tables
from numa_effects.tables import tidy

sm = snakemake  # noqa: F821
with open(sm.log[0], "w") as log, contextlib.redirect_stderr(log):
    s = sm.params.compare
    runs = runs.read_runs(s["runs"], s["labels"], s["across"])
    compare = tables.compare_table(runs, s["min_effect_pct"], s["across"])
    tidy.write(compare, sm.output.compare)
    tidy.write(tables.summary_table(compare, s["min_effect_pct"]), sm.output.summary)
    tidy.write(provenance.provenance_table(runs), sm.output.provenance)
    tidy.write(tables.unmatched_table(runs, s["across"]), sm.output.unmatched)
    tidy.write(tables.peak_table(runs), sm.output.peaks)
