"""Snakemake entry: run one pinned benchmark cell (see numa_effects.measure.launcher)."""

import sys

from numa_effects.measure import launcher
from numa_effects.plan import settings
from numa_effects.plan.grid import KEYS

sm = snakemake  # noqa: F821
# The timeout and max_memory_mb come from the config, not params: changing them re-runs
# nothing (they decide whether a cell fails, not how it is measured); `make retry-failed`
# re-runs the failed cells.
result = launcher.run_rule(sm, settings.cell_timeout_s(sm.config))
cell = "/".join(str(result["cell"][k]) for k in KEYS) + f" r{result.get('replicate', 1)}"
ok = ""
if result["status"] == "ok":
    s = result["stats"]
    noise = result.get("contention") or {}
    excluded = noise.get("excluded_iterations") or 0
    ok = (
        f"median {s['median_s'] * 1e3:.1f} ms/batch, n={s['n']}"
        f"{f' (+{excluded} excluded)' if excluded else ''}, "
        f"{result['throughput']['ips']:.1f} img/s ({result['measurement']['stop_reason']})"
        f"{', CONTENDED' if noise.get('contended') else ''}"
    )
print(launcher.outcome_line(result, f"cell {cell}", ok, "statistics"), file=sys.stderr)
