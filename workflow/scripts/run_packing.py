"""Snakemake entry: measure the fat instance and the chosen plan of one (model, opt, budget,
batch) for real (see numa_effects.measure.group)."""

import json
import sys
from pathlib import Path

from numa_effects.measure import group
from numa_effects.plan import settings

sm = snakemake  # noqa: F821
plans = json.loads(Path(sm.input.plans).read_text())
budget, batch = int(sm.wildcards.budget), int(sm.wildcards.batch_size)
choice = next(c for c in plans["choices"] if c["budget"] == budget and c["batch"] == batch)
placements = {k: v for k, v in choice.pop("placements").items() if not isinstance(v, str)}
job = {
    **sm.params.job,
    "budget": budget,
    "batch": batch,
    "choice": choice,
    "placements": placements,
}
log = Path(sm.log[0])
result = group.run(
    job,
    sm.output[0],
    log.parent / log.stem,
    settings.cell_timeout_s(sm.config),
    max_memory_mb=sm.config.get("max_memory_mb"),
)
runs = result.get("runs", {})
med = {
    n: [round(r["stats"]["median_s"] * 1e3, 2) if r.get("stats") else r["status"] for r in recs]
    for n, recs in runs.items()
}
msg = f"packing {sm.wildcards.model}/{sm.wildcards.opt} C={budget} B={batch}: {result['status']}"
msg += f" {choice.get('label')}; medians ms {med}"
if result["status"] != "ok":
    msg += f" ({result['failure']['cause']}: {result['failure']['message']})"
log.write_text(msg + "\n")
print(msg, file=sys.stderr)
