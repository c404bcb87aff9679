"""Snakemake entry: plans and measurements of every packing job -> results/tables/packing.csv and
packing_candidates.csv."""

import json
from pathlib import Path

from numa_effects.measure import record
from numa_effects.tables import packing as packing_table
from numa_effects.tables import tidy

sm = snakemake  # noqa: F821
plans = [json.loads(Path(p).read_text()) for p in sm.input.plans]
results = {}
for path in sm.input.runs:
    r = record.read_group(path)
    results[(r.job["model"], r.job["opt"], r.job["budget"], r.job["batch"])] = r
names = {int(k): v for k, v in sm.params.budget_names.items()}
tidy.write(packing_table.table(plans, results, names), sm.output.packing)
tidy.write(packing_table.candidates_table(plans, results), sm.output.candidates)
