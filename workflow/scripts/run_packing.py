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
msg = f"packing {sm.wildcards.model}/{sm.wildcards.opt} C={budget} B={batch} "
msg += f"{choice.get('label')}: {group.summary_line(result)}"
log.write_text(msg + "\n")
print(msg, file=sys.stderr)
