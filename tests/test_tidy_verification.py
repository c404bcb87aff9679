"""Verification columns of the tidy table, on cell JSONs written inside the 2-node guest by
tests/numa_vm/driver.py (tests/fixtures/cells_numa_vm/)."""

from pathlib import Path

from numa_effects.measure import record
from numa_effects.tables import cells as tidy

FIX = Path(__file__).parent / "fixtures" / "cells_numa_vm"


def row(name: str) -> dict:
    return tidy.cell_row(record.read(FIX / name), name)


def test_verified_cell_columns():
    r = row("remote-t2.json")
    assert r["status"] == "ok" and r["verified"] is True
    assert r["placement"] == "remote" and r["placement_base"] == "remote"
    assert r["planned_cpus"] == "0-1" and r["planned_mems"] == "1"
    assert r["mempolicy"] == "bind:1"
    assert r["verify_problems"] is None and r["threads_outside_plan"] == 0
    assert set(r["thread_last_cpus"].replace("-", ",").split(",")) <= {"0", "1"}
    assert r["anon_on_plan_pct"] >= 90.0
    by_node = dict(part.split(":") for part in r["anon_mb_by_node"].split(";"))
    assert float(by_node["1"]) > 10 * float(by_node.get("0", 0) or 0.001) or "0" not in by_node
    assert abs(sum(map(float, by_node.values())) - r["anon_mb"]) < 0.5


def test_failed_verification_columns():
    r = row("wrong-binding.json")
    assert r["status"] == "failed" and r["verified"] is False
    assert r["failure_cause"] == "binding-mismatch"
    assert r["threads_outside_plan"] >= 1
    assert r["anon_on_plan_pct"] < 10.0
    assert "Cpus_allowed_list is 2, the plan is 0" in r["verify_problems"]
    assert "latency_median_ms" not in r  # no statistics from a mislabelled cell


def test_cells_without_verification_have_empty_columns():
    assert set(tidy.verification_columns(None).values()) == {None}
