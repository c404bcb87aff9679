"""The end-of-run summary, for a measured run and for imported PackRat results."""

import json
from pathlib import Path

import pandas as pd

from numa_effects.tables import packrat, summary

FIX = Path(__file__).parent / "fixtures"


KEYS = {"model": "resnet18", "opt": "none", "placement": "sequential", "threads": 1}


def cells(n_ok=2, n_failed=0):
    rows = [{**KEYS, "batch_size": i + 1, "status": "ok", "measure_s": 5.0} for i in range(n_ok)]
    rows += [
        {
            **KEYS,
            "batch_size": 8,
            "status": "failed",
            "failure_cause": "timeout",
            "failure_message": "no result after 150 s; killed",
        }
        for _ in range(n_failed)
    ]
    return pd.DataFrame(rows)


def test_measured_run_names_the_machine_layout_and_failures():
    machine = {"summary": {"cpu_model": "Xeon", "nodes": 2, "physical_cores": 32, "smt": True}}
    skipped = pd.DataFrame([{"reason": "interleave needs at least 2 NUMA nodes"}])
    text = summary.render(cells(2, 1), skipped, machine, "res")
    assert "Xeon, 2 NUMA node(s), 32 cores, SMT on" in text
    assert "2 measured, 1 failed, 1 skipped" in text
    assert "FAILED resnet18/none/sequential/t1/bs8: timeout" in text
    assert "timed inference: 10 s" in text


def test_imported_run_claims_no_layout_it_does_not_know():
    machine = packrat.machine_facts(["/data/packrat/cloudlab"], None)
    text = summary.render(cells(3), pd.DataFrame(columns=["reason"]), machine, "res")
    assert "layout not recorded" in text
    assert "SMT off" not in text and "NUMA node(s)" not in text
    assert "imported from: /data/packrat/cloudlab" in text
    assert "3 imported, 0 failed, 0 skipped" in text


def test_real_machine_json_of_this_vm_renders():
    cell = json.loads((FIX / "cells" / "resnet18-none-sequential-t1-bs1.json").read_text())
    machine = {"summary": {"cpu_model": "vm", "nodes": 1, "physical_cores": 2, "smt": False}}
    text = summary.render(cells(1), pd.DataFrame(columns=["reason"]), machine, "res")
    assert cell["cell"]["model"] == "resnet18"
    assert "1 NUMA node(s), 2 cores, SMT off" in text
