"""Snakemake entry: the deploy plan from the cells and the interference profile (see
numa_effects.tables.deploy_plan)."""

import json
from pathlib import Path

from numa_effects import stats
from numa_effects.plan import topology
from numa_effects.tables import deploy_plan
from numa_effects.tables import interference as interference_table

sm = snakemake  # noqa: F821
cells = stats.read_table(sm.input.cells)
profile = stats.read_table(sm.input.interference) if sm.input.get("interference") else None
curves = interference_table.curves(profile)
topo = topology.Topology.from_dict(sm.params.topology)
plan = deploy_plan.plan(cells, curves, topo, dict(sm.params.settings))
out = Path(sm.output[0])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps(plan, indent=1))
n = len(plan["configurations"])
Path(sm.log[0]).write_text(
    f"deploy plan: {len(plan['objectives'])} objective rows, {n} configurations\n"
)
