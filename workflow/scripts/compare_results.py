"""Snakemake entry: result folders compared cell by cell -> compare/<name>/tables/
(compare.csv, summary.csv, provenance.csv, unmatched.csv, peaks.csv;
numa_effects.tables.compare_runs). The compared folders are only read."""

import contextlib

from numa_effects.tables import cells as tidy
from numa_effects.tables import compare_runs

sm = snakemake  # noqa: F821
with open(sm.log[0], "w") as log, contextlib.redirect_stderr(log):
    s = sm.params.compare
    runs = compare_runs.read_runs(s["runs"], s["labels"], s["across"])
    compare = compare_runs.compare_table(runs, s["min_effect_pct"], s["across"])
    tidy.write(compare, sm.output.compare)
    tidy.write(compare_runs.summary_table(compare, s["min_effect_pct"]), sm.output.summary)
    tidy.write(compare_runs.provenance_table(runs), sm.output.provenance)
    tidy.write(compare_runs.unmatched_table(runs, s["across"]), sm.output.unmatched)
    tidy.write(compare_runs.peak_table(runs), sm.output.peaks)
