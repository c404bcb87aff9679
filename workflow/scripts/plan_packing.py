"""Snakemake entry: the optimizer's choices for one (model, opt) from tables/cells.csv and the
interference curve fitted on tables/interference.csv, with the placements of the fat instance and
each candidate on the scheduling topology -> packing/.../plans.json."""

import json

from numa_effects.analysis import packing, planner
from numa_effects.measure import record
from numa_effects.plan import spec as spec_mod
from numa_effects.plan import topology as topology_mod
from numa_effects.tables import interference, tidy

sm = snakemake  # noqa: F821
p = sm.params
w = sm.wildcards
topo = topology_mod.Topology.from_dict(p.topology)
cells = tidy.read(sm.input.cells)
profile = tidy.read(sm.input.interference)
curve = interference.curve(profile, w.model, w.opt)
rows = planner.choices(
    cells,
    w.model,
    w.opt,
    p.budgets,
    p.batch_sizes,
    p.threads,
    caps={int(k): v for k, v in p.caps.items()},
    curve=curve,
    measure=p.measure_plans,
)
for row in rows:
    row["placements"] = spec_mod.placements(row, topo, p.use_smt)
    row["statistic"] = packing.statistic(cells) if not cells.empty else None
doc = {"topology_source": topo.source, "curve": curve.to_dict(), "choices": rows}
record.write(sm.output[0], doc)
summary = [(r["budget"], r["batch"], [c["label"] for c in r.get("candidates", [])]) for r in rows]
msg = f"interference: {curve.label()}\n" + json.dumps(summary)
with open(sm.log[0], "w") as fh:
    fh.write(msg + "\n")
print(msg)
