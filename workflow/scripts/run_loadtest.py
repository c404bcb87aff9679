"""Snakemake entry: the throughput answer under load (numa_effects.loadtest: MLPerf LoadGen's
Offline run and Server bisection against the recommendation and its strongest baseline)."""

import contextlib
import sys
from pathlib import Path

from numa_effects import loadtest

sm = snakemake  # noqa: F821
results = Path(sm.input.plan).parent.parent  # deploy/plan.json's results folder
with open(sm.log[0], "w") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
    status = loadtest.main(["--results", str(results), *sm.params.args])
if status:
    sys.exit(f"loadtest: failed ({status}), see {sm.log[0]}")
