"""Snakemake entry: the optimizer's choices for one (model, opt) from tables/cells.csv, with the
placements of the fat instance and the plan on the scheduling topology -> packing/.../plans.json."""

import json

from numa_effects import stats
from numa_effects.measure import group
from numa_effects.measure import result as cellresult
from numa_effects.plan import packing
from numa_effects.plan import topology as topology_mod

sm = snakemake  # noqa: F821
p = sm.params
topo = topology_mod.Topology.from_dict(p.topology)
cells = stats.read_table(sm.input.cells)
rows = packing.choices(
    cells, sm.wildcards.model, sm.wildcards.opt, p.budgets, p.batch_sizes, p.threads
)
for row in rows:
    confs = {"fat": [(row["budget"], row["batch"])]}
    if row["instances"] and not row["is_fat"]:
        confs["plan"] = [(i["threads"], i["batch"]) for i in row["instances"]]
    row["placements"] = {}
    for name, conf in confs.items():
        got = group.plans_for(topo, row["budget"], conf, p.use_smt)
        row["placements"][name] = got if isinstance(got, str) else [g.to_dict() for g, _ in got]
    row["statistic"] = packing.statistic(cells) if not cells.empty else None
cellresult.write_json_atomic(sm.output[0], {"topology_source": topo.source, "choices": rows})
print(json.dumps([(r["budget"], r["batch"], r.get("label")) for r in rows]))
