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


def test_packing_lines_give_the_profile_cost_and_the_recommendations():
    """The summary says what the interference profile cost and what packing
    recommends, and flags a batch size whose measured best is not the predicted plan."""
    profile = pd.DataFrame(
        [
            {"model": "m", "opt": "none", "budget": 2, "threads": 1, "k": 2, "node": 0}
            | {"slowdown": 1.088, "status": "ok", "job_s": 41.5, "source": "measured here"}
        ]
    )
    packing = pd.DataFrame(
        [
            {"model": "m", "opt": "none", "budget": 2, "batch_size": 2, "status": "ok"}
            | {"plan": "2x(t1,b1)", "recommended_plan": "2x(t1,b1)"}
            | {"recommended_latency_ms": 120.0, "recommended_speedup": 1.1}
            | {"recommended_is_predicted": True},
            {"model": "m", "opt": "none", "budget": 2, "batch_size": 16, "status": "ok"}
            | {"plan": "2x(t1,b8)", "recommended_plan": "1x(t2,b16)"}
            | {"recommended_latency_ms": 850.0, "recommended_speedup": 1.0}
            | {"recommended_is_predicted": False},
        ]
    )
    machine = {"summary": {"cpu_model": "Xeon", "nodes": 1, "physical_cores": 2, "smt": False}}
    text = summary.render(
        cells(2), pd.DataFrame(columns=["reason"]), machine, "r", packing, profile
    )
    assert "interference profile: 1 job(s), 1 group size(s), 42 s; slowdown t1 k=2: 1.088" in text
    assert "C=2 B=2: recommended 2x(t1,b1) (120 ms, 1.10x the fat instance)" in text
    assert (
        "B=16: recommended 1x(t2,b16) (850 ms, 1.00x the fat instance); predicted best was " in text
    )
    assert text.count("the measured ranking differs") == 1
    # without packing: no packing lines
    assert "packing" not in summary.render(cells(2), pd.DataFrame(columns=["reason"]), machine, "r")


def test_launchers_that_chose_one_configuration_are_one_layout_factor():
    """tests/fixtures/deploy/recommendation-tiny.csv: per objective, the layout factor rows
    grouped by their configuration; the headline names every launcher once, in one part per
    group, and keeps the optimization and allocator factors."""
    import pandas as pd

    from numa_effects.tables import deploy

    df = pd.read_csv(Path(__file__).parent / "fixtures" / "deploy" / "recommendation-tiny.csv")
    lines = deploy.answer_lines(df)
    for (model, objective), g in df.groupby(["model", "objective"], sort=False):
        head = next(x for x in lines if x.startswith(f"  {model} {objective}: "))
        layout = g[(g["role"] == "factor") & (g["factor"] == "layout")]
        groups = layout.fillna({"config": ""}).groupby("config", sort=False)["baseline"]
        assert head.count("layout vs ") == groups.ngroups
        for _, names in groups:
            assert f"layout vs {' = '.join(names)}:" in head
        assert "optimization " in head and "allocator " in head
