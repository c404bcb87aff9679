"""Snakemake entry: run one pinned benchmark cell (see numa_effects.measure.job)."""

import sys

from numa_effects.measure import job
from numa_effects.plan import settings
from numa_effects.plan.grid import KEYS

sm = snakemake  # noqa: F821
# The timeout and max_memory_mb come from the config, not params: changing them re-runs
# nothing (they decide whether a cell fails, not how it is measured); `make retry-failed`
# re-runs the failed cells.
rec = job.run_rule(sm, settings.cell_timeout_s(sm.config))
cell = "/".join(str(rec.cell[k]) for k in KEYS) + f" r{rec.replicate}"
ok = ""
if rec.status == "ok":
    s, excluded = rec.stats, rec.contention.get("excluded_iterations") or 0
    ok = (
        f"median {s['median_s'] * 1e3:.1f} ms/batch, n={s['n']}"
        f"{f' (+{excluded} excluded)' if excluded else ''}, "
        f"{rec.throughput['ips']:.1f} img/s ({rec.measurement['stop_reason']})"
        f"{', CONTENDED' if rec.contention.get('contended') else ''}"
    )
print(job.outcome_line(rec, f"cell {cell}", ok, "statistics"), file=sys.stderr)
